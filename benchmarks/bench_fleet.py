#!/usr/bin/env python3
"""``cltui fleet`` against real sshd "hosts" on this machine (tests/sshd_hosts.py), figures
measured side by side in one run; prints one JSON document (``benchmarks/run.py --only fleet``
renders it).

1. 4 hosts in parallel vs each host alone (the bundle already in each host's cache, so the
   figure is the fleet's own parallelism: transport, runner, matrix), the runs taking turns.
2. Bytes written to the transport by a second run of the same range vs the first (fresh host
   caches) as ``cltui fleet DUMPDIR RANGE`` runs them (the export found in the local cache);
   and a third run with the range exported again (a new ``created`` time: its manifest,
   README and SHA256SUMS travel).
3. One command over a warm multiplexed connection (``Transport.run("true")``) vs starting
   ``sh -c true`` here: the transport's overhead per host.

    python benchmarks/bench_fleet.py [--quick] [--capture DIR --range R]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cltui.capture import open_capture  # noqa: E402
from cltui.capture.ranges import parse_range  # noqa: E402
from cltui.fleet.bundle import export_cached, export_temp  # noqa: E402
from cltui.fleet.host import RunSettings  # noqa: E402
from cltui.fleet.inventory import Host  # noqa: E402
from cltui.fleet.job import run_fleet  # noqa: E402
from cltui.fleet.transport import Transport  # noqa: E402
from cltui.process import lifecycle  # noqa: E402
from tests.sshd_hosts import HostSpec, SshHosts, start_hosts  # noqa: E402

SHARED = Path(os.environ.get("CLTUI_SHARED", ROOT.parent / "shared")).resolve()


def _hosts(farm: SshHosts, work: Path, tag: str) -> list[Host]:
    return [
        Host(name=h.name, address=h.host, port=h.port, ssh_args=("-F", str(farm.config)),
             python=sys.executable, workdir=str(work / f"{tag}-{h.name}"))
        for h in farm
    ]


def _run(bundle: Path, hosts: list[Host], settings: RunSettings) -> tuple[float, dict[str, Any]]:
    t0 = time.perf_counter()
    rep = run_fleet(bundle, hosts, settings, jobs=len(hosts))
    wall = time.perf_counter() - t0
    bad = [h for h in rep["hosts"] if h["status"] != "ok"]
    if bad:
        raise SystemExit(f"bench_fleet: a host failed: {bad[0]['name']}: {bad[0]['reason']}")
    return wall, rep


def _template_hosts(n: int, work: Path) -> list[Host]:
    """``n`` hosts whose commands run through the transport template ``sh -c {cmd}`` on this
    machine (no sshd: the lent GPU machine has none), each with a work folder and a TMPDIR of
    its own: n machines in one (the fleet's device locks live in TMPDIR; one TMPDIR would
    make the n columns on the one GPU take turns, as columns of one machine truly must)."""
    hosts = []
    for i in range(n):
        tmp = work / f"par-t{i}" / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        hosts.append(Host(name=f"t{i}", address="localhost", python=sys.executable,
                          workdir=str(work / f"par-t{i}"), transport="sh -c {cmd}",
                          env=(("TMPDIR", str(tmp)),)))
    return hosts


def parallel(
    hosts: list[Host], bundle: Path, rounds: int, devices: tuple[str, ...] = ("pocl",)
) -> dict[str, Any]:
    settings = RunSettings(devices=devices, timeout=300)
    _run(bundle, hosts, settings)  # warm: caches filled, PoCL's kernel cache too
    alone: dict[str, list[float]] = {h.name: [] for h in hosts}
    together: list[float] = []
    for _ in range(rounds):
        for h in hosts:
            alone[h.name].append(_run(bundle, [h], settings)[0])
        together.append(_run(bundle, hosts, settings)[0])
    best = {n: min(v) for n, v in alone.items()}
    return {"alone_s": best, "slowest_alone_s": max(best.values()),
            "sum_alone_s": sum(best.values()), "parallel_s": min(together),
            "rounds": rounds, "cores": os.cpu_count(), "devices": list(devices),
            "transport": hosts[0].transport or "ssh"}


def resend(farm: SshHosts, capture: Path, rng: str, work: Path) -> dict[str, Any]:
    """Bytes of a first and a second run of the same range (fresh host caches): as ``DUMPDIR
    RANGE`` (the export found in the local cache), and with the range exported again."""
    hosts = _hosts(farm, work, "bytes")[:1]
    settings = RunSettings(devices=("pocl",), timeout=300)
    cap = open_capture(capture)
    sent = [_run(export_cached(cap, parse_range(rng), "chain"), hosts, settings)[1]
            for _ in range(2)]
    tmp, bundle = export_temp(cap, parse_range(rng), "chain")  # a new export: a new created time
    try:
        again = _run(bundle, hosts, settings)[1]
    finally:
        lifecycle.remove(tmp)
    return {"first": sent[0]["hosts"][0]["bytes_sent"],
            "second": sent[1]["hosts"][0]["bytes_sent"],
            "reexported": again["hosts"][0]["bytes_sent"],
            "reexported_files": again["hosts"][0]["sent"]["files"],
            "bundle_bytes": sent[0]["bundle"]["bytes"], "bundle_files": sent[0]["bundle"]["files"]}


def overhead(farm: SshHosts, n: int) -> dict[str, Any]:
    (h,) = _hosts(farm, Path("/tmp"), "oh")[:1]
    control = Path(tempfile.mkdtemp(prefix="cltui-bench-fleet-"))
    t = Transport(h, control)
    try:
        if t.connect().rc != 0:
            raise SystemExit("bench_fleet: cannot connect")
        ssh, local = [], []
        for _ in range(n):  # taking turns
            t0 = time.perf_counter()
            res = t.run("true", timeout=30)
            ssh.append(time.perf_counter() - t0)
            assert res.rc == 0
            t0 = time.perf_counter()
            subprocess.run(["sh", "-c", "true"], check=True)
            local.append(time.perf_counter() - t0)
    finally:
        t.close()
        shutil.rmtree(control, ignore_errors=True)
    return {"ssh_ms": statistics.median(ssh) * 1e3, "ssh_max_ms": max(ssh) * 1e3,
            "local_ms": statistics.median(local) * 1e3, "n": n}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--capture", type=Path, default=SHARED / "captures" / "images_svm_pocl")
    ap.add_argument("--range", default="0-8")
    ap.add_argument("--bytes-capture", type=Path, default=SHARED / "captures" / "opencv_tapi_pocl")
    ap.add_argument("--bytes-range", default="0-")
    ap.add_argument("--template", action="store_true",
                    help="only the parallel figure, 4 hosts through the transport template "
                    "`sh -c {cmd}` (no sshd), on --device")  # fmt: skip
    ap.add_argument("--device", default="pocl", help="with --template")
    ns = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="cltui-bench-fleet-"))
    os.environ["XDG_CACHE_HOME"] = str(root / "xdg-cache")  # the fleet's export cache
    if ns.template:
        tmp, bundle = export_temp(open_capture(ns.capture), parse_range(ns.range), "chain")
        try:
            hosts = _template_hosts(4, root / "work")
            par = parallel(hosts, bundle, 1 if ns.quick else 3, (ns.device,))
        finally:
            lifecycle.remove(tmp)
            shutil.rmtree(root, ignore_errors=True)
        print(json.dumps({"capture": ns.capture.name, "range": ns.range, "parallel": par}))
        return 0
    icd = root / "icd"
    icd.mkdir()
    shutil.copy("/etc/OpenCL/vendors/pocl.icd", icd / "pocl.icd")
    farm = start_hosts(root / "sshd", [HostSpec(f"h{i}", env={"OCL_ICD_VENDORS": str(icd)})
                                       for i in range(4)])
    try:
        tmp, bundle = export_temp(open_capture(ns.capture), parse_range(ns.range), "chain")
        try:
            par = parallel(_hosts(farm, root / "work", "par"), bundle, 1 if ns.quick else 2)
        finally:
            lifecycle.remove(tmp)
        out = {
            "capture": ns.capture.name, "range": ns.range, "parallel": par,
            "bytes": resend(farm, ns.bytes_capture, ns.bytes_range, root / "work")
            | {"capture": ns.bytes_capture.name, "range": ns.bytes_range},
            "small_bytes": resend(farm, ns.capture, ns.range, root / "work-small")
            | {"capture": ns.capture.name, "range": ns.range},
            "overhead": overhead(farm, 10 if ns.quick else 30),
        }
    finally:
        farm.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
