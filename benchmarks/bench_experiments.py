"""Experiment benchmarks (issue 15), side by side in one run, on PoCL.

1. Sweep throughput: ``cltui sweep`` (a subprocess, start to end: opening the capture, the
   plans, one child per device that builds ahead and runs every point: validation with
   its checks, then timed runs) against a hand-written pyopencl loop (one subprocess) that
   builds and runs the SAME configurations (the variants' plans, as JSON): per
   configuration it builds each program (a dict cache per (source, options), as one would
   write it), creates and uploads the buffers, sets the arguments, runs the range once with
   a read-back and a comparison after each kernel, then ``repeat - 1`` timed runs with the
   inputs restored.  Configurations per second; goal cltui / loop >= 0.8.  On a small
   kernel (pyopencl_lib_pocl 23) and a 10-kernel chained range (22-31).
2. The run.py way: the same loop, one fresh process per configuration (python, pyopencl,
   a context, the builds, PoCL's own cache warm).  Goal cltui / one-per-process >= 20x.
3. A against A: ``cltui try`` machinery (one child, A and an unchanged B timed in turns)
   TRIALS times; the share of trials whose 95 % interval of the range's difference holds
   zero.  Goal >= 95 %.

Every side is run once first (warm PoCL kernel cache, warm binary cache).

    .venv/bin/python benchmarks/bench_experiments.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CAPTURE = Path(os.environ.get("CLTUI_SHARED", "/work/shared")) / "captures" / "pyopencl_lib_pocl"
PY = sys.executable

LOOP = r'''
import json, sys, numpy as np, pyopencl as cl
job = json.load(open(sys.argv[1]))
root = job["root"]
plat = next(p for p in cl.get_platforms() if "Portable" in p.name)
dev = plat.get_devices()[0]
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
built = {}
def data(plan, key):
    return np.fromfile(root + "/" + plan["data"][key]["path"], dtype=np.uint8)
ok = 0
for plan in job["plans"]:
    progs = {}
    for pid, spec in plan["programs"].items():
        ref = plan["data"][spec["source"]]
        src = open(ref["path"] if ref.get("origin") else root + "/" + ref["path"]).read()
        opts = " ".join(w for w in spec["options"].split()
                        if not w.startswith("-I") and "/" not in w)
        key = (src, opts)
        if key not in built:
            built[key] = cl.Program(ctx, src).build(options=opts)
        progs[pid] = built[key]
    mf = cl.mem_flags
    bufs = {m: cl.Buffer(ctx, mf.READ_WRITE, size=max(info["size"], 1))
            for m, info in plan["memory"].items()}
    inputs = []
    kernels = []
    for st in plan["steps"]:
        k = cl.Kernel(progs[st["program"]], st["kernel"])
        for a in st["args"]:
            if a["kind"] == "buffer":
                k.set_arg(a["index"], bufs[a["mem"]])
            elif a["kind"] == "scalar":
                raw = bytes.fromhex(a["hex"])
                k.set_arg(a["index"], np.frombuffer(raw, dtype=np.uint8).copy())
            elif a["kind"] == "local":
                k.set_arg(a["index"], cl.LocalMemory(a["size"]))
        for ld in st["loads"]:
            inputs.append((bufs[ld["mem"]], data(plan, ld["data"])))
        kernels.append((k, tuple(st["global"]), tuple(st["local"]) if st["local"] else None))
    def restore():
        for b, h in inputs:
            cl.enqueue_copy(q, b, h)
    restore()
    good = True
    for st, (k, g, l) in zip(plan["steps"], kernels):
        cl.enqueue_nd_range_kernel(q, k, g, l)
        for c in st["checks"]:
            out = np.empty(plan["memory"][c["mem"]]["size"], dtype=np.uint8)
            cl.enqueue_copy(q, out, bufs[c["mem"]])
            good = good and np.array_equal(out, data(plan, c["data"]))
    q.finish()
    for _ in range(job["repeat"] - 1):
        restore(); q.finish()
        for k, g, l in kernels:
            cl.enqueue_nd_range_kernel(q, k, g, l)
        q.finish()
    ok += good
    print("config", good, flush=True)
print(json.dumps({"configs": len(job["plans"]), "ok": ok}))
'''


def _plans(rng: str, local: list[str], options: list[str], defines: list[str],
           tmp: Path) -> list[dict]:  # fmt: skip
    from cltui.capture import open_capture
    from cltui.capture.ranges import parse_range
    from cltui.replay.experiment.apply import apply_variant
    from cltui.replay.experiment.sweep import SweepSpec, points
    from cltui.replay.experiment.variant import parse_size
    from cltui.replay.plan import build_plan

    base = build_plan(open_capture(CAPTURE), parse_range(rng)).to_manifest()
    spec = SweepSpec(rng, local=tuple(parse_size(v) for v in local), options=tuple(options),
                     defines=(("BENCH_D", tuple(defines)),) if defines else ())
    return [dict(apply_variant(base, v, CAPTURE, tmp)) for v in points(spec)]


def _timed(cmd: list[str], env: dict[str, str] | None = None,
           mark: str = "") -> tuple[float, float | None, str]:  # fmt: skip
    """Run ``cmd``: its wall time, the steady rate of the lines starting with ``mark``
    (lines a second between the first and the last one), its stdout."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)  # fmt: skip
    stamps: list[float] = []
    lines: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        if mark and line.startswith(mark):
            stamps.append(time.perf_counter())
        lines.append(line)
    err = proc.stderr.read() if proc.stderr else ""
    rc = proc.wait(timeout=1200)
    wall = time.perf_counter() - t0
    assert rc in (0, 1), err[-2000:]
    rate = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 2 else None
    return wall, rate, "".join(lines)


def sweep_part(rng: str, local: list[str], options: list[str], repeat: int, tmp: Path,
               one_per_process: bool, defines: list[str] | None = None) -> dict:  # fmt: skip
    plans = _plans(rng, local, options, defines or [], tmp)
    job = tmp / f"loop_{rng}.json"
    job.write_text(json.dumps({"root": str(CAPTURE), "plans": plans, "repeat": repeat}))
    script = tmp / "loop.py"
    script.write_text(LOOP)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CLTUI_DATA_DIR": str(tmp / "data")}
    sweep = [PY, "-m", "cltui", "sweep", str(CAPTURE), rng, "-d", "pocl", "--repeat",
             str(repeat), "--local", ",".join(local)]  # fmt: skip
    for opt in options:
        sweep.append(f"--options={opt}")
    if defines:
        sweep.append("--define=BENCH_D=" + ",".join(defines))
    loop = [PY, str(script), str(job)]
    for _ in range(2):  # warm: PoCL's kernel cache, cltui's binary cache
        _timed(sweep, env)
        _timed(loop)
    rows: dict[str, list[tuple[float, float | None]]] = {"cltui": [], "loop": []}
    for _ in range(3):  # interleaved; the best of three each
        wall, rate, out = _timed(sweep, env, "1:0 ")
        assert out.count("\n1:0 ") + out.startswith("1:0 ") == len(plans), out[-2000:]
        rows["cltui"].append((len(plans) / wall, rate))
        wall, rate, _out = _timed(loop, None, "config ")
        rows["loop"].append((len(plans) / wall, rate))
    per_process = None
    if one_per_process:
        total = 0.0
        for i, plan in enumerate(plans):
            one = tmp / f"one_{i}.json"
            one.write_text(json.dumps({"root": str(CAPTURE), "plans": [plan], "repeat": repeat}))
            wall, _rate, _out = _timed([PY, str(script), str(one)])
            total += wall
        per_process = len(plans) / total
    c_end = max(r[0] for r in rows["cltui"])
    l_end = max(r[0] for r in rows["loop"])
    c_rate = max(r[1] or 0.0 for r in rows["cltui"])
    l_rate = max(r[1] or 0.0 for r in rows["loop"])
    return {
        "range": rng, "configs": len(plans), "repeat": repeat,
        "steady_configs_per_s": {"cltui": c_rate, "loop": l_rate},
        "end_to_end_configs_per_s": {"cltui": c_end, "loop": l_end, "per_process": per_process},
        "steady_vs_loop": c_rate / l_rate, "end_to_end_vs_loop": c_end / l_end,
        "steady_vs_per_process": c_rate / per_process if per_process else None,
        "end_to_end_vs_per_process": c_end / per_process if per_process else None,
    }  # fmt: skip


def a_vs_a(trials: int, repeat: int, rng: str, tmp: Path) -> dict:
    from cltui.capture import open_capture
    from cltui.capture.ranges import parse_range
    from cltui.replay.devices import select_devices
    from cltui.replay.experiment.job import ExperimentJob, Point
    from cltui.replay.experiment.report import ab_report
    from cltui.replay.plan import build_plan

    base = build_plan(open_capture(CAPTURE), parse_range(rng)).to_manifest()
    devs = select_devices(["pocl"])
    held = 0
    widths = []
    for _ in range(trials):
        job = ExperimentJob(base, [Point("B", base)], devs, CAPTURE, repeat=repeat,
                            interleave=True)  # fmt: skip
        events = [e for e in job.events() if e["type"] == "point"]
        job.cleanup()
        d = ab_report(base, base, events, devs, repeat)["devices"][0]["timing"]
        held += d["lo"] <= 0 <= d["hi"]
        widths.append((d["hi"] - d["lo"]) / d["a"])
    return {"range": rng, "trials": trials, "repeat": repeat, "held_zero": held / trials,
            "median_relative_width": sorted(widths)[len(widths) // 2]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    local = ["8", "16", "32", "64", "128", "256", "512", "1024"]
    options = ["-cl-mad-enable", "-cl-fast-relaxed-math"]
    trials = 20 if args.quick else 100
    with tempfile.TemporaryDirectory(prefix="cltui-bench-exp-") as t:
        tmp = Path(t)
        out = {
            "small": sweep_part("23", local, options, 10, tmp, one_per_process=True),
            "small_65": sweep_part("23", local, options, 10, tmp, one_per_process=False,
                                   defines=["1", "2", "3", "4"]),
            "chain": sweep_part("22-31", local[2:6], options, 10, tmp,
                                one_per_process=not args.quick),
            "a_vs_a": a_vs_a(trials, 30, "22-31", tmp),
        }  # fmt: skip
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
