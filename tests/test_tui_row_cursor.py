"""The row-cursor base view (:mod:`cltui.tui.widgets.row_cursor`): the keys, the reactive
cursor (clamped, repainted, announced), keeping the cursor in view, the mouse; and that the
five list views move their cursor with it, not with keys of their own."""

from __future__ import annotations

import asyncio

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip

from cltui.tui.widgets.args_table import ArgsTable
from cltui.tui.widgets.buffer_view import BufferView
from cltui.tui.widgets.diff_view import DiffView
from cltui.tui.widgets.enqueue_list import EnqueueList
from cltui.tui.widgets.history_list import HistoryList
from cltui.tui.widgets.row_cursor import RowCursorView

MOTION_KEYS = {"up", "down", "pageup", "pagedown", "home", "end"}


class Rows(RowCursorView):
    HEADER_ROWS = 1

    def __init__(self, rows: int) -> None:
        super().__init__()
        self.rows = rows

    @property
    def row_count(self) -> int:
        return self.rows

    def on_mount(self) -> None:
        self.virtual_size = Size(self.size.width, self.rows + self.HEADER_ROWS)

    def render_line(self, y: int) -> Strip:
        return Strip.blank(self.size.width)


class RowsApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Rows(100)


def test_the_five_views_move_their_cursor_with_the_base() -> None:
    for view in (EnqueueList, HistoryList, ArgsTable, BufferView, DiffView):
        assert issubclass(view, RowCursorView), view
        own = [b for b in view.__dict__.get("BINDINGS", []) if isinstance(b, Binding)]
        assert not MOTION_KEYS & {b.key for b in own}, view


def test_keys_move_the_cursor_clamped_kept_in_view_and_announced() -> None:
    moved: list[int] = []
    seen: list[Message] = []  # the hook sees a message at each node it bubbles through

    def hook(message: Message) -> None:
        if isinstance(message, RowCursorView.CursorMoved) and all(m is not message for m in seen):
            seen.append(message)
            moved.append(message.row)

    async def run() -> None:
        app = RowsApp()
        async with app.run_test(size=(40, 12), message_hook=hook) as pilot:
            view = app.query_one(Rows)
            view.focus()
            await pilot.pause()
            shown = view.rows_visible()
            assert shown == 11  # 12 lines less the header
            await pilot.press("down", "down", "down")
            assert view.cursor == 3 and moved == [1, 2, 3]
            await pilot.press("pagedown")  # a page less the one row kept on screen
            assert view.cursor == 3 + shown - 1
            await pilot.press("end")
            await pilot.pause()
            assert view.cursor == 99
            assert round(view.scroll_y) <= 99 < round(view.scroll_y) + shown  # its row shows
            await pilot.press("down")  # at the last row: no move, nothing said
            assert view.cursor == 99 and moved[-1] == 99 and moved.count(99) == 1
            await pilot.press("home")
            await pilot.pause()
            assert view.cursor == 0 and view.scroll_y == 0
            view.cursor = 500  # set by the program: clamped to the rows, and said
            await pilot.pause()
            assert view.cursor == 99 and moved[-1] == 99
            view.move_cursor(-5)
            assert view.cursor == 0
            await pilot.click(Rows, offset=(3, 4))  # line 4: the header, then rows 0..
            assert view.cursor == round(view.scroll_y) + 3
            await pilot.click(Rows, offset=(3, 0))  # the header moves nothing
            assert view.cursor == 3

    asyncio.run(run())


def test_no_rows_no_move() -> None:
    async def run() -> None:
        app = RowsApp()
        async with app.run_test(size=(40, 12)) as pilot:
            view = app.query_one(Rows)
            view.rows = 0
            view.focus()
            await pilot.press("down", "end", "pagedown")
            assert view.cursor == 0

    asyncio.run(run())
