"""The browser's remembered state of one capture (the file of :mod:`cltui.tui.capture_state`):
filters, bookmarks, the cursor's enqueue, the tab, the prompts' history and the last replay's
settings; restored when the capture is loaded, saved every few seconds when it changed and
when the screen goes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from textual.widgets import TabbedContent

from cltui.capture.model import EnqueueKind
from cltui.tui.capture_state import (
    CaptureState,
    ReplaySettings,
    load_state,
    save_state,
    state_file,
)
from cltui.tui.widgets.detail_panes import PANES

if TYPE_CHECKING:
    from cltui.tui.screens.main import MainScreen

__all__ = ["RememberedState"]

SAVE_EVERY = 2.0  # seconds between checks for a change to save


class RememberedState:
    """Reads the capture's remembered state, puts the screen back there, writes changes."""

    def __init__(self, screen: MainScreen) -> None:
        cap = screen.capture
        assert cap is not None
        self.screen = screen
        # the widgets themselves: their state is still there while the screen goes away
        self.lst = screen.enqueue_list
        self.details = screen.details
        self.path = state_file(cap.path, cap.log_path)
        self.state, notice = load_state(self.path)
        self.saved: CaptureState = dict(self.state)  # type: ignore[assignment]
        self.failed = False
        self.tab = self.details.active
        tabs = self.details.query_one(TabbedContent)
        screen.watch(tabs, "active", self._tab_changed, init=False)
        if notice:
            screen.notify(notice, severity="warning", timeout=10, markup=False)

    def _tab_changed(self, tab: str) -> None:
        self.tab = tab

    @property
    def replay(self) -> ReplaySettings | None:
        return self.state.get("replay")

    def remember_replay(self, settings: ReplaySettings) -> None:
        self.state["replay"] = settings
        self.save()

    def restore(self) -> None:
        """Filters, bookmarks, the cursor's enqueue and the tab, as they were."""
        screen, st = self.screen, self.state
        cap = screen.capture
        if cap is None or len(st) <= 1:
            return
        said: list[str] = []
        screen.list_filter.prompt_history = {k: list(v) for k, v in st.get("prompts", {}).items()}
        kinds = st.get("kinds")
        kind_set = None
        if kinds is not None:
            known = EnqueueKind.__members__
            kind_set = {EnqueueKind[k.upper()] for k in kinds if k.upper() in known}
        name = st.get("name_filter", "")
        if (name or kind_set is not None) and screen.list_filter.set_filter(name, kind_set or None):
            said.append("the filter")
        lst = screen.enqueue_list
        marks = {p for n in st.get("bookmarks", []) if (p := cap.position_of(n)) is not None}
        names = st.get("bookmark_names", {})
        screen.bookmark_names = {p: t for n, t in names.items()
                                 if (p := cap.position_of(int(n))) is not None and p in marks}
        if marks:
            lst.bookmarks = marks
            lst.refresh()
            said.append(f"{len(marks)} bookmark{'s' if len(marks) != 1 else ''}")
        number = st.get("cursor")
        pos = cap.position_of(number) if number is not None else None
        if pos is not None and lst.move_to(pos):
            said.append(f"enqueue {number}")
        tab = st.get("tab")
        if tab in PANES and tab != screen.details.active:
            screen.details.activate(tab)
        if said:
            screen.notify("Back where you were: " + ", ".join(said), timeout=5)

    def snapshot(self) -> CaptureState:
        screen = self.screen
        cap = screen.capture
        state: CaptureState = dict(self.state)  # type: ignore[assignment]
        if cap is None:
            return state
        lst = self.lst
        state["capture"] = str(cap.path)
        state["bookmarks"] = sorted(int(cap.numbers[p]) for p in lst.bookmarks)
        shown = screen.list_filter
        state["name_filter"] = shown.name_filter
        kinds = shown.kind_filter
        state["kinds"] = None if kinds is None else [k.label for k in sorted(kinds)]
        pos = lst.cursor_pos
        state["cursor"] = None if pos is None else int(np.int64(cap.numbers[pos]))
        state["tab"] = self.tab
        names = {str(int(cap.numbers[p])): t for p, t in screen.bookmark_names.items()
                 if p in lst.bookmarks}
        if names or "bookmark_names" in state:
            state["bookmark_names"] = names
        if shown.prompt_history:
            state["prompts"] = {k: list(v) for k, v in shown.prompt_history.items()}
        return state

    def save(self) -> None:
        """Write the state when it changed since the last write (one notice if it cannot)."""
        if self.screen.capture is None:
            return
        state = self.snapshot()
        self.state = state
        if state == self.saved or self.failed:
            return
        error = save_state(self.path, state, self.screen.capture.path)
        if error is not None:
            self.failed = True  # said once; the session goes on without memory
            self.screen.notify(error, severity="warning", timeout=10, markup=False)
            return
        self.saved = dict(state)  # type: ignore[assignment]
