"""The problems of a damaged capture in the app: one notice, a problems dialog whose detail pane
shows the highlighted problem's whole text, and a severity that follows the share lost."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from cltui.capture.opening import open_capture
from cltui.tui.app import make_app
from cltui.tui.screens.problems import ProblemsScreen
from cltui.tui.widgets.enqueue_list import EnqueueList
from tests.conftest import capture_path
from tests.said import Said
from tests.test_tui_app import SIZE, aio, jump, settle, type_text, wait_loaded


@pytest.fixture(scope="module")
def coldcache() -> Path:
    """The real damaged capture: enqueues 0-100 of 123 lost with the log (a NUL run)."""
    return capture_path("pyopencl_lib_coldcache")


def test_most_of_the_capture_lost_is_an_error(coldcache: Path) -> None:
    cap = open_capture(coldcache)
    try:
        lost = [p for p in cap.problems if "lost with the log" in p.message]
        assert len(lost) == 1
        assert cap.recovery is not None and 2 * cap.recovery.lost_count > cap.recovery.expected
        assert lost[0].severity == "error"  # 101 of 123 lost: not a "warning"
    finally:
        cap.close()


@pytest.mark.child
@aio
async def test_damaged_capture_one_notice_and_readable_problems(coldcache: Path) -> None:
    said = Said()
    async with make_app(coldcache).run_test(size=SIZE, message_hook=said) as pilot:
        screen = await wait_loaded(pilot)
        assert screen.capture is not None
        problems = screen.capture.problems
        assert len(problems) >= 3
        notices = [t for t in said.texts if "problem" in t]
        assert len(notices) == 1, said.texts  # one notice, not a stack of toasts
        assert f"{len(problems)} problems in this capture" in notices[0]
        assert "enqueues 0-100 lost with the log" in notices[0]  # the error comes first
        assert "Press p" in notices[0]
        await pilot.press("p")
        dialog = pilot.app.screen
        assert isinstance(dialog, ProblemsScreen)
        table = dialog.query_one("#problems-table", DataTable)
        row = next(i for i, p in enumerate(problems) if "lost with the log" in p.message)
        table.move_cursor(row=row)
        await settle(pilot)
        text = str(dialog.query_one("#problems-detail-text", Static).render())
        # the whole line, wrapped in the pane: its end is there too
        assert "error: clintercept_log.txt: enqueues 0-100 lost with the log" in text
        assert "the report counts 123" in text
        assert "1 MarkerWithWaitList" in text
        await pilot.press("enter")
        assert dialog.query_one("#problems-detail", VerticalScroll).has_focus
        await pilot.press("enter")
        assert table.has_focus
        await pilot.press("escape")
        assert not isinstance(pilot.app.screen, ProblemsScreen)


def _row_texts(lst: EnqueueList, count: int) -> list[str]:
    """The rows shown, ``~`` (recovered) written as a space."""
    return [lst.render_line(y).text.replace("~", " ").strip() for y in range(1, count + 1)]


@pytest.mark.child
@aio
async def test_lost_enqueues_are_dim_rows_in_order(coldcache: Path) -> None:
    """2, 8, 13, 15, 17 ... were lost with the log and no file names them: each has a dim
    'lost' row with the report's counts, in number order; the cursor passes over them."""
    async with make_app(coldcache).run_test(size=(120, 40)) as pilot:
        screen = await wait_loaded(pilot)
        lst = screen.enqueue_list
        rows = _row_texts(lst, 18)
        assert [r.split()[0] for r in rows] == [str(n) for n in range(18)]
        lost = [r for r in rows if r.split()[1] == "lost"]
        assert [int(r.split()[0]) for r in lost] == [2, 8, 13, 15, 17]
        assert "no file names it" in lost[0] and "3 CopyBuffer" in lost[0]
        assert rows[1].split()[1] == "kernel" and rows[3].split()[1] == "kernel"
        await pilot.press("down")
        assert screen.capture is not None
        assert int(screen.capture.numbers[lst.cursor_pos or 0]) == 1
        await pilot.press("down")  # over the lost 2, onto 3
        assert int(screen.capture.numbers[lst.cursor_pos or 0]) == 3
        await jump(pilot, 101)  # far down: the view follows the cursor's row, lost rows and all
        await settle(pilot)
        top = round(lst.scroll_y)
        shown = _row_texts(lst, 38)
        assert any(r.startswith("101 ") for r in shown), (top, shown)
        await pilot.press("slash")
        await type_text(pilot, "axpb")
        await pilot.press("enter")
        await settle(pilot)
        # a filter keeps only the enqueues it matches: no lost rows
        assert all("lost" not in r for r in _row_texts(lst, len(lst.view)))
