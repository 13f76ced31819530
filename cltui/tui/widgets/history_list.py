"""The events of one memory object's history, one row each (a Line API view: a history of
150,000 launches scrolls as fast as a short one)."""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from cltui.capture.history import ACCESSES, ResourceHistory
from cltui.text.escape import escape_controls
from cltui.tui.format import ellipsize

__all__ = ["ACCESS_TEXT", "HistoryList"]

ACCESS_TEXT = {
    "create": "created",
    "write": "writes",
    "read": "reads",
    "readwrite": "may write",
    "map": "maps",
    "unmap": "unmaps",
    "release": "released",
}
_STYLES = {
    "write": Style(color="yellow", bold=True),
    "readwrite": Style(color="yellow"),
    "map": Style(color="yellow"),
    "read": Style(color="green"),
}


class HistoryList(ScrollView, can_focus=True):
    """Rows of a :class:`ResourceHistory`; ``enter`` posts :class:`HistoryList.Chosen`."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "history-list--cursor",
        "history-list--current",
        "history-list--dim",
    }

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "First", show=False),
        Binding("end", "edge(1)", "Last", show=False),
        Binding("enter", "choose", "Go to", tooltip="Go to the enqueue of this row"),
    ]

    class Chosen(Message):
        """The user chose the enqueue of a row (None: the creation or the release)."""

        def __init__(self, number: int | None) -> None:
            super().__init__()
            self.number = number

    def __init__(self, history: ResourceHistory, current: int | None, *, id: str | None = None):
        super().__init__(id=id)
        self.history = history
        self.current = current  # the row of the enqueue the user came from
        self.cursor = current if current is not None else 0

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return action not in ("scroll_left", "scroll_right", "page_left", "page_right")

    def on_mount(self) -> None:
        self.virtual_size = Size(self.size.width, len(self.history))
        self.call_after_refresh(self._scroll_cursor_visible, center=True)

    def on_resize(self, event: events.Resize) -> None:
        self.virtual_size = Size(event.size.width, len(self.history))

    def action_cursor(self, delta: int) -> None:
        self.move_cursor(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.move_cursor(self.cursor + direction * max(1, self.scrollable_content_region.height))

    def action_edge(self, end: int) -> None:
        self.move_cursor(len(self.history) - 1 if end else 0)

    def move_cursor(self, row: int) -> None:
        if not len(self.history):
            return
        self.cursor = max(0, min(row, len(self.history) - 1))
        self._scroll_cursor_visible()
        self.refresh()

    def action_choose(self) -> None:
        if len(self.history):
            self.post_message(self.Chosen(self.history.event(self.cursor).number))

    def on_click(self, event: events.Click) -> None:
        self.move_cursor(round(self.scroll_y) + event.y)

    def _scroll_cursor_visible(self, center: bool = False) -> None:
        rows = max(1, self.scrollable_content_region.height)
        top = round(self.scroll_y)
        if center:
            self.scroll_to(y=max(0, self.cursor - rows // 2), animate=False, immediate=True)
        elif self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + rows:
            self.scroll_to(y=self.cursor - rows + 1, animate=False, immediate=True)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        row = round(self.scroll_y) + y
        if row >= len(self.history):
            return Strip.blank(width, self.rich_style)
        event = self.history.event(row)
        number = f"{event.number:>9,}" if event.number is not None else " " * 9
        access = ACCESSES[int(self.history.access_codes[row])]
        mark = "▶" if row == self.current else " "
        text = f"{mark}{number}  {ACCESS_TEXT[access]:<9}  {escape_controls(event.what)}"
        style = self.rich_style + _STYLES.get(access, Style())
        if event.number is None:
            style += self.get_component_rich_style("history-list--dim")
        if row == self.current:
            style += self.get_component_rich_style("history-list--current")
        if row == self.cursor:
            style += self.get_component_rich_style("history-list--cursor")
        return Strip([Segment(ellipsize(text, width), style)]).adjust_cell_length(width, style)
