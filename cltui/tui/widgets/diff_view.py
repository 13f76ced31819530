"""Captured Pre, captured Post and replayed Post of one buffer, element by element.

A :class:`~cltui.tui.widgets.buffer_view.BufferView` with a third column: the decoding, the
cursor, the hex mode and the Line API rendering are the buffer view's; elements whose replayed
value differs from the captured Post are highlighted (``]``/``[`` jump between them), elements
the kernel changed (Pre -> Post) keep the buffer view's *changed* style.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from rich.segment import Segment
from textual.binding import Binding, BindingType
from textual.strip import Strip

from cltui.capture.cltypes import CType
from cltui.tui.format import ellipsize
from cltui.tui.widgets.buffer_view import (
    CHUNK,
    BufferView,
    Bytes,
    _changed_rows,
)

__all__ = ["DiffView"]

SIDES = ("pre", "post", "replayed")
HEADINGS = {"pre": "captured pre", "post": "captured post", "replayed": "replayed post"}


class DiffView(BufferView):
    """Three columns: captured Pre, captured Post, replayed Post (mismatches highlighted)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        *BufferView.COMPONENT_CLASSES,
        "diff-view--mismatch",
    }

    DEFAULT_CSS = """
    DiffView > .diff-view--mismatch {
        background: $error 40%;
        text-style: bold;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("right_square_bracket,n", "mismatch(1)", "Next mismatch", key_display="]"),
        Binding("left_square_bracket,N", "mismatch(-1)", "Prev mismatch", key_display="["),
        Binding("c", "change(1)", "Next change", show=False, tooltip="Next element Pre -> Post"),
        Binding("C", "change(-1)", "Prev change", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.replayed: Bytes | None = None
        self.headings = dict(HEADINGS)

    def set_three(
        self,
        key: object,
        pre: Bytes | None,
        post: Bytes | None,
        replayed: Bytes | None,
        ctype: CType | None,
    ) -> None:
        self.replayed = replayed
        self.set_buffers(key, pre, post, ctype)

    def side(self, which: str) -> Bytes | None:
        return {"pre": self.pre, "post": self.post, "replayed": self.replayed}[which]

    @property
    def nbytes(self) -> int:
        return max((len(d) for d in (self.pre, self.post, self.replayed) if d is not None),
                   default=0)

    def element_bytes(self, which: str, index: int) -> bytes | None:
        data = self.side(which)
        size = self.itemsize
        if data is None or (index + 1) * size > len(data):
            return None
        return bytes(data[index * size : (index + 1) * size])

    def is_mismatch(self, index: int) -> bool:
        """The replayed element's bytes differ from the captured Post (or one is missing)."""
        if self.post is None or self.replayed is None:
            return False
        return self.element_bytes("post", index) != self.element_bytes("replayed", index)

    # ---------------------------------------------------------------- moving
    def action_mismatch(self, direction: int) -> None:
        if self.post is None or self.replayed is None:
            self.notify("Needs the captured and the replayed Post", severity="warning", timeout=3)
            return
        self._find_row(self.post, self.replayed, self.cursor, direction, self.row_bytes,
                       size_difference_counts=True)

    def on_buffer_view_change_not_found(self, message: BufferView.ChangeNotFound) -> None:
        message.stop()
        where = "after" if message.direction > 0 else "before"
        self.notify(f"No mismatch {where} this element", severity="warning", timeout=3)

    def first_mismatch(self) -> int | None:
        """Row of the first mismatching element (whole-buffer numpy pass)."""
        if self.post is None or self.replayed is None:
            return None
        rb = self.row_bytes
        n = min(len(self.post), len(self.replayed)) // rb
        for lo in range(0, n, max(1, CHUNK // rb)):
            hi = min(n, lo + max(1, CHUNK // rb))
            rows = _changed_rows(self.post, self.replayed, lo, hi, rb)
            if len(rows):
                return lo + int(rows[0])
        return n if len(self.post) != len(self.replayed) and n < self.row_count else None

    def mismatch_count(self) -> int:
        if self.post is None or self.replayed is None:
            return 0
        size = self.itemsize
        n = min(len(self.post), len(self.replayed)) // size
        total = abs(len(self.post) - len(self.replayed)) // size
        for lo in range(0, n, CHUNK):
            total += len(_changed_rows(self.post, self.replayed, lo, min(n, lo + CHUNK), size))
        return total

    # ------------------------------------------------------------- rendering
    def _present(self) -> list[str]:
        return [s for s in SIDES if self.side(s) is not None]

    def _widths(self, width: int) -> tuple[int, int]:
        index_w = 1 + max(5, len(str(max(0, self.row_count - 1))) if not self.hex_mode
                          else len(f"{self.nbytes:x}") + 2)  # 1: the cursor's ▶
        count = max(1, len(self._present()))
        rest = width - index_w - 1
        col = (rest - 3 * (count - 1)) // count
        return index_w, max(4, col)

    def _header(self, width: int) -> Strip:
        index_w, col = self._widths(width)
        head = ("offset" if self.hex_mode else "index").rjust(index_w)
        text = head + " " + " │ ".join(ellipsize(self.headings[s], col) for s in self._present())
        style = self.get_component_rich_style("buffer-view--header")
        return Strip([Segment(ellipsize(text, width), style)], width)

    def _render_row(self, row: int, width: int) -> Strip:
        index_w, col = self._widths(width)
        base = self.rich_style
        changed = base + self.get_component_rich_style("buffer-view--changed")
        mismatch = base + self.get_component_rich_style("diff-view--mismatch")
        index_style = base + self.get_component_rich_style("buffer-view--index")
        over = self.cursor_overlay(row)
        if over is not None:  # over the cells' own colours: mismatches stay visible
            base, changed, mismatch = base + over, changed + over, mismatch + over
            index_style = index_style + over
        label = f"{row * self.row_bytes:0{index_w - 3}x}" if self.hex_mode else str(row)
        mark = "▶" if over is not None else " "
        segments = [Segment(mark + label.rjust(index_w - 1) + " ", index_style)]
        bad = self.is_mismatch(row) if not self.hex_mode else False
        for k, which in enumerate(self._present()):
            if k:
                segments.append(Segment(" │ ", base))
            data = self.side(which)
            assert data is not None
            if self.hex_mode:
                other = self.post if which == "replayed" else self.pre if which == "post" else None
                style = mismatch if which == "replayed" else changed
                segments.extend(self._hex_cells(data, other, row, col, base, style))
                continue
            text = self.value_text(which, row) or "—"
            if which != "pre" and bad:
                style = mismatch
            elif which != "pre" and self.is_changed(row):
                style = changed
            else:
                style = base
            segments.append(Segment(ellipsize(text, col), style))
        return Strip(segments).adjust_cell_length(width, base)


def as_bytes(data: Any) -> Bytes:
    """Any buffer-like as a flat ``uint8`` array (no copy for numpy arrays and memmaps)."""
    return np.asarray(data).reshape(-1).view(np.uint8)
