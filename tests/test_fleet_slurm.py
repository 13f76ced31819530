"""``cltui fleet`` on a real single-node Slurm cluster (tests/slurm_cluster.py: munged,
slurmctld and slurmd started here, on their own ports and folders): two partitions whose jobs
see different OpenCL devices (their TaskProlog sets ``OCL_ICD_VENDORS``), one that is down
(its jobs stay pending).  The matrix equals the one over ssh to two hosts with the same
devices; a timeout and ctrl-c leave no job in the queue and no process behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cltui.fleet.lock import LOCK_NAME
from tests.fleet_setup import PY, REPO, icd_folder, own_sleep, run_fleet, stuck_report
from tests.schemas import validate
from tests.sshd_hosts import HostSpec, SshHosts

pytestmark = [pytest.mark.device, pytest.mark.slow, pytest.mark.child]

BOUND = 120.0  # a hang detector for the queue to empty, not a timing claim


class Lab:
    def __init__(self, root: Path, cluster: Any) -> None:
        self.root, self.cluster = root, cluster
        self.home = root / "home"  # HOME of the fleet runs (and so of their jobs)
        self.home.mkdir()

    def env(self) -> dict[str, str]:
        return {**os.environ, **self.cluster.env, "PYTHONPATH": str(REPO),
                "HOME": str(self.home), "XDG_CACHE_HOME": str(self.home / ".cache"),
                "PYTHONFAULTHANDLER": "1",  # a run that does not end says where: stuck_report
                "PATH": f"{Path(PY).parent}:{os.environ.get('PATH', '')}"}  # python3: ours

    def fleet(self, *args: str, codes: tuple[int, ...]) -> subprocess.CompletedProcess[str]:
        return run_fleet(self.env(), *args, codes=codes)

    def inventory(self, name: str, lines: list[str], **group_vars: str) -> Path:
        inv = self.root / name
        more = "".join(f"{k}={v}\n" for k, v in group_vars.items())
        inv.write_text("[kinds]\n" + "\n".join(lines) + "\n\n[kinds:vars]\n"
                       f"ansible_python_interpreter={PY}\n"
                       f"cltui_workdir={self.root / 'work' / name}\n" + more)
        return inv

    def queue_empties(self) -> list[str]:
        end = time.monotonic() + BOUND
        while (left := self.cluster.jobs()) and time.monotonic() < end:
            time.sleep(0.5)
        return list(left)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    from tests.slurm_cluster import available, start_cluster

    why = available()
    if why:
        pytest.skip(why)
    root = tmp_path_factory.mktemp("slurm")
    pocl, ocl = icd_folder(root, "pocl"), icd_folder(root, "oclgrind")
    cluster = start_cluster(root / "cluster", {"pocl": {"OCL_ICD_VENDORS": str(pocl)},
                                               "ocl": {"OCL_ICD_VENDORS": str(ocl)}},
                            down=("closed",))
    try:
        yield Lab(root, cluster)
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


def _same(rep: dict[str, Any]) -> dict[str, Any]:
    """What the two backends must agree on: the verdict, the columns, every cell, the
    columns against each other."""
    cols = [{k: c[k] for k in ("id", "host", "device", "status", "error", "failed_enqueue",
                               "first_divergent")}
            | {"verdict": c["verdict"]["status"], "counts": c["verdict"]["counts"]}
            for c in rep["columns"]]
    return {"verdict": {k: rep["verdict"][k] for k in ("status", "line", "counts")},
            "columns": cols, "rows": rep["rows"], "cross": rep["cross"],
            "hosts": [(h["name"], h["status"], h["reason"], h["devices"]) for h in rep["hosts"]]}


def test_slurm_gives_the_matrix_ssh_gives(
    lab: Lab, ssh_hosts: Callable[[list[HostSpec]], SshHosts], images_svm: Path
) -> None:
    pocl, ocl = lab.root / "icd_pocl", lab.root / "icd_oclgrind"
    hosts = ssh_hosts([HostSpec("pocl", env={"OCL_ICD_VENDORS": str(pocl)}),
                       HostSpec("ocl", env={"OCL_ICD_VENDORS": str(ocl)})])
    ssh_inv = lab.inventory("ssh.ini", [
        f"{n} ansible_host=127.0.0.1 ansible_port={hosts[n].port}" for n in ("pocl", "ocl")
    ], ansible_ssh_common_args=f'"-F {hosts.config}"')
    slurm_inv = lab.inventory("slurm.ini", ["pocl cltui_slurm_partition=pocl",
                                            "ocl cltui_slurm_partition=ocl"])
    reports = {}
    for name, inv in (("ssh", ssh_inv), ("slurm", slurm_inv)):
        junit = lab.root / f"{name}.xml"
        proc = lab.fleet(str(images_svm), "0-8", "--hosts", str(inv), "--json", "--junit",
                         str(junit), codes=(1,))  # Oclgrind's 2-ULP image rounding: a FAIL
        reports[name] = json.loads(proc.stdout)
        cases = ET.parse(junit).getroot().iter("testcase")
        reports[name]["junit"] = sorted((c.get("classname"), c.get("name"),
                                         [e.tag for e in c]) for c in cases)
    ssh, slurm = reports["ssh"], reports["slurm"]
    validate({k: v for k, v in slurm.items() if k != "junit"}, "cli.schema.json", "fleet")
    assert [c["id"] for c in slurm["columns"]] == ["pocl:0:0", "ocl:0:0"]
    assert [c["device"]["platform"] for c in slurm["columns"]] == [
        c["device"]["platform"] for c in ssh["columns"]]
    assert "Oclgrind" in slurm["columns"][1]["device"]["platform"]
    assert _same(slurm) == _same(ssh)
    assert slurm["junit"] == ssh["junit"]
    assert any(c["status"] == "different" for r in slurm["rows"] for c in r["cells"])
    # the bundle was staged once, from here: no job sent it
    assert all(h["sent"]["cached"] and h["sent"]["bytes"] == 0 for h in slurm["hosts"])
    assert lab.queue_empties() == []
    # the jobs took their device locks in the cluster's TMPDIR, not in the /tmp another test
    # run on this machine shares (two runs side by side waited for each other's devices)
    assert list((lab.cluster.root / "tmp" / LOCK_NAME).glob("*.lock"))

    # the same two kinds from the command line, progress saying where they ran
    proc = lab.fleet(str(images_svm), "0-8", "--slurm", "pocl", "--slurm", "partition=ocl",
                     codes=(1,))
    assert "pocl: job " in proc.stderr and " running on cltuinode" in proc.stderr
    assert "FAIL: 2 devices on 2 of 2 hosts" in proc.stdout
    assert lab.queue_empties() == []


def test_a_job_pending_past_the_timeout_is_cancelled(lab: Lab, images_svm: Path) -> None:
    inv = lab.inventory("closed.ini", ["gpu cltui_slurm_partition=closed"])
    proc = lab.fleet(str(images_svm), "0-8", "--hosts", str(inv), "--json", "--timeout", "3",
                     codes=(1,))
    rep = json.loads(proc.stdout)
    (host,) = rep["hosts"]
    assert host["status"] == "timeout"
    assert "still pending in closed after 3 s" in host["reason"]
    assert host["reason"].endswith(": cancelled")
    assert lab.queue_empties() == []


def test_a_refused_submission_is_one_line(lab: Lab, images_svm: Path) -> None:
    proc = lab.fleet(str(images_svm), "0-8", "--slurm", "nosuch", "--json", codes=(1,))
    (host,) = json.loads(proc.stdout)["hosts"]
    assert (host["status"], host["reason"]) == (
        "error", "sbatch refused the job: Invalid partition name specified")
    assert "Traceback" not in proc.stderr


def _slurm_processes(lab: Lab) -> list[str]:
    """srun, sbatch or squeue processes of this cluster still alive (the daemons aside)."""
    conf = str(lab.cluster.conf).encode()
    out = []
    for d in Path("/proc").iterdir():
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
            if Path(argv[0].decode()).name in ("srun", "sbatch", "squeue", "scancel") and \
                    conf in (d / "environ").read_bytes():
                out.append(f"{d.name} {argv[0].decode()}")
        except (OSError, IndexError, UnicodeDecodeError):
            continue
    return out


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_cancels_every_job(lab: Lab, images_svm: Path, sig: signal.Signals) -> None:
    """One kind pending, one running a command that hangs: ctrl-c (or SIGTERM) ends both
    jobs."""
    hang = lab.root / "python-that-hangs"
    hang.write_text("#!/bin/sh\nexec sleep 600\n")
    hang.chmod(0o755)
    inv = lab.inventory("ctrlc.ini", [
        "waiting cltui_slurm_partition=closed",
        f"stuck cltui_slurm_partition=pocl ansible_python_interpreter={hang}",
    ])
    proc = subprocess.Popen([PY, "-m", "cltui", "fleet", str(images_svm), "0-8", "--hosts",
                             str(inv), "--timeout", "300"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=lab.env())
    try:
        seen: list[str] = []
        assert proc.stderr is not None
        for line in proc.stderr:
            seen.append(line)
            if any("stuck: job " in s and "running on" in s for s in seen) and any(
                    "waiting: job " in s and "pending in closed" in s for s in seen):
                break
        end = time.monotonic() + BOUND  # until the hanging check runs as a job step
        while time.monotonic() < end and not any(
                ".1 " in ln for ln in lab.cluster.run("squeue", "--steps", "--noheader",
                                                      "--format=%i %j").stdout.splitlines()):
            time.sleep(0.2)
        jobs = lab.cluster.jobs()
        assert len(jobs) == 2 and any("RUNNING" in j for j in jobs), (jobs, seen)
        proc.send_signal(sig)
        try:
            out, err = proc.communicate(timeout=BOUND)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the run did not end: {stuck_report(proc)}") from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, (out, err)
    assert lab.queue_empties() == []
    assert _slurm_processes(lab) == []


def test_a_job_cancelled_from_outside_is_named(lab: Lab, images_svm: Path) -> None:
    """The kind's job scancel'ed by someone else while a command runs in it: the kind says
    its job ended, not that the command failed for a reason of its own."""
    hang = lab.root / "python-that-waits"
    hang.write_text("#!/bin/sh\nexec sleep 600\n")
    hang.chmod(0o755)
    inv = lab.inventory("outside.ini", [
        f"gone cltui_slurm_partition=pocl ansible_python_interpreter={hang}"])
    proc = subprocess.Popen([PY, "-m", "cltui", "fleet", str(images_svm), "0-8", "--hosts",
                             str(inv), "--json", "--timeout", "300"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=lab.env())
    try:
        end = time.monotonic() + BOUND  # until the waiting check runs as a job step
        while time.monotonic() < end and not any(
                ".1 " in ln for ln in lab.cluster.run("squeue", "--steps", "--noheader",
                                                      "--format=%i %j").stdout.splitlines()):
            time.sleep(0.2)
        (job,) = lab.cluster.jobs()
        lab.cluster.run("scancel", job.split()[0])
        out, _err = proc.communicate(timeout=BOUND)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, out
    (host,) = json.loads(out)["hosts"]
    assert host["status"] == "error"
    assert f"the Slurm job {job.split()[0]} ended while it ran (CANCELLED" in host["reason"]
    assert lab.queue_empties() == []


def _wrapper(lab: Lab, name: str, body: str) -> Path:
    p = lab.root / name
    p.write_text(f"#!/bin/sh\n{body}\nexec {PY} \"$@\"\n")
    p.chmod(0o755)
    return p


def test_a_crash_and_a_hang_in_a_job_are_cells_and_the_jobs_end(
    lab: Lab, images_svm: Path
) -> None:
    crash = _wrapper(lab, "python-crash", '[ "$1" = replay.py ] && kill -SEGV $$')
    sleep, find_sleep = own_sleep(631)
    hang = _wrapper(lab, "python-hang", f'[ "$1" = replay.py ] && exec {sleep}')
    inv = lab.inventory("bad.ini", [
        f"crash cltui_slurm_partition=pocl ansible_python_interpreter={crash}",
        f"hang cltui_slurm_partition=pocl ansible_python_interpreter={hang}",
    ])
    proc = lab.fleet(str(images_svm), "0-8", "--hosts", str(inv), "--json", "--timeout", "8",
                     codes=(1,))
    cols = {c["host"]: c for c in json.loads(proc.stdout)["columns"]}
    assert {h: c["status"] for h, c in cols.items()} == {"crash": "crash", "hang": "hang"}
    assert "SIGSEGV" in cols["crash"]["error"]
    assert "no progress within 8 s" in cols["hang"]["error"]
    assert lab.queue_empties() == []
    left = subprocess.run(find_sleep, capture_output=True, text=True)
    assert left.stdout.strip() == "", "the hung runner outlived its job"
