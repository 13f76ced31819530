"""Launch latency benchmark (issue 16): the method checked on ranges built to be known cases,
then run on the shared captures' ranges.

    python benchmarks/bench_latency.py [--device pocl] [--repeat 40] [--out FILE.json]
        [--spin-global 64 --spin-iters 200000] [--tiny 200] [--captures] [--md]

Two synthetic captures, real capture folders written by ``tests/analysis_synth.py`` (the
Intercept Layer's log, Replay folders, Pre dumps) into a temp folder:

* launch-bound: ``--tiny`` launches of a one-work-item kernel back to back;
* device-bound: ``--spin-n`` launches of a kernel that spins ``--spin-iters`` LCG steps in
  each of ``--spin-global`` work-items (size it so one launch runs past the largest delay).

The Post dumps are what a device writes (numpy models of the kernels), so the replay
reloads nothing inside the range.  On PoCL the benchmark gives PoCL one worker thread
(``POCL_MAX_PTHREAD_COUNT=1``): the host loop would otherwise share its cores with the
"device" (``bench_latency_coverage.py --default-workers`` measures that case).

Each goes through ``cltui.latency.measure`` (the Python engine, the C++ runner, its floor
and the delay ladder, side by side in one run).  Goals: the C++ runner's host time per
launch <= 1.1x the floor's, the sensitivity slope >= 0.8 on the launch-bound range and
<= 0.1 on the device-bound one.  ``--captures`` adds the shared captures' replayable
ranges.  Prints JSON (``--out`` writes it too); ``--md FILE`` renders the results as the
BENCHMARKS.md section ``Launch latency`` (see :func:`render`).
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
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cltui.capture import open_capture  # noqa: E402
from cltui.capture.ranges import parse_range  # noqa: E402
from cltui.latency.measure import Options, measure  # noqa: E402
from tests.analysis_synth import write_capture  # noqa: E402
from tests.latency_synth import synth_device_bound, synth_launch_bound  # noqa: E402

SHARED = Path(os.environ.get("CLTUI_SHARED", ROOT.parent / "shared")).resolve()
# the shared captures' ranges that replay (as in benchmarks/results/h200/COMMANDS.md)
CAPTURE_RANGES = [
    ("heat2d_large", "122380-122419"),
    ("pyopencl_lib_pocl", "14-38"),
    ("pyopencl_lib_oclgrind", "14-38"),  # the same program captured on Oclgrind
    ("pyopencl_lib_coldcache", "14-38"),  # damaged: 23 recovered, 2 lost with the log
    ("opencv_tapi_pocl", "41-55"),
    ("images_svm_pocl", "0-8"),
]
GOALS = {"cpp_over_floor": 1.1, "launch_bound_slope": 0.8, "device_bound_slope": 0.1}


def capture_path(name: str, root: Path, tmp: Path) -> tuple[Path | None, str]:
    """A shared capture's folder; heat2d_large from ``$CLTUI_HEAT2D_DIR`` or unpacked from
    its archive into ``tmp`` (the shared folder is read-only); (None, why) when missing."""
    path = root / name
    if name == "images_svm_pocl" and not path.is_dir():
        path = ROOT / "cltui" / "demo" / name
    if name == "heat2d_large" and not (path / "clintercept_log.txt").is_file():
        env = os.environ.get("CLTUI_HEAT2D_DIR")
        archive = path / "heat2d_large.tar.zst"
        if env and (Path(env) / "clintercept_log.txt").is_file():
            path = Path(env)
        elif archive.is_file():
            done = subprocess.run(["tar", "--zstd", "-xf", str(archive), "-C", str(tmp)],
                                  capture_output=True, text=True, check=False)  # fmt: skip
            if done.returncode != 0:
                return None, f"unpacking {archive} failed: {done.stderr.strip()[:200]}"
            path = tmp / name
    if not path.is_dir():
        return None, f"no folder {path}"
    return path, ""


def one(path: Path, rng: str, device: str, opts: Options) -> dict[str, Any]:
    """``measure`` on one range: the figures the report shows, and the wall time."""
    t0 = time.perf_counter()
    done = measure(open_capture(path), parse_range(rng), [device], opts)
    rep = done.report
    (dev,) = rep["devices"]
    sens = dev["sensitivity"] or {}
    runners = {r["runner"]: r for r in dev["runners"]}
    return {
        "capture": path.name,
        "range": rng,
        "kernels": rep["kernels"],
        "device": dev["device"].get("name"),
        "error": dev["error"],
        "not_measured": rep["not_measured"],
        "notes": dev["notes"],
        "runners": dev["runners"],
        "cpp_over_floor": runners["C++ runner"]["ratio_to_floor"],
        "engine_over_floor": runners["Python engine"]["ratio_to_floor"],
        "slope": sens.get("slope"),
        "ci95": sens.get("ci95"),
        "slope_small": sens.get("slope_small"),
        "ci95_small": sens.get("ci95_small"),
        "bound": sens.get("bound"),
        "ladder": sens.get("ladder"),
        "line": sens.get("line"),
        "stages_p50": {k: (v or {}).get("p50") for k, v in
                       ((dev["native"] or dev["engine"] or {}).get("stages") or {}).items()},
        "seconds": time.perf_counter() - t0,
    }  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="pocl")
    ap.add_argument("--repeat", type=int, default=40)
    ap.add_argument("--tiny", type=int, default=200)
    ap.add_argument("--spin-global", type=int, default=64)
    ap.add_argument("--spin-iters", type=int, default=1500)
    ap.add_argument("--spin-n", type=int, default=64, help="launches of the device-bound range")
    ap.add_argument("--capture-root", type=Path, default=SHARED / "captures")
    ap.add_argument("--captures", action="store_true", help="also the shared captures' ranges")
    ap.add_argument("--timeout", type=float, default=120.0,
                    help="seconds without progress (the C++ runner gets 4x)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--md", type=Path, default=None, help="render a results JSON as markdown")
    ns = ap.parse_args()
    if ns.md is not None:
        print(render(json.loads(ns.md.read_text())))
        return 0
    if "pocl" in ns.device.lower():  # one PoCL worker: the host loop keeps a core of its own
        os.environ.setdefault("POCL_MAX_PTHREAD_COUNT", "1")
    opts = Options(repeat=ns.repeat, timeout=ns.timeout)
    out: dict[str, Any] = {"device": ns.device, "repeat": ns.repeat, "goals": GOALS,
                           "synthetic": {}, "captures": []}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="cltui-bench-latency-") as tmp:
        lb = write_capture(synth_launch_bound(ns.tiny), Path(tmp) / "launch_bound")
        db = write_capture(synth_device_bound(ns.spin_n, ns.spin_global, ns.spin_iters),
                           Path(tmp) / "device_bound")  # fmt: skip
        out["synthetic"]["launch_bound"] = one(lb, f"0-{ns.tiny - 1}", ns.device, opts)
        out["synthetic"]["launch_bound"]["shape"] = f"{ns.tiny} x tiny (1 work-item)"
        out["synthetic"]["device_bound"] = one(db, f"0-{ns.spin_n - 1}", ns.device, opts)
        out["synthetic"]["device_bound"]["shape"] = (
            f"{ns.spin_n} x spin ({ns.spin_global} work-items x {ns.spin_iters} LCG steps)")
        out["pocl_workers"] = os.environ.get("POCL_MAX_PTHREAD_COUNT", "default")
        out["skipped"] = []
        for name, rng in CAPTURE_RANGES if ns.captures else []:
            path, why = capture_path(name, ns.capture_root, Path(tmp))
            if path is None:
                out["skipped"].append(f"{name} {rng}: {why}")
                print(f"bench_latency: {name} skipped: {why}", file=sys.stderr)
                continue
            out["captures"].append(one(path, rng, ns.device, opts))
    lb_r, db_r = out["synthetic"]["launch_bound"], out["synthetic"]["device_bound"]
    out["met"] = {
        "cpp_over_floor": (lb_r["cpp_over_floor"] or 9e9) <= GOALS["cpp_over_floor"],
        "launch_bound_slope": (lb_r["slope"] or 0.0) >= GOALS["launch_bound_slope"],
        "device_bound_slope": (db_r["slope"] if db_r["slope"] is not None else 9e9)
        <= GOALS["device_bound_slope"],
    }
    text = json.dumps(out, indent=1)
    if ns.out is not None:
        ns.out.parent.mkdir(parents=True, exist_ok=True)
        ns.out.write_text(text + "\n")
    print(text)
    return 0


def _f(v: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if v is None else fmt.format(v)


def _ci(ci: list[float] | None) -> str:
    return "-" if not ci else f"{ci[0]:.2f} to {ci[1]:.2f}"


def _lost(r: dict[str, Any]) -> str:
    return f" (INCOMPLETE: not measured: {r['not_measured']})" if r.get("not_measured") else ""


def _runner(r: dict[str, Any], name: str, key: str) -> float | None:
    found: float | None = next((x[key] for x in r["runners"] if x["runner"] == name), None)
    return found


def render(res: dict[str, Any]) -> str:
    """The results as markdown: the goals table, then one row per range."""
    lb, db = res["synthetic"]["launch_bound"], res["synthetic"]["device_bound"]
    met = res["met"]
    mark = {True: "met", False: "**MISSED**"}
    staged = _runner(lb, "C++ runner, staged", "ratio_to_floor")
    lines = [
        f"Device: {lb['device']}; {res['repeat']} repetitions per runner (and rounds of the "
        "floor and of each delay), measured side by side in one `cltui latency` run per range.",
        "",
        "| goal | measured | target | |",
        "|---|---|---|---|",
        f"| C++ runner host time per launch / bare C loop (launch-bound range): its timed loop, "
        f"as `replay.cpp --repeat` times a range (no event, queue without profiling) | "
        f"{_f(lb['cpp_over_floor'])} | <= 1.1 | {mark[met['cpp_over_floor']]} |",
        f"| its staged passes (the same loop with an event per launch on the profiling queue: "
        f"the stage figures) | {_f(staged)} | - | - |",
        f"| slope, launch-bound range ({lb['shape']}) | {_f(lb['slope'])} "
        f"(95 % CI {_ci(lb['ci95'])}) | >= 0.8 | {mark[met['launch_bound_slope']]} |",
        f"| slope, device-bound range ({db['shape']}) | {_f(db['slope'])} "
        f"(95 % CI {_ci(db['ci95'])}) | <= 0.1 | {mark[met['device_bound_slope']]} |",
        "",
        "| range | kernels | Python engine x floor | C++ runner x floor | C++ runner staged "
        "(an event per launch) x floor | floor per launch | slope (95 % CI) | slope near 0 "
        "(95 % CI) | bound |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in [lb, db, *res.get("captures", [])]:
        floor = _runner(r, "bare C loop (floor)", "host_ns_per_launch")
        plain = _runner(r, "C++ runner, staged", "ratio_to_floor")
        lines.append(
            f"| {r['capture']} {r['range']}{_lost(r)} | {r['kernels']} | "
            f"{_f(r['engine_over_floor'])} | "
            f"{_f(r['cpp_over_floor'])} | {_f(plain)} | {_f(floor, '{:.0f} ns')} | "
            f"{_f(r['slope'])} "
            f"({_ci(r['ci95'])}) | {_f(r['slope_small'])} ({_ci(r['ci95_small'])}) | "
            f"{r['bound'] or '-'} |"
        )
    lines.append("")
    for r in [lb, db, *res.get("captures", [])]:
        if r.get("line"):
            lines.append(f"- {r['capture']} {r['range']}: {r['line']}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
