#!/usr/bin/env python3
"""``cltui fleet --explain`` against real sshd "hosts" on this machine (tests/sshd_hosts.py):
one host with PoCL only, one with Oclgrind only, the planted ``contraction`` kernel
(``planted_divergence_pocl`` enqueue 1) as the divergence.  Side by side in one run:

1. the fleet's run of the range (the bundle already in each host's cache);
2. the explanation of the Oclgrind column's first divergence, every run shipped to the
   hosts as a bundle (:mod:`cltui.fleet.explain`): its wall time and how many runs it made;
3. the same explanation with both devices here (``cltui explain ... -d pocl -d oclgrind``'s
   engine): the cost of the hosts.

Writes its BENCHMARKS.md section (``--no-write``: only prints).

    nice -n 10 python benchmarks/bench_fleet_explain.py
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.md_section import replace_section  # noqa: E402
from cltui.analysis.explain.engine import explain_enqueue  # noqa: E402
from cltui.capture import open_capture  # noqa: E402
from cltui.fleet.bundle import export_cached  # noqa: E402
from cltui.fleet.explain import explain_columns  # noqa: E402
from cltui.fleet.host import RunSettings  # noqa: E402
from cltui.fleet.inventory import Host  # noqa: E402
from cltui.fleet.job import run_fleet  # noqa: E402
from cltui.progress import ProgressEvent  # noqa: E402
from cltui.replay.devices import select_devices  # noqa: E402
from tests.fleet_setup import icd_folder  # noqa: E402
from tests.sshd_hosts import HostSpec, start_hosts  # noqa: E402

SHARED = Path(os.environ.get("CLTUI_SHARED", ROOT.parent / "shared")).resolve()
TITLE = "## Fleet --explain: a column's first divergence explained on its hosts (issue 30)"
RUN = re.compile(r"^explain (\S+): (\S+) on (\S+)$")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    capture = SHARED / "captures" / "planted_divergence_pocl"
    with tempfile.TemporaryDirectory(prefix="bench-fleet-explain-") as tmp:
        root = Path(tmp)
        os.environ["XDG_CACHE_HOME"] = str(root / "xdg")
        specs = [HostSpec("pocl", env={"OCL_ICD_VENDORS": str(icd_folder(root, "pocl"))}),
                 HostSpec("grind", env={"OCL_ICD_VENDORS": str(icd_folder(root, "oclgrind"))})]
        farm = start_hosts(root / "sshd", specs)
        try:
            hosts = [Host(name=h.name, address=h.host, port=h.port,
                          ssh_args=("-F", str(farm.config)), python=sys.executable,
                          workdir=str(root / "work" / h.name)) for h in farm]  # fmt: skip
            settings = RunSettings(timeout=300.0)
            cap = open_capture(capture)
            bundle = export_cached(cap, "1", "chain")
            run_fleet(bundle, hosts, settings)  # the hosts' caches warm
            t0 = time.perf_counter()
            report = run_fleet(bundle, hosts, settings)
            fleet_s = time.perf_counter() - t0
            runs: list[str] = []

            def seen(ev: ProgressEvent) -> None:
                if RUN.match(ev.what):
                    runs.append(ev.what)

            t0 = time.perf_counter()
            (entry,) = explain_columns(report, cap, hosts, settings, progress=seen)
            remote_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            local = explain_enqueue(cap, 1, select_devices(["pocl", "oclgrind"]))
            local_s = time.perf_counter() - t0
        finally:
            farm.stop()
    rep = entry["report"]
    line = rep["line"] if rep else {}
    said = (f"line {line['site']['line']}, cause {rep['why']['cause']}" if rep and
            line.get("status") == "found" else entry["line"])  # fmt: skip
    here = (f"line {local['line']['site']['line']}, cause {local['why']['cause']}"
            if local["line"].get("status") == "found" else local["verdict"]["line"])
    lines = [
        TITLE, "",
        "`nice -n 10 .venv/bin/python benchmarks/bench_fleet_explain.py` (2 shared cores): two",
        "real sshd hosts on this machine, `pocl` (PoCL only) and `grind` (Oclgrind only), the",
        "range `planted_divergence_pocl 1` (the `contraction` kernel, 4,096 work-items), the",
        "bundle in both hosts' caches. The explanation of `grind:0:0`'s first divergence",
        "from `pocl:0:0` ships each run (the enqueue as captured, again, each rebuild, the",
        "instrumented kernel) to the column's host as a bundle and brings its outputs back.",
        "",
        "| what | wall time | runs | named |",
        "|---|---|---|---|",
        f"| the fleet's run of the range | {fleet_s:.1f} s | 2 | - |",
        f"| explain, on the hosts | {remote_s:.1f} s | {len(runs)} | {said} |",
        f"| explain, both devices here | {local_s:.1f} s | - | {here} |",
        "",
        f"Each remote run costs about {remote_s / max(len(runs), 1):.1f} s (export, what the",
        "host lacks sent, a new runner process there, outputs fetched) against one child",
        "per device here that runs every point.",
    ]  # fmt: skip
    print("\n".join(lines))
    if not args.no_write:
        replace_section(TITLE, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
