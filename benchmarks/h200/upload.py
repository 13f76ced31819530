"""Host->device upload: the replay engine's input path vs a pinned-memory copy.

Run from an exported bundle's parent on the GPU machine:
    python upload.py BUNDLE_DIR [--device nvidia] [--scale-mb 256]

Part 1 uploads the bundle's own inputs exactly as the bundle's engine does
(``Engine._host_input`` + ``Engine._write``), then buffers of the same sizes, one
copy each, from pinned host memory (CL_MEM_ALLOC_HOST_PTR, mapped, then
clEnqueueWriteBuffer).
Part 2 repeats that with one large input (``--scale-mb``) so that the copy, not
per-call overhead, dominates.  The engine stages inputs for a GPU
into pinned memory while it prepares a run (``stage_s``: reading the data files),
so the upload itself is a DMA from pinned memory.  Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np


def pinned_upload(cl: Any, ctx: Any, queue: Any, sizes: list[int], reps: int) -> float:
    """Median time to copy buffers of ``sizes`` from pinned host memory, one copy each."""
    mf = cl.mem_flags
    pairs = []
    keep = []
    for nbytes in sizes:
        nbytes = max(nbytes, 1)
        dev = cl.Buffer(ctx, mf.READ_WRITE, nbytes)
        host = cl.Buffer(ctx, mf.READ_WRITE | mf.ALLOC_HOST_PTR, nbytes)
        mapped, _ev = cl.enqueue_map_buffer(
            queue, host, cl.map_flags.WRITE | cl.map_flags.READ, 0, (nbytes,), np.uint8
        )
        mapped[:] = 1
        pairs.append((dev, mapped))
        keep.append(host)
    times = []
    for _ in range(reps):
        queue.finish()
        t0 = time.perf_counter()
        for dev, mapped in pairs:
            cl.enqueue_copy(queue, dev, mapped, is_blocking=False)
        queue.finish()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("bundle", type=Path)
    ap.add_argument("--device", default="nvidia")
    ap.add_argument("--scale-mb", type=int, default=256)
    ap.add_argument("--reps", type=int, default=7)
    ns = ap.parse_args()
    sys.path.insert(0, str(ns.bundle.resolve() / "lib"))
    import pyopencl as cl

    from cltui.replay import engine  # the bundle's own copy
    from cltui.replay.engine.base import _Mem

    plan = json.loads((ns.bundle / "manifest.json").read_text())
    dev = engine.resolve_devices([ns.device])[0]
    eng = engine.Engine(plan, dev, engine.dir_loader(plan, ns.bundle))
    eng.prepare()
    loads = [ld for st in plan["steps"] for ld in st.get("loads", []) if ld.get("why") == "input"]
    t_stage = time.perf_counter()
    hosts = [(eng.mems[ld["mem"]], eng._host_input(ld, eng.mems[ld["mem"]])) for ld in loads]
    stage_s = time.perf_counter() - t_stage  # reading the data files (into pinned memory on GPUs)
    total = sum(h.nbytes for _m, h in hosts)
    times = []
    for _ in range(ns.reps):
        eng.queue.finish()
        t0 = time.perf_counter()
        for m, h in hosts:
            eng._write(m, h, blocking=False)
        eng.queue.finish()
        times.append(time.perf_counter() - t0)
    engine_s = statistics.median(times)
    pinned_s = pinned_upload(cl, eng.ctx, eng.queue, [h.nbytes for _m, h in hosts], ns.reps)
    # part 2: one large input through the engine's path (pageable numpy memory)
    big = ns.scale_mb * 1024 * 1024
    mem = _Mem({"kind": "buffer", "size": big})
    src = np.ones(big, dtype=np.uint8)
    t_stage = time.perf_counter()
    arr = src
    if eng._use_pinned(big):  # what _host_input does with a large input on a GPU
        arr = eng._pinned(big)
        arr[:] = src
    big_stage_s = time.perf_counter() - t_stage
    mem.buf = mem.obj = cl.Buffer(eng.ctx, cl.mem_flags.READ_WRITE, big)
    big_times = []
    for _ in range(ns.reps):
        eng.queue.finish()
        t0 = time.perf_counter()
        eng._write(mem, arr, blocking=False)
        eng.queue.finish()
        big_times.append(time.perf_counter() - t0)
    big_engine_s = statistics.median(big_times)
    big_pinned_s = pinned_upload(cl, eng.ctx, eng.queue, [big], ns.reps)
    out: dict[str, Any] = {
        "bundle": ns.bundle.name,
        "device": dev["name"],
        "inputs": len(hosts),
        "input_bytes": total,
        "stage_s": stage_s,
        "engine_s": engine_s,
        "pinned_s": pinned_s,
        "engine_gb_s": total / engine_s / 1e9 if engine_s else None,
        "pinned_gb_s": total / pinned_s / 1e9 if pinned_s else None,
        "ratio_engine_vs_pinned": pinned_s / engine_s if engine_s else None,
        "scaled_bytes": big,
        "scaled_stage_s": big_stage_s,
        "scaled_engine_gb_s": big / big_engine_s / 1e9,
        "scaled_pinned_gb_s": big / big_pinned_s / 1e9,
        "scaled_ratio_engine_vs_pinned": big_pinned_s / big_engine_s,
    }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
