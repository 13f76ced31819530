#!/usr/bin/env python3
"""``cltui fleet``'s Slurm backend on the tests' single-node cluster (tests/slurm_cluster.py:
munged, slurmctld and slurmd started here and stopped at the end): the submission-to-first-
result overhead of one Slurm kind against the same host through the transport template
``sh -c {cmd}`` on this machine (no scheduler, no ssh).

Both through ``run_fleet`` (the job the command runs), the bundle already in the shared work
folder (a warm-up run of each), PoCL only, the Python runner, taking turns.  Per run, from
``run_fleet``'s call: the first enqueue the runner reports (its ``--trace`` line, streamed as
it runs: the first result), and the whole run.  For Slurm also when ``sbatch`` returned (the
job pending) and when the job ran.  Prints one JSON document.

    python benchmarks/bench_fleet_slurm.py [--rounds N] [--capture DIR --range R]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cltui.capture import open_capture  # noqa: E402
from cltui.capture.ranges import parse_range  # noqa: E402
from cltui.fleet.bundle import export_temp  # noqa: E402
from cltui.fleet.host import RunSettings  # noqa: E402
from cltui.fleet.inventory import Host  # noqa: E402
from cltui.fleet.job import run_fleet  # noqa: E402
from cltui.process import lifecycle  # noqa: E402
from cltui.progress import ProgressEvent  # noqa: E402
from tests.slurm_cluster import available, start_cluster  # noqa: E402

SHARED = Path(os.environ.get("CLTUI_SHARED", ROOT.parent / "shared")).resolve()


def _once(bundle: Path, host: Host) -> dict[str, float]:
    marks: dict[str, float] = {}
    t0 = time.perf_counter()

    def seen(ev: ProgressEvent) -> None:
        now = time.perf_counter() - t0
        if " pending in " in ev.what or " submitted in " in ev.what:
            marks.setdefault("submitted_s", now)
        elif " running on " in ev.what:
            marks.setdefault("running_s", now)
        elif ": enqueue " in ev.what:
            marks.setdefault("first_result_s", now)

    rep = run_fleet(bundle, [host], RunSettings(devices=("pocl",), timeout=300),
                    jobs=1, progress=seen)
    marks["total_s"] = time.perf_counter() - t0
    if rep["hosts"][0]["status"] != "ok" or "first_result_s" not in marks:
        raise SystemExit(f"bench_fleet_slurm: {host.name}: {rep['verdict']['line']}")
    return marks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--capture", type=Path, default=SHARED / "captures" / "images_svm_pocl")
    ap.add_argument("--range", default="0-8")
    args = ap.parse_args()
    why = available()
    if why:
        raise SystemExit(f"bench_fleet_slurm: {why}")
    root = Path(tempfile.mkdtemp(prefix="cltui-bench-slurm-"))
    icd = root / "icd_pocl"
    icd.mkdir()
    shutil.copy("/etc/OpenCL/vendors/pocl.icd", icd)
    cluster = start_cluster(root / "cluster", {"pocl": {"OCL_ICD_VENDORS": str(icd)}})
    os.environ.update(cluster.env)
    tmp, bundle = export_temp(open_capture(args.capture), parse_range(args.range), "chain")
    try:
        work = str(root / "work")
        slurm = Host(name="slurm", address="slurm", python=sys.executable, workdir=work,
                     slurm=(("partition", "pocl"),))
        local = Host(name="local", address="localhost", python=sys.executable, workdir=work,
                     transport="sh -c {cmd}",
                     env=(("OCL_ICD_VENDORS", str(icd)),))
        runs: dict[str, list[dict[str, float]]] = {"slurm": [], "local": []}
        _once(bundle, slurm), _once(bundle, local)  # warm: the bundle staged, PoCL's cache
        for _ in range(args.rounds):
            runs["slurm"].append(_once(bundle, slurm))
            runs["local"].append(_once(bundle, local))
    finally:
        lifecycle.remove(tmp)
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)

    def med(name: str, key: str) -> float:
        return round(statistics.median(r[key] for r in runs[name]), 3)

    out: dict[str, Any] = {
        "capture": f"{args.capture.name} {args.range}", "rounds": args.rounds,
        "cores": os.cpu_count(),
        "slurm": {k: med("slurm", k) for k in ("submitted_s", "running_s",
                                              "first_result_s", "total_s")},
        "local": {k: med("local", k) for k in ("first_result_s", "total_s")},
    }
    out["overhead_first_result_s"] = round(out["slurm"]["first_result_s"]
                                           - out["local"]["first_result_s"], 3)
    out["overhead_total_s"] = round(out["slurm"]["total_s"] - out["local"]["total_s"], 3)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
