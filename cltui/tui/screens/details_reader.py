"""The details of the enqueue under the browser's cursor: decoded off the UI thread (the list
repaints first) by :class:`DetailsReader`, which owns whether a decode is pending and which
list position the details show."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from textual.worker import get_current_worker

from cltui.tui.browse import ReadCancelled, decode_off_loop
from cltui.tui.workers import worker_token

if TYPE_CHECKING:
    from cltui.capture.model import Enqueue
    from cltui.tui.screens.main import MainScreen

__all__ = ["DetailsReader"]


class DetailsReader:
    """Shows the cursor's enqueue in the screen's details; ``shown(enqueue)`` is called with
    each enqueue shown (the status line's data size of a single enqueue)."""

    def __init__(self, screen: MainScreen, shown: Callable[[Enqueue | None], None]) -> None:
        self.screen = screen
        self.shown = shown
        self.pending = False  # a look at the cursor is queued
        self.pos: int | None = None  # the list position the details show

    @property
    def current(self) -> bool:
        """Whether the details show the enqueue under the cursor (no decode is pending)."""
        if self.screen.capture is None:
            return True
        return not self.pending and self.pos == self.screen.enqueue_list.cursor_pos

    def cursor_moved(self) -> None:
        if not self.pending:
            self.pending = True
            self.screen.call_later(self._show)

    def _show(self) -> None:
        self.pending = False
        screen = self.screen
        pos = screen.enqueue_list.cursor_pos
        if screen.capture is None:
            return
        if pos is None:
            screen.details.show_decoded(None, None)
            self.pos = None
            return
        screen.run_worker(partial(self._decode, pos), thread=True, exclusive=True,
                          group="details", exit_on_error=False)  # fmt: skip

    def _decode(self, pos: int) -> None:
        """Decode the enqueue at ``pos`` (a worker thread)."""
        cap = self.screen.capture
        if cap is None:
            return
        number = int(cap.numbers[pos])
        worker = get_current_worker()
        enq: Enqueue | None = None
        error = None
        try:
            enq = decode_off_loop(cap, number, worker_token(worker))
        except ReadCancelled:
            return
        except Exception as exc:  # the capture reports its own problems; this is a last guard
            error = f"enqueue {number}: cannot decode ({type(exc).__name__}: {exc})"
        if not worker.is_cancelled:
            self.screen.app.call_from_thread(self._decoded, pos, enq, error)

    def _decoded(self, pos: int, enq: Enqueue | None, error: str | None) -> None:
        screen = self.screen
        if pos != screen.enqueue_list.cursor_pos:  # the cursor moved on: a newer decode runs
            return
        screen.details.show_decoded(enq, error)
        self.pos = pos
        self.shown(enq)
