"""``F``: follow a capture that is still being written (toolong's tail): while on, the call
log's size is looked at every second, and when it grew the capture is read again in the
background (the same reader as at start, in its own process) and swapped in; the filter, the
sort, the bookmarks and the cursor's enqueue stay, and a cursor on the last row moves on to
the new last row.  Each reading is linear in the log; nothing runs while the log is still."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cltui.progress import CancelToken
from cltui.tui.browse import log_size
from cltui.tui.screens.reading import close_reader

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.tui.screens.main import MainScreen

__all__ = ["Follower"]

EVERY_S = 1.0  # seconds between two looks at the log's size


class Follower:
    """The follow mode of one browser screen."""

    def __init__(self, screen: MainScreen) -> None:
        self.screen = screen
        self.on = False
        self.busy = False  # a reading is running
        self.size = log_size(screen.path)  # the log's size when the capture shown was read
        self._cancel = CancelToken()
        self._timer = screen.set_interval(EVERY_S, self._tick, pause=True)

    def toggle(self) -> None:
        self.on = not self.on
        if self.on:
            self._timer.resume()
            self.screen.notify("Following the capture: new enqueues appear as its log grows "
                               "(F stops)", timeout=4)
        else:
            self._timer.pause()
            self._cancel.cancel()
            self._cancel = CancelToken()
            self.screen.notify("Stopped following the capture", timeout=3)

    def stop(self) -> None:
        self._timer.stop()
        self._cancel.cancel()

    def _tick(self) -> None:
        screen = self.screen
        if self.busy or screen.reading or screen.capture is None:
            return
        size = log_size(screen.path)
        if size <= self.size:
            return
        self.busy = True
        cancel = self._cancel
        screen.run_worker(lambda: self._read(size, cancel), thread=True, group="follow",
                          exit_on_error=False)

    def _read(self, size: int, cancel: CancelToken) -> None:
        screen = self.screen
        try:
            capture = screen.opener(screen.path, lambda event: None, cancel)
        except Exception as exc:  # said once; following stops (R or F again retries)
            screen.app.call_from_thread(self._failed, f"{type(exc).__name__}: {exc}")
            return
        screen.app.call_from_thread(self._swap, capture, size, cancel)

    def _failed(self, reason: str) -> None:
        self.busy = False
        if self.on:
            self.toggle()
        self.screen.notify(f"Cannot read the capture again: {reason}", severity="error",
                           markup=False)

    def _swap(self, capture: Capture, size: int, cancel: CancelToken) -> None:
        self.busy = False
        screen = self.screen
        old = screen.capture
        if cancel.is_set() or not self.on or old is None or not screen.is_mounted:
            close_reader(capture)
            return
        self.size = size
        lst = screen.enqueue_list
        at_end = len(lst.view) > 0 and lst.cursor == len(lst.view) - 1
        grown = len(capture) - len(old)
        screen.capture = capture
        lst.set_capture(capture)
        screen.details.set_capture(capture)
        shown = screen.list_filter
        shown.apply_filter(shown.name_filter, shown.kind_filter)
        if at_end:
            lst.action_edge(1)
        close_reader(old)
        if grown > 0:
            screen.notify(f"{grown:,} new enqueue{'s' if grown != 1 else ''}", timeout=2)
