"""Pilot test of ``C``: Oclgrind's findings for the selection, marked in the program source."""

from __future__ import annotations

from pathlib import Path

import pytest

from cltui.tui.app import make_app
from cltui.tui.screens.findings import FindingsScreen
from cltui.tui.screens.main import MainScreen
from cltui.tui.widgets.source_view import SourceView
from tests.test_tui_replay import SIZE, aio, loaded, select, wait_for

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)


@aio
async def test_check_marks_oclgrind_findings_in_source(opencv: Path) -> None:
    # enqueue 4 is OpenCV's RGB2HSV: its vload4 reads past the end of the source image
    async with make_app(opencv).run_test(size=SIZE) as pilot:
        main = await loaded(pilot)
        await select(pilot, main, 4, 4)
        await pilot.press("C")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, FindingsScreen), 120)
        screen = pilot.app.screen
        assert isinstance(screen, FindingsScreen)
        await pilot.pause()
        report = screen.report
        assert report.status == "findings"
        kinds = {f.kind for f in report.findings}
        assert "out-of-bounds" in kinds
        oob = next(f for f in report.findings if f.kind == "out-of-bounds")
        assert oob.enqueue == 4 and oob.kernel == "RGB2HSV"
        line = oob.lines[0]
        assert line.source is not None
        # the marked line is the capture's own source line with the vload4 (read from the file)
        raw = (opencv / line.source).read_text().splitlines()
        assert "vload4(0, src + src_index)" in raw[line.line - 1]
        index = report.findings.index(oob)
        screen.table.move_cursor(row=index)
        await pilot.pause()
        view = screen.query_one(SourceView)
        assert view.display
        assert line.line in screen.marked_lines()
        every = sorted({sl.line for f in report.findings for sl in f.lines
                        if sl.source == line.source})
        assert screen.marked_lines() == every
        assert view.line_text(line.line - 1).strip() == raw[line.line - 1].strip()
        top = round(view.scroll_y)
        assert top < line.line <= top + view.scrollable_content_region.height
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(pilot.app.screen, MainScreen)
        # back in the browser, the Source tab of enqueue 4 marks the same lines
        await pilot.press("1")
        await pilot.pause()
        pane_view = main.query_one("#source-view", SourceView)
        marked = [m[0] for m in pane_view.marks if m[3] == 10_000]
        assert marked == every
        assert pane_view.line_text(line.line - 1).strip() == raw[line.line - 1].strip()
        # an enqueue that was not checked has no finding marks
        main.jump_to(5)
        await pilot.pause(0.2)
        await wait_for(pilot, lambda: main.details.enqueue is not None
                       and main.details.enqueue.number == 5, 10)
        await pilot.pause()
        assert not [m for m in pane_view.marks if m[3] == 10_000]


@aio
async def test_check_without_kernel_is_one_line(pyocl_pocl: Path) -> None:
    from cltui.tui.screens.replay_progress import ProgressScreen

    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        main = await loaded(pilot)
        await select(pilot, main, 2, 2)
        await pilot.press("C")
        await wait_for(
            pilot,
            lambda: isinstance(pilot.app.screen, ProgressScreen) and pilot.app.screen.finished,
            30,
        )
        screen = pilot.app.screen
        assert isinstance(screen, ProgressScreen)
        assert screen.error == "no kernel enqueue in range 2"
