"""The enqueue list's rows in display order (filtered, maybe sorted) and where each capture
position sits among them; and the kernel name with the filter's matches marked.

The view is an array of capture positions.  In log order it is ascending and a position is
found by bisection; sorted by another column, an inverse array (one int per enqueue of the
capture, -1 for those the view leaves out) is built once per view by one numpy scatter: every
look-up stays O(1) or O(log n) and nothing is a Python object per enqueue.
"""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt
from rich.segment import Segment
from rich.style import Style

from cltui.tui.format import ellipsize

__all__ = ["ListOrder", "header_text", "marked_name", "next_same"]


class ListOrder:
    """The positions a list shows, in the order it shows them."""

    def __init__(self, view: npt.NDArray[np.int64], size: int) -> None:
        self.view = view
        self.ascending = bool(len(view) < 2 or np.all(np.diff(view) > 0))
        self._inverse: npt.NDArray[np.int64] | None = None
        if not self.ascending:
            inverse = np.full(max(size, int(view.max()) + 1), -1, dtype=np.int64)
            inverse[view] = np.arange(len(view), dtype=np.int64)
            self._inverse = inverse

    def index_of(self, pos: int) -> int | None:
        """The view index of capture position ``pos``, None when the view leaves it out."""
        if self._inverse is not None:
            if 0 <= pos < len(self._inverse):
                i = int(self._inverse[pos])
                return i if i >= 0 else None
            return None
        i = int(np.searchsorted(self.view, pos))
        return i if i < len(self.view) and int(self.view[i]) == pos else None

    def nearest(self, pos: int) -> int:
        """The view index of ``pos``, or (in log order) of the next position it shows, or 0."""
        i = self.index_of(pos)
        if i is not None:
            return i
        if self.ascending and len(self.view):
            return min(int(np.searchsorted(self.view, pos)), len(self.view) - 1)
        return 0


def marked_name(
    name: str, patterns: list[re.Pattern[str]], base: Style, mark: Style
) -> list[Segment]:
    """``name`` (already cut to its column and padded) as segments, the spans the
    filter's kernel patterns match in ``mark`` over ``base``."""
    if not patterns:
        return [Segment(name, base)]
    spans: list[tuple[int, int]] = []
    for rx in patterns:
        spans.extend(m.span() for m in rx.finditer(name) if m.end() > m.start())
    if not spans:
        return [Segment(name, base)]
    flags = bytearray(len(name))
    for a, b in spans:
        flags[a:b] = b"\x01" * (b - a)
    out: list[Segment] = []
    start = 0
    for i in range(1, len(name) + 1):
        if i == len(name) or flags[i] != flags[start]:
            out.append(Segment(name[start:i], base + mark if flags[start] else base))
            start = i
    return out


def header_text(
    widths: tuple[int, int, int, int], sort_label: str, descending: bool, marks: bool
) -> str:
    """The list's header for columns of ``widths`` (number, kind, kernel, geometry); the
    column named ``sort_label`` carries the sort's arrow."""
    nw, kw, knw, gw = widths
    arrow = "▼" if descending else "▲"

    def head(label: str) -> str:
        return label + arrow if label == sort_label else label

    return (
        " " + head("#").rjust(nw) + " " + head("kind").ljust(kw) + " "
        + ellipsize(head("kernel"), knw) + " " + head("global/local").ljust(gw) + " "
        + head("dev time").rjust(9) + " " + "data" + (" Δ" if marks else "")
    )


def next_same(
    ids: npt.NDArray[np.int32], cursor: int, kid: int, direction: int
) -> int | None:
    """The view index of the next (``direction`` 1) or previous (-1) row from ``cursor``
    whose kernel id (``ids``, the view's) is ``kid``."""
    if direction > 0:
        hits = np.flatnonzero(ids[cursor + 1 :] == kid)
        return cursor + 1 + int(hits[0]) if len(hits) else None
    hits = np.flatnonzero(ids[:cursor] == kid)
    return int(hits[-1]) if len(hits) else None
