"""Quitting the app leaves nothing behind: the real app in a real pty, ``q``, and then every
process it started (the capture's reader process, a replay's child per device and whatever
those start) is gone and no process has the terminal open any more.  A process that kept
it open would keep an ``ssh -t`` session open after the app left (tests/test_tui_ssh.py)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.ptyterm import PtyTerm

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)

LOADED = "rng_gen"
SHIFT_DOWN = b"\x1b[1;2B"
CTRL_R = b"\x12"


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent pid, start time) of a live process; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1]), int(fields[19])


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return "?"


def descendants(root: int) -> dict[int, tuple[int, str]]:
    """Every process below ``root`` now: pid -> (start time, command line)."""
    children: dict[int, list[int]] = {}
    starts: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (st := _stat(int(name))) is not None:
            children.setdefault(st[1], []).append(int(name))
            starts[int(name)] = st[2]
    found: dict[int, tuple[int, str]] = {}
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found[pid] = (starts[pid], _cmdline(pid))
        todo += children.get(pid, [])
    return found


def alive(procs: dict[int, tuple[int, str]]) -> list[str]:
    """Those of ``procs`` still running (a zombie has ended; a reused pid is another process)."""
    out = []
    for pid, (start, cmd) in procs.items():
        st = _stat(pid)
        if st is not None and st[2] == start and st[0] != "Z":
            out.append(f"{pid} {cmd}")
    return out


def quit_and_check(term: PtyTerm, started: dict[int, tuple[int, str]], key: bytes) -> None:
    """``key`` quits; the app ends by itself, then so has every process it started, and the
    terminal is free."""
    term.send(key)
    assert term.wait_exit(60) == 0, term.text()
    end = time.monotonic() + 10  # SIGKILLed children: gone at once, but give a loaded box time
    while (left := alive(started)) and time.monotonic() < end:
        time.sleep(0.05)
    for line in left:  # this test's leftovers go now, not with the machine
        with contextlib.suppress(OSError):
            os.kill(int(line.split()[0]), signal.SIGKILL)
    assert not left, f"still running after the app quit: {left}"
    assert term.holders() == [], "processes that still have the terminal open"


def test_q_leaves_no_process_and_frees_the_terminal(pyocl_pocl: Path) -> None:
    argv = [sys.executable, "-m", "cltui", str(pyocl_pocl)]
    with PtyTerm(argv, size=(100, 30)) as term:
        term.wait_for(lambda s: LOADED in s and "Stop reading" not in s, timeout=60, quiet=0.3)
        started = descendants(term.proc.pid)
        assert started, "the capture is read by a child process (cltui/capture/background.py)"
        quit_and_check(term, started, b"q")


@pytest.mark.parametrize("key", [b"q", b"\x03"], ids=["q", "ctrl+c"])
def test_quit_during_a_replay_leaves_no_process(
    pyocl_pocl: Path, tmp_path: Path, key: bytes
) -> None:
    """The replay's child process runs when ``q`` or ctrl+c comes (both quit from every
    screen: the progress screen swallowed ``q`` before issue 31): it dies with the app.  The
    dialog remembers a repeat of 100000 (its memory of this capture, written here): the
    child would run for minutes."""
    from cltui.capture import open_capture
    from cltui.tui.capture_state import STATE_VERSION, save_state, state_file

    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    cap = open_capture(pyocl_pocl)
    said = save_state(state_file(cap.path, cap.log_path, env),
                      {"version": STATE_VERSION, "replay": {"fields": {"repeat": "100000"}}},
                      cap.path)
    assert said is None, said
    argv = [sys.executable, "-m", "cltui", str(pyocl_pocl)]
    with PtyTerm(argv, size=(120, 36), env=env) as term:
        term.wait_for(lambda s: LOADED in s and "Stop reading" not in s, timeout=60, quiet=0.3)
        term.send(b":14\r")
        term.wait_for("14 · 1 enq", timeout=30, quiet=0.2)
        term.send(SHIFT_DOWN * 24)  # 14-38: kernels enough to keep the child busy a while
        term.wait_for("14-38", timeout=30, quiet=0.2)
        term.send(b"r")
        term.wait_for("Replay enqueues", timeout=30, quiet=0.3)
        term.send(CTRL_R)  # the dialog's default: the device the rule picks
        term.wait_for("timing 100000 rep", timeout=60)  # the child is in its loop (a long
        # device name cuts the line at 120 columns)
        started = descendants(term.proc.pid)
        assert any("cltui.replay.runner" in cmd for _s, cmd in started.values()), started
        quit_and_check(term, started, key)
