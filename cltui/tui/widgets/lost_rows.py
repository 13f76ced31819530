"""The enqueues a damaged capture lost and no file names, as dim rows among the others.

They are in no index (nothing is known of them but their number and the report's counts), so
the list shows them between the rows of the enqueues around them, and its cursor passes over
them: there is nothing to show, replay or export.  A row is a capture position (>= 0) or a lost
number ``n`` written ``-(n + 1)``.  Only the whole, unfiltered list of a capture whose numbers
rise (one session) shows them; every figure is one numpy pass over the list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from cltui.capture.log import kind_of
from cltui.tui.format import ellipsize

if TYPE_CHECKING:
    from cltui.capture.capture import Capture

__all__ = ["LostRows"]

MAX_LOST_ROWS = 1_000_000  # numbers no file names that get a row (beyond: the problems say it)


class LostRows:
    """The lost numbers of one capture and where they go among its positions."""

    def __init__(self, capture: Capture) -> None:
        self.count = len(capture)
        self.kind = ""
        self.evidence = "lost with the log; no file names it"
        self._numbers = np.zeros(0, dtype=np.int64)
        self._before = np.zeros(0, dtype=np.int64)  # the position each one goes before
        rec = capture.recovery
        nums = capture.numbers
        if rec is None or not rec.unknown:
            return
        if len(nums) > 1 and not bool(np.all(np.diff(nums) > 0)):
            return  # several sessions: no single order to put them in
        runs = [np.arange(a, b + 1, dtype=np.int64) for a, b in rec.unknown]
        lost = np.concatenate(runs)[:MAX_LOST_ROWS]
        self._numbers = lost
        self._before = np.searchsorted(nums, lost).astype(np.int64)
        counts = rec.unknown_by_report
        if counts:
            what = ", ".join(
                f"{c} {fn.removeprefix('clEnqueue')}"
                for fn, c in sorted(counts.items(), key=lambda t: (-t[1], t[0]))
            )
            self.evidence += f"; the report's counts for the {rec.unknown_count}: {what}"
            if len(counts) == 1:  # all of them did the same call: that is this one's kind
                self.kind = kind_of(next(iter(counts))).label

    def rows(self, view: npt.NDArray[np.int64]) -> npt.NDArray[np.int64] | None:
        """The rows of ``view`` with the lost numbers in place, or None when it shows none
        (a filtered view, or nothing lost that no file names)."""
        if not len(self._numbers) or len(view) != self.count:
            return None
        return np.insert(view, self._before, -(self._numbers + 1))

    def strip(
        self, number: int, widths: tuple[int, int, int, int], width: int, dim: Style
    ) -> Strip:
        """The dim row of lost enqueue ``number`` (the list's column ``widths``)."""
        nw, kw = widths[0], widths[1]
        kind = ellipsize(self.kind or "lost", kw).ljust(kw)
        text = f" {str(number).rjust(nw)} {kind} {self.evidence}"
        return Strip([Segment(ellipsize(text, width), dim)], width).adjust_cell_length(width, dim)

    @staticmethod
    def number(row: int) -> int:
        """The lost number of a row that holds one (``row < 0``)."""
        return -row - 1
