"""The results screen leads with the verdict and its counts; informational rows (a "before"
comparison, a step with nothing to check) look informational beside a PASS (issue 17)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.pilot import Pilot

from cltui.replay.engine.compare import Tolerance
from cltui.tui.app import make_app
from cltui.tui.result_rows import result_rows
from cltui.tui.screens.replay_progress import ReplayOutcome
from cltui.tui.screens.replay_request import ReplayRequest
from cltui.tui.screens.results import ReplayResultsScreen
from tests.test_snapshots import LARGE, Compare, _settle
from tests.test_snapshots_actions import DEVICES, _loaded


def _check(label: str, mem: str, status: str, **res: Any) -> dict[str, Any]:
    result = {"status": status, "elements": 8192, "n_diff": 0, "max_abs": None,
              "max_ulp": None, "first": None, "note": ""}
    result.update(res)
    return {"mem": mem, "args": [0], "label": label, "dtype": "<f4", "status": status,
            "output": None, "result": result, "summary": "bit-exact"}


def passing_outcome(tmp: Path) -> ReplayOutcome:
    """PASS on PoCL; enqueue 23's state before it differed from the capture's Pre (the host
    wrote the buffer; reloaded), enqueue 24 has nothing to check."""
    first = {"index": 3, "where": "[3]", "expected": 1.0, "actual": 0.0}
    steps = [
        {"enqueue": 22, "kernel": "sin_kernel", "prechecks": [],
         "checks": [_check("arg 0 (buffer 0014)", "m14", "equal")]},
        {"enqueue": 23, "kernel": "axpb",
         "prechecks": [_check("arg 3 (buffer 0004)", "m4", "different", n_diff=8192,
                              max_abs=1.0, first=first)],
         "loads": [{"mem": "m4", "why": "reload", "done": True}],
         "checks": [_check("arg 0 (buffer 0015)", "m15", "equal")]},
        {"enqueue": 24, "kernel": "marker_like", "prechecks": [], "checks": []},
    ]
    report = {
        "plan": {"range": "22-24", "mode": "chain", "steps": 3, "changes": [], "notes": []},
        "repeat": 1, "ok": True, "cross": [],
        "devices": [{"device": DEVICES[1], "status": "ok", "ok": True, "steps": steps,
                     "notes": []}],
    }
    manifest = {"steps": [{"enqueue": 22, "kernel": "sin_kernel", "checks": [{}]},
                          {"enqueue": 23, "kernel": "axpb", "checks": [{}]},
                          {"enqueue": 24, "kernel": "marker_like", "checks": []}]}
    request = ReplayRequest([DEVICES[1]], "chain", Tolerance(), 1, 60.0)
    return ReplayOutcome(report, manifest, request, "22-24", tmp)  # type: ignore[arg-type]


def test_informational_rows_are_neutral(tmp_path: Path) -> None:
    rows = result_rows(passing_outcome(tmp_path))
    before = next(r for r in rows if r.prechecks)
    nothing = next(r for r in rows if r.label == "(nothing to check)")
    checks = [r for r in rows if not r.informational]
    assert before.informational and nothing.informational and len(checks) == 2
    for row in (before, nothing):
        for cell in row.cells():
            assert isinstance(cell, Text)
            assert "red" not in str(cell.style) and "bold" not in str(cell.style)
            assert all("red" not in str(span.style) for span in cell.spans)


@pytest.mark.child
def test_results_pass_with_informational_rows(
    snap_compare: Compare, pyocl_pocl: Path, tmp_path: Path
) -> None:
    async def run(pilot: Pilot[Any]) -> None:
        app = await _loaded(pilot)
        assert app.main.capture is not None
        screen = ReplayResultsScreen(app.main.capture, passing_outcome(tmp_path / "out"))
        app.push_screen(screen)
        await _settle(pilot)
        assert screen.summary().plain.startswith("PASS: 3/3 kernel enqueues replayed")
        assert screen.table.cursor_row == 0  # no failure to open on: the before row is none
        await pilot.press("f")  # "next failure": the before row is not one
        await _settle(pilot)
        assert screen.table.cursor_row == 0
        app.clear_notifications()
        await _settle(pilot)

    assert snap_compare(make_app(pyocl_pocl), terminal_size=LARGE, run_before=run)
