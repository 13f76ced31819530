"""Pre and Post contents of one buffer, typed or hex, side by side: Line API over memmaps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from rich.segment import Segment
from rich.style import Style
from textual import events, work
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip
from textual.worker import get_current_worker

from cltui.capture.cltypes import CType, decode_value, format_value
from cltui.progress import CancelToken
from cltui.tui.format import ellipsize
from cltui.tui.widgets.row_cursor import RowCursorView
from cltui.tui.workers import worker_token

__all__ = ["BufferStats", "BufferView", "buffer_stats", "next_changed_row", "numeric_view"]

Bytes = npt.NDArray[np.uint8]
CHUNK = 1 << 22  # elements per step when scanning whole buffers


class BufferView(RowCursorView):
    """Element ``i`` of Pre and Post on one row; changed elements highlighted.

    Only the visible rows are decoded (``decode_value``/``format_value`` of the element type), so
    buffers of any size open at once; the next/previous change is searched in a thread.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "buffer-view--header",
        "buffer-view--index",
        "buffer-view--changed",
        "buffer-view--cursor",
        "buffer-view--dim",
    }

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("x", "toggle_hex", "Hex", tooltip="Toggle the hex view"),
        Binding("right_square_bracket,c", "change(1)", "Next change", key_display="]"),
        Binding("left_square_bracket,C", "change(-1)", "Prev change", key_display="["),
    ]

    HEADER_ROWS = 1

    class ChangeNotFound(Message):
        def __init__(self, direction: int) -> None:
            super().__init__()
            self.direction = direction

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.pre: Bytes | None = None
        self.post: Bytes | None = None
        self.ctype: CType | None = None
        self.hex_mode = False
        self.empty_text = "No buffer"
        self._key: object = None
        self._cache: LRUCache[tuple[int, int, bool, int], Strip] = LRUCache(1024)

    # ------------------------------------------------------------------ data
    def set_buffers(
        self, key: object, pre: Bytes | None, post: Bytes | None, ctype: CType | None
    ) -> None:
        if key == self._key and ctype == self.ctype:
            return
        same_data = key == self._key
        self._key = key
        self.pre, self.post, self.ctype = pre, post, ctype
        if not same_data:
            self.cursor = 0
        self._reset()

    def set_ctype(self, ctype: CType) -> None:
        self.ctype = ctype
        self._reset()

    def action_toggle_hex(self) -> None:
        first_byte = self.cursor * self.row_bytes
        self.hex_mode = not self.hex_mode
        self.cursor = first_byte // self.row_bytes
        self._reset()

    def _reset(self) -> None:
        self._cache.clear()
        self.cursor = self.cursor  # clamped to the rows there are now
        self.virtual_size = Size(self.size.width, self.row_count + 1)
        self.scroll_to_cursor()
        self.refresh()

    @property
    def nbytes(self) -> int:
        return max(len(self.pre) if self.pre is not None else 0,
                   len(self.post) if self.post is not None else 0)

    @property
    def itemsize(self) -> int:
        size = self.ctype.size if self.ctype is not None else None
        return size if size else 1

    @property
    def row_bytes(self) -> int:
        if self.hex_mode:
            return 16 if self.scrollable_content_region.width >= 110 else 8
        return self.itemsize

    @property
    def row_count(self) -> int:
        if self.hex_mode:
            return -(-self.nbytes // self.row_bytes)
        return self.nbytes // self.itemsize

    def element_bytes(self, which: str, index: int) -> bytes | None:
        data = self.pre if which == "pre" else self.post
        size = self.itemsize
        if data is None or (index + 1) * size > len(data):
            return None
        return bytes(data[index * size : (index + 1) * size])

    def value_text(self, which: str, index: int) -> str:
        """Element ``index`` of ``"pre"`` or ``"post"`` as displayed (``""`` if absent)."""
        raw = self.element_bytes(which, index)
        if raw is None or self.ctype is None:
            return ""
        return format_value(decode_value(raw, self.ctype), self.ctype)

    def is_changed(self, index: int) -> bool:
        a, b = self.element_bytes("pre", index), self.element_bytes("post", index)
        return a is not None and b is not None and a != b

    # ---------------------------------------------------------------- moving
    def action_change(self, direction: int) -> None:
        if self.pre is None or self.post is None:
            self.notify("Needs both a Pre and a Post dump", severity="warning", timeout=3)
            return
        self._find_row(self.pre, self.post, self.cursor, direction, self.row_bytes)

    @work(thread=True, exclusive=True, group="buffer-find", exit_on_error=False)
    def _find_row(self, a: Bytes, b: Bytes, start_row: int, direction: int, row_bytes: int,
                  size_difference_counts: bool = False) -> None:  # fmt: skip
        """The next row (in ``direction``) whose bytes differ between ``a`` and ``b`` (Pre
        and Post here; the captured and the replayed Post in the diff view)."""
        worker = get_current_worker()
        found = next_changed_row(a, b, start_row, direction, row_bytes, worker_token(worker),
                                 size_difference_counts=size_difference_counts)  # fmt: skip
        if worker.is_cancelled:
            return
        if found is None or found >= self.row_count:
            self.post_message(self.ChangeNotFound(direction))
        else:
            self.app.call_from_thread(self.move_cursor, found)

    def on_buffer_view_change_not_found(self, message: ChangeNotFound) -> None:
        where = "after" if message.direction > 0 else "before"
        self.notify(f"No changed element {where} this one", severity="warning", timeout=3)

    # ------------------------------------------------------------- rendering
    def on_resize(self, event: events.Resize) -> None:
        self._cache.clear()
        self.virtual_size = Size(event.size.width, self.row_count + 1)
        self.scroll_to_cursor()

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if self.pre is None and self.post is None:
            if y == 0:
                style = self.get_component_rich_style("buffer-view--dim")
                return Strip([Segment(ellipsize(" " + self.empty_text, width), style)], width)
            return Strip.blank(width, self.rich_style)
        if y == 0:
            return self._header(width)
        row = round(self.scroll_y) + y - 1
        if row >= self.row_count:
            return Strip.blank(width, self.rich_style)
        cursor = 0 if row != self.cursor else 2 if self.has_focus else 1
        key = (row, width, self.hex_mode, cursor)
        strip = self._cache.get(key)
        if strip is None:
            strip = self._render_row(row, width)
            self._cache[key] = strip
        return strip

    def _widths(self, width: int) -> tuple[int, int]:
        index_w = 1 + max(5, len(str(max(0, self.row_count - 1))) if not self.hex_mode
                          else len(f"{self.nbytes:x}") + 2)  # 1: the cursor's ▶
        both = self.pre is not None and self.post is not None
        rest = width - index_w - 1
        col = (rest - 3) // 2 if both else rest
        return index_w, max(4, col)

    def _header(self, width: int) -> Strip:
        index_w, col = self._widths(width)
        head = ("offset" if self.hex_mode else "index").rjust(index_w)
        names = [n for n, d in (("pre", self.pre), ("post", self.post)) if d is not None]
        text = head + " " + " │ ".join(ellipsize(n, col) for n in names)
        return Strip(
            [Segment(ellipsize(text, width), self.get_component_rich_style("buffer-view--header"))],
            width,
        )

    def cursor_overlay(self, row: int) -> Style | None:
        """The cursor row's style, laid over each cell's own (changed values keep their
        colour): the cursor's background when focused, reversed when not; None elsewhere."""
        if row != self.cursor:
            return None
        if not self.has_focus:
            return Style(reverse=True)
        cursor = self.get_component_rich_style("buffer-view--cursor")
        return Style(bgcolor=cursor.bgcolor, bold=True)

    def _render_row(self, row: int, width: int) -> Strip:
        index_w, col = self._widths(width)
        base = self.rich_style
        changed_style = base + self.get_component_rich_style("buffer-view--changed")
        index_style = base + self.get_component_rich_style("buffer-view--index")
        mark = " "
        over = self.cursor_overlay(row)
        if over is not None:
            mark = "▶"
            base, changed_style, index_style = base + over, changed_style + over, index_style + over
        if self.hex_mode:
            start = row * self.row_bytes
            label = f"{start:0{index_w - 3}x}"
        else:
            label = str(row)
        segments = [Segment(mark + label.rjust(index_w - 1) + " ", index_style)]
        sides = [d for d in (self.pre, self.post) if d is not None]
        for k, data in enumerate(sides):
            if k:
                segments.append(Segment(" │ ", base))
            other = sides[1 - k] if len(sides) == 2 else None
            if self.hex_mode:
                segments.extend(self._hex_cells(data, other, row, col, base, changed_style))
            else:
                which = "pre" if data is self.pre else "post"
                text = self.value_text(which, row) or "—"
                style = changed_style if self.is_changed(row) else base
                segments.append(Segment(ellipsize(text, col), style))
        return Strip(segments).adjust_cell_length(width, base)

    def _hex_cells(
        self, data: Bytes, other: Bytes | None, row: int, col: int, base: Style, changed: Style
    ) -> list[Segment]:
        rb = self.row_bytes
        start = row * rb
        chunk = bytes(data[start : start + rb])
        theirs = bytes(other[start : start + rb]) if other is not None else chunk
        out: list[Segment] = []
        used = 0
        for i, byte in enumerate(chunk):
            cell = f"{byte:02x} "
            if used + len(cell) > col:
                break
            differs = i < len(theirs) and theirs[i] != byte
            out.append(Segment(cell, changed if differs else base))
            used += len(cell)
        out.append(Segment(" " * max(0, col - used), base))
        return out


def next_changed_row(
    a: Bytes,
    b: Bytes,
    start_row: int,
    direction: int,
    row_bytes: int,
    cancel: CancelToken,
    *,
    size_difference_counts: bool = False,
) -> int | None:
    """The first row after (``direction > 0``) or before ``start_row`` whose bytes differ
    between ``a`` and ``b``, searched in chunks so a cancelled worker stops soon.  With
    ``size_difference_counts`` a forward search that finds nothing returns the row just past
    the shorter side when the sizes differ."""
    n = min(len(a), len(b)) // row_bytes
    step = max(1, CHUNK // row_bytes)
    if direction > 0:
        lo = start_row + 1
        while lo < n and not cancel.is_set():
            hi = min(n, lo + step)
            rows = _changed_rows(a, b, lo, hi, row_bytes)
            if len(rows):
                return lo + int(rows[0])
            lo = hi
        if size_difference_counts and len(a) != len(b) and start_row < n:
            return n
        return None
    hi = min(start_row, n)
    while hi > 0 and not cancel.is_set():
        lo = max(0, hi - step)
        rows = _changed_rows(a, b, lo, hi, row_bytes)
        if len(rows):
            return lo + int(rows[-1])
        hi = lo
    return None


def _changed_rows(pre: Bytes, post: Bytes, lo: int, hi: int, row_bytes: int) -> npt.NDArray[Any]:
    a = np.asarray(pre[lo * row_bytes : hi * row_bytes]).reshape(-1, row_bytes)
    b = np.asarray(post[lo * row_bytes : hi * row_bytes]).reshape(-1, row_bytes)
    return np.flatnonzero((a != b).any(axis=1))


# ------------------------------------------------------------------------------------ stats

@dataclass(frozen=True)
class BufferStats:
    """Numbers for one side (pre or post) of a buffer, plus the changed-element count."""

    count: int
    minimum: float | None = None
    maximum: float | None = None
    mean: float | None = None
    nan: int = 0
    inf: int = 0
    changed: int | None = None  # elements whose bytes differ between pre and post


def numeric_view(data: Bytes, ctype: CType) -> npt.NDArray[Any] | None:
    """The buffer as a flat array of its numeric lanes (a struct's fields' too; None where a
    field is no number)."""
    dt = ctype.dtype
    if dt is None or not ctype.size:
        return None
    usable = (len(data) // ctype.size) * ctype.size
    if dt.subdtype is not None:
        base = dt.subdtype[0]
    elif dt.names == ("v",) and dt.fields is not None:
        sub = dt.fields["v"][0]
        if sub.subdtype is None:
            return None
        base = sub.subdtype[0]
        lanes = sub.subdtype[1][0]
        arr = np.asarray(data[:usable]).view(dt)
        return arr["v"].reshape(-1) if lanes else None
    elif dt.names is None:
        base = dt
    else:
        return _struct_lanes(np.asarray(data[:usable]).view(dt))
    if base.kind not in "biuf":
        return None
    return np.asarray(data[:usable]).view(base)


def _struct_lanes(arr: npt.NDArray[Any]) -> npt.NDArray[Any] | None:
    """A struct's fields as one flat array of lanes (each element's fields in order; a view
    where they share one type, else in their common type), None when a field is no number."""
    from numpy.lib import recfunctions

    def numeric(dt: np.dtype[Any]) -> bool:
        if dt.names is not None and dt.fields is not None:
            return all(numeric(dt.fields[n][0]) for n in dt.names)
        base = dt.subdtype[0] if dt.subdtype is not None else dt
        return base.kind in "biuf"

    if not numeric(arr.dtype):
        return None
    lanes: npt.NDArray[Any] = recfunctions.structured_to_unstructured(arr)
    return lanes.reshape(-1)


def buffer_stats(
    data: Bytes, ctype: CType, other: Bytes | None = None, cancel: CancelToken | None = None
) -> BufferStats:
    """Min/max/mean/NaN/Inf over the numeric lanes, in chunks (``cancel`` stops early)."""
    size = ctype.size or 1
    count = len(data) // size
    changed: int | None = None
    if other is not None:
        n = min(len(data), len(other)) // size
        changed = abs(len(data) - len(other)) // size
        for lo in range(0, n, CHUNK):
            if cancel is not None and cancel.is_set():
                break
            changed += len(_changed_rows(data, other, lo, min(n, lo + CHUNK), size))
    values = numeric_view(data, ctype)
    if values is None or not len(values):
        return BufferStats(count=count, changed=changed)
    lo_v: float | None = None
    hi_v: float | None = None
    total = 0.0
    finite_n = 0
    nan = inf = 0
    for start in range(0, len(values), CHUNK):
        if cancel is not None and cancel.is_set():
            break
        part = np.asarray(values[start : start + CHUNK])
        if part.dtype.kind == "f":
            nan_mask = np.isnan(part)
            inf_mask = np.isinf(part)
            nan += int(nan_mask.sum())
            inf += int(inf_mask.sum())
            part = part[~(nan_mask | inf_mask)]
        if not len(part):
            continue
        pmin = float(part.min())
        pmax = float(part.max())
        lo_v = pmin if lo_v is None else min(lo_v, pmin)
        hi_v = pmax if hi_v is None else max(hi_v, pmax)
        total += float(part.sum(dtype=np.float64))
        finite_n += len(part)
    mean = total / finite_n if finite_n else None
    return BufferStats(count, lo_v, hi_v, mean, nan, inf, changed)
