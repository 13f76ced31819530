"""The A/B results of an experiment: the verdict line first (the variant's checks, then its
timing against the capture's configuration), then per device a row per checked argument with
A's and B's status side by side, then the timing difference per enqueue and for the range
(medians, B - A with its 95 % interval, the reading)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from cltui.replay.check_text import check_cell
from cltui.replay.engine.schema import CheckResult
from cltui.replay.experiment.report import AbDevice, AbReport, paired_checks
from cltui.replay.experiment.stats import Diff
from cltui.text.escape import escape_controls
from cltui.text.units import fmt_ns

__all__ = ["AbResultsScreen", "check_rows", "timing_rows"]

_STYLE = {"equal": "green", "within": "yellow", "different": "bold red", "unchecked": "dim"}
_VERDICT = {"pass": "bold green", "fail": "bold red", "error": "bold red"}


def _cell(c: CheckResult | None) -> Text:
    """The check as the CLI's table says it (its ULP figure included)."""
    if c is None:
        return Text("-", style="dim")
    return Text(check_cell(c), style=_STYLE.get(str(c["status"]), ""))


def check_rows(dev: AbDevice) -> list[tuple[str, str, str, Text, Text]]:
    """(enqueue, kernel, argument, A, B) per checked argument (pure)."""
    return [(str(e), escape_controls(kern), escape_controls(label), _cell(a), _cell(b))
            for e, kern, label, a, b in paired_checks(dev)]  # fmt: skip


def _signed(ns: float | None) -> str:
    if ns is None:
        return ""
    return ("-" if ns < 0 else "+") + fmt_ns(abs(ns))


def _diff(d: Diff) -> tuple[str, str, str, Text]:
    from cltui.replay.experiment.stats import relative_text

    style = {"faster": "green", "slower": "red"}.get(d["reading"], "dim")
    if d["diff"] is None or d["lo"] is None:
        return "", "", "", Text(d["reading"], style=style)
    rel = relative_text(d)
    return (fmt_ns(d["a"]), fmt_ns(d["b"]),
            f"{_signed(d['diff'])} [{_signed(d['lo'])}, {_signed(d['hi'])}]{rel}",
            Text(d["reading"], style=style))  # fmt: skip


def timing_rows(dev: AbDevice) -> list[tuple[str, str, str, str, str, Text]]:
    """(enqueue, kernel, A, B, B - A [interval], reading) per step, then the range (pure)."""
    rows = [(str(st["enqueue"]), escape_controls(st["kernel"]), *_diff(st["timing"]))
            for st in dev["steps"]]  # fmt: skip
    rows.append(("range", "", *_diff(dev["timing"])))
    return rows


class AbResultsScreen(Screen[None]):
    """One A/B report (``escape`` closes)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close")]
    DEFAULT_CSS = """
    AbResultsScreen #ab-summary { height: auto; max-height: 8; }
    AbResultsScreen #ab-checks { height: 2fr; }
    AbResultsScreen #ab-timing { height: 1fr; }
    """

    def __init__(self, report: AbReport) -> None:
        super().__init__()
        self.report = report

    def compose(self) -> ComposeResult:
        v = self.report["verdict"]
        head = Text(escape_controls(v["line"]), style=_VERDICT.get(v["status"], "bold yellow"))
        from cltui.replay.experiment.report import noise_text

        changes = "\n".join([f"  change: {escape_controls(ln)}"
                             for ln in self.report["variant"].get("lines", [])]
                            + [f"  {noise_text(d)}" for d in self.report["devices"]])  # fmt: skip
        yield Static(Text.assemble(head, "\n", changes), id="ab-summary")
        yield DataTable(id="ab-checks", cursor_type="row", zebra_stripes=True)
        yield DataTable(id="ab-timing", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        checks = self.query_one("#ab-checks", DataTable)
        timing = self.query_one("#ab-timing", DataTable)
        checks.add_columns("device", "enqueue", "kernel", "argument", "A (capture's)",
                           "B (variant)")  # fmt: skip
        timing.add_columns("device", "enqueue", "kernel", "A", "B", "B - A [95% interval]",
                           "reading")  # fmt: skip
        for dev in self.report["devices"]:
            tag = dev["device"]["id"]
            for row in check_rows(dev):
                checks.add_row(tag, *row)
            for trow in timing_rows(dev):
                timing.add_row(tag, *trow)
            for label, side in (("A", dev["a"]), ("B", dev["b"])):
                err = side["result"].get("error")
                if err:
                    checks.add_row(tag, "", "", f"{label}: {escape_controls(str(err))}", "", "")
        checks.focus()

    def action_close(self) -> None:
        self.dismiss(None)
