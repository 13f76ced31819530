"""The reading part of the browser screen: the capture is opened (indexed) in a worker thread
while the screen is already up, with a progress bar; esc stops it, R reads again, a capture
that cannot be read says why.  :class:`CaptureIndexer` owns the reading's state; it posts
:class:`IndexProgress`, :class:`CaptureLoaded` and :class:`CaptureFailed` to its screen, which
hands them back here (:meth:`CaptureIndexer.progress`, :meth:`CaptureIndexer.loaded`,
:meth:`CaptureIndexer.failed`)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from textual.widgets import ProgressBar
from textual.worker import get_current_worker

from cltui.capture.model import CaptureError, NotACapture
from cltui.progress import CancelToken, ProgressEvent, ProgressFn
from cltui.tui.browse import log_size
from cltui.tui.format import fmt_bytes
from cltui.tui.messages import CaptureFailed, CaptureLoaded, IndexProgress

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.tui.screens.main import MainScreen

__all__ = ["CaptureIndexer", "Opener", "close_reader"]

Opener = Callable[[Path, ProgressFn, CancelToken], "Capture"]


def close_reader(capture: Capture | None) -> None:
    """Close the reader process that decodes for ``capture`` (if it has one)."""
    from cltui.capture.background import reader_of

    reader = reader_of(capture) if capture is not None else None
    if reader is not None:
        reader.close()


class CaptureIndexer:
    """Opens the screen's capture with ``opener`` in a thread; the screen shows what it loads
    (it composes ``#loading``, ``#loading-bar``, the list and the status line)."""

    def __init__(self, screen: MainScreen, path: Path, opener: Opener, label: str) -> None:
        self.screen = screen
        self.path = path
        self.opener = opener
        self.label = label
        self.reading = False  # the capture is being opened (indexed)
        self.stopped = False  # the user stopped the reading (esc)
        self.error: str | None = None  # why it could not be read
        self.fraction = 0.0
        self._cancel = CancelToken()
        self._last_progress = -1.0
        self._log_bytes = 0

    def start(self) -> None:
        screen = self.screen
        self.reading, self.stopped, self.error = True, False, None
        self.fraction, self._last_progress = 0.0, -1.0
        self._cancel = CancelToken()
        self._log_bytes = log_size(self.path)
        screen.query_one("#loading").display = True
        screen.query_one("#loading-bar", ProgressBar).update(progress=0.0)
        screen.enqueue_list.placeholder = "Indexing…"
        screen.enqueue_list.refresh()
        self._show()
        screen.refresh_bindings()
        # paint the first frame before the indexing thread starts
        screen.call_after_refresh(self._run, self._cancel)

    def _show(self) -> None:
        of = f" of {fmt_bytes(self._log_bytes)}" if self._log_bytes else ""
        self.screen.status.set_parts(
            range_text=f"{self.label}indexing {int(self.fraction * 100)}%{of}",
            bytes_text="esc stops",
        )

    def close(self, capture: Capture | None) -> None:
        """The screen goes: stop a reading, close the reader of ``capture``."""
        self._cancel.cancel()
        close_reader(capture)

    # --------------------------------------------------------------- indexing
    def _run(self, cancel: CancelToken) -> None:
        self.screen.run_worker(partial(self._index, cancel), thread=True, exclusive=True,
                               group="index", exit_on_error=False)  # fmt: skip

    def _index(self, cancel: CancelToken) -> None:
        """Open the capture (the default opener reads it in a child process: see
        :mod:`cltui.capture.background`); this thread only waits, the GIL released."""
        from cltui.capture.log import IndexCancelled

        post = self.screen.post_message

        def progress(event: ProgressEvent) -> None:
            fraction = event.fraction or 0.0
            if fraction - self._last_progress >= 0.01 or fraction >= 1.0:
                self._last_progress = fraction
                post(IndexProgress(fraction))

        try:
            capture = self.opener(self.path, progress, cancel)
        except IndexCancelled:
            return  # the user stopped it (esc) or the screen is gone: nothing to report
        except CaptureError as exc:
            if not cancel.is_set():
                post(CaptureFailed(str(exc), isinstance(exc, NotACapture)))
            return
        except Exception as exc:  # a bug in a parser must not reach the user as a traceback
            post(CaptureFailed(f"cannot read {self.path}: {type(exc).__name__}: {exc}"))
            return
        if cancel.is_set() or get_current_worker().is_cancelled:
            close_reader(capture)
            return
        post(CaptureLoaded(capture))

    def progress(self, fraction: float) -> None:
        if not self.reading:
            return
        self.fraction = fraction
        self.screen.query_one("#loading-bar", ProgressBar).update(progress=fraction)
        self._show()

    def loaded(self, capture: Capture) -> bool:
        """Whether ``capture`` is to be shown (False: the reading was stopped meanwhile, and
        its reader is closed)."""
        if not self.reading:
            close_reader(capture)
            return False
        self.reading = False
        self.screen.query_one("#loading").display = False
        return True

    def stop(self) -> None:
        """Stop reading the capture (esc while indexing): the reader process is killed."""
        if not self.reading:
            return
        screen = self.screen
        self._cancel.cancel()
        self.reading, self.stopped = False, True
        screen.query_one("#loading").display = False
        done = int(self.fraction * 100)
        line = f"Reading stopped at {done}%: press R to read {self.path.name} again, q to quit"
        screen.enqueue_list.placeholder = line
        screen.enqueue_list.refresh()
        screen.status.set_parts(
            range_text=f"{self.label}reading stopped at {done}%", bytes_text="R reads again"
        )
        screen.notify(f"Stopped reading {self.path}", title="Reading stopped", timeout=6)
        screen.refresh_bindings()

    def failed(self, message: CaptureFailed) -> None:
        screen = self.screen
        self.reading = False
        self.error = message.message
        screen.query_one("#loading").display = False
        screen.enqueue_list.placeholder = f"Cannot open: {message.message}"
        screen.enqueue_list.refresh()
        screen.status.set_parts(range_text=f"{self.label}nothing to show", bytes_text="")
        screen.notify(message.message, title="Cannot open capture", severity="error", timeout=30)
        screen.refresh_bindings()
        bad_input = getattr(screen.app, "bad_input", None)
        if message.not_a_capture and callable(bad_input):
            bad_input(message.message)  # the app exits 2 with the line, as the CLI does
