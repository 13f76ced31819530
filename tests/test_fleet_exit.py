"""A fleet job's ssh connections do not outlive cltui: a multiplexed connection (``ssh -f``,
``ControlPersist``) still open when cltui exits (the app quit during a fleet job or while the
replay dialog listed the hosts' devices) is stopped at exit, not left for its persist time."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.sshd_hosts import HostSpec, SshHosts

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)

ROOT = Path(__file__).resolve().parent.parent

_CONNECT = """
import sys
from pathlib import Path
from cltui.fleet.inventory import Host
from cltui.fleet.transport import Transport
host = Host(name="box", address="127.0.0.1", port=int(sys.argv[2]),
            ssh_args=("-F", sys.argv[3]))
res = Transport(host, Path(sys.argv[1])).connect()
assert res.rc == 0, res.err
"""  # and exits without closing the transport


def _check(hosts: SshHosts, control: Path) -> int:
    box = hosts["box"]
    argv = ["ssh", "-F", str(box.config), "-p", str(box.port), "-o", f"ControlPath={control}/%C",
            "-O", "check", box.host]  # fmt: skip
    return subprocess.run(argv, capture_output=True, timeout=30, check=False).returncode


def test_an_open_connection_is_stopped_when_cltui_exits(
    ssh_hosts: Callable[[list[HostSpec]], SshHosts],
) -> None:
    hosts = ssh_hosts([HostSpec("box")])
    control = Path(tempfile.mkdtemp(prefix="cx-"))  # short: a socket path has 108 bytes
    try:
        _connect_and_exit(hosts, control)
    finally:
        shutil.rmtree(control, ignore_errors=True)


def _connect_and_exit(hosts: SshHosts, control: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    argv = [sys.executable, "-c", _CONNECT, str(control), str(hosts["box"].port),
            str(hosts.config)]  # fmt: skip
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    left = _check(hosts, control)
    if left == 0:  # the master still runs: stop it, then fail
        box = hosts["box"]
        subprocess.run(["ssh", "-F", str(box.config), "-p", str(box.port), "-o",
                        f"ControlPath={control}/%C", "-O", "exit", box.host],
                       capture_output=True, timeout=30, check=False)  # fmt: skip
    assert left != 0, "the ssh master outlived cltui"
