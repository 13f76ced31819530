"""The enqueue list: a Line API view that renders only the visible rows of any capture."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import numpy.typing as npt
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.strip import Strip

from cltui.capture.model import EnqueueKind, EnqueueRow
from cltui.capture.ranges import EnqueueRange
from cltui.text.escape import escape_controls
from cltui.tui.format import ellipsize, fmt_ns, fmt_size
from cltui.tui.messages import CursorMoved, RangeChanged
from cltui.tui.widgets.list_order import ListOrder, header_text, marked_name, next_same
from cltui.tui.widgets.lost_rows import LostRows
from cltui.tui.widgets.row_cursor import RowCursorView

if TYPE_CHECKING:
    from cltui.capture.capture import Capture

__all__ = ["EnqueueList"]

_CURSOR = 1
_IN_RANGE = 2
_BOOKMARK = 4
_FOCUSED = 8

BADGE_LEGEND = (
    "data: < pre-enqueue dump, > post-enqueue dump, R Replay folder, # hashes only; "
    "~ after the number: recovered from the dump files (the log lost it); "
    "a dim 'lost' row: lost with the log, and no file names it"
)

MarkFn = Callable[[int], "tuple[str, Style] | None"]  # position -> one-cell badge and its style


class EnqueueList(RowCursorView):
    """Every enqueue of a capture, one row each, rendered line by line from the index arrays.

    The cursor and the range are capture positions (log order); the view is the sorted array of
    positions the current filter keeps.  Rows are built from :meth:`Capture.row` only when they
    become visible and kept in an LRU of strips.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "enqueue-list--header",
        "enqueue-list--cursor",
        "enqueue-list--range",
        "enqueue-list--bookmark",
        "enqueue-list--kernel",
        "enqueue-list--transfer",
        "enqueue-list--other",
        "enqueue-list--dim",
        "enqueue-list--badge",
        "enqueue-list--match",
    }

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("shift+up", "extend(-1)", "Extend range up", show=False),
        Binding("shift+down", "extend(1)", "Extend range down", show=False),
        Binding("shift+pageup", "extend_page(-1)", "Extend range a page up", show=False),
        Binding("shift+pagedown", "extend_page(1)", "Extend range a page down", show=False),
        Binding("v", "visual", "Visual",
                tooltip="Toggle visual mode: every move and jump extends the range"),
        Binding("escape", "clear_range", "Clear range", show=False,
                tooltip="Drop the range and leave visual mode"),
        Binding(
            "m", "toggle_bookmark", "Mark", show=False,
            tooltip="Toggle a bookmark on this enqueue",
        ),
        Binding("apostrophe,b", "bookmark(1)", "Next mark", show=False),
        Binding("B", "bookmark(-1)", "Previous mark", show=False),
        Binding(
            "n", "same_kernel(1)", "Next same", show=False,
            tooltip="Next enqueue of the same kernel",
        ),
        Binding("N", "same_kernel(-1)", "Previous same", show=False),
    ]
    HEADER_ROWS = 1
    # the list was just filled and the layout has not shown its scrollbar yet (Textual scrolls
    # only a widget whose scrollbar shows): a cursor restored at load was left below the rows
    FORCE_SCROLL = True

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.capture: Capture | None = None
        self.view: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)  # the cursor indexes it
        self.range_anchor: int | None = None  # capture position
        self.range: tuple[int, int] | None = None  # capture positions, inclusive
        self.visual = False
        self.bookmarks: set[int] = set()
        self.placeholder = "Indexing…"
        self._cache: LRUCache[tuple[int, int, int], Strip] = LRUCache(4096)
        self._num_width = 6
        self._last_pos: int | None = None
        self._kept_pos: int | None = None  # the cursor's last enqueue, kept over empty views
        self.mark_fn: MarkFn | None = None  # an extra badge column (e.g. divergence), if set
        self._lost: LostRows | None = None
        self._rows: npt.NDArray[np.int64] | None = None  # view with lost rows (lost_rows.py)
        self._row_of: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)  # view index -> row
        self._order = ListOrder(self.view, 0)
        self.highlight: list[re.Pattern[str]] = []  # the filter's kernel-name patterns
        self.sort_label = ""  # the header's column that the view is sorted by ("" log order)
        self.sort_descending = False

    # ------------------------------------------------------------------ data
    def set_capture(self, capture: Capture) -> None:
        self.capture = capture
        self._cache.clear()
        n = len(capture)
        self._num_width = max(4, len(str(int(capture.numbers.max()))) if n else 4)
        self._lost = LostRows(capture)
        self.set_view(np.arange(n, dtype=np.int64))

    def set_marks(self, mark_fn: MarkFn | None) -> None:
        """Show ``mark_fn(position)`` as a one-cell column after the data badges."""
        self.mark_fn = mark_fn
        self._cache.clear()
        self.refresh()

    def set_view(
        self,
        positions: npt.NDArray[np.int64],
        *,
        highlight: list[re.Pattern[str]] | None = None,
    ) -> None:
        """Show only ``positions``, in that order (log order when ascending; else sorted by a
        column: :attr:`sort_label`); the cursor stays on its enqueue, else (in log order) the
        next one; ``highlight`` marks the filter's matches in the kernel names."""
        # an empty view (a filter that matched nothing, as it was typed) keeps the enqueue
        # the cursor was on for the next view
        current = self.cursor_pos if self.cursor_pos is not None else self._kept_pos
        self.view = np.asarray(positions, dtype=np.int64)
        self._order = ListOrder(self.view, len(self.capture) if self.capture else 0)
        if highlight is not None:
            self.highlight = highlight
        self._cache.clear()
        in_log_order = self._order.ascending
        self._rows = self._lost.rows(self.view) if self._lost and in_log_order else None
        if self._rows is not None:
            self._row_of = np.flatnonzero(self._rows >= 0).astype(np.int64)
        self.cursor = self._order.nearest(current) if current is not None and len(self.view) else 0
        self.virtual_size = Size(self.size.width, self._row_count() + 1)
        self.scroll_to_cursor()
        self.refresh()
        self._cursor_changed()  # (the same index, another enqueue: the watcher said nothing)
        if self.cursor_pos != current:  # the filter moved the cursor: a motion like any other
            self._range_follows(False)

    @property
    def row_count(self) -> int:
        return len(self.view)

    @property
    def cursor_pos(self) -> int | None:
        if 0 <= self.cursor < len(self.view):
            return int(self.view[self.cursor])
        return None

    @property
    def selection(self) -> tuple[int, int] | None:
        """The range actions apply to: the explicit range, else the cursor's enqueue."""
        if self.range is not None:
            return self.range
        pos = self.cursor_pos
        return None if pos is None else (pos, pos)

    @property
    def selected_range(self) -> EnqueueRange | None:
        """:attr:`selection` as the enqueue numbers every range command takes (replay,
        export, check, latency, experiment, fleet, copy)."""
        sel = self.selection
        if self.capture is None or sel is None:
            return None
        numbers = self.capture.numbers
        return EnqueueRange(int(numbers[sel[0]]), int(numbers[sel[1]]))

    def move_to(self, pos: int) -> bool:
        """Put the cursor on capture position ``pos``; False if the view hides it."""
        i = self._order.index_of(pos)
        if i is None:
            return False
        self.move_cursor(i)
        return True

    # --------------------------------------------------------------- actions
    # The selection model: the range always ends at the cursor (the anchor is its other end).
    # A plain move or jump drops the range; in visual mode every move (arrows, pages, jumps,
    # marks, n/N, w/W, a filter that moves the cursor) extends it; shift+move extends it.
    def action_extend(self, delta: int) -> None:
        self.move_cursor(self.cursor + delta, extend=True)

    def action_extend_page(self, direction: int) -> None:
        self.action_extend(direction * self.page_rows())

    def action_visual(self) -> None:
        self.visual = not self.visual
        if self.visual:
            if self.range is None:  # else go on from the shift-range's anchor
                self.range_anchor = self.cursor_pos
            self._extend_to_cursor()
        self.refresh()
        self.post_message(RangeChanged(*(self.range or (None, None))))

    def action_clear_range(self) -> None:
        self.visual = False
        self._drop_range(say=True)  # the status line loses VISUAL too

    def action_toggle_bookmark(self) -> None:
        pos = self.cursor_pos
        if pos is None:
            return
        self.bookmarks.symmetric_difference_update({pos})
        self.refresh()

    def action_bookmark(self, direction: int) -> None:
        pos = self.cursor_pos
        marks = sorted(p for p in self.bookmarks if self._in_view(p))
        if pos is None or not marks:
            self.app.bell()
            self.notify("No bookmarks (press m to set one)", severity="warning", timeout=3)
            return
        if direction > 0:
            target = next((p for p in marks if p > pos), marks[0])
        else:
            target = next((p for p in reversed(marks) if p < pos), marks[-1])
        self.move_to(target)

    def action_same_kernel(self, direction: int) -> None:
        cap, pos = self.capture, self.cursor_pos
        if cap is None or pos is None:
            return
        kid = int(cap.kernel_ids[pos])
        if kid < 0:
            self.notify("Not a kernel enqueue", severity="warning", timeout=3)
            return
        target = next_same(cap.kernel_ids[self.view], self.cursor, kid, direction)
        if target is None:
            name = escape_controls(cap.kernel_names[kid])
            where = "after" if direction > 0 else "before"
            self.notify(f"No {name} enqueue {where} this one", severity="warning", timeout=3)
            return
        self.move_cursor(target)

    # --------------------------------------------------------------- helpers
    def _row_count(self) -> int:
        return len(self.view) if self._rows is None else len(self._rows)

    def screen_row(self, row: int) -> int:
        """The screen row (from 0, below the header) of view index ``row``."""
        return row if self._rows is None else int(self._row_of[row])

    def row_at(self, line: int) -> int:
        """The view index of screen row ``line``: a lost row gives the enqueue after it."""
        return line if self._rows is None else int(np.searchsorted(self._row_of, line))

    def _in_view(self, pos: int) -> bool:
        return self._order.index_of(pos) is not None

    def move_cursor(self, row: int, *, extend: bool = False) -> None:
        """Move the cursor to view index ``row`` (a motion): the range follows it when
        ``extend`` (shift) or in visual mode, else it is dropped: the range never outlives
        the cursor."""
        if not len(self.view):
            return
        if extend and (self.range is None or self.range_anchor is None):
            self.range_anchor = self.cursor_pos
        super().move_cursor(row)
        self._range_follows(extend)

    def _range_follows(self, extend: bool) -> None:
        if extend or self.visual:
            self._extend_to_cursor()
        else:
            self._drop_range()

    def _drop_range(self, *, say: bool = False) -> None:
        had = self.range is not None or self.range_anchor is not None
        self.range_anchor = None
        if self.range is not None:
            self.range = None
            self.refresh()
        if had or say:  # a plain move without a range says nothing more (CursorMoved does)
            self.post_message(RangeChanged(None, None))

    def cursor_moved(self, row: int) -> None:
        self._cursor_changed()

    def _cursor_changed(self) -> None:
        pos = self.cursor_pos
        if pos is not None:
            self._kept_pos = pos
        if pos != self._last_pos:
            self._last_pos = pos
            self.post_message(CursorMoved(pos))

    def _extend_to_cursor(self) -> None:
        pos = self.cursor_pos
        if self.range_anchor is None:
            self.range_anchor = pos
        if pos is None or self.range_anchor is None:
            return
        self.range = (min(self.range_anchor, pos), max(self.range_anchor, pos))
        self.refresh()
        self.post_message(RangeChanged(*self.range))

    # ------------------------------------------------------------- rendering
    def on_resize(self, event: events.Resize) -> None:
        self.virtual_size = Size(event.size.width, self._row_count() + 1)
        self.scroll_to_cursor()

    def _columns(self, width: int) -> tuple[int, int, int, int]:
        """Widths of (number, kind, kernel, geometry); time is 9 and data 4."""
        geometry = 17 if width >= 100 else 13
        kind = 7
        fixed = 1 + self._num_width + 1 + kind + 1 + 1 + geometry + 1 + 9 + 1 + 4
        fixed += 2 if self.mark_fn is not None else 0
        kernel = max(8, width - fixed)
        return self._num_width, kind, kernel, geometry

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if y == 0:
            return self._header(width)
        index = round(self.scroll_y) + y - 1
        if self.capture is None or not len(self.view):
            if y == 1:
                text = self.placeholder if self.capture is None else "No enqueue matches the filter"
                style = self.get_component_rich_style("enqueue-list--dim")
                return Strip([Segment(ellipsize(" " + text, width), style)], width)
            return Strip.blank(width, self.rich_style)
        if index >= self._row_count():
            return Strip.blank(width, self.rich_style)
        if self._rows is not None:
            entry = int(self._rows[index])
            if entry < 0:
                return self._lost_row(LostRows.number(entry), width)
            pos, index = entry, self.row_at(index)
        else:
            pos = int(self.view[index])
        flags = 0
        if index == self.cursor:
            flags |= _CURSOR | (_FOCUSED if self.has_focus else 0)
        if self.range is not None and self.range[0] <= pos <= self.range[1]:
            flags |= _IN_RANGE
        if pos in self.bookmarks:
            flags |= _BOOKMARK
        key = (pos, width, flags)
        strip = self._cache.get(key)
        if strip is None:
            try:
                strip = self._render_row(pos, width, flags)
            except Exception as exc:  # a corrupt record shows as such; the list keeps working
                number = int(self.capture.numbers[pos])
                text = f"  {number}: unreadable record ({type(exc).__name__}: {exc})"
                style = self.get_component_rich_style("enqueue-list--dim")
                strip = Strip([Segment(ellipsize(text, width), style)], width)
            self._cache[key] = strip
        return strip

    def _header(self, width: int) -> Strip:
        nw, kw, knw, gw = self._columns(width)
        text = header_text((nw, kw, knw, gw), self.sort_label, self.sort_descending,
                           self.mark_fn is not None)
        style = self.get_component_rich_style("enqueue-list--header")
        return Strip([Segment(ellipsize(text, width), style)], width)

    def _lost_row(self, number: int, width: int) -> Strip:
        """A dim row for lost enqueue ``number``: what the evidence says of it."""
        assert self._lost is not None
        dim = self.rich_style + self.get_component_rich_style("enqueue-list--dim")
        return self._lost.strip(number, self._columns(width), width, dim)

    def _render_row(self, pos: int, width: int, flags: int) -> Strip:
        assert self.capture is not None
        row: EnqueueRow = self.capture.row(pos)
        nw, kw, knw, gw = self._columns(width)
        base = self.rich_style
        if flags & _IN_RANGE:
            base = base + self.get_component_rich_style("enqueue-list--range")
        if flags & _CURSOR:
            cursor = self.get_component_rich_style("enqueue-list--cursor")
            base = base + (cursor if flags & _FOCUSED else Style(reverse=True))
        if row.kind in (EnqueueKind.KERNEL, EnqueueKind.TASK):
            kind_style = self.get_component_rich_style("enqueue-list--kernel")
            name = escape_controls(row.kernel or "?")
        elif row.kind in (EnqueueKind.READ, EnqueueKind.WRITE, EnqueueKind.COPY,
                          EnqueueKind.FILL, EnqueueKind.MAP, EnqueueKind.UNMAP):
            kind_style = self.get_component_rich_style("enqueue-list--transfer")
            name = row.function.removeprefix("clEnqueue")
        else:
            kind_style = self.get_component_rich_style("enqueue-list--other")
            name = row.function.removeprefix("clEnqueue")
        dim = self.get_component_rich_style("enqueue-list--dim")
        mark = Segment(
            "*" if flags & _BOOKMARK else " ",
            base + self.get_component_rich_style("enqueue-list--bookmark"),
        )
        if row.global_size is not None:
            geometry = f"{fmt_size(row.global_size)}/{fmt_size(row.local_size)}"
        else:
            geometry = ""
        time = fmt_ns(row.device_time.start_to_end) if row.device_time else ""
        badges = (
            ("<" if row.has_pre else " ")
            + (">" if row.has_post else " ")
            + ("R" if row.has_replay else " ")
            + ("#" if row.hashes_only else " ")
        )
        segments = [
            mark,
            Segment(str(row.number).rjust(nw), base),
            Segment("~", base + dim) if row.recovered else Segment(" ", base),
            Segment(ellipsize(row.kind.label, kw) + " ", base + kind_style),
            *marked_name(
                ellipsize(name, knw) + " ", self.highlight if row.kernel else [],
                base + (Style() if row.kernel else dim),
                self.get_component_rich_style("enqueue-list--match"),
            ),
            Segment(ellipsize(geometry, gw) + " ", base),
            Segment(time.rjust(9) + " ", base),
            Segment(badges, base + self.get_component_rich_style("enqueue-list--badge")),
        ]
        if self.mark_fn is not None:
            mark_cell = self.mark_fn(pos)
            segments.append(Segment(" ", base))
            segments.append(
                Segment(mark_cell[0], base + mark_cell[1]) if mark_cell else Segment(" ", base)
            )
        return Strip(segments).adjust_cell_length(width, base)
