"""Replay results: enqueue x argument x device.

:class:`ReplayResultsScreen` shows the runner's report as one table row per checked argument
and device (status, differing elements, max abs / ULP error, first differing element, timing
stages), the device-against-device comparisons after them, and above the table the plan's
notes, host-side changes and any device that crashed or timed out ("enqueue 5 (svm_scale)
crashed the driver").  The rows come from :mod:`cltui.tui.result_rows`; ``enter`` on a row
opens :class:`~cltui.tui.screens.diff.DiffScreen`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Static

from cltui.replay.engine import combine_verdicts, verdict
from cltui.tui.result_rows import (
    COLUMNS,
    FAILED,
    OK_STATUSES,
    ResultRow,
    failure_message,
    result_rows,
)
from cltui.tui.screens.diff import DiffScreen, DiffUnavailable
from cltui.tui.screens.replay_progress import ReplayOutcome
from cltui.tui.widgets.keys_footer import KeysFooter
from cltui.tui.widgets.row_table import RowTable

if TYPE_CHECKING:
    from cltui.capture.capture import Capture

__all__ = ["ReplayResultsScreen"]

_VERDICT_STYLE = {"pass": "bold green", "fail": "bold red", "error": "bold red"}
_ACTIONS = {
    "reload": "reloaded from the capture",
    "replay": "replayed",
    "none": "not reloaded (strict)",
    "unreplayed": "NOT replayed (its data is not in the capture)",
}



def results_layout(summary: Text | str, notes: Text | str, table: DataTable[Any]) -> ComposeResult:
    """A results screen's layout (the replay's and the fleet's): the summary, the notes
    (scrolling), the table, the keys."""
    yield Static(summary, id="results-summary")
    with VerticalScroll(id="results-notes"):
        yield Static(notes, id="results-notes-text")
    yield table
    yield KeysFooter()

class ReplayResultsScreen(Screen[None]):
    """The report of one replay; ``enter`` opens the three-way diff of the row."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("enter", "diff", "Diff", tooltip="Captured Pre, captured Post, replayed Post"),
        Binding("f", "failures", "Next failure", tooltip="Next row that is not equal"),
        Binding("g", "goto", "Go to enqueue", tooltip="Close and put the list on this enqueue"),
        Binding("s", "save", "Save", tooltip="Save the table as .csv or the report as .json"),
        Binding("e", "explain", "Explain", tooltip="Explain a differing row: where and why its "
                "devices differ (cltui explain)"),
    ]

    def __init__(
        self,
        capture: Capture,
        outcome: ReplayOutcome,
        goto: Callable[[int], object] | None = None,
    ) -> None:
        super().__init__()
        self.capture = capture
        self.outcome = outcome
        self.rows = result_rows(outcome)
        self.goto = goto

    def compose(self) -> ComposeResult:
        table = RowTable(id="results-table", cursor_type="row", zebra_stripes=True)
        yield from results_layout(self.summary(), self.notes_text(), table)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(*COLUMNS)
        for i, row in enumerate(self.rows):
            table.add_row(*row.cells(), key=str(i))
        notes = self.query_one("#results-notes")
        notes.display = bool(self.notes_text().plain)
        failing = next(
            (i for i, r in enumerate(self.rows)
             if r.status not in OK_STATUSES and not r.informational),
            None,
        )
        if failing is not None:  # open on the first result that is not equal (not a pre-check)
            table.move_cursor(row=failing)
        table.focus()

    def summary(self) -> Text:
        rep = self.outcome.report
        req = self.outcome.request
        devs = ", ".join(f"{d['device']['id']} {d['device']['name']}" for d in rep["devices"])
        text = Text()
        # the verdict and its counts lead the screen (what was not done, never collapsed)
        verdicts = [
            r.get("verdict") or verdict(self.outcome.manifest, r) for r in rep["devices"]
        ]
        overall = rep.get("verdict") or combine_verdicts(
            verdicts, [str(r["device"]["id"]) for r in rep["devices"]]
        )
        style = _VERDICT_STYLE.get(str(overall["status"]), "bold yellow")
        if len(verdicts) > 1:
            c = overall["counts"]
            head = str(overall["line"]).split(": ", 1)[0]  # "FAIL on 1 of 2 devices"
            text.append(f"{head}: "
                        f"{c['checked']}/{c['outputs']} outputs checked, "
                        f"{c['different']} different\n", style)
            for r, v in zip(rep["devices"], verdicts, strict=True):
                vs = _VERDICT_STYLE.get(str(v["status"]), "bold yellow")
                text.append(f"{r['device']['id']}: {v['line']}\n", vs)
        else:
            text.append(f"{overall['line']}\n", style)
        text.append(f"range {self.outcome.range_text} · {req.mode} · "
                    f"{len(self.outcome.manifest.get('steps', []))} kernel enqueues · {devs}")
        tol = req.tolerance
        if tol.atol or tol.rtol or tol.ulp:
            text.append(f" · tolerance atol {tol.atol:g} rtol {tol.rtol:g} ULP {tol.ulp}")
        for index, entry in sorted(req.arg_tolerance.items()):
            text.append(f" · arg {index}: " + ", ".join(f"{k} {v:g}" for k, v in entry.items()))
        if req.repeat > 1:
            text.append(f" · timing: median (min–max) of {req.repeat} runs")
        return text

    def notes_text(self) -> Text:
        rep = self.outcome.report
        text = Text()
        lines: list[tuple[str, str]] = []
        for res in rep.get("devices", []):
            if res.get("status") in FAILED:
                dev = res["device"]
                lines.append((f"{dev['id']} {dev['name']}: {failure_message(self.outcome, res)}",
                              "bold red"))
        for ch in rep.get("plan", {}).get("changes", []):
            by = ", ".join(ch.get("by") or []) or "something outside the replayed kernels"
            act = _ACTIONS.get(str(ch.get("action")), "not reloaded")
            lines.append((f"host-side change before enqueue {ch['enqueue']}: {ch['label']} "
                          f"changed after enqueue {ch['after']} (by {by}); {act}", "cyan"))
        for note in rep.get("plan", {}).get("notes", []):
            lines.append((f"note: {note}", "dim"))
        for res in rep.get("devices", []):
            for note in res.get("notes", []):
                lines.append((f"{res['device']['id']} note: {note}", "dim"))
        for i, (line, style) in enumerate(lines):
            text.append(("\n" if i else "") + line, style)
        return text

    @property
    def table(self) -> DataTable[Any]:
        return self.query_one(DataTable)

    def current_row(self) -> ResultRow | None:
        table = self.table
        if not self.rows or table.cursor_row < 0 or table.cursor_row >= len(self.rows):
            return None
        return self.rows[table.cursor_row]

    def action_diff(self) -> None:
        row = self.current_row()
        if row is None:
            return
        if row.check is None and row.cross is None:
            self.notify(row.message or "No buffer to compare in this row", severity="warning")
            return
        try:
            screen = DiffScreen.for_row(self.capture, self.outcome, row)
        except DiffUnavailable as exc:
            self.notify(str(exc), severity="warning", timeout=6)
            return
        self.app.push_screen(screen)

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_diff()

    def action_explain(self) -> None:
        from cltui.tui.screens.explain import start_explain

        start_explain(self, self.capture, self.outcome, self.current_row())

    def action_failures(self) -> None:
        if not self.rows:
            return
        start = self.table.cursor_row
        n = len(self.rows)
        for k in range(1, n + 1):
            i = (start + k) % n
            if self.rows[i].status not in OK_STATUSES and not self.rows[i].informational:
                self.table.move_cursor(row=i)
                return
        self.notify("Every row is equal", timeout=3)

    def action_close(self) -> None:
        self.dismiss(None)

    def action_save(self) -> None:
        from cltui.tui.screens.copy_save import save_results

        save_results(self)

    def action_goto(self) -> None:
        row = self.current_row()
        if row is None or row.enqueue is None or self.goto is None:
            return
        number = row.enqueue
        self.dismiss(None)
        self.goto(number)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "goto":
            return self.goto is not None
        return True

    def on_unmount(self) -> None:
        self.outcome.cleanup()
