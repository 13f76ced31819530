"""How an experiment's supervisor (:class:`cltui.replay.experiment.job.ExperimentJob`)
goes on after its process ends between points: a stand-in worker with the real protocol
(tests/experiment_fake_worker.py) in real child processes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cltui.replay.experiment import job as job_module
from cltui.replay.experiment.job import ExperimentJob, Point

pytestmark = [pytest.mark.child]

DEVICE: Any = {"id": "9:9", "name": "no device", "platform": "none"}


def _points(n: int) -> list[Point]:
    return [Point(f"p{i}", {"steps": []}) for i in range(n)]  # type: ignore[typeddict-item]


@pytest.fixture(autouse=True)
def _fake_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_module, "MODULE", "tests.experiment_fake_worker")


def test_a_process_that_crashes_as_a_point_ends_fails_it_and_a_new_one_goes_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """p1 was reported, then its process aborted before it went on (as when p1's memory is
    freed, its heap corrupted by p1's kernel): p1 is that crash, not a pass, and p2 and p3
    run in a new process (before: p1 passed, p2 and p3 'crash: the process died', never
    run)."""
    monkeypatch.setenv("CLTUI_FAKE_ABORT_AFTER", "p1")
    job = ExperimentJob(None, _points(4), [DEVICE], tmp_path, repeat=1, timeout=60)
    try:
        got = [(ev["id"], ev["result"].get("status"), ev["result"]["error"])
               for ev in job.events() if ev["type"] == "point"]  # fmt: skip
    finally:
        job.cleanup()
    assert got == [
        ("p0", None, None),
        ("p1", "crash", "the end of its run (its checks done) crashed the driver (SIGABRT)"),
        ("p2", None, None), ("p3", None, None)], got


def test_a_process_that_ends_before_its_first_point_names_the_points_not_reached(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A process that aborts before it reports anything is not started again for ever: the
    points say they were not reached, and why."""
    monkeypatch.setattr(job_module, "MODULE", "tests.experiment_no_such_worker")
    job = ExperimentJob(None, _points(2), [DEVICE], tmp_path, repeat=1, timeout=60)
    try:
        got = [ev["result"] for ev in job.events() if ev["type"] == "point"]
    finally:
        job.cleanup()
    assert [r["status"] for r in got] == ["error", "error"]
    assert got[0]["error"] == (
        "not reached: the process ended before its first point (exit code 1)"), got[0]
