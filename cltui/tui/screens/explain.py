"""``e`` on a differing row of the replay results or in the three-way diff: ``cltui explain``
in the app.

:func:`start_explain` picks the two devices (a comparison row's two; a check row's device and
another device of the replay, else the capture's own device here, else another device here)
and runs the one explain engine (:func:`~cltui.analysis.explain.engine.explain_with_runs`)
under a :class:`ProgressScreen` (a thread worker; every run is a child process, so the app
never blocks and ``esc`` stops them).  :class:`ExplainScreen` shows the divergence map of the
first differing output (an image: a heat map over the picture; a buffer: a strip map), the
source with the diverging line marked when the report has one, and the report (values,
cause, specification, coordinates); ``s`` saves it as Markdown with the minimal bundle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from cltui.progress import ProgressEvent
from cltui.tui.screens.replay_progress import ProgressScreen, TaskControl, TaskFailed

if TYPE_CHECKING:
    from cltui.analysis.explain.run import Runs
    from cltui.capture.capture import Capture
    from cltui.tui.result_rows import ResultRow
    from cltui.tui.screens.replay_progress import ReplayOutcome

__all__ = ["ExplainScreen", "explain_devices", "map_text", "source_lines", "start_explain"]

SOURCE_CONTEXT = 4  # lines shown either side of the diverging line


def explain_devices(outcome: ReplayOutcome, row: ResultRow) -> list[str]:
    """The device ids to compare for ``row`` (one or two: a second is then picked here)."""
    if row.cross is not None:
        return [str(row.cross["a"]), str(row.cross["b"])]
    ids = [str(r["device"]["id"]) for r in outcome.report.get("devices", [])]
    first = row.device.split(" ")[0]
    return [first, *(i for i in ids if i != first)][:2]


def _devices(capture: Capture, enqueue: int, ids: list[str]) -> list[Any]:
    """The two devices: ``ids``' (listed here), a missing second one the capture's own device
    here, else another device here."""
    from cltui.capture.ranges import EnqueueRange
    from cltui.replay.devices import DeviceError, devices_for, list_devices

    try:
        listed = list_devices()
    except DeviceError as exc:
        raise TaskFailed(str(exc)) from None
    by_id = {str(d["id"]): d for d in listed}
    picked = [by_id[i] for i in ids if i in by_id]
    if len(picked) < 2:
        try:
            own = devices_for(capture, EnqueueRange(enqueue, enqueue), [], listed)[0][0]
        except DeviceError:
            own = None
        for d in [own, *listed]:
            if d is not None and all(d["id"] != p["id"] for p in picked):
                picked.append(d)
                if len(picked) == 2:
                    break
    if len(picked) < 2:
        raise TaskFailed("explain compares two devices: only one device is here")
    return picked[:2]


def explain_task(capture: Capture, enqueue: int, ids: list[str]
                 ) -> Any:  # fmt: skip
    """The explanation of ``enqueue`` as a :class:`ProgressScreen` task: (runs, report)."""

    def run(control: TaskControl) -> tuple[Runs, dict[str, Any]]:
        from cltui.analysis.explain import ExplainError
        from cltui.analysis.explain.engine import explain_with_runs

        control.progress(ProgressEvent(0.0, "listing the devices"))
        devices = _devices(capture, enqueue, ids)
        try:
            return explain_with_runs(capture, enqueue, devices, cancel=control.cancel,
                                     progress=control.progress)  # fmt: skip
        except ExplainError as exc:
            raise TaskFailed(str(exc)) from None

    return run


def start_explain(screen: Screen[Any], capture: Capture, outcome: ReplayOutcome,
                  row: ResultRow | None, cursor: int | None = None) -> None:  # fmt: skip
    """``e``: explain the row's enqueue on its devices (refused, with a notice, on a row that
    is not a differing kernel output); ``cursor``: the three-way diff's element, marked on
    the strip map."""
    if row is None or row.enqueue is None or (row.check is None and row.cross is None):
        screen.notify("Explain needs a row of a kernel's output", severity="warning")
        return
    if row.status not in ("different", "within") or row.prechecks:
        screen.notify(f"This row is {row.status}: explain works on an output that differs",
                      severity="warning", timeout=5)  # fmt: skip
        return
    enqueue = row.enqueue
    title = f"Explaining enqueue {enqueue} ({row.kernel})"

    def done(result: tuple[Runs, dict[str, Any]] | None) -> None:
        if result is not None:
            screen.app.push_screen(ExplainScreen(capture, result[0], result[1], cursor))

    task = explain_task(capture, enqueue, explain_devices(outcome, row))
    screen.app.push_screen(ProgressScreen(title, task), done)


def map_text(runs: Runs, report: dict[str, Any], width: int = 64,
             cursor: int | None = None) -> Text:  # fmt: skip
    """The divergence map of the report's first differing output (``cursor``: an item to
    mark on a strip map, the three-way diff's)."""
    from cltui.analysis.explain.divergence import scalars
    from cltui.replay.engine.dtypes import make_dtype
    from cltui.replay.experiment.worker import BASE_ID
    from cltui.tui.widgets.divergence_map import diff_mask, grey_of, heat_map, strip_map

    if not report.get("where"):
        return Text("")
    w = report["where"][0]
    check = next((c for c in runs.checks if c["mem"] == w["mem"]), {})
    a, b = (runs.runs[BASE_ID][d["id"]].data.get(w["mem"]) for d in runs.devices)
    if a is None or b is None:
        return Text("")
    dt = make_dtype(check.get("dtype"))
    mask = diff_mask(a, b, dt.itemsize)
    shape = [int(s) for s in check.get("shape") or []]
    head = Text(f"{w['label']}: {w['map']['differ']:,} of {w['map']['elements']:,} elements "
                "differ", style="bold")  # fmt: skip
    if len(shape) >= 2 and shape[1] > 1:
        values, lanes = scalars(a, dt)
        grey = grey_of(values, lanes) if values.dtype.kind in "fiu" else None
        head.append(f" · heat map over the picture ({shape[0]} x {shape[1]}; red: differs)\n")
        return head + heat_map(mask, grey, shape[0], shape[1], max_cols=width)
    head.append(f" · strip map ({mask.size:,} items, {min(width, mask.size)} cells"
                + (f"; the diff's cursor, item {cursor:,}, reversed" if cursor is not None
                   else "") + ")\n")  # fmt: skip
    return head + strip_map(mask, width, cursor)


def source_lines(source: str | None, line: int | None) -> list[str]:
    """The source around ``line`` (1-based), that line marked ``▶``."""
    if source is None or line is None:
        return []
    lines = source.splitlines()
    lo, hi = max(1, line - SOURCE_CONTEXT), min(len(lines), line + SOURCE_CONTEXT)
    return [f"{'▶' if k == line else ' '} {k:5d}  {lines[k - 1]}" for k in range(lo, hi + 1)]


def _line_number(report: dict[str, Any]) -> int | None:
    line = report.get("line")
    site = line.get("site") if isinstance(line, dict) else None
    walk = line.get("walk") if isinstance(line, dict) else None
    if isinstance(walk, dict) and walk.get("status") == "found":
        site = walk.get("site")  # upstream, where the devices part
    if isinstance(site, dict) and isinstance(site.get("line"), int):
        return int(site["line"])  # the first diverging statement (cltui.analysis.explain.line)
    return None


class ExplainScreen(Screen[None]):
    """The explanation of one enqueue: map, marked source, report; ``s`` saves it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back", tooltip="Back to the results"),
        Binding("s", "save", "Save report",
                tooltip="Save the report as Markdown with the minimal bundle (bug report)"),
    ]
    DEFAULT_CSS = """
    ExplainScreen #explain-verdict { padding: 0 1; background: $boost; }
    ExplainScreen #explain-body { padding: 0 1; }
    """

    def __init__(self, capture: Capture, runs: Runs, report: dict[str, Any],
                 cursor: int | None = None) -> None:  # fmt: skip
        super().__init__()
        self.capture = capture
        self.runs = runs
        self.report = report
        self.cursor = cursor

    def compose(self) -> ComposeResult:
        from cltui.text.escape import escape_controls

        style = {"diverges": "bold red", "no-divergence": "bold green"}.get(
            self.report["verdict"]["status"], "bold yellow")
        yield Static(Text(escape_controls(self.report["verdict"]["line"]), style=style),
                     id="explain-verdict")  # fmt: skip
        with VerticalScroll(id="explain-scroll"):
            yield Static(map_text(self.runs, self.report, cursor=self.cursor), id="explain-map")
            yield Static(self.body(), id="explain-body", markup=False)
        yield Footer()

    def body(self) -> str:
        from cltui.analysis.explain.text import text_lines
        from cltui.text.escape import escape_controls

        marked = source_lines(self.runs.source, _line_number(self.report))
        head = ["diverging line:", *marked, ""] if marked else []
        return escape_controls("\n".join(head + text_lines(self.report)[1:]), keep_newlines=True)

    def on_mount(self) -> None:
        self.query_one("#explain-scroll", VerticalScroll).focus()

    def action_save(self) -> None:
        from pathlib import Path

        from cltui.export.explain_bundle import save_explanation
        from cltui.tui.screens.copy_save import save_file

        default = f"explain_enqueue{self.report['enqueue']}.md"

        def writer(path: Path) -> str:
            return save_explanation(self.capture, self.report, path)

        save_file(self, self.capture.path, default, writer)

    def action_close(self) -> None:
        self.dismiss(None)
