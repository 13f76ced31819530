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
from textual.strip import Strip

from cltui.capture.history import ACCESSES, ResourceHistory
from cltui.text.escape import escape_controls
from cltui.tui.format import ellipsize
from cltui.tui.widgets.row_cursor import RowCursorView

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


class HistoryList(RowCursorView):
    """Rows of a :class:`ResourceHistory`; ``enter`` posts :class:`HistoryList.Chosen`."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "history-list--cursor",
        "history-list--current",
        "history-list--dim",
    }

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "choose", "Go to", tooltip="Go to the enqueue of this row"),
    ]
    PAGE_OVERLAP = 0

    class Chosen(Message):
        """The user chose the enqueue of a row (None: the creation or the release)."""

        def __init__(self, number: int | None) -> None:
            super().__init__()
            self.number = number

    def __init__(self, history: ResourceHistory, current: int | None, *, id: str | None = None):
        super().__init__(id=id)
        self.history = history
        self.current = current  # the row of the enqueue the user came from
        self.set_reactive(HistoryList.cursor, current if current is not None else 0)

    @property
    def row_count(self) -> int:
        return len(self.history)

    def on_mount(self) -> None:
        self.virtual_size = Size(self.size.width, len(self.history))
        self.call_after_refresh(self.scroll_to_cursor, center=True)

    def on_resize(self, event: events.Resize) -> None:
        self.virtual_size = Size(event.size.width, len(self.history))

    def action_choose(self) -> None:
        if len(self.history):
            self.post_message(self.Chosen(self.history.event(self.cursor).number))

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
