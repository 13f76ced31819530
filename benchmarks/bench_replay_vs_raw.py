"""Replay benchmarks: cltui's engine and runner against raw pyopencl doing the same work.

1. Host overhead per launch.  One prepared :class:`~cltui.replay.engine.Engine` on the
   device runs the range back to back (``run(repeat)``: its timing repetitions restore
   the range's inputs, then launch every step with the reloads the plan asks for, no
   wait; the engine's own loop timer, host time per repetition).  The baseline, in the
   same process, on the same queue, enqueues the same kernel objects (arguments already
   set) with the same geometry and the same reloads (a device-side copy from a staged
   buffer, as the engine does them), in a plain Python loop timed the same way.  The two
   alternate round by round; each round's figure is the median repetition, and the ratio
   is the median over rounds of engine/raw (each round against the raw round next to it).
   Goal: engine / raw <= 1.3.  Both run in a child process whose PoCL has one worker
   thread (``POCL_MAX_PTHREAD_COUNT=1``), so the host loop has a core of its own: with
   PoCL's default of one worker per core, on a 2-core machine the host thread shares both
   cores with the workers running the kernels it has just enqueued, and a share of the
   repetitions (40-70 % in one measurement, raw pyopencl's too) run at ~6 us a launch
   instead of ~2 us, which times the scheduler rather than the loop.  The same pairing
   with PoCL's default workers is measured too and reported without a goal.
2. A chained range in one run (``cltui.replay.runner``: one child process that builds,
   uploads, runs and checks the whole range) against one process per kernel: a fresh
   ``python`` per kernel that imports pyopencl, creates a context, builds that kernel's
   program from source, uploads its Pre dumps, sets its arguments, runs it, reads its
   outputs back and compares them with the Post dumps (what the layer's own ``run.py``
   does per ``Replay/`` folder; no cltui import in those children).  Goal >= 20x.
3. Upload: the engine's input path (the data file memory-mapped by ``dir_loader``, then
   ``Engine._write``, waited for) against ``cl.enqueue_copy`` of the same bytes already in a
   numpy array in RAM, blocking (and against ``np.fromfile`` + that copy); the range's real
   inputs and one 64 MiB file.

    .venv/bin/python benchmarks/bench_replay_vs_raw.py [--device pocl] [--quick]
        [--part all|overhead|range] [--range DUMPDIR:RANGE ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cltui.capture import open_capture
from cltui.capture.model import EnqueueKind
from cltui.capture.ranges import parse_range
from cltui.replay import engine as eng_mod
from cltui.replay import runner
from cltui.replay.devices import select_devices
from cltui.replay.engine.base import _Mem
from cltui.replay.engine.builds import _build_options
from cltui.replay.plan import build_plan

HEAT2D = Path(os.environ.get("CLTUI_HEAT2D_DIR", "/tmp/heat2d/heat2d_large"))
SHARED = Path(os.environ.get("CLTUI_SHARED", Path(__file__).resolve().parents[2] / "shared"))
PYOCL = SHARED / "captures" / "pyopencl_lib_pocl"

# One kernel in one process, raw pyopencl (the layer's run.py, minus its argument parsing).
RAW_CHILD = r"""
import json, sys
import numpy as np
import pyopencl as cl
job = json.load(open(sys.argv[1]))
plat = cl.get_platforms()[job["platform"]]
dev = plat.get_devices()[job["device"]]
ctx = cl.Context([dev])
q = cl.CommandQueue(ctx, dev)
src = open(job["source"], "rb").read().rstrip(b"\0").decode("utf-8", "replace")
prg = cl.Program(ctx, src).build(options=job["options"])
kern = cl.Kernel(prg, job["kernel"])
mf = cl.mem_flags
bufs = {}
for mid, size in job["memory"].items():
    bufs[mid] = cl.Buffer(ctx, mf.READ_WRITE, max(int(size), 1))
for mid, path in job["loads"].items():
    host = np.fromfile(path, dtype=np.uint8)
    cl.enqueue_copy(q, bufs[mid], host[: job["memory"][mid]])
for a in job["args"]:
    k = a["kind"]
    if k in ("buffer", "svm"):
        v = bufs[a["mem"]]
    elif k == "scalar":
        v = np.frombuffer(bytes.fromhex(a["hex"]), dtype=np.uint8)
    elif k == "local":
        v = cl.LocalMemory(max(int(a["size"]), 1))
    else:
        v = None
    kern.set_arg(int(a["index"]), v)
g = tuple(job["global"])
lws = tuple(job["local"]) if job["local"] else None
off = tuple(job["offset"]) if job["offset"] else None
cl.enqueue_nd_range_kernel(q, kern, g, lws, off)
ok = True
for mid, path in job["checks"].items():
    out = np.empty(job["memory"][mid], dtype=np.uint8)
    cl.enqueue_copy(q, out, bufs[mid])
    want = np.fromfile(path, dtype=np.uint8)
    ok = ok and np.array_equal(out[: want.size], want)
q.finish()
print(json.dumps({"ok": bool(ok)}))
"""


def heat2d_50(cap: Any) -> str:
    """The 50 kernel enqueues that end at 122419 (the end of heat2d's dump window)."""
    pos = cap.find(kinds=[EnqueueKind.KERNEL], first=122000, last=122419)
    nums = [int(cap.numbers[p]) for p in pos]
    return f"{nums[-50]}-{nums[-1]}"


# --------------------------------------------------------------------------- 1. overhead


def overhead(
    cap_path: Path,
    rng_text: str,
    device: dict[str, Any],
    repeat: int,
    rounds: int,
    device_must_match: bool = True,
) -> dict[str, Any]:
    """Part 1 on one range; ``device_must_match``: the replay must equal the capture (off
    for another vendor's device, where results may differ by a few ULP)."""
    import pyopencl as cl

    cap = open_capture(cap_path)
    m = build_plan(cap, parse_range(rng_text)).to_manifest()
    eng = eng_mod.Engine(m, dict(device), eng_mod.dir_loader(m, cap.path))
    eng.prepare()
    steps = m["steps"]
    n = len(steps)
    q = eng.queue
    first = eng.run(2)  # the loads the engine really does (a "verify" load may not fire)
    if first.get("error") or (device_must_match and not first["ok"]):
        raise SystemExit(f"replay of {rng_text} failed: {first.get('error') or 'a mismatch'}")
    # The baseline's own copy of the same work.  Inputs a step loads for the first use of
    # an object are restored before each repetition, outside the timed loop; loads at a
    # later step (reloads after a host-side change) are writes inside the loop, as in the
    # engine.
    seen: set[str] = set()
    restores: list[tuple[Any, Any]] = []
    inloop: list[list[tuple[Any, Any]]] = []
    ro_copy = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
    for st, st_res in zip(steps, first["steps"], strict=True):
        row = []
        for ld, ld_res in zip(st["loads"], st_res["loads"], strict=True):
            pair = (eng.mems[ld["mem"]].buf, np.array(eng.loader(ld["data"])))
            if ld.get("why", "input") == "input" and ld["mem"] not in seen:
                restores.append(pair)
            elif ld_res.get("done", True):
                # as the engine does: a device-side copy from a staged buffer
                row.append((pair[0], cl.Buffer(eng.ctx, ro_copy, hostbuf=pair[1])))
        for arg in st["args"]:
            if arg.get("mem") is not None:
                seen.add(arg["mem"])
        inloop.append(row)
    geoms = [
        (
            tuple(int(x) for x in st["global"]),
            tuple(int(x) for x in st["local"]) if st.get("local") else None,
            tuple(int(x) for x in st["offset"]) if st.get("offset") else None,
        )
        for st in steps
    ]
    work = list(zip(eng.kernels, geoms, inloop, strict=True))
    launch = cl.enqueue_nd_range_kernel
    copy = cl.enqueue_copy
    clock = time.perf_counter_ns

    def raw_round() -> list[int]:
        per_rep: list[int] = []
        for _ in range(repeat):
            for buf, host in restores:
                copy(q, buf, host, is_blocking=False)
            q.finish()
            t0 = clock()
            for kern, (g, lws, off), loads in work:
                for buf, stage in loads:
                    copy(q, buf, stage)
                launch(q, kern, g, lws, off)
            per_rep.append(clock() - t0)
            q.finish()
        return per_rep

    eng_rounds: list[float] = []
    raw_rounds: list[float] = []
    launch_eng: list[float] = []
    launch_raw: list[float] = []
    for r in range(rounds):
        for side in ("engine", "raw") if r % 2 == 0 else ("raw", "engine"):
            if side == "engine":
                res = eng.run(repeat + 1)  # +1: the first repetition is the validation run
                if res.get("error") or (device_must_match and not res["ok"]):
                    raise SystemExit(
                        f"replay of {rng_text} failed: {res.get('error') or 'a mismatch'}"
                    )
                per_rep = ((res.get("loop") or {}).get("host_ns_per_repetition") or {}).get(
                    "median"
                )
                if per_rep is None:
                    raise SystemExit("this engine reports no loop timer (result['loop'])")
                eng_rounds.append(float(per_rep) / n)
                launch_eng.append(
                    statistics.median(st["timing"]["host_enqueue"]["median"] for st in res["steps"])
                )
            else:
                raw_rounds.append(statistics.median(raw_round()) / n)
                # the launch call alone
                t_launch: list[int] = []
                for kern, (g, lws, off), _loads in work:
                    t0 = clock()
                    launch(q, kern, g, lws, off)
                    t_launch.append(clock() - t0)
                q.finish()
                launch_raw.append(statistics.median(t_launch))
    # paired: each round's engine figure against the raw figure measured next to it
    ratios = [e / w for e, w in zip(eng_rounds, raw_rounds, strict=True)]
    cap.close()
    return {
        "capture": cap_path.name,
        "range": rng_text,
        "kernels": n,
        "restores_per_repetition": len(restores),
        "writes_in_loop_per_repetition": sum(len(x) for x in inloop),
        "repeat": repeat,
        "rounds": rounds,
        "engine_us_per_launch": statistics.median(eng_rounds) / 1e3,
        "raw_us_per_launch": statistics.median(raw_rounds) / 1e3,
        "ratio": statistics.median(ratios),
        "ratio_rounds": ratios,
        "engine_launch_call_us": statistics.median(launch_eng) / 1e3,
        "raw_launch_call_us": statistics.median(launch_raw) / 1e3,
    }


# --------------------------------------------------------------------------- 2. per process


def _raw_jobs(cap: Any, manifest: dict[str, Any], device: dict[str, Any], tmp: Path) -> list[Path]:
    """One JSON job per kernel enqueue (its isolated plan: its own Pre dumps as inputs)."""
    root = Path(cap.path)
    pi, di = (int(x) for x in device["id"].split(":"))
    jobs: list[Path] = []
    for st in manifest["steps"]:
        single = build_plan(cap, parse_range(str(st["enqueue"])), "isolated").to_manifest()
        s = single["steps"][0]
        prog = single["programs"][s["program"]]
        if not prog.get("source"):
            raise SystemExit(f"enqueue {st['enqueue']}: no program source for the raw baseline")
        options, _notes = _build_options(prog.get("options") or "")
        data = single["data"]
        job = {
            "platform": pi,
            "device": di,
            "source": str(root / data[prog["source"]]["path"]),
            "options": options,
            "kernel": s["kernel"],
            "memory": {mid: int(info["size"]) for mid, info in single["memory"].items()},
            "loads": {ld["mem"]: str(root / data[ld["data"]]["path"]) for ld in s["loads"]},
            "checks": {
                c["mem"]: str(root / data[c["data"]]["path"]) for c in s["checks"] if c.get("data")
            },
            "args": s["args"],
            "global": s["global"],
            "local": s["local"],
            "offset": s["offset"],
        }
        path = tmp / f"job_{st['enqueue']}.json"
        path.write_text(json.dumps(job))
        jobs.append(path)
    return jobs


def per_process(
    cap_path: Path, rng_text: str | None, device: dict[str, Any], rounds: int
) -> dict[str, Any]:
    cap = open_capture(cap_path)
    rng_text = rng_text or heat2d_50(cap)
    manifest = build_plan(cap, parse_range(rng_text)).to_manifest()
    n = len(manifest["steps"])
    programs = len({s["program"] for s in manifest["steps"]})
    with tempfile.TemporaryDirectory(prefix="cltui-bench-proc-") as tmp:
        jobs = _raw_jobs(cap, manifest, device, Path(tmp))
        one_best = float("inf")
        many_best = float("inf")
        raw_ok = 0
        # one "many" round costs ~n one-run rounds: run it once per two one-run rounds
        order = ["one", "many", "one"] + ["one", "many", "one"] * (rounds - 1)
        checks_ok = True
        for k, side in enumerate(order):
            t0 = time.perf_counter()
            if side == "one":
                rep = runner.run(
                    manifest,
                    [dict(device)],
                    data_root=cap.path,
                    timeout=120.0,
                    save_dir=Path(tmp) / f"out{k}",
                )
                dt = time.perf_counter() - t0
                checks_ok = checks_ok and bool(rep["ok"])
                one_best = min(one_best, dt)
            else:
                raw_ok = 0
                for job in jobs:
                    out = subprocess.run(
                        [sys.executable, "-c", RAW_CHILD, str(job)],
                        capture_output=True,
                        text=True,
                        check=False,
                    )
                    if out.returncode != 0:
                        raise SystemExit(f"raw child failed on {job.name}: {out.stderr[-400:]}")
                    raw_ok += json.loads(out.stdout.strip().splitlines()[-1])["ok"]
                many_best = min(many_best, time.perf_counter() - t0)
    cap.close()
    return {
        "capture": cap_path.name,
        "range": rng_text,
        "kernels": n,
        "programs": programs,
        "one_run_s": one_best,
        "per_process_s": many_best,
        "per_process_s_per_kernel": many_best / n,
        "ratio": many_best / one_best,
        "one_run_status": "ok" if checks_ok else "not ok",
        "raw_children_matching_post": raw_ok,
    }


# --------------------------------------------------------------------------- 3. upload


def upload(cap_path: Path, rng_text: str, device: dict[str, Any], rounds: int) -> dict[str, Any]:
    import pyopencl as cl

    cap = open_capture(cap_path)
    m = build_plan(cap, parse_range(rng_text)).to_manifest()
    out: dict[str, Any] = {"capture": cap_path.name, "range": rng_text, "cases": []}
    with tempfile.TemporaryDirectory(prefix="cltui-bench-up-") as tmp:
        big = Path(tmp) / "upload64.bin"
        np.random.default_rng(3).integers(0, 255, 64 << 20, dtype=np.uint8).tofile(big)
        eng = eng_mod.Engine(m, dict(device), eng_mod.dir_loader(m, cap.path))
        eng.prepare()
        q = eng.queue
        plan_loads = [
            (eng.mems[ld["mem"]], ld, eng.loader) for st in m["steps"] for ld in st["loads"]
        ]
        big_plan = {"data": {"big": {"path": big.name, "size": 64 << 20}}}
        big_loader = eng_mod.dir_loader(big_plan, tmp)
        big_mem = _Mem({"kind": "buffer", "size": 64 << 20})
        big_mem.buf = big_mem.obj = cl.Buffer(eng.ctx, cl.mem_flags.READ_WRITE, 64 << 20)
        cases = [
            ("range inputs", plan_loads),
            ("one 64 MiB file", [(big_mem, {"data": "big"}, big_loader)]),
        ]
        for label, loads in cases:
            in_ram = [(mem.buf, np.array(loader(ld["data"]))) for mem, ld, loader in loads]
            files = [
                (mem.buf, str(getattr(loader(ld["data"]), "filename", "")))
                for mem, ld, loader in loads
            ]
            nbytes = sum(int(h.nbytes) for _b, h in in_ram)

            def ours(loads: Any = loads) -> None:
                for mem, ld, loader in loads:
                    eng.loader = loader
                    host = eng._host_input(ld, mem)
                    eng._write(mem, host, blocking=True)

            def plain(in_ram: Any = in_ram) -> None:
                for buf, host in in_ram:
                    cl.enqueue_copy(q, buf, host, is_blocking=True)

            def from_file(files: Any = files) -> None:
                for buf, path in files:
                    cl.enqueue_copy(q, buf, np.fromfile(path, dtype=np.uint8), is_blocking=True)

            best = {"cltui": float("inf"), "plain": float("inf"), "file": float("inf")}
            sides = [("cltui", ours), ("plain", plain), ("file", from_file)]
            reps = 5 if nbytes < (1 << 20) else 3
            for r in range(rounds * reps):
                for name, fn in sides if r % 2 == 0 else sides[::-1]:
                    t0 = time.perf_counter()
                    fn()
                    q.finish()
                    best[name] = min(best[name], time.perf_counter() - t0)
            out["cases"].append(
                {
                    "what": label,
                    "files": len(loads),
                    "bytes": nbytes,
                    "cltui_mb_s": nbytes / best["cltui"] / 1e6,
                    "plain_mb_s": nbytes / best["plain"] / 1e6,
                    "from_file_mb_s": nbytes / best["file"] / 1e6,
                    "ratio": best["plain"] / best["cltui"],
                    "ratio_vs_from_file": best["file"] / best["cltui"],
                }
            )
        eng.loader = eng_mod.dir_loader(m, cap.path)
    cap.close()
    return out


def overheads(
    device_spec: str, quick: bool, ranges: list[tuple[Path, str]] | None = None
) -> list[dict[str, Any]]:
    """Part 1 in this process (``--part overhead``): heat2d's and pyopencl_lib_pocl's ranges,
    or ``ranges`` (capture folder, range) with mismatches allowed (another vendor's device)."""
    dev = select_devices([device_spec])[0]
    workers = os.environ.get("POCL_MAX_PTHREAD_COUNT") or "default"
    reps, rounds = (100, 5) if quick else (200, 9)
    if ranges is None:
        out = [
            overhead(HEAT2D, "122380-122419", dev, reps, rounds),
            overhead(PYOCL, "0-39", dev, reps // 2, rounds),
        ]
    else:
        out = [overhead(cap, rng, dev, reps, rounds, False) for cap, rng in ranges]
    for o in out:
        o["pocl_workers"] = workers
        o["device"] = dev
    return out


def overheads_child(device_spec: str, quick: bool, workers: int | None) -> list[dict[str, Any]]:
    """Part 1 in a child process whose PoCL runs ``workers`` worker threads (None: PoCL's
    default, one per core); the variable must be set before PoCL is loaded."""
    env = dict(os.environ)
    env.pop("POCL_MAX_PTHREAD_COUNT", None)
    if workers is not None:
        env["POCL_MAX_PTHREAD_COUNT"] = str(workers)
    cmd = [sys.executable, __file__, "--device", device_spec, "--part", "overhead"]
    out = subprocess.run(
        cmd + (["--quick"] if quick else []), capture_output=True, text=True, env=env, check=False
    )
    if out.returncode != 0:
        raise SystemExit(f"overhead child failed: {out.stderr.strip()[-400:]}")
    result: list[dict[str, Any]] = json.loads(out.stdout)
    return result


def run(device_spec: str = "pocl", quick: bool = False) -> dict[str, Any]:
    dev = select_devices([device_spec])[0]
    rounds = 2 if quick else 3
    res: dict[str, Any] = {"device": dev}
    res["overhead"] = overheads_child(device_spec, quick, 1)
    res["overhead_default_workers"] = overheads_child(device_spec, quick, None)
    res["range"] = [
        per_process(HEAT2D, None, dev, 1 if quick else 2),
        per_process(PYOCL, "0-39", dev, 1),
    ]
    res["upload"] = [upload(HEAT2D, "122380-122419", dev, rounds)]
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="pocl", help="a P:D index or a name substring")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--part", choices=("all", "overhead", "range"), default="all")
    ap.add_argument(
        "--range",
        action="append",
        default=[],
        metavar="DUMPDIR:RANGE",
        help="with --part overhead|range: these ranges instead of the standard ones (repeatable)",
    )
    ns = ap.parse_args(argv)
    ranges = [(Path(r.rsplit(":", 1)[0]), r.rsplit(":", 1)[1]) for r in ns.range] or None
    if ns.part == "overhead":
        print(json.dumps(overheads(ns.device, ns.quick, ranges), indent=1))
        return 0
    if ns.part == "range":
        dev = select_devices([ns.device])[0]
        todo = ranges or [(HEAT2D, None), (PYOCL, "0-39")]
        print(json.dumps([per_process(c, r, dev, 1) | {"device": dev} for c, r in todo], indent=1))
        return 0
    print(json.dumps(run(ns.device, ns.quick), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
