"""The app on two captures: each path opened once (:func:`shared_opener`), and the
divergence between them.  :class:`Divergence` runs :func:`cltui.analysis.diverge.diverge` in a
thread and marks each enqueue of both lists (``≠`` different, ``≈`` within tolerance, ``↕`` the
sequences differ, ``=`` identical); ``d`` jumps to the first divergent enqueue, ``D`` to the next.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.style import Style
from textual.app import App

from cltui.progress import CancelToken, ProgressEvent, ProgressFn, no_progress
from cltui.tui.screens.reading import Opener
from cltui.tui.workers import worker_token

if TYPE_CHECKING:
    from cltui.analysis.diverge_report import DivergeReport, EnqueueDiff
    from cltui.capture.capture import Capture
    from cltui.tui.screens.main import MainScreen

__all__ = ["MARKS", "Divergence", "shared_opener"]

AnyApp = App[Any]



def shared_opener(open_fn: Opener) -> Opener:
    """``open_fn`` opening each path once: the browser screens and the divergence share it."""
    lock = threading.Lock()
    locks: dict[Path, threading.Lock] = {}
    opened: dict[Path, Capture] = {}

    def open_once(path: Path, progress: ProgressFn, cancel: CancelToken) -> Capture:
        key = Path(path).resolve()
        with lock:
            path_lock = locks.setdefault(key, threading.Lock())
        with path_lock:
            cap = opened.get(key)
            if cap is None:
                cap = open_fn(path, progress, cancel)
                opened[key] = cap
            else:
                progress(ProgressEvent(1.0))
            return cap

    return open_once


# status -> (badge, style); statuses from cltui.analysis.diverge_report
MARKS: dict[str, tuple[str, Style]] = {
    "different": ("≠", Style(color="red", bold=True)),
    "sequence": ("↕", Style(color="magenta", bold=True)),
    "within": ("≈", Style(color="yellow")),
    "identical": ("=", Style(color="green", dim=True)),
    "unchecked": ("·", Style(dim=True)),
}


class Divergence:
    """The divergence report of the app's two captures, marks and jumps."""

    def __init__(self, app: AnyApp, screens: list[MainScreen]) -> None:
        self.app = app
        self.screens = screens
        self.report: DivergeReport | None = None
        self.error: str | None = None
        self.cancel = CancelToken()
        self._by_b: dict[int, EnqueueDiff] = {}

    @property
    def ready(self) -> bool:
        return self.report is not None

    def start(self) -> None:
        self.app.run_worker(self._run, thread=True, group="diverge", exit_on_error=False)

    def _run(self) -> None:
        from textual.worker import get_current_worker

        from cltui.analysis.diverge import DivergeError, diverge
        from cltui.capture.model import CaptureError

        self.cancel = worker_token(get_current_worker(), self.cancel)  # app exit stops it too
        a, b = self.screens[0], self.screens[1]
        try:
            cap_a = a.opener(a.path, no_progress, self.cancel)
            cap_b = b.opener(b.path, no_progress, self.cancel)
            report = diverge(cap_a, cap_b, cancel=self.cancel)
        except (CaptureError, DivergeError) as exc:
            self.app.call_from_thread(self._failed, str(exc))
            return
        except Exception as exc:  # a bug must not reach the user as a traceback
            self.app.call_from_thread(
                self._failed, f"cannot compare the captures: {type(exc).__name__}: {exc}"
            )
            return
        if not self.cancel.is_set():
            self.app.call_from_thread(self._done, report)

    def _failed(self, message: str) -> None:
        self.error = message
        self.app.notify(message, title="Divergence", severity="error", timeout=12)

    def _done(self, report: DivergeReport) -> None:
        self.report = report
        self._by_b = {e.number_b: e for e in report.enqueues if e.number_b is not None}
        self.apply()
        self.app.refresh_bindings()
        first = report.first_divergent
        counts = report.counts()
        if first is None:
            text = f"The captures agree: {counts.get('identical', 0)} identical enqueues"
        else:
            text = (
                f"{len(report.divergent)} divergent enqueue(s); the first is {first.number} "
                f"{first.label()} (press d)"
            )
        self.app.notify(text, title="Divergence", timeout=10)

    def status(self, side: int, number: int) -> str | None:
        """Status of enqueue ``number`` of capture A (``side`` 0) or B (1)."""
        if self.report is None:
            return None
        hit = self.report.get(number) if side == 0 else self._by_b.get(number)
        return hit.status if hit is not None else None

    def apply(self) -> None:
        """Mark the lists of the screens whose capture is loaded (call again after a load)."""
        if self.report is None:
            return
        for side, screen in enumerate(self.screens):
            cap = screen.capture
            if cap is None or not screen.is_mounted:
                continue
            lst = screen.enqueue_list
            if lst.mark_fn is not None:
                continue

            def mark(pos: int, side: int = side, cap: Capture = cap) -> tuple[str, Style] | None:
                status = self.status(side, int(cap.numbers[pos]))
                return MARKS.get(status) if status is not None else None

            lst.set_marks(mark)

    def targets(self, side: int) -> list[tuple[int, EnqueueDiff]]:
        """(number on that side, diff) of every divergent enqueue, in order."""
        if self.report is None:
            return []
        out: list[tuple[int, EnqueueDiff]] = []
        for e in self.report.divergent:
            if side == 0 and not e.only_b:
                out.append((e.number, e))
            elif side == 1 and (e.only_b or e.number_b is not None):
                out.append((e.number if e.only_b else int(e.number_b or 0), e))
        return out

    def jump(self, side: int, screen: MainScreen, *, first: bool) -> int | None:
        """Move ``screen``'s cursor to the first (or next) divergent enqueue; its number."""
        cap = screen.capture
        targets = self.targets(side)
        if cap is None or not targets:
            if self.report is not None:
                self.app.notify("No divergent enqueue", timeout=3)
            return None
        choice = targets[0]
        if not first:
            pos = screen.enqueue_list.cursor_pos
            current = int(cap.numbers[pos]) if pos is not None else -1
            choice = next((t for t in targets if t[0] > current), targets[0])
        number, diff = choice
        if not screen.jump_to(number):
            return None
        arg = diff.first_arg
        what = f"{arg.label()}: {arg.summary()}" if arg is not None else diff.status
        self.app.notify(f"{number} {diff.label()}: {what}", title="Divergent", timeout=8)
        return number
