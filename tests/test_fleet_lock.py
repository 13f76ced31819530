"""The device lock's shell lines (:func:`cltui.fleet.lock.lock_lines`) run by ``sh`` here, in
a lock folder shared by everyone (as ``/tmp`` on a host): a regular lock file is taken; a FIFO
or a link another user put at the lock's path is neither opened (a FIFO blocked the open) nor
followed (a link made its target), and the run goes on unlocked, saying so.  The holder's
run id, written beside the lock, tells a waiting column whether its own fleet holds the
device (one machine listed twice) or another one."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cltui.fleet.lock import (
    BUSY,
    LOCK_NAME,
    NOLOCK,
    RC_BUSY,
    busy_reason,
    lock_key,
    lock_lines,
    parse_busy,
    waiting_note,
)
from cltui.replay.engine.schema import Device

pytestmark = [
    pytest.mark.child,  # it runs sh
    pytest.mark.skipif(shutil.which("flock") is None, reason="flock (util-linux) is missing"),
]

DEV: Device = {"id": "0:0", "platform": "Portable Computing Language", "name": "cpu"}  # type: ignore[typeddict-item]


def _run(tmp: Path, holder: str = "") -> subprocess.CompletedProcess[str]:
    script = "\n".join([*lock_lines(DEV, 0, holder), "echo ran"])
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


def test_a_waiting_run_names_the_lock_holder(tmp_path: Path) -> None:
    """The holder writes its run id beside the lock; a run that finds the lock taken reads
    it, and a column of the same fleet is told from another fleet."""
    script = "\n".join([*lock_lines(DEV, 0, "ab12"), "echo held; read -r _"])
    holder = subprocess.Popen(["sh", "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "TMPDIR": str(tmp_path)})
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        proc = _run(tmp_path, "cd34")
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(60)
    assert proc.returncode == RC_BUSY and proc.stdout == ""
    (busy,) = [ln for ln in proc.stderr.splitlines() if ln.startswith(BUSY)]
    assert parse_busy(busy) == ("0", "ab12")
    assert waiting_note("0", "ab12", "ab12") == (
        "waiting: another column of this fleet (one machine listed twice?) holds the device (0 s)")
    assert waiting_note("0", "ab12", "cd34").startswith("waiting: another cltui fleet holds")
    assert busy_reason(0, "ab12", "cd34") == (
        "the device is busy: another cltui fleet holds it (--lock-wait 0: refused)")
    proc = _run(tmp_path, "cd34")  # free again: taken, and the new holder named
    assert proc.stdout == "ran\n"
    assert (_lock(tmp_path).parent / f"{lock_key(DEV)}.lock.who").read_text() == "cd34\n"


def test_a_holder_file_that_is_a_link_is_neither_read_nor_written(tmp_path: Path) -> None:
    target = tmp_path / "someone-elses-file"
    target.write_text("ffff")
    who = _lock(tmp_path).parent / f"{lock_key(DEV)}.lock.who"
    who.symlink_to(target)
    proc = _run(tmp_path, "cd34")
    assert proc.stdout == "ran\n" and target.read_text() == "ffff"
    assert parse_busy(f"{BUSY}5 $(rm -rf x)") == ("5", "")  # only hex is a holder
