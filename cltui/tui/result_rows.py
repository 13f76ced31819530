"""The rows of the replay results table, built from the runner's report (no Textual).

One :class:`ResultRow` per checked argument and device (status, differing elements, max abs /
ULP error, first differing element, timing stages), then the device-against-device
comparisons; :func:`result_rows` builds them, :meth:`ResultRow.cells` formats one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.text import Text

from cltui.replay.engine.schema import CheckResult, CrossCheck, DeviceResult, StepTiming
from cltui.tui.format import fmt_ns
from cltui.tui.screens.replay_progress import ReplayOutcome

if TYPE_CHECKING:
    pass

__all__ = ["COLUMNS", "FAILED", "OK_STATUSES", "ResultRow", "failure_message", "result_rows"]

COLUMNS = (
    "enqueue", "kernel", "argument", "device", "status", "differ", "max abs", "max ULP",
    "first difference", "start→end", "queued→submit", "submit→start", "host enqueue",
)  # fmt: skip

_STATUS_STYLE = {
    "equal": "green",
    "within": "yellow",
    "different": "bold red",
    "unchecked": "dim",
    "cannot run": "yellow",  # the step was not launched: the device cannot run it
    "crashed": "bold red",
    "timed out": "bold red",
    "error": "bold red",
    "cancelled": "yellow",
    "killed": "bold red",
}
OK_STATUSES = ("equal", "unchecked")
FAILED = {"crash": "crashed", "hang": "timed out", "error": "error", "cancelled": "cancelled",
           "killed": "killed"}



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
        if self.informational:  # not a check: neutral, whatever it found
            status = Text(f"before: {self.status}" if self.prechecks else self.status, "dim")
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
        if self.informational:
            cells = [c if isinstance(c, Text) else Text(c, "dim") for c in cells]
        return cells

    @property
    def informational(self) -> bool:
        """A row that is no check of the verdict: a "before" comparison (the replayed state
        against the capture's Pre, reloaded or not) or a step with nothing to check."""
        return self.prechecks or (self.check is None and self.cross is None
                                  and self.status == "unchecked" and not self.message)


def _num(v: object) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() and abs(v) < 1e15 else f"{v:.6g}"
    return str(v)


def _value(v: object) -> str:
    """An element value with enough digits to tell two float32/float64 values apart."""
    if isinstance(v, float):
        return f"{v:.9g}" if abs(v) < 1e300 else repr(v)
    return str(v)


def _stage(v: object) -> str:
    if not isinstance(v, dict) or v.get("median") is None:
        return ""
    med = fmt_ns(int(v["median"]))
    if v.get("min") is not None and v.get("max") is not None and v["min"] != v["max"]:
        return f"{med} ({fmt_ns(int(v['min']))}–{fmt_ns(int(v['max']))})"
    return med


def failure_message(outcome: ReplayOutcome, res: DeviceResult) -> str:
    """"enqueue 5 (svm_scale) crashed: ..." for a device whose child crashed, hung or failed."""
    status = FAILED.get(str(res.get("status")), str(res.get("status")))
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
            cannot = st.get("status") == "cannot-run"  # its summary says why
            for pre, checks in ((True, st.get("prechecks", [])), (False, st.get("checks", []))):
                for c in checks:
                    rows.append(ResultRow(
                        int(st["enqueue"]), str(st["kernel"]), str(c.get("label", c["mem"])),
                        dev, "cannot run" if cannot else str(c["status"]), check=c,
                        timing=timing if first else None, prechecks=pre,
                    ))
                    first = False
            if first:  # a step without any check: still show its timing
                rows.append(ResultRow(int(st["enqueue"]), str(st["kernel"]), "(nothing to check)",
                                      dev, "unchecked", timing=timing))
        if res.get("status") in FAILED:
            n = res.get("failed_enqueue")
            rows.append(ResultRow(
                None if n is None else int(n), outcome.kernel_of(n) or "", "", dev,
                FAILED[str(res["status"])], message=failure_message(outcome, res),
            ))
    for x in outcome.report.get("cross", []):
        rows.append(ResultRow(
            int(x["enqueue"]), str(x["kernel"]), str(x.get("label", x["mem"])),
            f"{x['b']} vs {x['a']}", str(x["status"]), cross=x,
        ))
    return rows
