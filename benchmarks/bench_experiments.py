"""Experiment benchmarks (issue 15), side by side in one run, on PoCL.

1. Sweep throughput: ``cltui sweep`` (a subprocess, start to end: opening the capture, the
   plans, one child per device that builds ahead and runs every point: validation with
   its checks, then timed runs) against a hand-written pyopencl loop (one subprocess) that
   builds and runs the SAME configurations (the variants' plans, as JSON): per
   configuration it builds each program (a dict cache per (source, options), as one would
   write it), creates and uploads the buffers, sets the arguments, runs the range once with
   a read-back and a comparison after each kernel, then ``repeat - 1`` timed runs with the
   inputs restored (device time from the queue's profiling); then, as the sweep confirms
   its best, the ``TOP`` fastest correct configurations again beside the capture's own,
   checked, then timed in turns (A B B A ...).  Configurations per second; goal cltui /
   loop >= 0.8.  On a small kernel (pyopencl_lib_pocl 23) and a 10-kernel chained range
   (22-31).
2. The run.py way: the same loop, one fresh process per configuration (python, pyopencl,
   a context, the builds, PoCL's own cache warm; no confirmation runs).  Goal cltui /
   one-per-process >= 20x.
3. A against A: ``cltui try`` machinery (one child, A and an unchanged B timed in turns)
   TRIALS times; the share of trials whose 95 % interval of the range's difference holds
   zero.  Goal >= 95 %.

4. ``cltui replay`` of the small range (23), end to end: the same start-up as a sweep's (the
   child started ahead, the capture, the plan) against the loop running its one
   configuration once.

Every side is run twice first (warm PoCL kernel cache, warm binary cache), then the best
of ``--turns`` (5), the sides taking turns.  The subprocesses run with Python's bytecode cache on
(as an installed cltui: ``PYTHONDONTWRITEBYTECODE`` is dropped from their environment;
with it set, every start compiles cltui's ~300 modules again, ~0.1 s a process), from the
repository root.  ``--before DIR`` runs a checkout of an earlier commit (``git archive
REV | tar -x -C DIR``) beside this one, in the same turns: the start-up before and after.
``--md`` writes the section of BENCHMARKS.md (in place; the other sections stay) from the
results; ``--parts`` picks what runs (the results of the parts not run are kept).

    .venv/bin/python benchmarks/bench_experiments.py [--quick] [--before DIR] [--md]
        [--parts sweeps,replay,a_vs_a]
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
RESULTS = ROOT / "benchmarks" / "results" / "experiments_pocl.json"
SECTION = "## Experiments: sweep throughput and the A/B interval (PoCL)"
# what runs a cltui: this tree, and an earlier checkout (--before)
TREES: dict[str, Path] = {"cltui": ROOT}
TURNS = 5  # timed runs of each side (the best counts: a shared machine's load comes and goes)


def _env(tree: Path, tmp: Path) -> dict[str, str]:
    """A subprocess's environment: bytecode cache on, ``tree`` first on the path."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": str(tree), "CLTUI_DATA_DIR": str(tmp / "data")}

LOOP = r'''
import json, sys, numpy as np, pyopencl as cl
job = json.load(open(sys.argv[1]))
root = job["root"]
plat = next(p for p in cl.get_platforms() if "Portable" in p.name)
dev = plat.get_devices()[0]
ctx = cl.Context([dev])
q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
built = {}
def data(plan, key):
    return np.fromfile(root + "/" + plan["data"][key]["path"], dtype=np.uint8)
def setup(plan):
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
    return plan, bufs, inputs, kernels
def restore(s):
    for b, h in s[2]:
        cl.enqueue_copy(q, b, h)
def checked(s):
    plan, bufs, _inputs, kernels = s
    restore(s)
    good = True
    for st, (k, g, l) in zip(plan["steps"], kernels):
        cl.enqueue_nd_range_kernel(q, k, g, l)
        for c in st["checks"]:
            out = np.empty(plan["memory"][c["mem"]]["size"], dtype=np.uint8)
            cl.enqueue_copy(q, out, bufs[c["mem"]])
            good = good and np.array_equal(out, data(plan, c["data"]))
    q.finish()
    return good
def timed(s):
    restore(s); q.finish()
    evs = [cl.enqueue_nd_range_kernel(q, k, g, l) for k, g, l in s[3]]
    q.finish()
    return sum(e.profile.end - e.profile.start for e in evs)
medians = {}
ok = 0
for i, plan in enumerate(job["plans"]):
    s = setup(plan)
    good = checked(s)
    times = sorted(timed(s) for _ in range(job["repeat"] - 1))
    if good and times:
        medians[i] = times[len(times) // 2]
    ok += good
    print("config", good, flush=True)
# the sweep's confirmation: the fastest correct points again beside the capture's own,
# checked, then timed in turns (A B B A ...: the order reverses each round)
base = job.get("base")
confirmed = 0
if base is not None and job.get("top"):
    top = sorted((t, i) for i, t in medians.items() if i != base)[:job["top"]]
    sides = [setup(job["plans"][base])] + [setup(job["plans"][i]) for _t, i in top]
    good = [checked(s) for s in sides]
    paired = [[] for _ in sides]
    for r in range(job["repeat"] - 1):
        for k in (range(len(sides)) if r % 2 == 0 else range(len(sides) - 1, -1, -1)):
            paired[k].append(timed(sides[k]))
    confirmed = sum(good[1:]) if good[0] else 0
print(json.dumps({"configs": len(job["plans"]), "ok": ok, "confirmed": confirmed}))
'''


def _plans(rng: str, local: list[str], options: list[str], defines: list[str],
           tmp: Path) -> tuple[list[dict], int | None]:  # fmt: skip
    """The sweep's plans, as it runs them, and which is the capture's own configuration."""
    from cltui.capture import open_capture
    from cltui.capture.ranges import parse_range
    from cltui.replay.experiment.apply import apply_variant, changes_nothing
    from cltui.replay.experiment.sweep import SweepSpec, points
    from cltui.replay.experiment.variant import parse_size
    from cltui.replay.plan import build_plan

    base = build_plan(open_capture(CAPTURE), parse_range(rng)).to_manifest()
    spec = SweepSpec(rng, local=tuple(parse_size(v) for v in local), options=tuple(options),
                     defines=(("BENCH_D", tuple(defines)),) if defines else ())
    # as the sweep runs them: a point that is the capture's own configuration is not run
    # again (the capture's row stands for it; commands.sweep.same_dropped)
    plans = [(v, apply_variant(base, v, CAPTURE, tmp)) for v in points(spec)]
    kept = [(v, dict(plan)) for v, plan in plans if v.empty or not changes_nothing(base, plan)]
    own = [i for i, (v, _plan) in enumerate(kept) if v.empty]
    return [plan for _v, plan in kept], own[0] if own else None


class Run:
    """One timed process: its wall time, the steady rate of its marked lines (lines a second
    between the first and the last one), when the first came (s), its stdout."""

    def __init__(self, wall: float, rate: float | None, first: float | None, out: str) -> None:
        self.wall, self.rate, self.first, self.out = wall, rate, first, out


def _timed(cmd: list[str], env: dict[str, str] | None = None, mark: str = "",
           cwd: Path = ROOT) -> Run:  # fmt: skip
    """Run ``cmd`` (from ``cwd``: ``python -m cltui`` imports the tree it runs in)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=cwd)  # fmt: skip
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
    return Run(wall, rate, stamps[0] - t0 if stamps else None, "".join(lines))


def _best(runs: list[Run]) -> dict[str, float | None]:
    """The best of the runs: shortest wall and first row, highest rate."""
    rates = [r.rate for r in runs if r.rate]
    firsts = [r.first for r in runs if r.first is not None]
    return {"wall_s": min(r.wall for r in runs), "steady_per_s": max(rates) if rates else None,
            "first_row_s": min(firsts) if firsts else None}  # fmt: skip


def sweep_part(rng: str, local: list[str], options: list[str], repeat: int, tmp: Path,
               one_per_process: bool, defines: list[str] | None = None) -> dict:  # fmt: skip
    from cltui.replay.experiment.runs import TOP

    plans, base = _plans(rng, local, options, defines or [], tmp)
    job = tmp / f"loop_{rng}.json"
    job.write_text(json.dumps({"root": str(CAPTURE), "plans": plans, "repeat": repeat,
                               "base": base, "top": TOP}))  # fmt: skip
    script = tmp / "loop.py"
    script.write_text(LOOP)
    sweep = [PY, "-m", "cltui", "sweep", str(CAPTURE), rng, "-d", "pocl", "--repeat",
             str(repeat), "--local", ",".join(local)]  # fmt: skip
    for opt in options:
        sweep.append(f"--options={opt}")
    if defines:
        sweep.append("--define=BENCH_D=" + ",".join(defines))
    sides = {name: (sweep, _env(tree, tmp), "1:0 ", tree) for name, tree in TREES.items()}
    sides["loop"] = ([PY, str(script), str(job)], _env(ROOT, tmp), "config ", tmp)
    runs = _turns(sides, len(plans))
    per_process = None
    if one_per_process:
        total = 0.0
        for i, plan in enumerate(plans):
            one = tmp / f"one_{i}.json"
            one.write_text(json.dumps({"root": str(CAPTURE), "plans": [plan], "repeat": repeat}))
            total += _timed([PY, str(script), str(one)], _env(ROOT, tmp)).wall
        per_process = len(plans) / total
    best = {name: _best(r) for name, r in runs.items()}
    c, lp = best["cltui"], best["loop"]
    c_end, l_end = len(plans) / c["wall_s"], len(plans) / lp["wall_s"]
    out = {
        "range": rng, "configs": len(plans), "repeat": repeat, "best": best,
        "steady_configs_per_s": {"cltui": c["steady_per_s"], "loop": lp["steady_per_s"]},
        "end_to_end_configs_per_s": {"cltui": c_end, "loop": l_end, "per_process": per_process},
        "steady_vs_loop": (c["steady_per_s"] or 0.0) / (lp["steady_per_s"] or 1.0),
        "end_to_end_vs_loop": c_end / l_end,
        "steady_vs_per_process": (c["steady_per_s"] or 0.0) / per_process if per_process
        else None,
        "end_to_end_vs_per_process": c_end / per_process if per_process else None,
    }  # fmt: skip
    if "before" in best:
        out["before_end_to_end_vs_loop"] = lp["wall_s"] / best["before"]["wall_s"]
    return out


def _turns(sides: dict[str, tuple[list[str], dict[str, str], str, Path]],
           rows: int) -> dict[str, list[Run]]:  # fmt: skip
    """Each side twice to warm (PoCL's kernel cache, cltui's binary cache), then TURNS times,
    the sides taking turns; a cltui side must print one row per configuration."""
    for _ in range(2):
        for cmd, env, mark, cwd in sides.values():
            _timed(cmd, env, mark, cwd)
    runs: dict[str, list[Run]] = {name: [] for name in sides}
    for _ in range(TURNS):
        for name, (cmd, env, mark, cwd) in sides.items():
            run = _timed(cmd, env, mark, cwd)
            if name != "loop" and mark:
                got = sum(line.startswith(mark) for line in run.out.splitlines())
                assert got == rows, run.out[-2000:]
            runs[name].append(run)
    return runs


def replay_part(rng: str, tmp: Path) -> dict:
    """``cltui replay CAPTURE rng -d pocl``, end to end, against the loop running the range's
    plan once (a run with its read-backs and comparisons, no timing repetitions)."""
    plans = _plans(rng, [], [], [], tmp)[0][:1]  # the capture's own configuration
    job = tmp / f"replay_{rng}.json"
    job.write_text(json.dumps({"root": str(CAPTURE), "plans": plans, "repeat": 1}))
    script = tmp / "loop.py"
    script.write_text(LOOP)
    cmd = [PY, "-m", "cltui", "replay", str(CAPTURE), rng, "-d", "pocl"]
    sides = {name: (cmd, _env(tree, tmp), "", tree) for name, tree in TREES.items()}
    sides["loop"] = ([PY, str(script), str(job)], _env(ROOT, tmp), "config ", tmp)
    best = {name: _best(r) for name, r in _turns(sides, 0).items()}
    out: dict = {"range": rng, "best": best,
                 "vs_loop": best["loop"]["wall_s"] / best["cltui"]["wall_s"]}
    if "before" in best:
        out["before_vs_loop"] = best["loop"]["wall_s"] / best["before"]["wall_s"]
    return out


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
    global TURNS
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--before", type=Path, default=None,
                    help="a checkout of an earlier commit, run beside this one")
    ap.add_argument("--parts", default="sweeps,replay,a_vs_a")
    ap.add_argument("--turns", type=int, default=TURNS, help="timed runs of each side")
    ap.add_argument("--before-rev", default=None, help="the commit --before holds (said)")
    ap.add_argument("--md", action="store_true", help="write BENCHMARKS.md's section")
    args = ap.parse_args()
    TURNS = args.turns
    if args.before is not None:
        TREES["before"] = args.before.resolve()
    parts = set(args.parts.split(","))
    local = ["8", "16", "32", "64", "128", "256", "512", "1024"]
    options = ["-cl-mad-enable", "-cl-fast-relaxed-math"]
    trials = 20 if args.quick else 100
    out = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    with tempfile.TemporaryDirectory(prefix="cltui-bench-exp-") as t:
        tmp = Path(t)
        if "sweeps" in parts:
            out["small"] = sweep_part("23", local, options, 10, tmp, one_per_process=True)
            out["small_65"] = sweep_part("23", local, options, 10, tmp, one_per_process=False,
                                         defines=["1", "2", "3", "4"])  # fmt: skip
            out["chain"] = sweep_part("22-31", local[2:6], options, 10, tmp,
                                      one_per_process=not args.quick)  # fmt: skip
        if "replay" in parts:
            out["replay"] = replay_part("23", tmp)
        if "a_vs_a" in parts:
            out["a_vs_a"] = a_vs_a(trials, 30, "22-31", tmp)
    out["run"] = {"date": time.strftime("%Y-%m-%d"), "load": os.getloadavg(),
                  "before_rev": args.before_rev, "turns": TURNS}  # fmt: skip
    RESULTS.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
    if args.md:
        from experiments_md import write_section  # beside this script

        write_section(out)


if __name__ == "__main__":
    main()
