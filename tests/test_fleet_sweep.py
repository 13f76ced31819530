"""The scratch folders a killed fleet run left on a host (``out.*``: its runner's outputs) are
swept by the next fleet run on that host, over a real sshd (tests/sshd_hosts.py): their owner
(the run's keeper on the host, ``.cltui-owner``) is dead there.  A folder owned on another
host, and a fresh folder without an owner, are left; an old one without an owner goes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cltui.process import lifecycle
from tests.fleet_setup import PY, REPO, own_sleep
from tests.sshd_hosts import HostSpec, SshHosts

pytestmark = [pytest.mark.device, pytest.mark.slow, pytest.mark.child]



def _wait(cond: Callable[[], object], what: str, limit: float = 120) -> None:
    end = time.monotonic() + limit  # a hang detector, not a timing assertion
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"never: {what}")
        time.sleep(0.2)


def _alive(pid: int) -> bool:
    return lifecycle.pid_alive(pid)


def test_a_killed_fleet_runs_remote_folders_are_swept_by_the_next_run(
    ssh_hosts: Callable[[list[HostSpec]], SshHosts], images_svm: Path, tmp_path: Path
) -> None:
    icd = tmp_path / "icd"
    icd.mkdir()
    src = Path("/etc/OpenCL/vendors/pocl.icd")
    if not src.is_file():
        pytest.skip(f"{src} is not installed")
    shutil.copy(src, icd / src.name)
    hosts = ssh_hosts([HostSpec("pocl", env={"OCL_ICD_VENDORS": str(icd)})])
    hang = tmp_path / "python-hang"
    sleep, find_sleep = own_sleep(621)
    hang.write_text(f'#!/bin/sh\n[ "$1" = replay.py ] && exec {sleep}\nexec {PY} "$@"\n')
    hang.chmod(0o755)
    work = tmp_path / "work"

    def inventory(name: str, python: str) -> Path:
        inv = tmp_path / name
        inv.write_text(f"h ansible_host=127.0.0.1 ansible_port={hosts['pocl'].port} "
                       f"cltui_workdir={work} ansible_python_interpreter={python}\n"
                       f"[all:vars]\nansible_ssh_common_args=\"-F {hosts.config}\"\n")
        return inv

    short = Path(tempfile.mkdtemp(prefix="fsw-", dir="/tmp"))  # ssh's socket path limit
    try:
        _run(short, tmp_path, images_svm, work, inventory, hang, find_sleep)
    finally:
        shutil.rmtree(short, ignore_errors=True)


def _run(short: Path, tmp_path: Path, images_svm: Path, work: Path,
         inventory: Callable[[str, str], Path], hang: Path, find_sleep: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(short),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = subprocess.Popen([PY, "-m", "cltui", "fleet", str(images_svm), "0-3", "--hosts",
                             str(inventory("hang.ini", str(hang))), "--timeout", "300"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:  # the runner is started on the host
            seen.append(line)
            if "replaying on" in line:
                break
        else:
            raise AssertionError(f"the fleet never started replaying: {seen[-5:]}")
        _wait(lambda: list(work.glob("out.*/.cltui-owner")), "an owned out folder")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    (left,) = work.glob("out.*")
    owner = (left / ".cltui-owner").read_text().strip()
    pid, _, host = owner.partition("@")
    assert host == os.uname().nodename
    # the keeper's stdin closed with cltui: it ends on the host (so does the hung runner)
    _wait(lambda: not _alive(int(pid)), "the keeper's end")
    _wait(lambda: subprocess.run(find_sleep, capture_output=True).returncode,
          "the hung runner's end")
    for sock in short.glob("cltui-fleet-p*/*"):  # the killed run's ssh master
        subprocess.run(["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "x"],
                       capture_output=True, timeout=30)
    # beside it: one owned on another host, a fresh one and an old one without an owner
    other = work / "out.other1"
    other.mkdir()
    (other / ".cltui-owner").write_text("1@another-host\n")
    fresh = work / "incoming.fresh1"
    fresh.mkdir()
    old = work / "builds" / ".tmp.old001"
    old.mkdir(parents=True)
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    nxt = subprocess.run([PY, "-m", "cltui", "fleet", str(images_svm), "0-3", "--hosts",
                          str(inventory("ok.ini", PY)), "--timeout", "300"],
                         capture_output=True, text=True, env=env, timeout=600)
    assert nxt.returncode in (0, 1), nxt.stderr[-2000:]
    assert not left.exists() and not old.exists()
    assert other.is_dir() and fresh.is_dir()
    assert sorted(p.name for p in work.glob("out.*")) == ["out.other1"]  # its own: removed
    assert not list(short.glob("cltui-*"))  # the killed run's control folder
