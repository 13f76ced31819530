"""Replay benchmarks (issue 4): host overhead per launch, one run vs one process per kernel.

    .venv/bin/python benchmarks/bench_replay.py [HEAT2D_DIR] [--device pocl] [--repeat 200]

1. Host overhead per replayed launch: the engine's back-to-back repetitions of the
   heat2d window 122380-122404 (25 kernels) and 122380-122419 (37 kernels, with the reload
   after the host write at 122407 inside the loop) against a raw pyopencl loop enqueueing the
   same kernel objects in the same process.  Inputs are restored between repetitions, outside
   the measured loop.  Goal <= 1.3x.
2. A 50-kernel range (heat2d 122367-122419: the 50 kernel enqueues before the end of the
   dump window) replayed in one child process against the same kernels replayed one child
   process per kernel (what the layer's run.py does).  Goal >= 20x.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cltui.capture import open_capture
from cltui.replay import runner
from cltui.replay.devices import select_devices
from cltui.replay.engine import Engine, dir_loader
from cltui.replay.plan import build_plan
from cltui.replay.ranges import parse_range


def overhead(cap_path: Path, device: dict[str, object], rng: str, repeat: int) -> None:
    import pyopencl as cl

    cap = open_capture(cap_path)
    m = build_plan(cap, parse_range(rng)).to_manifest()
    eng = Engine(m, dict(device), dir_loader(m, cap.path))
    eng.prepare()
    geoms = [
        (tuple(s["global"]), tuple(s["local"]) if s.get("local") else None) for s in m["steps"]
    ]
    q = eng.queue
    n = len(geoms)
    res = eng.run(1)
    assert res["ok"], "the replay itself must pass"
    replay_ns: list[int] = []
    raw_ns: list[int] = []
    for _ in range(repeat):  # alternate one repetition each: both see the same machine state
        replay_ns += eng.repeat_launches(1)
        t0 = time.perf_counter_ns()
        for k, (g, lws) in zip(eng.kernels, geoms, strict=True):
            cl.enqueue_nd_range_kernel(q, k, g, lws)
        raw_ns.append(time.perf_counter_ns() - t0)
        q.finish()
    replay = statistics.median(replay_ns) / n
    raw = statistics.median(raw_ns) / n
    reloads = sum(1 for s in m["steps"] for ld in s["loads"] if ld["why"] == "reload")
    print(f"host time per launch, {rng}: {n} kernels, {reloads} reload(s) inside the loop,")
    print(f"  {repeat} alternating repetitions (median):")
    print(f"  raw pyopencl loop      {raw / 1e3:8.2f} us")
    print(f"  cltui replay loop      {replay / 1e3:8.2f} us")
    print(f"  ratio                  {replay / raw:8.2f} x  (goal <= 1.3)")


def per_process(cap_path: Path, device: dict[str, object]) -> None:
    cap = open_capture(cap_path)
    plan = build_plan(cap, parse_range("122367-122419"))
    steps = plan.enqueues[-50:]
    first = steps[0]
    plan = build_plan(cap, parse_range(f"{first}-122419"))
    assert len(plan.steps) == 50, len(plan.steps)
    t0 = time.perf_counter()
    rep = runner.run(plan.to_manifest(), [dict(device)], data_root=cap.path)
    one = time.perf_counter() - t0
    assert rep["devices"][0]["status"] == "ok"
    t0 = time.perf_counter()
    for n in plan.enqueues:
        single = build_plan(cap, parse_range(str(n)), "isolated")
        runner.run(single.to_manifest(), [dict(device)], data_root=cap.path)
    many = time.perf_counter() - t0
    print(f"50 kernels ({plan.enqueues[0]}-{plan.enqueues[-1]}):")
    print(f"  one run                {one:8.2f} s")
    print(f"  one process per kernel {many:8.2f} s")
    print(f"  speed-up               {many / one:8.1f} x  (goal >= 20)")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "heat2d", nargs="?", default=os.environ.get("CLTUI_HEAT2D_DIR", "/tmp/heat2d/heat2d_large")
    )
    ap.add_argument("--device", default="pocl")
    ap.add_argument("--repeat", type=int, default=1000)
    a = ap.parse_args()
    dev = select_devices([a.device])[0]
    print(f"device: {dev['id']} {dev['name']}")
    overhead(Path(a.heat2d), dev, "122380-122404", a.repeat)
    overhead(Path(a.heat2d), dev, "122380-122419", a.repeat)
    per_process(Path(a.heat2d), dev)
    return 0


if __name__ == "__main__":
    sys.exit(main())
