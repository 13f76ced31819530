"""The range actions of the browser and the two-capture divergence marks.

The app wires these in (``make_app``): ``r`` -> :func:`start_replay` (device dialog, progress
with cancel, results with the three-way diff), ``e`` -> :func:`start_export` (folder dialog,
progress, one-line result), ``C`` -> :func:`start_check` (Oclgrind findings over the source),
``L`` -> :func:`start_latency` (progress, then the launch latency screen).
With two captures, :class:`Divergence` runs :func:`cltui.analysis.diverge.diverge` in a thread
and marks each enqueue of both lists (``≠`` different, ``≈`` within tolerance, ``↕`` the
sequences differ, ``=`` identical); ``d`` jumps to the first divergent enqueue, ``D`` to the next.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.style import Style
from textual.app import App

from cltui.progress import CancelToken, ProgressEvent, ProgressFn, no_progress
from cltui.tui.screens.export_dialog import (
    ExportDialog,
    ExportRequest,
    export_message,
    export_task,
)
from cltui.tui.screens.findings import FindingsScreen, check_task
from cltui.tui.screens.replay_dialog import ReplayDialog, ReplayRequest
from cltui.tui.screens.replay_progress import ProgressScreen, ReplayOutcome, replay_task
from cltui.tui.screens.results import ReplayResultsScreen
from cltui.tui.widgets.source_pane import SourcePane
from cltui.tui.workers import worker_token

if TYPE_CHECKING:

    from cltui.analysis.check_report import CheckReport
    from cltui.analysis.diverge_report import DivergeReport, EnqueueDiff
    from cltui.capture.capture import Capture
    from cltui.capture.model import Enqueue
    from cltui.capture.ranges import EnqueueRange
    from cltui.export import ExportResult
    from cltui.latency.measure import Measured, Options
    from cltui.tui.screens.main import MainScreen

__all__ = [
    "MARKS",
    "Divergence",
    "FindingMarks",
    "refuse_without_kernels",
    "shared_opener",
    "start_check",
    "start_export",
    "start_latency",
    "start_replay",
]

AnyApp = App[Any]
Opener = Callable[[Path, ProgressFn, CancelToken], "Capture"]


def _goto(app: AnyApp) -> Callable[[int], object] | None:
    """``jump_to`` of the browser screen the action starts from (``g`` in the result screens)."""
    from cltui.tui.screens.main import MainScreen

    origin = app.screen
    return origin.jump_to if isinstance(origin, MainScreen) else None


def refuse_without_kernels(app: AnyApp, what: str, capture: Capture, rng: EnqueueRange) -> bool:
    """Whether the range has no kernel enqueue to work on (said at once, in a notification,
    with the plan's own words: before the dialog, not after its start)."""
    from cltui.replay.plan import PlanError, kernel_numbers

    try:
        kernel_numbers(capture, rng)
    except PlanError as exc:
        app.notify(f"{what}: {exc}", severity="warning", timeout=8)
        return True
    return False


def start_replay(app: AnyApp, capture: Capture, rng: EnqueueRange) -> None:
    """Device dialog -> progress (cancel kills the child) -> results screen."""
    if refuse_without_kernels(app, "Replay", capture, rng):
        return
    goto = _goto(app)
    from cltui.tui.screens.main import MainScreen

    origin = app.screen
    memory = origin.memory if isinstance(origin, MainScreen) else None
    dialog = ReplayDialog(capture, rng, memory.replay if memory is not None else None)

    def chosen(request: ReplayRequest | None) -> None:
        if request is None:
            return
        if memory is not None:
            memory.remember_replay(dialog.settings)
        if request.hosts:  # the ticked devices of an inventory's hosts: cltui fleet's job
            from cltui.tui.screens.fleet_results import FleetResultsScreen, fleet_task

            def matrix(report: dict[str, Any] | None) -> None:
                if report is not None:
                    app.push_screen(FleetResultsScreen(report, capture, request))

            title = f"Replaying {rng} on {len(request.hosts)} hosts of {request.inventory}"
            app.push_screen(ProgressScreen(title, fleet_task(capture, rng, request),
                                           keep_partial=True), matrix)  # Cancel: what finished
            return
        title = f"Replaying {rng} ({request.mode})"
        task = replay_task(capture, rng, request, dialog.plan_for(request.mode))
        app.push_screen(ProgressScreen(title, task, keep_partial=True), done)

    def done(outcome: ReplayOutcome | None) -> None:
        if outcome is not None:
            app.push_screen(ReplayResultsScreen(capture, outcome, goto))

    app.push_screen(dialog, chosen)


def start_export(
    app: AnyApp, capture: Capture, rng: EnqueueRange, folder: Path | None = None
) -> None:
    """Export dialog -> progress (cancel removes the partial bundle) -> a notification."""
    if refuse_without_kernels(app, "Export", capture, rng):
        return

    def chosen(request: ExportRequest | None) -> None:
        if request is None:
            return
        title = f"Exporting {rng} to {request.outdir}"
        app.push_screen(ProgressScreen(title, export_task(capture, rng, request)), done)

    def done(result: ExportResult | None) -> None:
        if result is not None:
            app.notify(export_message(result), title="Export", timeout=15)

    app.push_screen(ExportDialog(capture, rng, folder), chosen)


class FindingMarks:
    """Source lines of check findings per enqueue, for the browser's Source pane."""

    def __init__(self) -> None:
        self.lines: dict[int, list[tuple[str, int]]] = {}

    def add(self, report: CheckReport) -> None:
        """Remember ``report``'s findings (replacing those of earlier checks of its enqueues)."""
        for number, _kernel in report.enqueues:
            self.lines[number] = [
                (sl.source, sl.line)
                for f in report.for_enqueue(number)
                for sl in f.lines
                if sl.source
            ]

    def __call__(self, enq: Enqueue) -> list[tuple[int, int, int, int]]:
        program = enq.program
        name = program.source_path.name if program is not None and program.source_path else None
        found = self.lines.get(enq.number, [])
        return [(n, 1, n, 10_000) for src, n in sorted(set(found)) if Path(src).name == name]


def start_check(app: AnyApp, screen: MainScreen) -> None:
    """Oclgrind's checks of the screen's selected range -> the findings screen; the findings'
    lines stay marked in the browser's Source pane for the enqueues checked."""
    cap, rng = screen.capture, screen.enqueue_list.selected_range
    if cap is None or rng is None:
        return

    def done(report: CheckReport | None) -> None:
        if report is None:
            return
        pane = screen.query_one(SourcePane)
        marks = pane.extra_marks if isinstance(pane.extra_marks, FindingMarks) else FindingMarks()
        marks.add(report)
        pane.set_extra_marks(marks)
        screen.details.activate(screen.details.active)
        app.push_screen(FindingsScreen(cap, report, screen.jump_to))

    title = f"Checking {rng} under Oclgrind"
    app.push_screen(ProgressScreen(title, check_task(cap, rng)), done)


def start_latency(app: AnyApp, screen: MainScreen, options: Options | None = None) -> None:
    """The launch latency of the screen's selected range (on the device the replay rule
    picks) -> the latency screen."""
    from cltui.tui.screens.latency import LatencyScreen, latency_task

    cap, rng = screen.capture, screen.enqueue_list.selected_range
    if cap is None or rng is None:
        return
    if refuse_without_kernels(app, "Latency", cap, rng):
        return
    title = f"Launch latency of {rng}"

    def done(measured: Measured | None) -> None:
        if measured is not None:
            app.push_screen(LatencyScreen(measured, title))

    app.push_screen(ProgressScreen(title, latency_task(cap, rng, options)), done)


# ------------------------------------------------------------------------------ two captures


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
