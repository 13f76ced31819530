"""The reading half of the browser screen: the capture is opened (indexed) in a worker
thread while the screen is already up, with a progress bar; esc stops it, R reads again,
a capture that cannot be read says why.  :class:`MainScreen` is the one subclass (through
:class:`~cltui.tui.screens.filtering.FilteringScreen` and
:class:`~cltui.tui.screens.panes.PanesScreen`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from textual import work
from textual.screen import Screen
from textual.widgets import ProgressBar
from textual.worker import get_current_worker

from cltui.capture.model import CaptureError, NotACapture
from cltui.progress import CancelToken, ProgressEvent, ProgressFn
from cltui.tui.browse import log_size
from cltui.tui.format import fmt_bytes
from cltui.tui.messages import CaptureFailed, CaptureLoaded, IndexProgress
from cltui.tui.widgets.enqueue_list import EnqueueList
from cltui.tui.widgets.status_line import StatusLine

if TYPE_CHECKING:
    from cltui.capture.capture import Capture

__all__ = ["Opener", "ReadingScreen"]

Opener = Callable[[Path, ProgressFn, CancelToken], "Capture"]


class ReadingScreen(Screen[None]):
    """Opens ``path`` with ``opener`` in a thread; the subclass shows what it loads (it
    handles :class:`CaptureLoaded`) and composes ``#loading``, the list and the status line."""

    path: Path
    opener: Opener
    label: str
    capture: Capture | None
    error: str | None
    reading: bool  # the capture is being opened (indexed)
    stopped: bool  # the user stopped the reading (esc)
    read_fraction: float
    _cancel: CancelToken
    _last_progress: float
    _log_bytes: int

    @property
    def enqueue_list(self) -> EnqueueList:
        return self.query_one(EnqueueList)

    @property
    def status(self) -> StatusLine:
        return self.query_one(StatusLine)

    def _start_reading(self) -> None:
        self.reading, self.stopped, self.error = True, False, None
        self.read_fraction, self._last_progress = 0.0, -1.0
        self._cancel = CancelToken()
        self._log_bytes = log_size(self.path)
        self.query_one("#loading").display = True
        self.query_one("#loading-bar", ProgressBar).update(progress=0.0)
        self.enqueue_list.placeholder = "Indexing…"
        self.enqueue_list.refresh()
        self._show_reading()
        self.refresh_bindings()
        # paint the first frame before the indexing thread starts
        self.call_after_refresh(self._index, self._cancel)

    def _show_reading(self) -> None:
        of = f" of {fmt_bytes(self._log_bytes)}" if self._log_bytes else ""
        self.status.set_parts(
            range_text=f"{self.label}indexing {int(self.read_fraction * 100)}%{of}",
            bytes_text="esc stops",
        )

    def on_unmount(self) -> None:
        self._cancel.cancel()
        self._close_reader()

    def _close_reader(self) -> None:
        from cltui.capture.background import reader_of

        reader = reader_of(self.capture) if self.capture is not None else None
        if reader is not None:
            reader.close()

    # --------------------------------------------------------------- indexing
    @work(thread=True, exclusive=True, group="index", exit_on_error=False)
    def _index(self, cancel: CancelToken) -> None:
        """Open the capture (the default opener reads it in a child process: see
        :mod:`cltui.capture.background`); this thread only waits, the GIL released."""
        from cltui.capture.log import IndexCancelled

        def progress(event: ProgressEvent) -> None:
            fraction = event.fraction or 0.0
            if fraction - self._last_progress >= 0.01 or fraction >= 1.0:
                self._last_progress = fraction
                self.post_message(IndexProgress(fraction))

        try:
            capture = self.opener(self.path, progress, cancel)
        except IndexCancelled:
            return  # the user stopped it (esc) or the screen is gone: nothing to report
        except CaptureError as exc:
            if not cancel.is_set():
                self.post_message(CaptureFailed(str(exc), isinstance(exc, NotACapture)))
            return
        except Exception as exc:  # a bug in a parser must not reach the user as a traceback
            reason = f"cannot read {self.path}: {type(exc).__name__}: {exc}"
            self.post_message(CaptureFailed(reason))
            return
        if cancel.is_set() or get_current_worker().is_cancelled:
            from cltui.capture.background import reader_of

            reader = reader_of(capture)
            if reader is not None:
                reader.close()
            return
        self.post_message(CaptureLoaded(capture))

    def on_index_progress(self, message: IndexProgress) -> None:
        if not self.reading:
            return
        self.read_fraction = message.fraction
        self.query_one("#loading-bar", ProgressBar).update(progress=message.fraction)
        self._show_reading()

    def action_stop_reading(self) -> None:
        """Stop reading the capture (esc while indexing): the reader process is killed."""
        if not self.reading:
            return
        self._cancel.cancel()
        self.reading, self.stopped = False, True
        self.query_one("#loading").display = False
        done = int(self.read_fraction * 100)
        line = f"Reading stopped at {done}%: press R to read {self.path.name} again, q to quit"
        self.enqueue_list.placeholder = line
        self.enqueue_list.refresh()
        self.status.set_parts(
            range_text=f"{self.label}reading stopped at {done}%", bytes_text="R reads again"
        )
        self.notify(f"Stopped reading {self.path}", title="Reading stopped", timeout=6)
        self.refresh_bindings()

    def action_read_again(self) -> None:
        if self.reading or self.capture is not None:
            return
        self._start_reading()

    def on_capture_failed(self, message: CaptureFailed) -> None:
        self.reading = False
        self.error = message.message
        self.query_one("#loading").display = False
        self.enqueue_list.placeholder = f"Cannot open: {message.message}"
        self.enqueue_list.refresh()
        self.status.set_parts(range_text=f"{self.label}nothing to show", bytes_text="")
        self.notify(message.message, title="Cannot open capture", severity="error", timeout=30)
        self.refresh_bindings()
        bad_input = getattr(self.app, "bad_input", None)
        if message.not_a_capture and callable(bad_input):
            bad_input(message.message)  # the app exits 2 with the line, as the CLI does
