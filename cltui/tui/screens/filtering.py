"""The list's view on the browser screen: the kernel-name and kind filters (``/``, ``t``)
and the jump to an enqueue number (``:``, ``g``).  :class:`MainScreen` is the one subclass
(it declares the keys)."""

from __future__ import annotations

import re

import numpy as np

from cltui.capture.model import EnqueueKind
from cltui.tui.screens.kinds import KindScreen
from cltui.tui.screens.prompt import PromptScreen
from cltui.tui.screens.reading import ReadingScreen

__all__ = ["FilteringScreen"]


class FilteringScreen(ReadingScreen):
    """Filters and jumps in the enqueue list of the capture the screen has read."""

    name_filter: str
    kind_filter: set[EnqueueKind] | None

    # ----------------------------------------------------------------- filters
    def action_filter(self) -> None:
        if self.capture is None:
            return
        hint = "substring; re:REGEX or /REGEX/ for a regular expression; empty clears"
        self.app.push_screen(
            PromptScreen("Filter by kernel name", hint, self.name_filter, "kernel name"),
            self._apply_name_filter,
        )

    def _apply_name_filter(self, text: str | None) -> None:
        if text is None:
            return
        self.set_filter(text.strip(), self.kind_filter)

    def action_kinds(self) -> None:
        cap = self.capture
        if cap is None:
            return
        values, counts = np.unique(cap.kinds, return_counts=True)
        present = {EnqueueKind(int(v)): int(c) for v, c in zip(values, counts, strict=True)}
        chosen = self.kind_filter if self.kind_filter is not None else set(present)
        self.app.push_screen(KindScreen(present, chosen), self._apply_kind_filter)

    def _apply_kind_filter(self, kinds: set[EnqueueKind] | None) -> None:
        if kinds is None or self.capture is None:
            return
        present = {EnqueueKind(int(v)) for v in np.unique(self.capture.kinds)}
        self.set_filter(self.name_filter, None if kinds >= present else kinds)

    def set_filter(self, name: str, kinds: set[EnqueueKind] | None) -> bool:
        """Filter the list by kernel name (substring, ``re:X`` or ``/X/``) and kinds."""
        cap = self.capture
        if cap is None:
            return False
        pattern, regex = name, False
        if name.startswith("re:"):
            pattern, regex = name[3:], True
        elif len(name) >= 2 and name.startswith("/") and name.endswith("/"):
            pattern, regex = name[1:-1], True
        if regex:
            try:
                re.compile(pattern)
            except re.error as exc:
                self.notify(f"Bad regular expression {pattern!r}: {exc}", severity="error")
                return False
        kind_list = sorted(kinds) if kinds is not None else None
        if not pattern and kind_list is None:
            positions = np.arange(len(cap), dtype=np.int64)
        else:
            positions = cap.find(pattern or None, regex=regex, kinds=kind_list)
        self.name_filter = name
        self.kind_filter = kinds
        self.enqueue_list.set_view(np.asarray(positions, dtype=np.int64))
        parts = []
        if name:
            parts.append(f"kernel {name!r}")
        if kinds is not None:
            parts.append("kinds " + ",".join(k.label for k in sorted(kinds)))
        filter_text = f"{' '.join(parts)}: {len(positions):,}/{len(cap):,}" if parts else ""
        self.status.set_parts(filter_text=filter_text)
        if not len(positions):
            self.notify("No enqueue matches the filter", severity="warning", timeout=4)
        return True

    # -------------------------------------------------------------------- jump
    def action_jump(self) -> None:
        if self.capture is None:
            return
        cap = self.capture
        lo, hi = (int(cap.numbers.min()), int(cap.numbers.max())) if len(cap) else (0, 0)
        self.app.push_screen(
            PromptScreen("Jump to enqueue number", f"{lo} to {hi}", "", "number"),
            self._jump,
        )

    def _jump(self, text: str | None) -> None:
        if text is None or not text.strip():
            return
        try:
            number = int(text.strip().replace(",", "").replace("_", ""))
        except ValueError:
            self.notify(f"Not an enqueue number: {text.strip()!r}", severity="error")
            return
        self.jump_to(number)

    def jump_to(self, number: int) -> bool:
        cap = self.capture
        if cap is None:
            return False
        pos = cap.position_of(number)
        if pos is None:
            if cap.is_lost(number):
                self.notify(
                    f"Enqueue {number} was lost with the log and no dump file names it",
                    severity="error",
                )
            else:
                self.notify(f"There is no enqueue {number} in this capture", severity="error")
            return False
        if not self.enqueue_list.move_to(pos):
            self.set_filter("", None)
            self.notify(f"Filter cleared to show enqueue {number}", timeout=4)
            self.enqueue_list.move_to(pos)
        return True
