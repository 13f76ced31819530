"""The commands on the browser's selected range, in one table (:data:`RANGE_COMMANDS`): each
command's key, word, description and start.  The table gives the browser screen its bindings
(:func:`range_bindings`), and through them the footer, the help screen, the command palette and
the README's keys table; the screen runs a command with its ``range_command`` action.

``r`` :func:`start_replay` (device dialog, progress with cancel, results with the three-way
diff), ``e`` :func:`start_export` (folder dialog, progress, one-line result), ``C``
:func:`start_check` (Oclgrind findings over the source), ``L`` :func:`start_latency` (progress,
then the launch latency screen), ``E`` and ``X`` the experiments of :mod:`cltui.tui.experiment`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from textual.app import App
from textual.binding import Binding

from cltui.tui.screens.export_dialog import (
    ExportDialog,
    ExportRequest,
    export_message,
    export_task,
)
from cltui.tui.screens.findings import FindingsScreen, check_task
from cltui.tui.screens.replay_dialog import ReplayDialog
from cltui.tui.screens.replay_progress import ProgressScreen, ReplayOutcome, replay_task
from cltui.tui.screens.replay_request import ReplayRequest
from cltui.tui.screens.results import ReplayResultsScreen
from cltui.tui.selection import refuse_without_kernels, selection, selection_with_kernels
from cltui.tui.widgets.source_pane import SourcePane

if TYPE_CHECKING:
    from cltui.analysis.check_report import CheckReport
    from cltui.capture.capture import Capture
    from cltui.capture.model import Enqueue
    from cltui.capture.ranges import EnqueueRange
    from cltui.export import ExportResult
    from cltui.latency.measure import Measured, Options
    from cltui.tui.screens.main import MainScreen
    from cltui.tui.screens.remembered_state import RememberedState

__all__ = [
    "RANGE_COMMANDS",
    "FindingMarks",
    "RangeAction",
    "RangeCommand",
    "Start",
    "on_selection",
    "range_bindings",
    "refuse_without_kernels",
    "selection",
    "start_check",
    "start_export",
    "start_latency",
    "start_replay",
]

AnyApp = App[Any]
RangeAction = Callable[["Capture", "EnqueueRange"], None]  # capture, the selected range
Start = Callable[[AnyApp, "MainScreen"], None]  # runs a command on the screen's selection


@dataclass(frozen=True)
class RangeCommand:
    """One command on the selected range."""

    name: str  # the browser's action: range_command('<name>')
    key: str
    word: str  # the footer's, the help's and the palette's
    description: str  # what it does: the README's keys table, the palette's second line
    show: bool  # in the footer
    start: Start

    def binding(self) -> Binding:
        return Binding(self.key, f"range_command('{self.name}')", self.word, show=self.show,
                       tooltip=self.description)  # fmt: skip


def on_selection(action: RangeAction) -> Start:
    """A start that hands the selection to ``action`` (``make_app``'s ``replay``/``export``)."""

    def start(app: AnyApp, screen: MainScreen) -> None:
        picked = selection(screen)
        if picked is not None:
            action(*picked)

    return start


@runtime_checkable
class Browser(Protocol):
    """The browser screen as a range command sees the screen it starts from (the
    :class:`~cltui.tui.screens.main.MainScreen`, which imports this module for its keys)."""

    remembered: RememberedState | None

    def jump_to(self, number: int) -> bool: ...


def _goto(app: AnyApp) -> Callable[[int], object] | None:
    """``jump_to`` of the browser screen the action starts from (``g`` in the result screens)."""
    origin = app.screen
    return origin.jump_to if isinstance(origin, Browser) else None


def start_replay(app: AnyApp, capture: Capture, rng: EnqueueRange) -> None:
    """Device dialog -> progress (cancel kills the child) -> results screen."""
    if refuse_without_kernels(app, "Replay", capture, rng):
        return
    goto = _goto(app)
    origin = app.screen
    remembered = origin.remembered if isinstance(origin, Browser) else None
    settings = remembered.replay if remembered is not None else None
    dialog = ReplayDialog(capture, rng, settings)

    def chosen(request: ReplayRequest | None) -> None:
        if request is None:
            return
        if remembered is not None:
            remembered.remember_replay(dialog.settings)
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
    picked = selection(screen)
    if picked is None:
        return
    cap, rng = picked

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

    picked = selection_with_kernels(app, "Latency", screen)
    if picked is None:
        return
    cap, rng = picked
    title = f"Launch latency of {rng}"

    def done(measured: Measured | None) -> None:
        if measured is not None:
            app.push_screen(LatencyScreen(measured, title))

    app.push_screen(ProgressScreen(title, latency_task(cap, rng, options)), done)


def _replay(app: AnyApp, screen: MainScreen) -> None:
    picked = selection(screen)
    if picked is not None:
        start_replay(app, *picked)


def _export(app: AnyApp, screen: MainScreen) -> None:
    picked = selection(screen)
    if picked is not None:
        start_export(app, *picked)


def _latency(app: AnyApp, screen: MainScreen) -> None:
    start_latency(app, screen, getattr(app, "latency_options", None))  # (tests: fewer repeats)


def _edit_program(app: AnyApp, screen: MainScreen) -> None:
    from cltui.tui.experiment import edit_program

    edit_program(app, screen)


def _experiment(app: AnyApp, screen: MainScreen) -> None:
    from cltui.tui.experiment import start_experiment

    start_experiment(app, screen)


RANGE_COMMANDS: dict[str, RangeCommand] = {c.name: c for c in (
    RangeCommand("replay", "r", "Replay", "Replay the selected range", True, _replay),
    RangeCommand("export", "e", "Export", "Export the selected range as a bundle", True,
                 _export),
    RangeCommand("check", "C", "Check", "Oclgrind checks of the selected range", True,
                 start_check),
    RangeCommand("edit_program", "E", "Edit kernel",
                 "Edit the focused enqueue's program in $EDITOR, then try it (A/B)", False,
                 _edit_program),
    RangeCommand("experiment", "X", "Experiment",
                 "Try options, defines or work sizes on the range (A/B or a sweep)", False,
                 _experiment),
    RangeCommand("latency", "L", "Latency", "Launch latency of the selected range", False,
                 _latency),
)}


def range_bindings() -> list[Binding]:
    """The browser's bindings of the range commands, in the table's order."""
    return [c.binding() for c in RANGE_COMMANDS.values()]
