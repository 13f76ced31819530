"""A Line API scroll view with a row cursor: the one place the list views move theirs.

:class:`RowCursorView` owns the cursor (a Textual ``reactive``: setting it clamps it to the
rows, repaints the view and says so), the motion keys (``up`` ``down`` ``pageup`` ``pagedown``
``home`` ``end``), keeping the cursor's row in view and the mouse click on a row.  A view
says how many rows it has (:attr:`row_count`), how many header lines sit above them
(:attr:`HEADER_ROWS`) and, where a screen row is not a cursor row (the enqueue list's lost
rows), how the two map; it says a move in its own words by overriding :meth:`cursor_moved`.
"""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView

__all__ = ["RowCursorView"]

_NO_HORIZONTAL = frozenset({"scroll_left", "scroll_right", "page_left", "page_right"})


class RowCursorView(ScrollView, can_focus=True):
    """A scroll view of rows with a cursor row (rows always fit the width)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "First", show=False),
        Binding("end", "edge(1)", "Last", show=False),
    ]

    HEADER_ROWS: ClassVar[int] = 0  # header lines above the rows (they do not scroll)
    PAGE_OVERLAP: ClassVar[int] = 1  # rows of the last page still shown after a page key
    # scroll to the cursor even where Textual would not: before the scrollbar shows (a view
    # just filled) and before the first layout (no height yet: one row is taken as shown)
    FORCE_SCROLL: ClassVar[bool] = False

    cursor = reactive(0, init=False)  # the cursor's row (from 0), clamped to the rows

    class CursorMoved(Message):
        """The cursor is on another row (a key, the mouse, a jump or new data moved it)."""

        def __init__(self, view: RowCursorView, row: int) -> None:
            super().__init__()
            self.view = view
            self.row = row

        @property
        def control(self) -> RowCursorView:
            return self.view

    @property
    def row_count(self) -> int:
        """How many rows the cursor moves over."""
        raise NotImplementedError

    # ---------------------------------------------------------------- the cursor
    def validate_cursor(self, row: int) -> int:
        return max(0, min(row, self.row_count - 1))

    def watch_cursor(self, row: int) -> None:
        self.cursor_moved(row)

    def cursor_moved(self, row: int) -> None:
        """Say that the cursor is on ``row`` now (a view says it in its own words)."""
        self.post_message(self.CursorMoved(self, row))

    def move_cursor(self, row: int) -> None:
        """A motion: the cursor to ``row`` (clamped), its row scrolled into view."""
        if self.row_count <= 0:
            return
        self.cursor = row
        self.scroll_to_cursor()

    def action_cursor(self, delta: int) -> None:
        self.move_cursor(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.move_cursor(self.cursor + direction * self.page_rows())

    def action_edge(self, end: int) -> None:
        self.move_cursor(self.row_count - 1 if end else 0)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # rows always fit the width: the inherited horizontal scrolling keys do nothing here
        return action not in _NO_HORIZONTAL

    # ---------------------------------------------------------------- rows on screen
    def rows_visible(self) -> int:
        """Rows shown below the header."""
        return max(1, self.scrollable_content_region.height - self.HEADER_ROWS)

    def page_rows(self) -> int:
        return max(1, self.rows_visible() - self.PAGE_OVERLAP)

    def screen_row(self, row: int) -> int:
        """The line (from 0, below the header) that cursor row ``row`` is drawn on."""
        return row

    def row_at(self, line: int) -> int:
        """The cursor row of line ``line`` (from 0, below the header)."""
        return line

    def scroll_to_cursor(self, *, center: bool = False) -> None:
        """Scroll so that the cursor's row shows: the least scroll that does (``center``: in
        the middle)."""
        rows = self.rows_visible()
        top = round(self.scroll_y)
        line = self.screen_row(self.cursor) if self.row_count > 0 else 0
        force = self.FORCE_SCROLL
        if center:
            self.scroll_to(y=max(0, line - rows // 2), animate=False, immediate=True, force=force)
        elif line < top:
            self.scroll_to(y=line, animate=False, immediate=True, force=force)
        elif line >= top + rows:
            self.scroll_to(y=line - rows + 1, animate=False, immediate=True, force=force)

    def on_focus(self) -> None:  # the cursor row is drawn as focused or not
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def on_click(self, event: events.Click) -> None:
        line = event.y - self.HEADER_ROWS
        if line >= 0:
            self.move_cursor(self.row_at(round(self.scroll_y) + line))
