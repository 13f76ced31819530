"""The device lock's shell lines (:func:`cltui.fleet.lock.lock_lines`) run by ``sh`` here, in
a lock folder shared by everyone (as ``/tmp`` on a host): a regular lock file is taken; a FIFO
or a link another user put at the lock's path is neither opened (a FIFO blocked the open) nor
followed (a link made its target), and the run goes on unlocked, saying so."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cltui.fleet.lock import LOCK_NAME, NOLOCK, lock_key, lock_lines
from cltui.replay.engine.schema import Device

pytestmark = [
    pytest.mark.child,  # it runs sh
    pytest.mark.skipif(shutil.which("flock") is None, reason="flock (util-linux) is missing"),
]

DEV: Device = {"id": "0:0", "platform": "Portable Computing Language", "name": "cpu"}  # type: ignore[typeddict-item]


def _run(tmp: Path) -> subprocess.CompletedProcess[str]:
    script = "\n".join([*lock_lines(DEV, 0), "echo ran"])
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True,
                          env={**os.environ, "TMPDIR": str(tmp)}, timeout=60)  # a hang bound


def _lock(tmp: Path) -> Path:
    folder = tmp / LOCK_NAME
    folder.mkdir(mode=0o1777, exist_ok=True)
    return folder / f"{lock_key(DEV)}.lock"


def test_a_lock_file_is_made_and_taken(tmp_path: Path) -> None:
    proc = _run(tmp_path)
    assert proc.stdout == "ran\n" and NOLOCK not in proc.stderr, proc.stderr
    assert _lock(tmp_path).is_file()


def test_a_fifo_at_the_lock_path_is_not_opened(tmp_path: Path) -> None:
    os.mkfifo(_lock(tmp_path))
    proc = _run(tmp_path)  # before: the open of the FIFO waited for a writer, for ever
    assert proc.stdout == "ran\n"
    assert f"{NOLOCK}cannot open" in proc.stderr and "not a readable regular file" in proc.stderr


def test_a_link_at_the_lock_path_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "someone-elses-file"
    _lock(tmp_path).symlink_to(target)
    proc = _run(tmp_path)  # before: ": >> LINK" made the link's target
    assert proc.stdout == "ran\n" and f"{NOLOCK}cannot open" in proc.stderr
    assert not target.exists()
