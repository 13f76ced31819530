"""The Arguments tab: one row per kernel argument, typed by the kernel signature."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Size
from textual.strip import Strip

from cltui.capture.model import ArgKind, Enqueue, KernelArg
from cltui.tui.format import ellipsize, fmt_bytes
from cltui.tui.messages import ArgumentSelected
from cltui.tui.widgets.row_cursor import RowCursorView

if TYPE_CHECKING:
    from cltui.capture.capture import Capture

__all__ = ["ArgsTable", "format_arg_value"]

COLUMNS = ("#", "name", "space", "type", "mem", "size", "value")  # value last: it can be long
MAX_WIDTH = (3, 24, 10, 28, 8, 9)  # caps for all but the value column


class ArgsTable(RowCursorView):
    """Arguments of the enqueue under the list cursor; the cursor row selects an argument.

    A Line API view (a handful of rows, redrawn per enqueue without a layout pass), so moving
    through the enqueue list stays cheap.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "args-table--header",
        "args-table--cursor",
        "args-table--dim",
    }

    HEADER_ROWS = 1

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: int | None = None
        self.enqueue: Enqueue | None = None
        self.rows: list[tuple[str, ...]] = []
        self.empty_text = "No enqueue"
        self._widths: list[int] = [len(c) for c in COLUMNS]

    @property
    def row_count(self) -> int:
        return len(self.rows)

    def get_row_at(self, index: int) -> tuple[str, ...]:
        return self.rows[index]

    def show(self, cap: Capture, enq: Enqueue | None, arg: int | None) -> None:
        number = enq.number if enq is not None else None
        at = _row_of(enq, arg)
        if number == self._shown and enq is self.enqueue:
            if at is not None and at != self.cursor:
                self._put_cursor(at)
            return
        self._shown = number
        self.enqueue = enq
        self.rows = [arg_cells(a) for a in enq.args] if enq is not None else []
        if enq is None:
            self.empty_text = "No enqueue"
        elif not enq.args:
            self.empty_text = "Not a kernel enqueue: no arguments"
        widths = [len(c) for c in COLUMNS]
        for row in self.rows:
            for i, cell in enumerate(row[:-1]):
                widths[i] = max(widths[i], min(len(cell), MAX_WIDTH[i]))
        self._widths = widths
        self.virtual_size = Size(self.size.width, self.row_count + 1)
        self.scroll_to(y=0, animate=False, immediate=True)
        self._put_cursor(at if at is not None else 0)

    # ---------------------------------------------------------------- moving
    def cursor_moved(self, row: int) -> None:
        """The user's move: the panes show the argument of the row."""
        if self.rows and self.enqueue is not None:
            self.post_message(ArgumentSelected(self.enqueue.args[row].index))

    def _put_cursor(self, row: int) -> None:
        """The cursor on the row of the argument shown elsewhere (said by no message)."""
        self.set_reactive(ArgsTable.cursor, self.validate_cursor(row))
        self.scroll_to_cursor()
        self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        self.virtual_size = Size(event.size.width, self.row_count + 1)

    # ------------------------------------------------------------- rendering
    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if not self.rows:
            if y == 0:
                style = self.get_component_rich_style("args-table--dim")
                return Strip([Segment(ellipsize(" " + self.empty_text, width), style)], width)
            return Strip.blank(width, self.rich_style)
        if y == 0:
            style = self.get_component_rich_style("args-table--header")
            return self._line(COLUMNS, width, style)
        index = round(self.scroll_y) + y - 1
        if index >= self.row_count:
            return Strip.blank(width, self.rich_style)
        style = self.rich_style
        if index == self.cursor:
            style = style + (
                self.get_component_rich_style("args-table--cursor")
                if self.has_focus else Style(reverse=True)
            )
        return self._line(self.rows[index], width, style)

    def _line(self, cells: tuple[str, ...], width: int, style: Style) -> Strip:
        parts = [" "]
        for i, cell in enumerate(cells[:-1]):
            parts.append(ellipsize(cell, self._widths[i]) + "  ")
        used = sum(len(p) for p in parts)
        parts.append(ellipsize(cells[-1], max(1, width - used)))
        return Strip([Segment("".join(parts), style)]).adjust_cell_length(width, style)


def arg_cells(a: KernelArg) -> tuple[str, ...]:
    space = a.address_space or ""
    if a.access:
        space = a.access
    mem = ""
    size = ""
    dump = a.pre or a.post
    if dump is not None:
        mem = f"#{dump.mem_id:04d}"
    elif a.handle:
        mem = f"0x{a.handle:x}"
    if a.kind is ArgKind.LOCAL:
        size = fmt_bytes(a.local_size if a.local_size is not None else a.size)
    elif a.mem is not None and a.mem.size:
        size = fmt_bytes(a.mem.size)
    elif dump is not None and dump.size:
        size = fmt_bytes(dump.size)
    elif a.kind is ArgKind.SCALAR and a.size:
        size = f"{a.size} B"
    return (
        str(a.index),
        a.name or "?",
        space,
        a.type_name or "?",
        mem,
        size,
        format_arg_value(a),
    )


def format_arg_value(a: KernelArg) -> str:
    """The value column: decoded scalars/vectors/structs, or what the argument refers to."""
    if a.kind is ArgKind.SCALAR:
        return _fmt(a.value) if a.value is not None else "(value not captured)"
    if a.kind is ArgKind.LOCAL:
        return "__local"
    if a.kind is ArgKind.NULL:
        return "NULL"
    if a.kind is ArgKind.SAMPLER:
        if a.sampler is not None:
            s = a.sampler
            norm = "normalized" if s.normalized_coords else "unnormalized"
            address = s.addressing_mode.removeprefix("CL_ADDRESS_").lower()
            filt = s.filter_mode.removeprefix("CL_FILTER_").lower()
            return f"{norm}, {address}, {filt}"
        return f"sampler 0x{a.handle:x}" if a.handle else "sampler"
    if a.kind is ArgKind.IMAGE:
        img = a.mem.image if a.mem is not None else None
        if img is not None:
            dims = "x".join(str(d) for d in (img.width, img.height, img.depth) if d > 1) or "1"
            order = img.channel_order.removeprefix("CL_")
            dtype = img.channel_data_type.removeprefix("CL_")
            return f"image {dims} {order}/{dtype}"
        return "image"
    if a.kind is ArgKind.SVM:
        ptr = f"svm 0x{a.handle:x}" if a.handle else "svm"
        return f"{ptr} +{a.svm_offset}" if a.svm_offset else ptr
    if a.kind is ArgKind.BUFFER:
        if a.mem is not None and a.mem.kind == "subbuffer":
            return f"sub-buffer @{a.mem.origin}"
        return "buffer"
    return _fmt(a.value) if a.value is not None else ""


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.7g}"
    if isinstance(value, complex):
        return f"({value.real:.7g}{value.imag:+.7g}j)"
    if isinstance(value, tuple | list):
        return "(" + ", ".join(_fmt(v) for v in value) + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={_fmt(v)}" for k, v in value.items()) + "}"
    return str(value)


def _row_of(enq: Enqueue | None, index: int | None) -> int | None:
    """The row of the argument with kernel argument index ``index``."""
    if enq is None or index is None:
        return None
    return next((row for row, a in enumerate(enq.args) if a.index == index), None)
