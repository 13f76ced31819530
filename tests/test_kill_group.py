"""A child cltui gives up on goes with everything it started (``lifecycle.kill_group``): a
build's compilers, a driver's helpers.  The C++ runner's tools (``latency.native.run_tool``)
read no terminal: a tool left running with the terminal as its stdin would keep an ``ssh -t``
session open after the app quit."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from cltui.latency.native import run_tool
from cltui.process.lifecycle import kill_group
from cltui.progress import CancelToken
from tests.test_faults import _alive

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)

# a process group: the shell and a grandchild; the grandchild's pid and the shell's stdin
# go to the file named by $1
_SCRIPT = 'sleep 300 & echo "$! $(readlink /proc/$$/fd/0)" > "$1"; wait'


def _wait_file(path: Path, proc: subprocess.Popen[str] | None = None) -> list[str]:
    end = time.monotonic() + 30
    while not (path.exists() and path.read_text().endswith("\n")):
        assert time.monotonic() < end, "the script did not start"
        assert proc is None or proc.poll() is None
        time.sleep(0.02)
    return path.read_text().split()


def _gone(pid: int) -> bool:
    end = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < end:
        time.sleep(0.02)
    if _alive(pid):
        os.kill(pid, 9)
        return False
    return True


def test_kill_group_takes_the_grandchildren(tmp_path: Path) -> None:
    said = tmp_path / "said"
    proc = subprocess.Popen(["sh", "-c", _SCRIPT, "sh", str(said)], start_new_session=True,
                            stdin=subprocess.DEVNULL, text=True)  # fmt: skip
    grandchild = int(_wait_file(said, proc)[0])
    kill_group(proc)
    assert proc.wait(10) == -9
    assert _gone(grandchild), "the grandchild outlived the kill"
    kill_group(proc)  # waited for: nothing is signalled (its group id may be another's now)


@pytest.mark.parametrize("how", ["cancel", "timeout"])
def test_run_tool_reads_no_terminal_and_kills_its_group(tmp_path: Path, how: str) -> None:
    said = tmp_path / "said"
    cancel = CancelToken()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            run_tool(["sh", "-c", _SCRIPT, "sh", str(said)], 300 if how == "cancel" else 2,
                     cancel)  # fmt: skip
        except BaseException as exc:  # what the tool's caller sees: checked below
            errors.append(exc)

    th = threading.Thread(target=run)
    th.start()
    grandchild, stdin = _wait_file(said)
    assert stdin == "/dev/null"
    if how == "cancel":
        cancel.cancel()
    th.join(30)
    assert not th.is_alive()
    assert errors, "a cancelled or timed-out tool is an error"
    assert _gone(int(grandchild)), "the tool's child outlived the cancel"
