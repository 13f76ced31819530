"""The fleet's matrix in the app: the replay dialog lists the devices of an inventory's hosts, the
range runs on the ticked ones (``cltui fleet``'s job restricted to them, in a
:class:`ProgressScreen`), and this screen shows
rows = enqueue and argument, columns = host:device, the verdict first, then each column's first
divergent enqueue and every host that did not run, and why."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from cltui.fleet.matrix import cell_text
from cltui.progress import ProgressEvent
from cltui.tui.screens.replay_progress import TaskControl, TaskFailed

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.replay.engine.schema import ToleranceSpec
    from cltui.tui.screens.replay_dialog import ReplayRequest

__all__ = ["FleetResultsScreen", "fleet_task"]

_STYLE = {"equal": "green", "within": "cyan", "different": "bold red", "cannot-run": "magenta",
          "not-reached": "dim", "unchecked": "yellow"}
_VERDICT = {"pass": "bold green", "fail": "bold red", "error": "bold red",
            "incomplete": "bold yellow"}


def fleet_task(
    capture: Capture, first: int, last: int, request: ReplayRequest
) -> Callable[[TaskControl], dict[str, Any]]:
    """The range on the inventory's hosts, as a :class:`ProgressScreen` task: the fleet
    report (``cltui fleet --json``'s)."""

    def run(control: TaskControl) -> dict[str, Any]:
        from cltui.errors import CltuiError
        from cltui.fleet.bundle import export_cached, private_copy, with_arg_tolerance
        from cltui.fleet.host import RunSettings
        from cltui.fleet.inventory import read_inventory
        from cltui.fleet.job import run_fleet
        from cltui.process import lifecycle

        rng = f"{first}" if first == last else f"{first}-{last}"
        tmp: Path | None = None
        try:
            hosts = [replace(h, devices=request.hosts[h.name])  # exactly the ticked ones
                     for h in read_inventory(Path(request.inventory).expanduser())
                     if h.name in request.hosts]
            control.progress(ProgressEvent(None, "exporting the range"))
            bundle = export_cached(capture, rng, request.mode, cancel=control.cancel)
            if request.arg_tolerance:
                tmp, bundle = private_copy(bundle)
                with_arg_tolerance(bundle, request.arg_tolerance)
            tol = {k: v for k, v in request.tolerance.to_dict().items() if v}
            settings = RunSettings(timeout=request.timeout, tolerance=cast("ToleranceSpec", tol))
            report = run_fleet(bundle, hosts, settings, cancel=control.cancel,
                               progress=control.progress, arg_tolerance=request.arg_tolerance)
        except CltuiError as exc:
            raise TaskFailed(str(exc)) from None
        finally:
            if tmp is not None:
                lifecycle.remove(tmp)
        report["bundle"]["source"] = str(capture.path)
        report["bundle"]["range"] = rng
        return report

    return run


class FleetResultsScreen(Screen[None]):
    """One fleet run's matrix; ``escape`` closes."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close")]

    def __init__(self, report: Mapping[str, Any]) -> None:
        super().__init__()
        self.report = report

    def compose(self) -> ComposeResult:
        yield Static(self.summary(), id="results-summary")
        with VerticalScroll(id="results-notes"):
            yield Static(self.notes(), id="results-notes-text")
        yield DataTable(id="results-table", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        table = cast(DataTable[Text], self.query_one(DataTable))
        table.add_column("enqueue", key="enqueue")
        table.add_column("argument", key="argument")
        for col in self.report["columns"]:
            dev = col["device"]
            table.add_column(Text(f"{col['id']} {dev['name'][:24]}"), key=str(col["id"]))
        for i, row in enumerate(self.report["rows"]):
            cells = [Text(cell_text(c), style=_STYLE.get(str(c["status"]), ""))
                     for c in row["cells"]]
            table.add_row(Text(str(row["enqueue"])), Text(f"{row['kernel']} {row['label']}"),
                          *cells, key=str(i))
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
