"""The Arguments tab: one row per kernel argument, typed by the kernel signature."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.widgets import DataTable

from cltui.capture.model import ArgKind, Enqueue, KernelArg
from cltui.tui.format import fmt_bytes
from cltui.tui.messages import ArgumentSelected

if TYPE_CHECKING:
    from cltui.capture.capture import Capture

__all__ = ["ArgsTable", "format_arg_value"]

COLUMNS = ("#", "name", "space", "type", "mem", "size", "value")  # value last: it can be long


class ArgsTable(DataTable[str]):
    """Arguments of the enqueue under the list cursor; the highlighted row selects an argument."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False)
        self._shown: int | None = None
        self.enqueue: Enqueue | None = None
        self._quiet = False

    def on_mount(self) -> None:
        self.add_columns(*COLUMNS)

    def show(self, cap: Capture, enq: Enqueue | None, arg: int | None) -> None:
        number = enq.number if enq is not None else None
        if number == self._shown and enq is self.enqueue:
            if arg is not None and arg != self.cursor_row and arg < self.row_count:
                self._quiet = True
                self.move_cursor(row=arg, animate=False)
            return
        self._shown = number
        self.enqueue = enq
        self._quiet = True
        self.clear(columns=True)
        self.add_columns(*COLUMNS)
        if enq is None:
            return
        if not enq.args:
            return
        for a in enq.args:
            self.add_row(*arg_cells(a), key=str(a.index))
        if arg is not None and 0 <= arg < self.row_count:
            self.move_cursor(row=arg, animate=False)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if self._quiet:
            self._quiet = False
            return
        if self.enqueue is not None and 0 <= event.cursor_row < len(self.enqueue.args):
            self.post_message(ArgumentSelected(self.enqueue.args[event.cursor_row].index))


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
