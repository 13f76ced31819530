"""The test terminal (tests/ptyterm.py) itself: waiting for a program to end reads what it
writes meanwhile.  A terminal holds about 17 KB; a program that writes more to a terminal
nobody reads blocks in the write and never ends (an ``ssh -t`` client blocked so never sent
the app its ``q``: tests/test_tui_ssh.py)."""

from __future__ import annotations

import sys

import pytest

from tests.ptyterm import PtyTerm

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)

_WRITER = "import sys; sys.stdout.write('x' * 200_000 + 'done'); sys.stdout.flush()"


def test_wait_exit_reads_what_the_program_still_writes() -> None:
    with PtyTerm([sys.executable, "-c", _WRITER], size=(80, 24)) as term:
        assert term.wait_exit(60) == 0
        assert term.raw.count(b"x") == 200_000 and term.raw.endswith(b"done")
        assert term.holders() == []
