"""What the browser's enqueue list shows and where: the filter language and the kind filter
(``/``, ``t``), the sort (``S``, ``O``) and the jump to an enqueue number (``:``, ``g``).
:class:`ListFilter` owns that state and each prompt's history; the browser screen declares
the keys and hands them here."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from cltui.capture.background import reader_of
from cltui.capture.model import CaptureError, EnqueueKind
from cltui.capture.query import (
    FILTER_HELP,
    SORT_KEYS,
    parse_query,
    sort_positions,
    work_items_of,
)
from cltui.tui.screens.kinds import KindScreen
from cltui.tui.screens.prompt import PromptScreen

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.tui.screens.main import MainScreen

__all__ = ["PROMPT_HISTORY", "ListFilter"]

PROMPT_HISTORY = 50  # lines each prompt remembers per capture


class ListFilter:
    """Filters, sorts and jumps in the enqueue list of the capture the screen shows."""

    def __init__(self, screen: MainScreen) -> None:
        self.screen = screen
        self.name_filter = ""  # the filter language's text (cltui.capture.query)
        self.kind_filter: set[EnqueueKind] | None = None  # None: every kind
        self.list_sort = ("number", False)  # (SORT_KEYS key, descending)
        self.prompt_history: dict[str, list[str]] = {}  # "filter", "jump": oldest first
        # the capture whose global work items were read (sort by size), and them
        self._work_items_of: tuple[object, npt.NDArray[np.int64]] | None = None

    @property
    def capture(self) -> Capture | None:
        return self.screen.capture

    # ----------------------------------------------------------------- filters
    def open_filter(self) -> None:
        if self.capture is None:
            return
        before = (self.name_filter, self.kind_filter)
        at = self.screen.enqueue_list.cursor_pos
        prompt = PromptScreen(
            "Filter (as you type)", FILTER_HELP, self.name_filter, "kernel:sobel time>1ms",
            on_change=self._filter_as_typed, history=self.prompt_history.get("filter", []),
        )
        self.screen.app.push_screen(prompt, lambda text: self._apply_name_filter(text, before, at))

    def _filter_as_typed(self, text: str) -> str | None:
        """Filter while the prompt is open; the error of a word not understood, if any."""
        try:
            self.apply_filter(text.strip(), self.kind_filter)
        except CaptureError as exc:
            return str(exc)
        return None

    def _apply_name_filter(
        self, text: str | None, before: tuple[str, set[EnqueueKind] | None], at: int | None
    ) -> None:
        if text is None:  # escape: the filter and the cursor as they were before the prompt
            if (self.name_filter, self.kind_filter) != before:
                self.set_filter(*before)
                if at is not None:
                    self.screen.enqueue_list.move_to(at)
            return
        self.remember_prompt("filter", text.strip())
        if not self.set_filter(text.strip(), self.kind_filter):  # said why; back as it was
            self.apply_filter(*before)

    def remember_prompt(self, which: str, text: str) -> None:
        """Put ``text`` last in the prompt's history (once; the last 50)."""
        if not text:
            return
        history = [t for t in self.prompt_history.get(which, []) if t != text]
        self.prompt_history[which] = [*history, text][-PROMPT_HISTORY:]

    def open_kinds(self) -> None:
        cap = self.capture
        if cap is None:
            return
        values, counts = np.unique(cap.kinds, return_counts=True)
        present = {EnqueueKind(int(v)): int(c) for v, c in zip(values, counts, strict=True)}
        chosen = self.kind_filter if self.kind_filter is not None else set(present)
        self.screen.app.push_screen(KindScreen(present, chosen), self._apply_kind_filter)

    def _apply_kind_filter(self, kinds: set[EnqueueKind] | None) -> None:
        if kinds is None or self.capture is None:
            return
        present = {EnqueueKind(int(v)) for v in np.unique(self.capture.kinds)}
        self.set_filter(self.name_filter, None if kinds >= present else kinds)

    def set_filter(self, name: str, kinds: set[EnqueueKind] | None) -> bool:
        """Filter the list by the filter language (:mod:`cltui.capture.query`) and kinds;
        False (and a notice) when the filter has a word it does not understand."""
        try:
            matched = self.apply_filter(name, kinds)
        except CaptureError as exc:
            msg = str(exc)
            self.screen.notify(msg[:1].upper() + msg[1:], severity="error", markup=False)
            return False
        if not matched:
            self.screen.notify("No enqueue matches the filter", severity="warning", timeout=4)
        return True

    def apply_filter(self, name: str, kinds: set[EnqueueKind] | None) -> int:
        """Show the enqueues ``name`` and ``kinds`` keep, in the list's sort order; how many.
        Raises :class:`CaptureError` for a word the language does not understand."""
        cap = self.capture
        if cap is None:
            return 0
        query = parse_query(name)
        if query.empty and kinds is None:
            positions = np.arange(len(cap), dtype=np.int64)
        else:
            positions = query.positions(cap)
            if kinds is not None:
                keep = np.array(sorted(int(k) for k in kinds), dtype=np.uint8)
                positions = positions[np.isin(cap.kinds[positions], keep)]
        self.name_filter = name
        self.kind_filter = kinds
        key, descending = self.list_sort
        items = self._work_items()
        if key == "size" and items is None:  # (still being read: log order meanwhile)
            key, descending = "number", False
        ordered = sort_positions(cap, positions, key, descending, items)
        self.screen.enqueue_list.set_view(ordered, highlight=query.highlight)
        parts = []
        if name:
            parts.append(f"filter {name!r}")
        if kinds is not None:
            parts.append("kinds " + ",".join(k.label for k in sorted(kinds)))
        filter_text = f"{' '.join(parts)}: {len(positions):,}/{len(cap):,}" if parts else ""
        self.screen.status.set_parts(filter_text=filter_text)
        return len(positions)

    # -------------------------------------------------------------------- sort
    def sort_step(self, step: int) -> None:
        """``step`` 1: the next column to sort by (its natural direction); 0: reverse."""
        if self.capture is None:
            return
        key, descending = self.list_sort
        if step:
            names = [k for k, _, _ in SORT_KEYS]
            key = names[(names.index(key) + 1) % len(names)]
            descending = next(d for k, _, d in SORT_KEYS if k == key)
        else:
            descending = not descending
        self.set_sort(key, descending)

    def set_sort(self, key: str, descending: bool) -> None:
        """Sort the list by ``key`` (stable; the cursor stays on its enqueue).  By size:
        the kernel enqueues' global sizes are read first (once per capture, in the reader
        process: one pass over their log lines), then the list is sorted."""
        if key == "size" and self._work_items() is None:
            self._read_work_items(descending)
            return
        self.list_sort = (key, descending)
        lst = self.screen.enqueue_list
        label = next(h for k, h, _ in SORT_KEYS if k == key)
        lst.sort_label = "" if (key, descending) == ("number", False) else label
        lst.sort_descending = descending
        self.apply_filter(self.name_filter, self.kind_filter)
        lst.scroll_to_cursor()
        how = "slowest first" if key == "time" and descending else "largest first" if (
            key == "size" and descending) else (
            "descending" if descending else "ascending")
        self.screen.notify(f"Sorted by {label} ({how})", timeout=2)

    def _work_items(self) -> npt.NDArray[np.int64] | None:
        got = self._work_items_of
        return got[1] if got is not None and got[0] is self.capture else None

    def _read_work_items(self, descending: bool) -> None:
        """Read the global work items off the UI thread, then sort by them."""
        cap = self.capture
        if cap is None:
            return
        self.screen.notify("Reading the kernel enqueues' global sizes ...", timeout=3)

        def work() -> None:
            reader = reader_of(cap)
            try:
                items = reader.call(work_items_of) if reader is not None else cap.work_items()
            except CaptureError as exc:  # the reader gone, a log that cannot be read
                self.screen.app.call_from_thread(self.screen.notify, f"Cannot sort by size: {exc}",
                                          severity="error", markup=False)  # fmt: skip
                return

            def sorted_now() -> None:
                if self.capture is cap:
                    self._work_items_of = (cap, items)
                    self.set_sort("size", descending)

            self.screen.app.call_from_thread(sorted_now)

        self.screen.run_worker(work, thread=True, group="work-items", exclusive=True)

    # -------------------------------------------------------------------- jump
    def open_jump(self) -> None:
        if self.capture is None:
            return
        cap = self.capture
        lo, hi = (int(cap.numbers.min()), int(cap.numbers.max())) if len(cap) else (0, 0)
        self.screen.app.push_screen(
            PromptScreen("Jump to enqueue number", f"{lo} to {hi}", "", "number",
                         history=self.prompt_history.get("jump", [])),
            self._jump,
        )

    def _jump(self, text: str | None) -> None:
        if text is None or not text.strip():
            return
        self.remember_prompt("jump", text.strip())
        try:
            number = int(text.strip().replace(",", "").replace("_", ""))
        except ValueError:
            self.screen.notify(f"Not an enqueue number: {text.strip()!r}", severity="error")
            return
        self.jump_to(number)

    def jump_to(self, number: int) -> bool:
        cap = self.capture
        if cap is None:
            return False
        pos = cap.position_of(number)
        if pos is None:
            if cap.is_lost(number):
                self.screen.notify(
                    f"Enqueue {number} was lost with the log and no dump file names it",
                    severity="error",
                )
            else:
                self.screen.notify(f"There is no enqueue {number} in this capture",
                                   severity="error")
            return False
        if not self.screen.enqueue_list.move_to(pos):
            self.set_filter("", None)  # (the sort order stays)
            self.screen.notify(f"Filter cleared to show enqueue {number}", timeout=4)
            self.screen.enqueue_list.move_to(pos)
        return True
