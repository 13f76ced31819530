"""The feasibility pre-flight's cost: what it adds to every replay (the engine runs it before
the first step, on every device).

Per range, on PoCL, in one process: the device's facts (``facts.device_facts``: limits,
extensions, the read-write image formats of five image types), the plan rule over every step
(``feasible.memory_findings`` + ``step_findings``), the built kernels' facts and rule
(``kernel_facts`` + ``kernel_findings`` on the kernel object the engine makes per step), and,
for scale, the whole replay of the range (``run_plan``: builds from the binary cache, uploads,
launches, checks).  Best of N for each.  Goal: the pre-flight <= 5 % of the range's replay.

    .venv/bin/python benchmarks/bench_preflight.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cltui.capture import open_capture
from cltui.capture.ranges import parse_range
from cltui.replay import engine
from cltui.replay.engine import feasible
from cltui.replay.engine.core import Engine
from cltui.replay.engine.devices import open_device
from cltui.replay.engine.facts import device_facts, kernel_facts
from cltui.replay.plan import build_plan
from cltui.replay.runner import capture_loader

SHARED = Path(os.environ.get("CLTUI_SHARED", "/work/shared")) / "captures"
RANGES = [
    ("pyopencl_lib_pocl", "0-39", str(SHARED / "pyopencl_lib_pocl")),
    ("heat2d_large", "122367-122419", os.environ.get("CLTUI_HEAT2D_DIR", "")),
    ("images_svm_pocl", "0-", str(SHARED / "images_svm_pocl")),
]


def best(fn: Callable[[], object], n: int) -> float:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def measure(name: str, rng: str, path: str, n: int, cache: str) -> None:
    if not path or not Path(path).is_dir():
        print(f"| {name} {rng} | skipped: capture not found | | | | |")
        return
    plan = build_plan(open_capture(path), parse_range(rng), "chain").to_manifest()
    dev = next(d for d in engine.list_devices() if "pthread" in d["name"])
    loader = capture_loader(dict(plan), path)
    eng = Engine(plan, dev, loader, binary_cache=cache)
    import pyopencl as cl

    eng.dev = open_device(dev)
    eng.ctx = cl.Context([eng.dev])
    programs = eng._build_programs()
    types = {feasible.image_key(m["image"])[0] for m in plan["memory"].values() if "image" in m}
    facts = device_facts(eng.dev, eng.ctx, types)  # the plan's image types, as the engine
    t_facts = best(lambda: device_facts(eng.dev, eng.ctx, types), n)

    def plan_rule() -> None:
        bad = feasible.memory_findings(plan, facts)
        for st in plan["steps"]:
            feasible.step_findings(plan, st, facts, bad)

    # the engine makes each step's kernel object anyway (its arguments are set on it): the
    # pre-flight adds the queries on it and the rule
    kernels = [cl.Kernel(programs[st["program"]], st["kernel"]) for st in plan["steps"]]

    def kernel_rule() -> None:
        for st, kern in zip(plan["steps"], kernels, strict=True):
            feasible.kernel_findings(st, kernel_facts(kern, eng.dev), facts)

    t_plan, t_kern = best(plan_rule, n * 10), best(kernel_rule, n)
    run = best(lambda: engine.run_plan(plan, dev, loader, binary_cache=cache), n)
    total = t_facts + t_plan + t_kern
    steps = len(plan["steps"])
    verdict = "met" if total <= 0.05 * run else "missed"
    print(f"| {name} {rng} ({steps} kernels) | {t_facts * 1e3:.2f} ms | {t_plan * 1e3:.3f} ms "
          f"| {t_kern * 1e3:.2f} ms ({t_kern / steps * 1e6:.0f} us a kernel) | "
          f"{run * 1e3:.0f} ms | {total / run * 100:.1f} % ({verdict}: goal <= 5 %) |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    n = 3 if args.quick else 7
    print("| range | device facts | plan rule | kernel facts + rule | whole replay (run_plan) "
          "| pre-flight / replay |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as cache:
        for name, rng, path in RANGES:
            measure(name, rng, path, n, cache)


if __name__ == "__main__":
    main()
