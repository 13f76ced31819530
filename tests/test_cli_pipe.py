"""A reader that leaves early (`cltui ls D | head -1`) ends cltui quietly with 141, the
shells' 128 + SIGPIPE, not 1 (which means FAIL) and not a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cltui.errors import EXIT_BROKEN_PIPE
from tests.conftest import CAPTURES

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)


@pytest.mark.parametrize("argv", [["ls"], ["ls", "--json"], ["show", "--json"]])
def test_closed_stdout_exits_141_quietly(argv: list[str]) -> None:
    capture = str(CAPTURES / "pyopencl_lib_pocl")
    args = [*argv, capture] if argv[0] == "ls" else ["show", capture, "0", "--json"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "cltui", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before cltui writes its first byte
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == EXIT_BROKEN_PIPE
    assert err == ""
