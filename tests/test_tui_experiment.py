"""Pilot tests of the experiments in the app on real PoCL: ``E`` edits the focused enqueue's
program in $EDITOR (a script that breaks one line) and the A/B screen shows the argument
broken in B only; ``X`` runs a sweep of local sizes (the table grows, the refused size is
skipped, the best is marked); the dialog's pure part."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Input

from cltui.tui.app import make_app
from cltui.tui.screens.ab_results import AbResultsScreen
from cltui.tui.screens.experiment_dialog import ExperimentDialog, parse_request
from cltui.tui.screens.sweep import SweepScreen
from tests.test_tui_replay import SIZE, aio, loaded, wait_for


def test_parse_request() -> None:
    req = parse_request("22-31", {"kernel": "axpb", "local": "64", "defines": "VWM=4",
                                  "options": "-cl-mad-enable", "repeat": "5"}, False, None)
    assert req.variant.short() == "-cl-mad-enable, -D VWM=4, axpb local 64"
    assert req.repeat == 5 and not req.sweep
    sweep = parse_request("22-31", {"local": "16,32", "defines": "V=1,2"}, True, None)
    assert len(sweep.spec.dimensions()) == 2
    with pytest.raises(ValueError, match="press Sweep"):
        parse_request("22-31", {"local": "16,32"}, False, None)
    with pytest.raises(ValueError, match="sizes"):
        parse_request("22-31", {"local": "16y"}, False, None)


@pytest.fixture
def _pocl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cl = pytest.importorskip("pyopencl")
    if not any("Portable" in p.name for p in cl.get_platforms()):
        pytest.skip("PoCL is not installed")
    monkeypatch.setenv("CLTUI_DATA_DIR", str(tmp_path / "data"))


def _editor(tmp_path: Path) -> str:
    script = tmp_path / "editor.sh"
    script.write_text("#!/bin/sh\nsed -i 's/z\\[i\\] = a\\*x\\[i\\] + b;/z[i] = a*x[i] + b + 1;/' "
                      "\"$1\"\n")  # fmt: skip
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


async def _field(pilot: Any, dialog: ExperimentDialog, key: str, value: str) -> None:
    dialog.query_one(f"#exp-{key}", Input).value = value
    await pilot.pause()


@pytest.mark.child
@pytest.mark.device
@pytest.mark.usefixtures("_pocl")
@aio
async def test_edit_in_editor_then_ab_shows_the_broken_argument(
    pyocl_pocl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EDITOR", _editor(tmp_path))
    monkeypatch.delenv("VISUAL", raising=False)
    app = make_app(pyocl_pocl)
    async with app.run_test(size=SIZE) as pilot:
        screen = await loaded(pilot)
        assert screen.jump_to(23)
        await wait_for(pilot, lambda: screen.details.enqueue is not None
                       and screen.details.enqueue.number == 23)  # fmt: skip
        await pilot.press("E")
        await wait_for(pilot, lambda: isinstance(app.screen, ExperimentDialog))
        dialog = app.screen
        assert isinstance(dialog, ExperimentDialog)
        assert dialog.program is not None and "b + 1;" in (dialog.program.source or "")
        await _field(pilot, dialog, "devices", "pocl")
        await _field(pilot, dialog, "repeat", "4")
        await pilot.click("#exp-go")
        await wait_for(pilot, lambda: isinstance(app.screen, AbResultsScreen), 120)
        res = app.screen
        assert isinstance(res, AbResultsScreen)
        assert res.report["verdict"]["status"] == "fail"
        table = res.query_one("#ab-checks", DataTable)
        await wait_for(pilot, lambda: table.row_count > 0)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        by_arg = {r[3]: (r[4], r[5]) for r in rows}
        assert by_arg["arg 0 (buffer 0015)"][0] == "equal"
        assert by_arg["arg 0 (buffer 0015)"][1].startswith("different 8192/8192")
        assert by_arg["arg 3 (buffer 0004)"] == ("equal", "equal")
        timing = res.query_one("#ab-timing", DataTable)
        assert str(timing.get_row_at(timing.row_count - 1)[1]) == "range"
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen)


@pytest.mark.child
@pytest.mark.device
@pytest.mark.usefixtures("_pocl")
@aio
async def test_sweep_screen_grows_and_ranks(pyocl_pocl: Path) -> None:
    app = make_app(pyocl_pocl)
    async with app.run_test(size=SIZE) as pilot:
        screen = await loaded(pilot)
        assert screen.jump_to(23)
        await pilot.pause()
        await pilot.press("X")
        await wait_for(pilot, lambda: isinstance(app.screen, ExperimentDialog))
        dialog = app.screen
        assert isinstance(dialog, ExperimentDialog)
        await _field(pilot, dialog, "local", "32,64,8192")
        await _field(pilot, dialog, "devices", "pocl")
        await _field(pilot, dialog, "repeat", "3")
        await pilot.click("#exp-sweep")
        await wait_for(pilot, lambda: isinstance(app.screen, SweepScreen))
        sweep = app.screen
        assert isinstance(sweep, SweepScreen)
        await wait_for(pilot, lambda: sweep.summary is not None or sweep.error is not None, 120)
        assert sweep.error is None and sweep.summary is not None
        status = {r["label"]: r["status"] for r in sweep.rows}
        assert status == {"capture": "pass", "local 32": "pass", "local 64": "pass",
                          "local 8192": "refused"}  # fmt: skip
        table = sweep.query_one("#sweep-table", DataTable)
        assert table.row_count == 4
        firsts = [str(table.get_row_at(i)[0]) for i in range(4)]
        # "best" marks the BEST only, named when measurably faster than the capture's own
        assert sum(f.endswith("best") for f in firsts) == (sweep.summary["best_id"] is not None)
        assert sweep.summary["verdict"]["line"].startswith(
            "BEST: " if sweep.summary["best_id"] else "NO BETTER VARIANT: "
        )
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen)


def test_editor_script_is_executable(tmp_path: Path) -> None:
    assert os.access(_editor(tmp_path), os.X_OK)


@pytest.mark.child
@aio
async def test_sweep_screen_cancel_stops_and_keeps_the_rows(pyocl_pocl: Path) -> None:
    """Cancel (escape) while rows come: the task sees the cancel, the rows so far stay."""
    import threading

    from cltui.progress import CancelToken
    from cltui.replay.experiment.runs import summarize
    from cltui.replay.experiment.sweep import SweepSpec, point_id, points, row_of

    spec = SweepSpec("23", local=tuple((n,) for n in (8, 16, 32, 64, 128, 256)))
    pts = points(spec)
    first_two = threading.Event()

    def task(cancel: CancelToken) -> Any:
        def rows() -> Any:
            for k, v in enumerate(pts):
                if cancel.is_set():
                    return
                if k == 2:
                    first_two.set()
                    cancel.wait(30)  # a child running a point until the cancel kills it
                    continue
                yield row_of(point_id(v), v, "1:0", {"status": "pass", "line": "PASS"}, None,
                             [1000 + k] * 6, None)  # fmt: skip

        def summary(done: Any, interrupted: bool) -> Any:
            return summarize(spec, "/nonexistent", pts, done, ["1:0"], None, 0, None, None,
                             interrupted)  # fmt: skip

        return len(pts), rows(), summary

    app = make_app(pyocl_pocl)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        screen = SweepScreen("Sweep of 23", task)
        app.push_screen(screen)
        await wait_for(pilot, first_two.is_set)
        await wait_for(pilot, lambda: len(screen.rows) == 2)
        await pilot.press("escape")
        await wait_for(pilot, lambda: screen.summary is not None)
        assert screen.summary is not None and screen.summary["interrupted"]
        assert screen.summary["verdict"]["line"].startswith("INTERRUPTED (2 of 7 runs)")
        assert screen.query_one("#sweep-table", DataTable).row_count == 2
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, SweepScreen))
