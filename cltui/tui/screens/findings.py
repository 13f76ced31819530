"""``C`` on a selection: Oclgrind's checks of the range, findings marked in the source.

:func:`check_task` runs :func:`cltui.analysis.check.run_check` (the range replayed on Oclgrind
with out-of-bounds, data-race, uninitialised-value and barrier checks, in a child process) under
a :class:`ProgressScreen`.  :class:`FindingsScreen` lists the findings (enqueue, kernel, kind,
source line) above the program source, highlighted, with every line the findings of that program
name marked and the selected finding's line scrolled into view.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Static

from cltui.capture.files.text import read_text_lenient
from cltui.process import lifecycle
from cltui.progress import ProgressEvent
from cltui.text.escape import escape_controls
from cltui.tui.screens.replay_progress import TaskControl, TaskFailed
from cltui.tui.widgets.keys_footer import KeysFooter
from cltui.tui.widgets.row_table import RowTable
from cltui.tui.widgets.source_view import SourceView

if TYPE_CHECKING:
    from cltui.analysis.check_report import CheckReport, Finding
    from cltui.capture.capture import Capture
    from cltui.capture.ranges import EnqueueRange

__all__ = ["FindingsScreen", "check_task", "finding_marks"]

_KIND_STYLE = {
    "out-of-bounds": "bold red",
    "data-race": "bold red",
    "uninitialized": "yellow",
    "barrier-divergence": "bold magenta",
    "invalid-access": "bold red",
    "api-error": "cyan",
    "fatal": "bold red",
}


def check_task(
    capture: Capture, rng: EnqueueRange, *, timeout: float = 300.0
) -> Callable[[TaskControl], CheckReport]:
    """The Oclgrind check of ``rng`` as a :class:`ProgressScreen` task."""

    def run(control: TaskControl) -> CheckReport:
        from cltui.analysis.check import CheckError, run_check

        def progress(ev: dict[str, Any]) -> None:
            et = ev.get("type")
            if et == "step":
                i, n = int(ev.get("i", 0)), max(1, int(ev.get("n", 1)))
                control.progress(
                    ProgressEvent(i / n, f"Oclgrind: enqueue {ev.get('enqueue')} ({i + 1}/{n})")
                )
            elif et == "build":
                control.progress(ProgressEvent(None, f"Oclgrind: building {ev.get('label', '')}"))

        control.progress(ProgressEvent(0.0, "planning"))
        try:
            with lifecycle.scratch("check") as work_dir:
                return run_check(
                    capture, rng, timeout=timeout, progress=progress,
                    cancel=control.cancel, work_dir=work_dir,
                )
        except CheckError as exc:
            raise TaskFailed(str(exc)) from None

    return run


def finding_marks(report: CheckReport, source: str) -> list[tuple[int, int, int, int]]:
    """Whole-line marks (1-based, inclusive) for every line of ``source`` a finding names."""
    lines: set[int] = set()
    for f in report.findings:
        for sl in f.lines:
            if sl.source == source:
                lines.add(sl.line)
    return [(n, 1, n, 10_000) for n in sorted(lines)]


class FindingsScreen(Screen[None]):
    """The findings of one check; the source pane follows the table's cursor."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("tab", "toggle_focus", "Source/table", show=False),
        Binding("g", "goto", "Go to enqueue", tooltip="Close and put the list on this enqueue"),
    ]

    def __init__(
        self, capture: Capture, report: CheckReport, goto: Callable[[int], object] | None = None
    ) -> None:
        super().__init__()
        self.capture = capture
        self.report = report
        self.goto = goto
        self.shown_source: str | None = None
        self.source_text = ""

    def compose(self) -> ComposeResult:
        yield Static(self.summary(), id="findings-summary")
        yield RowTable(id="findings-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="findings-where", markup=False)
        yield SourceView(id="findings-source")
        yield KeysFooter()

    def summary(self) -> Text:
        rep = self.report
        text = Text()
        n = len(rep.findings)
        if rep.status in ("crash", "hang", "error", "cancelled", "killed"):
            text.append(f"{rep.status.upper()} ", "bold red")
        elif n:
            text.append(f"{n} finding{'s' if n != 1 else ''} ", "bold red")
        else:
            text.append("no findings ", "bold green")
        kernels = len(rep.enqueues)
        text.append(f"range {rep.range} · {kernels} kernel enqueue{'s' if kernels != 1 else ''} "
                    f"({rep.mode}) on {rep.device or 'Oclgrind'}")
        if rep.error:
            text.append(f"\n{rep.error}", "bold red")
        for crash in rep.crashes:
            text.append(f"\n{crash.line()}", "bold red" if not crash.checked else "yellow")
        if rep.unchecked:
            text.append(f"\nunchecked: {len(rep.unchecked)} enqueue(s)", "yellow")
        for note in rep.notes[:3]:
            text.append(f"\nnote: {note}", "dim")
        return text

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("enqueue", "kernel", "kind", "×", "line", "message")
        for i, f in enumerate(self.report.findings):
            where = f.lines[0].where() if f.lines else ""
            table.add_row(
                "" if f.enqueue is None else str(f.enqueue),
                escape_controls(f.kernel or ""),
                Text(f.kind, style=_KIND_STYLE.get(f.kind, "")),
                str(f.count),
                where,
                f.message,
                key=str(i),
            )
        if not self.report.findings:
            self.query_one("#findings-where", Static).update(
                "Oclgrind reported nothing for this range"
            )
            self.query_one(SourceView).display = False
        table.focus()
        self.show_finding(0)

    @property
    def table(self) -> DataTable[Any]:
        return self.query_one(DataTable)

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self.show_finding(event.cursor_row)

    def show_finding(self, index: int) -> None:
        if not 0 <= index < len(self.report.findings):
            return
        f: Finding = self.report.findings[index]
        where = self.query_one("#findings-where", Static)
        view = self.query_one(SourceView)
        line = next((sl for sl in f.lines if sl.source), None)
        detail = f"{f.kind}: {f.message}"
        if f.entity:
            detail += f" · first work-item {f.entity}"
        if line is None or line.source is None:
            where.update(detail + " · no source line (outside the program source)")
            view.display = False
            return
        view.display = True
        if line.source != self.shown_source:
            try:
                cap = Path(self.capture.path)  # inside the capture, regular, bounded
                source = read_text_lenient(cap / line.source, cap)
            except OSError as exc:
                where.update(f"{detail} · cannot read {line.source}: {exc.strerror or exc}")
                view.display = False
                return
            view.set_source(("findings", line.source), source)
            self.shown_source = line.source
            self.source_text = source
        from cltui.capture.spans import kernel_span

        span = None
        if f.kernel:
            try:
                span = kernel_span(self.source_text, f.kernel)
            except Exception:  # only decoration
                span = None
        view.set_marks(span, finding_marks(self.report, line.source))
        where.update(f"{detail} · {line.where()}")
        top = max(0, line.line - 1 - max(1, view.scrollable_content_region.height // 3))
        view.scroll_to(y=top, animate=False, immediate=True)

    def marked_lines(self) -> list[int]:
        """Source lines currently marked (tests)."""
        return [m[0] for m in self.query_one(SourceView).marks]

    def action_toggle_focus(self) -> None:
        view = self.query_one(SourceView)
        if self.table.has_focus and view.display:
            view.focus()
        else:
            self.table.focus()

    def action_close(self) -> None:
        self.dismiss(None)

    def action_goto(self) -> None:
        index = self.table.cursor_row
        if self.goto is None or not 0 <= index < len(self.report.findings):
            return
        number = self.report.findings[index].enqueue
        if number is None:
            self.notify("This finding is outside any enqueue", severity="warning", timeout=3)
            return
        self.dismiss(None)
        self.goto(number)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "goto":
            return self.goto is not None and bool(self.report.findings)
        return True
