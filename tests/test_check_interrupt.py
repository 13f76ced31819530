"""``cltui check`` interrupted (ctrl-c, SIGTERM) prints and keeps the checks that finished,
as ``replay`` does (issue 25, item 8), then exits 130 leaving nothing behind."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from tests.analysis_synth import Arg, Launch, SynthCapture, write_capture
from tests.test_faults import HANG_SOURCE, _alive, _children, _cli, _folders, _wait_for
from tests.test_replay_runner import _devices

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)

OOB_SOURCE = """\
__kernel void oob_write(__global float *out, int n)
{
    int i = get_global_id(0);
    out[i + 1] = (float)i;
}
"""


def _oob_then_hang(root: Path) -> Path:
    """0 oob_write (an out-of-bounds write Oclgrind reports), 1 spin (never ends)."""
    spec = SynthCapture(
        OOB_SOURCE + HANG_SOURCE,
        {"O": np.zeros(8, dtype=np.float32), "F": np.zeros(1, dtype=np.int32)},
        [Launch("oob_write", [Arg("buf", "O"), Arg("int", 8)], 8, 8),
         Launch("spin", [Arg("buf", "F")], 1, 1)],
    )  # fmt: skip
    return write_capture(spec, root)


@pytest.mark.device
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_check_keeps_what_finished(tmp_path: Path, sig: signal.Signals) -> None:
    _devices("oclgrind")
    root = _oob_then_hang(tmp_path / "cap")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    proc = _cli(["check", str(root), "0-1", "--timeout", "600", "--json"], tmpdir)
    try:
        child = _wait_for(lambda: _children(proc.pid, "cltui.analysis.check"))[0]
        folder = _wait_for(lambda: _folders(tmpdir, "check"))[0]

        def reported() -> bool:  # Oclgrind reported enqueue 0's write: 1 is spinning
            try:
                return b"Invalid write" in (folder / "oclgrind1.txt").read_bytes()
            except OSError:
                return False

        _wait_for(reported, 120)
        time.sleep(1.0)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    lines = err.decode().strip().splitlines()
    assert lines[-1] == "cltui: interrupted"
    assert "interrupted: the report holds what finished before it" in lines
    report = json.loads(out)
    assert report["status"] == "cancelled" and report["error"] == "interrupted (enqueue 1)"
    assert [(f["enqueue"], f["kind"]) for f in report["findings"]] == [(0, "out-of-bounds")]
    assert report["unchecked"] == [1]
    assert list(tmpdir.iterdir()) == []
    _wait_for(lambda: not _alive(child), 10)
