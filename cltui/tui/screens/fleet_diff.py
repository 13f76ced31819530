"""The fleet results screen's drill-down and save: ``enter`` on a cell opens the three-way
diff (:class:`~cltui.tui.screens.diff.DiffScreen`: captured Pre, captured Post, that device's
output, kept from its host by the run's artifacts), ``s`` writes the matrix (``.csv``) or the
report (``.json``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from cltui.tui.result_rows import ResultRow
from cltui.tui.screens.diff import DiffScreen, DiffUnavailable
from cltui.tui.screens.replay_progress import ReplayOutcome

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.replay.engine.schema import CheckResult, Manifest, Report
    from cltui.tui.screens.fleet_results import FleetResultsScreen
    from cltui.tui.screens.replay_request import ReplayRequest

__all__ = ["DiffUnavailable", "cell_diff", "save_fleet"]


def _check(result: Mapping[str, Any], enqueue: int, mem: str) -> dict[str, Any] | None:
    for st in result.get("steps") or []:
        if int(st["enqueue"]) == enqueue:
            for c in st.get("checks", []):
                if str(c.get("mem")) == mem:
                    return dict(c)
    return None


def cell_diff(report: Mapping[str, Any], capture: Capture | None,
              request: ReplayRequest | None, row_index: int, col_index: int) -> DiffScreen:
    """The diff of one cell (raises :class:`DiffUnavailable` with the reason in one line);
    on the enqueue or argument column, the row's first differing cell."""
    row = report["rows"][row_index]
    cells = row["cells"]
    if not 0 <= col_index < len(cells):
        col_index = next((i for i, c in enumerate(cells) if c["status"] == "different"), -1)
        if col_index < 0:
            raise DiffUnavailable("No cell of this row differs: move to a device's cell")
    cell = cells[col_index]
    col = report["columns"][col_index]
    if capture is None or request is None:
        raise DiffUnavailable("This fleet run has no capture to diff against")
    if cell["status"] not in ("different",):
        raise DiffUnavailable(f"{col['id']} enqueue {row['enqueue']} {row['label']}: "
                              f"{cell['status']}: {cell['summary'] or 'nothing to diff'}")
    result = report["devices"][col_index]
    chk = _check(result, int(row["enqueue"]), str(row["mem"]))
    if chk is None or not chk.get("output") or not Path(str(chk["output"])).is_file():
        raise DiffUnavailable(f"{col['id']} enqueue {row['enqueue']}: the device's output "
                              "was not kept (it could not be fetched from the host)")
    plan = cast("Manifest", report.get("plan") or {"steps": []})
    outcome = ReplayOutcome(report=cast("Report", {"devices": [result]}), manifest=plan,
                            request=request, range_text=str(report["bundle"].get("range")),
                            save_dir=Path(str(report.get("artifacts") or "")))
    rrow = ResultRow(enqueue=int(row["enqueue"]), kernel=str(row["kernel"]),
                     label=str(row["label"]), device=str(col["id"]),
                     status=str(cell["status"]), check=cast("CheckResult", chk))
    return DiffScreen.for_row(capture, outcome, rrow)


def save_fleet(screen: FleetResultsScreen) -> None:
    """``s``: the matrix as ``.csv`` (one row per enqueue and argument, a column per
    host:device), or the whole report as ``.json`` (by the extension given)."""
    from cltui.fleet.matrix import cell_text
    from cltui.tui.saving import write_json, write_table_csv
    from cltui.tui.screens.copy_save import save_file

    report = screen.report
    rng = str(report["bundle"].get("range") or "bundle")
    default = f"fleet_{rng}.csv"

    def writer(path: Path) -> str:
        if path.suffix.lower() == ".json":
            keep = {k: v for k, v in report.items() if k not in ("plan", "artifacts")}
            write_json(path, keep)
            return "the report"
        head = ["enqueue", "argument", *[str(c["id"]) for c in report["columns"]]]
        rows = [[str(r["enqueue"]), f"{r['kernel']} {r['label']}",
                 *[cell_text(c) for c in r["cells"]]] for r in report["rows"]]
        return f"{write_table_csv(path, head, rows)} rows"

    where = Path(screen.capture.path) if screen.capture is not None else Path.cwd()
    save_file(screen, where, default, writer)
