"""The fleet's matrix in the app: the replay dialog lists the devices of an inventory's hosts, the
range runs on the ticked ones (``cltui fleet``'s job restricted to them, in a
:class:`ProgressScreen`), and this screen shows
rows = enqueue and argument, columns = host:device, the verdict first, then each column's first
divergent enqueue and every host that did not run, and why.  ``enter`` on a cell opens the
three-way diff (captured Pre, captured Post, that device's output, kept from the host for the
cells that differ: :mod:`cltui.fleet.artifacts`); ``e`` explains the cursor column's first
divergence from the reference column (``cltui fleet --explain``'s, its runs on both columns'
hosts: :mod:`cltui.fleet.explain`) in the explain screen; ``s`` saves the report or the
matrix."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable

from cltui.fleet.matrix import cell_style, cell_text
from cltui.progress import ProgressEvent
from cltui.tui.screens.replay_progress import TaskControl, TaskFailed
from cltui.tui.screens.results import results_layout

if TYPE_CHECKING:
    from cltui.analysis.explain.run import Runs
    from cltui.capture.capture import Capture
    from cltui.capture.ranges import EnqueueRange
    from cltui.fleet.host import RunSettings
    from cltui.fleet.inventory import Host
    from cltui.replay.engine.schema import ToleranceSpec
    from cltui.tui.screens.replay_request import ReplayRequest

__all__ = ["FleetResultsScreen", "fleet_task"]




_VERDICT = {"pass": "bold green", "fail": "bold red", "error": "bold red",
            "incomplete": "bold yellow"}


def fleet_task(
    capture: Capture, rng: EnqueueRange, request: ReplayRequest
) -> Callable[[TaskControl], dict[str, Any]]:
    """The range on the inventory's hosts, as a :class:`ProgressScreen` task: the fleet
    report (``cltui fleet --json``'s)."""

    def run(control: TaskControl) -> dict[str, Any]:
        import json

        from cltui.errors import CltuiError
        from cltui.fleet.bundle import export_cached, private_copy, with_arg_tolerance
        from cltui.fleet.job import run_fleet
        from cltui.process import lifecycle

        tmp: Path | None = None
        keep = lifecycle.temp_dir("replay")  # the differing outputs, for the diff; the
        try:  # results screen removes it
            hosts, settings = fleet_hosts(request)
            control.progress(ProgressEvent(None, "exporting the range"))
            bundle = export_cached(capture, rng, request.mode, cancel=control.cancel)
            if request.arg_tolerance:
                tmp, bundle = private_copy(bundle)
                with_arg_tolerance(bundle, request.arg_tolerance)
            report = run_fleet(bundle, hosts, settings, cancel=control.cancel,
                               progress=control.progress, arg_tolerance=request.arg_tolerance,
                               artifacts=keep)
            report["plan"] = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
            report["artifacts"] = str(keep)
        except CltuiError as exc:
            lifecycle.remove(keep)
            raise TaskFailed(str(exc)) from None
        except BaseException:
            lifecycle.remove(keep)
            raise
        finally:
            if tmp is not None:
                lifecycle.remove(tmp)
        report["bundle"]["source"] = str(capture.path)
        report["bundle"]["range"] = str(rng)
        return report

    return run


def fleet_hosts(request: ReplayRequest) -> tuple[list[Host], RunSettings]:
    """The request's hosts (exactly their ticked devices) and the fleet's settings."""
    from cltui.fleet.host import RunSettings
    from cltui.fleet.inventory import read_inventory

    hosts = [replace(h, devices=request.hosts[h.name])
             for h in read_inventory(Path(request.inventory).expanduser())
             if h.name in request.hosts]  # fmt: skip
    tol = {k: v for k, v in request.tolerance.to_dict().items() if v}
    return hosts, RunSettings(timeout=request.timeout, tolerance=cast("ToleranceSpec", tol))


def fleet_explain_task(report: Mapping[str, Any], column: str, capture: Capture,
                       request: ReplayRequest) -> Callable[[TaskControl], Any]:  # fmt: skip
    """``e``'s :class:`ProgressScreen` task: (runs, explain report) of ``column``'s first
    divergence from the reference column, its runs on both columns' hosts."""

    def run(control: TaskControl) -> tuple[Runs, dict[str, Any]]:
        from cltui.errors import CltuiError
        from cltui.fleet.explain import explain_column

        try:
            hosts, settings = fleet_hosts(request)
            runs, entry = explain_column(report, column, capture, hosts, settings,
                                         cancel=control.cancel, progress=control.progress)
        except CltuiError as exc:
            raise TaskFailed(str(exc)) from None
        if runs is None or entry["report"] is None:
            raise TaskFailed(str(entry["line"]))
        return runs, entry["report"]

    return run


class FleetResultsScreen(Screen[None]):
    """One fleet run's matrix; ``enter`` the diff of a cell, ``s`` save, ``escape`` closes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("enter", "diff", "Diff",
                tooltip="Captured Pre, captured Post and this device's output of the cell"),
        Binding("f", "failures", "Next difference", tooltip="The next cell that differs"),
        Binding("e", "explain", "Explain",
                tooltip="Explain the cursor column's first divergence from the reference "
                "column: where, why and which line, replayed on both columns' hosts"),
        Binding("s", "save", "Save", tooltip="Save the matrix as .csv or the report as .json"),
    ]

    def __init__(self, report: Mapping[str, Any], capture: Capture | None = None,
                 request: ReplayRequest | None = None) -> None:
        super().__init__()
        self.report = report
        self.capture = capture
        self.request = request

    def compose(self) -> ComposeResult:
        table: DataTable[Text] = DataTable(id="results-table", cursor_type="cell",
                                           zebra_stripes=True)  # fmt: skip
        yield from results_layout(self.summary(), self.notes(), table)

    def on_mount(self) -> None:
        table = cast(DataTable[Text], self.query_one(DataTable))
        table.add_column("enqueue", key="enqueue")
        table.add_column("argument", key="argument")
        for col in self.report["columns"]:
            dev = col["device"]
            table.add_column(Text(f"{col['id']} {dev['name'][:24]}"), key=str(col["id"]))
        for i, row in enumerate(self.report["rows"]):
            cells = [Text(cell_text(c), style=cell_style(c)) for c in row["cells"]]
            table.add_row(Text(str(row["enqueue"])), Text(f"{row['kernel']} {row['label']}"),
                          *cells, key=str(i))
        first = self._next_difference(-1, 1)
        if first is not None:  # open on the first cell that differs
            table.move_cursor(row=first[0], column=first[1] + 2)
        table.focus()

    def summary(self) -> Text:
        v = self.report["verdict"]
        text = Text(str(v["line"]) + "\n", _VERDICT.get(str(v["status"]), "bold yellow"))
        b = self.report["bundle"]
        text.append(f"range {b.get('range')} · {len(self.report['columns'])} devices on "
                    f"{v['hosts']['ran']} of {v['hosts']['total']} hosts")
        return text

    def notes(self) -> Text:
        text = Text()
        for col in self.report["columns"]:
            dev = col["device"]
            line = f"{col['id']} {dev['name']} ({dev['platform']}, {dev['driver']}): "
            if col["first_divergent"] is not None:
                line += f"first divergent enqueue {col['first_divergent']}; "
            if col["error"]:
                line += f"cannot run: {col['status']}: {col['error']}; "
            text.append(line + str(col["verdict"]["line"]) + "\n")
        for h in self.report["hosts"]:
            if h["status"] != "ok":
                text.append(f"host {h['name']}: {h['status']}: {h['reason']}\n", "bold red")
        text.rstrip()
        return text

    def action_close(self) -> None:
        self.dismiss(None)

    def on_unmount(self) -> None:
        if self.report.get("artifacts"):
            from cltui.process import lifecycle

            lifecycle.remove(str(self.report["artifacts"]))

    def _next_difference(self, row: int, col: int) -> tuple[int, int] | None:
        """The next differing cell after (row, col), row by row, wrapping."""
        rows, ncol = self.report["rows"], len(self.report["columns"])
        total = len(rows) * ncol
        start = row * ncol + col
        for k in range(1, total + 1):
            i = (start + k) % total if total else 0
            r, c = divmod(i, ncol)
            if rows[r]["cells"][c]["status"] == "different":
                return r, c
        return None

    def action_failures(self) -> None:
        table = cast(DataTable[Text], self.query_one(DataTable))
        at = table.cursor_coordinate
        found = self._next_difference(at.row, max(0, at.column - 2))
        if found is None:
            self.notify("No cell differs", timeout=3)
            return
        table.move_cursor(row=found[0], column=found[1] + 2)

    @on(DataTable.CellSelected)
    def _selected(self, event: DataTable.CellSelected) -> None:
        event.stop()
        self.action_diff()

    def action_diff(self) -> None:
        from cltui.tui.screens.fleet_diff import DiffUnavailable, cell_diff

        table = cast(DataTable[Text], self.query_one(DataTable))
        at = table.cursor_coordinate
        if not self.report["rows"] or at.row < 0:
            return
        try:
            screen = cell_diff(self.report, self.capture, self.request, at.row, at.column - 2)
        except DiffUnavailable as exc:
            self.notify(str(exc), severity="warning", timeout=6, markup=False)
            return
        self.app.push_screen(screen)

    def action_explain(self) -> None:
        from cltui.tui.screens.explain import ExplainScreen
        from cltui.tui.screens.replay_progress import ProgressScreen

        table = cast(DataTable[Text], self.query_one(DataTable))
        at = table.cursor_coordinate.column - 2
        cols = self.report["columns"]
        if self.capture is None or self.request is None or not self.request.inventory:
            self.notify("Explain needs the fleet run of a capture's range", severity="warning")
            return
        if not 0 <= at < len(cols):
            self.notify("Explain works on a device column", severity="warning")
            return
        column = str(cols[at]["id"])
        capture = self.capture
        from cltui.analysis.explain.run import ExplainError
        from cltui.fleet.explain import target_of

        try:
            target_of(self.report, column)
        except ExplainError as exc:
            self.notify(str(exc), severity="warning", timeout=8, markup=False)
            return

        def done(result: tuple[Runs, dict[str, Any]] | None) -> None:
            if result is not None:
                self.app.push_screen(ExplainScreen(capture, result[0], result[1]))

        task = fleet_explain_task(self.report, column, capture, self.request)
        self.app.push_screen(ProgressScreen(f"Explaining {column}'s first divergence", task),
                             done)  # fmt: skip

    def action_save(self) -> None:
        from cltui.tui.screens.fleet_diff import save_fleet

        save_fleet(self)
