"""The logs of children's stderr (:func:`cltui.process.child.keep_log`): a copy kept and
named, the oldest beyond :data:`~cltui.process.child.LOGS_KEPT` removed, and another cltui
pruning the same folder at once never makes a written log read as not kept."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cltui.process import child


def test_a_log_gone_under_the_pruning_does_not_lose_the_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    logs = tmp_path / "cache" / "cltui" / "logs"
    logs.mkdir(parents=True)
    for i in range(child.LOGS_KEPT + 5):
        old = logs / f"20260101-000000-p1-{i}-old.txt"
        old.write_text("old")
        os.utime(old, (1_000_000 + i, 1_000_000 + i))
    gone = logs / "20260101-000000-p1-0-old.txt"
    real_stat = Path.stat

    def stat(self: Path, *args: object, **kwargs: object) -> os.stat_result:
        if self == gone:  # removed by another cltui between its listing and its date
            raise FileNotFoundError(str(self))
        return real_stat(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "stat", stat)
    err = tmp_path / "stderr.txt"
    err.write_text("Fatal Python error: Segmentation fault\n")
    kept = child.keep_log(err, "experiment-1_0-crash")
    assert kept is not None and kept.read_text() == "Fatal Python error: Segmentation fault\n"
    monkeypatch.setattr(Path, "stat", real_stat)
    left = sorted(logs.glob("*.txt"))
    assert kept in left and len(left) == child.LOGS_KEPT + 1  # the one that 'went' and ours
    assert not (logs / "20260101-000000-p1-1-old.txt").exists()  # the oldest went
