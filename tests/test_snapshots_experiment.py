"""Snapshot tests of the experiment screens: the dialog (``X``), the A/B results and the sweep
table, from fixed inputs (a canned A/B report, fixed sweep rows) so frames are stable.
Update with ``pytest tests/test_snapshots_experiment.py --snapshot-update``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from cltui.capture import open_capture
from cltui.capture.ranges import parse_range
from cltui.progress import CancelToken
from cltui.replay.experiment.report import AbReport, ab_report
from cltui.replay.experiment.runs import summarize
from cltui.replay.experiment.sweep import Row, SweepSpec, point_id, points, row_of
from cltui.replay.plan import build_plan
from cltui.tui.app import make_app
from cltui.tui.screens.ab_results import AbResultsScreen
from cltui.tui.screens.sweep import SweepScreen
from tests.test_snapshots_actions import LARGE, Compare, _keys, _loaded, _settle

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)

DEVICE = {"id": "1:0", "name": "pthread-skylake-avx512-AMD EPYC",
          "platform": "Portable Computing Language", "version": "OpenCL 3.0"}  # fmt: skip


def _check(label: str, status: str) -> dict[str, Any]:
    result = {"status": status, "dtype": "float32", "elements": 8192, "expected_size": 32768,
              "actual_size": 32768, "n_diff": 8192, "n_bad": 8192, "max_abs": 1.0,
              "max_ulp": 2113927222.0, "first": [0], "note": ""}  # fmt: skip
    return {"mem": label, "args": [0], "label": label, "output": None, "status": status,
            **({"result": result} if status == "different" else {})}  # fmt: skip


def _event(pid: str, broken: bool, base_ns: int) -> dict[str, Any]:
    checks = [_check("arg 0 (buffer 0015)", "different" if broken else "equal"),
              _check("arg 3 (buffer 0004)", "equal")]  # fmt: skip
    step = {"enqueue": 23, "kernel": "axpb", "status": "fail" if broken else "pass",
            "checks": checks, "prechecks": [], "loads": []}  # fmt: skip
    result = {"device": DEVICE, "ok": not broken, "error": None, "failed_enqueue": None,
              "repeat": 1, "steps": [step], "builds": {}, "notes": []}  # fmt: skip
    times = [[base_ns + 37 * (i % 5) for i in range(19)]]
    return {"type": "point", "device": "1:0", "id": pid, "result": result, "times": times}


def _report(pyocl_pocl: Path) -> AbReport:
    base = build_plan(open_capture(pyocl_pocl), parse_range("23")).to_manifest()
    plan = dict(base)
    plan["variant"] = {"name": None, "changes": {},  # type: ignore[typeddict-unknown-key]
                       "lines": ["program p17: a new source"]}  # fmt: skip
    events = [_event("A", False, 17000), _event("B", True, 16100)]
    floor = {"min_effect": 0.012, "source": "calibration", "measured": "2026-12-04 15:00 UTC",
             "range": "23", "repeat": 20}  # fmt: skip
    return ab_report(base, plan, events, [DEVICE], 20,  # type: ignore[arg-type,list-item]
                     {"1:0": floor})  # type: ignore[dict-item]


def test_experiment_dialog(snap_compare: Compare, pyocl_pocl: Path) -> None:
    run = _keys(22, *["shift+down"] * 9, "X")
    assert snap_compare(make_app(pyocl_pocl), terminal_size=LARGE, run_before=run)


def test_ab_results(snap_compare: Compare, pyocl_pocl: Path) -> None:
    report = _report(pyocl_pocl)

    async def run(pilot: Pilot[Any]) -> None:
        app = await _loaded(pilot)
        app.push_screen(AbResultsScreen(report))
        await _settle(pilot)
        await _settle(pilot)

    assert snap_compare(make_app(pyocl_pocl), terminal_size=LARGE, run_before=run)


def _sweep_task(cancel: CancelToken) -> tuple[int, Iterator[Row], Any]:
    spec = SweepSpec("22-31", local=((16,), (64,), (8192,)), options=("-cl-mad-enable",))
    pts = points(spec)
    verdict = {"status": "pass", "line": "PASS"}
    rows = []
    for k, v in enumerate(pts):
        refused = "enqueue 22 (sin_kernel): local 8192 = 8192 work-items > the device's 4096" \
            if "8192" in v.short() else None
        times = [300_000 + 20_000 * k + 500 * (i % 3) for i in range(9)]
        rows.append(row_of(point_id(v), v, "1:0", verdict, refused, times, None))

    def summary(done: list[Row], interrupted: bool) -> dict[str, Any]:
        return summarize(spec, "/nonexistent", pts, done, ["1:0"], None, 0, None, None,
                         interrupted)  # fmt: skip

    return len(rows), iter(rows), summary


def test_sweep_screen(snap_compare: Compare, pyocl_pocl: Path) -> None:
    async def run(pilot: Pilot[Any]) -> None:
        app = await _loaded(pilot)
        screen = SweepScreen("Sweep of 22-31", _sweep_task)
        app.push_screen(screen)
        for _ in range(500):  # the worker starts once the screen is mounted
            if screen.summary is not None:
                break
            await pilot.pause(0.01)
        await _settle(pilot)
        for widget in app.screen.query(Input):
            widget.cursor_blink = False
        await _settle(pilot)

    assert snap_compare(make_app(pyocl_pocl), terminal_size=LARGE, run_before=run)
