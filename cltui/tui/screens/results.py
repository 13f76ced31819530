"""Replay results: enqueue x argument x device, and the three-way diff of one result.

:class:`ReplayResultsScreen` shows the runner's report as one table row per checked argument
and device (status, differing elements, max abs / ULP error, first differing element, timing
stages), the device-against-device comparisons after them, and above the table the plan's
notes, host-side changes and any device that crashed or timed out ("enqueue 5 (svm_scale)
crashed the driver").  ``enter`` on a row opens :class:`DiffScreen`: captured Pre, captured
Post and replayed Post of that argument in a :class:`~cltui.tui.widgets.diff_view.DiffView`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from cltui.capture.cltypes import CType, parse_type
from cltui.capture.display import escape_controls
from cltui.capture.elements import element_ctype
from cltui.errors import CltuiError
from cltui.replay.engine import combine_verdicts, verdict
from cltui.replay.engine.dtypes import make_dtype
from cltui.replay.engine.schema import CheckResult, CrossCheck, DeviceResult, Report, StepTiming
from cltui.tui.format import fmt_ns
from cltui.tui.screens.replay_progress import ReplayOutcome
from cltui.tui.widgets.diff_view import DiffView, as_bytes

if TYPE_CHECKING:
    from cltui.capture.capture import Capture

__all__ = ["COLUMNS", "DiffScreen", "ReplayResultsScreen", "ResultRow", "result_rows"]

COLUMNS = (
    "enqueue", "kernel", "argument", "device", "status", "differ", "max abs", "max ULP",
    "first difference", "start→end", "queued→submit", "submit→start", "host enqueue",
)  # fmt: skip

_STATUS_STYLE = {
    "equal": "green",
    "within": "yellow",
    "different": "bold red",
    "unchecked": "dim",
    "crashed": "bold red",
    "timed out": "bold red",
    "error": "bold red",
    "cancelled": "yellow",
    "killed": "bold red",
}
_OK = ("equal", "unchecked")
_FAILED = {"crash": "crashed", "hang": "timed out", "error": "error", "cancelled": "cancelled",
           "killed": "killed"}
_VERDICT_STYLE = {"pass": "bold green", "fail": "bold red", "error": "bold red"}
_ACTIONS = {
    "reload": "reloaded from the capture",
    "replay": "replayed",
    "none": "not reloaded (strict)",
    "unreplayed": "NOT replayed (its data is not in the capture)",
}


@dataclass
class ResultRow:
    """One table row: a check of one device (or two devices against each other)."""

    enqueue: int | None
    kernel: str
    label: str
    device: str  # "1:0", or "1:0 vs 0:0" for a cross comparison
    status: str
    check: CheckResult | None = None  # the runner's check (None for failures)
    timing: StepTiming | None = None  # the step's timing (first row of a step only)
    message: str = ""
    prechecks: bool = False  # a "before" check (replayed state vs the capture's Pre)
    cross: CrossCheck | None = None

    @property
    def result(self) -> Mapping[str, Any]:
        src = self.cross if self.cross is not None else self.check
        res = src.get("result") if src is not None else None
        return res if isinstance(res, dict) else {}

    def cells(self) -> list[Text | str]:
        res = self.result
        status = Text(self.status, style=_STATUS_STYLE.get(self.status, ""))
        if self.prechecks:
            status = Text(f"before: {self.status}", style="cyan")
        differ = ""
        if res and res.get("n_diff"):
            differ = f"{res['n_diff']:,}/{res.get('elements', 0):,}"
        first = self.message
        if not first and res.get("first"):
            f = res["first"]
            first = (f"{f.get('where', '')}: {_value(f.get('expected'))} → "
                     f"{_value(f.get('actual'))}")
        if not first and res.get("note"):
            first = str(res["note"])
        if not first and not res and self.check is not None:
            first = str(self.check.get("summary", ""))  # a hash check; why it is unchecked
        cells: list[Text | str] = [
            "" if self.enqueue is None else str(self.enqueue),
            self.kernel,
            self.label,
            self.device,
            status,
            differ,
            _num(res.get("max_abs")),
            _num(res.get("max_ulp")),
            first,
        ]
        t: Mapping[str, Any] = self.timing or {}
        for stage in ("start_to_end", "queued_to_submit", "submit_to_start", "host_enqueue"):
            v = t.get(stage)
            cells.append(_stage(v))
        return cells


def _num(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() and abs(v) < 1e15 else f"{v:.6g}"
    return str(v)


def _value(v: Any) -> str:
    """An element value with enough digits to tell two float32/float64 values apart."""
    if isinstance(v, float):
        return f"{v:.9g}" if abs(v) < 1e300 else repr(v)
    return str(v)


def _stage(v: Any) -> str:
    if not isinstance(v, dict) or v.get("median") is None:
        return ""
    med = fmt_ns(int(v["median"]))
    if v.get("min") is not None and v.get("max") is not None and v["min"] != v["max"]:
        return f"{med} ({fmt_ns(int(v['min']))}–{fmt_ns(int(v['max']))})"
    return med


def failure_message(outcome: ReplayOutcome, res: DeviceResult) -> str:
    """"enqueue 5 (svm_scale) crashed: ..." for a device whose child crashed, hung or failed."""
    status = _FAILED.get(str(res.get("status")), str(res.get("status")))
    n = res.get("failed_enqueue")
    kernel = outcome.kernel_of(n)
    detail = str(res.get("error") or "").strip()
    if n is not None:
        name = f"enqueue {n}" + (f" ({kernel})" if kernel else "")
        if detail.startswith(f"enqueue {n} "):  # the runner's own wording, with the kernel added
            return name + detail[len(f"enqueue {n}"):]
        return f"{name} {status}: {detail}" if detail else f"{name} {status}"
    return detail or status


def result_rows(outcome: ReplayOutcome) -> list[ResultRow]:
    """The table rows of a report, in device then enqueue order, cross comparisons last."""
    rows: list[ResultRow] = []
    for res in outcome.report.get("devices", []):
        dev = str(res.get("device", {}).get("id", "?"))
        for st in res.get("steps", []):
            timing = st.get("timing")
            first = True
            for pre, checks in ((True, st.get("prechecks", [])), (False, st.get("checks", []))):
                for c in checks:
                    rows.append(ResultRow(
                        int(st["enqueue"]), str(st["kernel"]), str(c.get("label", c["mem"])),
                        dev, str(c["status"]), check=c, timing=timing if first else None,
                        prechecks=pre,
                    ))
                    first = False
            if first:  # a step without any check: still show its timing
                rows.append(ResultRow(int(st["enqueue"]), str(st["kernel"]), "(nothing to check)",
                                      dev, "unchecked", timing=timing))
        if res.get("status") in _FAILED:
            n = res.get("failed_enqueue")
            rows.append(ResultRow(
                None if n is None else int(n), outcome.kernel_of(n) or "", "", dev,
                _FAILED[str(res["status"])], message=failure_message(outcome, res),
            ))
    for x in outcome.report.get("cross", []):
        rows.append(ResultRow(
            int(x["enqueue"]), str(x["kernel"]), str(x.get("label", x["mem"])),
            f"{x['b']} vs {x['a']}", str(x["status"]), cross=x,
        ))
    return rows


class ReplayResultsScreen(Screen[None]):
    """The report of one replay; ``enter`` opens the three-way diff of the row."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close"),
        Binding("enter", "diff", "Diff", tooltip="Captured Pre, captured Post, replayed Post"),
        Binding("f", "failures", "Next failure", tooltip="Next row that is not equal"),
        Binding("g", "goto", "Go to enqueue", tooltip="Close and put the list on this enqueue"),
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
        yield Static(self.summary(), id="results-summary")
        with VerticalScroll(id="results-notes"):
            yield Static(self.notes_text(), id="results-notes-text")
        yield DataTable(id="results-table", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(*COLUMNS)
        for i, row in enumerate(self.rows):
            table.add_row(*row.cells(), key=str(i))
        notes = self.query_one("#results-notes")
        notes.display = bool(self.notes_text().plain)
        failing = next(
            (i for i, r in enumerate(self.rows) if r.status not in _OK and not r.prechecks), None
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
            text.append(f"{str(overall['status']).upper()} on {len(verdicts)} devices\n", style)
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
            if res.get("status") in _FAILED:
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

    def action_failures(self) -> None:
        if not self.rows:
            return
        start = self.table.cursor_row
        n = len(self.rows)
        for k in range(1, n + 1):
            i = (start + k) % n
            if self.rows[i].status not in _OK:
                self.table.move_cursor(row=i)
                return
        self.notify("Every row is equal", timeout=3)

    def action_close(self) -> None:
        self.dismiss(None)

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


# ------------------------------------------------------------------------------- three-way


class DiffUnavailable(CltuiError):
    """The row has no data to diff (one-line reason)."""


def ctype_for(capture: Capture, enqueue: int, arg: int | None, spec: Any) -> CType:
    """The element type: the kernel signature's, else the plan's dtype, else bytes."""
    if arg is not None:
        try:
            enq = capture.enqueue(enqueue)
            if 0 <= arg < len(enq.args):
                ctype = element_ctype(enq.args[arg])
                if ctype is not None:
                    return ctype
        except Exception:  # the plan's dtype below is as good
            pass
    name = _cl_name(spec)
    return parse_type(name or "uchar")


_CL_SCALARS = {
    "f2": "half", "f4": "float", "f8": "double", "i1": "char", "u1": "uchar", "i2": "short",
    "u2": "ushort", "i4": "int", "u4": "uint", "i8": "long", "u8": "ulong", "b1": "uchar",
}  # fmt: skip


def _cl_name(spec: Any) -> str | None:
    try:
        dt = make_dtype(spec)
    except (TypeError, ValueError):
        return None
    lanes = 1
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        if len(shape) != 1:
            return None
        dt, lanes = base, int(shape[0])
    name = _CL_SCALARS.get(f"{dt.kind}{dt.itemsize}")
    if name is None:
        return None
    return name if lanes == 1 else f"{name}{lanes}"


def _load(path: Path | None) -> Any:
    if path is None or not path.is_file():
        return None
    if path.stat().st_size == 0:
        return np.zeros(0, dtype=np.uint8)
    return np.memmap(path, dtype=np.uint8, mode="r")


class DiffScreen(Screen[None]):
    """Captured Pre, captured Post, replayed Post of one checked argument."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "close", "Back")]

    def __init__(
        self,
        title: str,
        detail: str,
        pre: Any,
        post: Any,
        replayed: Any,
        ctype: CType,
        first: int | None,
        headings: tuple[str, str, str] | None = None,
    ) -> None:
        super().__init__()
        self.title_text = title
        self.detail = detail
        self.data = (pre, post, replayed)
        self.ctype = ctype
        self.first = first
        self.headings = headings

    @classmethod
    def for_row(cls, capture: Capture, outcome: ReplayOutcome, row: ResultRow) -> DiffScreen:
        """The diff of a results row (raises :class:`DiffUnavailable`)."""
        if row.enqueue is None:
            raise DiffUnavailable("This row has no enqueue")
        step = outcome.step(row.enqueue)
        src = row.cross if row.cross is not None else row.check
        assert src is not None
        mem = src.get("mem")
        planned = None
        if step is not None:
            for c in [*step.get("checks", []), *step.get("prechecks", [])]:
                if c.get("mem") == mem:
                    planned = c
                    break
        root = Path(capture.path)
        checked = row.check["args"] if row.check is not None else None
        args = list(checked or (planned or {}).get("args") or [])
        arg = int(args[0]) if args else None
        pre = post = None
        try:
            enq = capture.enqueue(row.enqueue)
            if arg is not None and 0 <= arg < len(enq.args):
                a = enq.args[arg]
                pre = a.pre.array() if a.pre is not None and not a.pre.hashed else None
                post = a.post.array() if a.post is not None and not a.post.hashed else None
        except (OSError, ValueError) as exc:
            raise DiffUnavailable(f"enqueue {row.enqueue}: cannot read the dumps: {exc}") from None
        if planned is not None and planned.get("data"):
            post = _load(root / str(planned["data"])) if post is None else post
        if step is not None and pre is None:
            for load in step.get("loads", []):
                if load.get("mem") == mem and load.get("data"):
                    pre = _load(root / str(load["data"]))
        spec = src.get("dtype") if "dtype" in src else (planned or {}).get("dtype")
        ctype = ctype_for(capture, row.enqueue, arg, spec)
        res = row.result
        first = res.get("first") or {}
        first_index = first.get("index")
        detail = f"{row.status}: {src.get('summary', '')}".strip()
        if row.prechecks:
            detail = (f"before the enqueue, the replayed state against the capture's Pre dump: "
                      f"{detail} (that replayed state is not kept: captured Pre and Post shown)")
        if row.cross is not None:
            a_out = _load(_path(outcome.report, row.cross["a"], row.enqueue, mem))
            b_out = _load(_path(outcome.report, row.cross["b"], row.enqueue, mem))
            if a_out is None or b_out is None:
                raise DiffUnavailable("The replayed outputs of this comparison are gone")
            title = (f"enqueue {row.enqueue} {escape_controls(row.kernel)} · {row.label} · "
                     f"{row.cross['b']} against {row.cross['a']}")
            return cls(title, detail, pre, a_out, b_out, ctype, first_index,
                       ("captured pre", f"{row.cross['a']} replayed", f"{row.cross['b']} replayed"))
        out = row.check.get("output") if row.check is not None else None
        replayed = _load(Path(out)) if out else None
        if replayed is None and post is None:
            raise DiffUnavailable(f"enqueue {row.enqueue} {row.label}: no data to compare")
        title = (f"enqueue {row.enqueue} {escape_controls(row.kernel)} · {row.label} · "
                 f"device {row.device}")
        return cls(title, detail, pre, post, replayed, ctype, first_index)

    def compose(self) -> ComposeResult:
        yield Static(self.title_text, id="diff-title", markup=False)
        yield Static(self.detail, id="diff-detail", markup=False)
        yield DiffView(id="diff-view")
        yield Footer()

    @property
    def view(self) -> DiffView:
        return self.query_one(DiffView)

    def on_mount(self) -> None:
        pre, post, rep = (None if d is None else as_bytes(d) for d in self.data)
        view = self.view
        if self.headings is not None:
            view.headings = dict(zip(("pre", "post", "replayed"), self.headings, strict=True))
        view.set_three(("diff", self.title_text), pre, post, rep, self.ctype)
        target = self.first if self.first is not None else view.first_mismatch()
        if target is not None and not view.hex_mode:
            view.move_cursor(int(target))
        mismatches = view.mismatch_count()
        extra = f" · {mismatches:,} differing element(s) highlighted; ] / [ jump between them"
        if view.replayed is None:
            extra = " · no replayed data to compare"
        elif view.post is None:
            extra = " · no captured Post dump to compare with"
        self.query_one("#diff-detail", Static).update(
            f"{self.detail} · elements as {self.ctype.name}{extra}"
        )
        view.focus()

    def action_close(self) -> None:
        self.dismiss(None)


def _path(report: Report, device: str, enqueue: int, mem: Any) -> Path | None:
    for res in report.get("devices", []):
        if res.get("device", {}).get("id") != device:
            continue
        for st in res.get("steps", []):
            if int(st["enqueue"]) != enqueue:
                continue
            for c in st.get("checks", []):
                if c.get("mem") == mem and (out := c.get("output")):
                    return Path(out)
    return None
