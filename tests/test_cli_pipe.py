"""A reader that leaves early (`cltui ls D | head -1`) ends cltui quietly with 141, the
shells' 128 + SIGPIPE, not 1 (which means FAIL) and not a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cltui.errors import EXIT_BROKEN_PIPE
from tests.conftest import CAPTURES

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)


@pytest.mark.parametrize("argv", [
    ["ls", "D"], ["ls", "D", "--json"], ["show", "D", "0", "--json"],
    # a text report written by rich, whose own way exits 1 (FAIL) when its reader left
    pytest.param(["replay", "D", "22-24", "-d", "pocl"], marks=pytest.mark.device),
])  # fmt: skip
def test_closed_stdout_exits_141_quietly(argv: list[str]) -> None:
    capture = str(CAPTURES / "pyopencl_lib_pocl")
    args = [capture if a == "D" else a for a in argv]
    proc = subprocess.Popen(
        [sys.executable, "-m", "cltui", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before cltui writes its first byte
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == EXIT_BROKEN_PIPE
    # nothing but what cltui says on stderr anyway: where the replay runs
    said = [x for x in err.splitlines() if not x.startswith(("device: ", "replaying "))]
    assert said == [], err
