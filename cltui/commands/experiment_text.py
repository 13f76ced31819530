"""The text reports of ``cltui try`` and ``cltui sweep`` (rich tables; the verdict leads)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cltui.commands._common import echo, escape_tree, text_console
from cltui.commands.replay_text import _STYLE, _short
from cltui.text.units import fmt_ns

if TYPE_CHECKING:
    from rich.console import Console

    from cltui.replay.engine.schema import CheckResult
    from cltui.replay.experiment.report import AbDevice, AbReport
    from cltui.replay.experiment.stats import Diff


def print_ab(report: AbReport) -> None:
    """The verdict line, the changes, per device the checks of A and B side by side and the
    timing difference per enqueue and for the range."""
    con = text_console()
    report = escape_tree(report)
    con.print(report["verdict"]["line"], soft_wrap=True, markup=False, highlight=False)
    for line in report["variant"].get("lines", []):
        con.print(f"  change: {line}", markup=False, highlight=False)
    for dev in report["devices"]:
        _device(con, dev)


def _device(con: Console, dev: AbDevice) -> None:
    from rich.table import Table

    name = f"{dev['device']['id']} {dev['device']['name']}"
    for tag, side in (("A", dev["a"]), ("B", dev["b"])):
        res = side["result"]
        if res.get("error"):  # one line: the child's stack and messages are in its log
            log = res.get("stderr_log")
            said = f" (the experiment process's output: {log})" if log else ""
            con.print(f"{name} {tag}: {res['error']}{said}", soft_wrap=True, markup=False,
                      highlight=False)  # fmt: skip
    table = Table(title=f"{name}: A = the capture's configuration, B = the variant")
    for col in ("enqueue", "kernel", "argument", "A", "B"):
        table.add_column(col, overflow="fold")
    from cltui.replay.experiment.report import paired_checks

    rows = paired_checks(dev)
    for enq, kernel, label, *sides in rows:
        table.add_row(str(enq), kernel, label, *(_check_cell(c) for c in sides))
    if rows:
        con.print(table)
    timing = Table(title="device time per run (median), B - A with its 95% interval")
    for col in ("enqueue", "kernel", "A", "B", "B - A", "reading"):
        timing.add_column(col, overflow="fold")
    for st in dev["steps"]:
        timing.add_row(str(st["enqueue"]), st["kernel"], *_diff_cells(st["timing"]))
    timing.add_row("range", "", *_diff_cells(dev["timing"]), style="bold")
    con.print(timing)
    from cltui.replay.experiment.report import noise_text

    con.print(noise_text(dev), markup=False, highlight=False)


def _check_cell(c: CheckResult | None) -> str:
    if c is None:
        return "-"
    style = _STYLE.get(c["status"], "")
    return f"[{style}]{_short(c)}[/]" if style else _short(c)


def _diff_cells(d: Diff) -> list[str]:
    from cltui.replay.experiment.stats import relative_text

    if d["diff"] is None or d["lo"] is None:
        return ["", "", "", d["reading"]]
    lo, hi = d["lo"] or 0.0, d["hi"] or 0.0
    rel = relative_text(d)
    return [
        fmt_ns(d["a"]), fmt_ns(d["b"]),
        f"{_signed(d['diff'])} [{_signed(lo)}, {_signed(hi)}]{rel}", d["reading"],
    ]  # fmt: skip


def _signed(ns: float) -> str:
    return ("-" if ns < 0 else "+") + fmt_ns(abs(ns))


def sweep_row_text(row: dict[str, Any]) -> str:
    """One point of a sweep as it ends (a streamed line)."""
    status = row["status"]
    if status == "pass":
        t = row.get("time") or {}
        what = (f"{fmt_ns(t['median'])} [{fmt_ns(t['lo'])}, {fmt_ns(t['hi'])}]"
                if t.get("median") is not None else "no timing")  # fmt: skip
    else:
        what = row.get("why", "")
    return f"{row['device']}  {status:<9} {row['label']:<28} {what}"


def _paired_text(d: Diff | None) -> str:
    """A top point re-measured beside the capture's own configuration (paired)."""
    from cltui.replay.experiment.stats import relative_text

    return f"{d['reading']}{relative_text(d)}, {d['n']} pairs" if d else ""


def print_sweep(summary: dict[str, Any]) -> None:
    """The ranking of a sweep's correct points (fastest first), then the others."""
    from rich.table import Table

    con = text_console()
    summary = escape_tree(summary)
    table = Table(title="correct configurations, fastest first (the range's device time: "
                        "median, 95% interval)")  # fmt: skip
    for col in ("#", "configuration", "device", "time", "interval", "vs capture",
                "side by side"):
        table.add_column(col, overflow="fold")
    from cltui.replay.experiment.stats import relative_text

    for i, row in enumerate(summary["ranking"], 1):
        t, vs = row["time"], row.get("vs_capture") or {}
        table.add_row(
            str(i), row["label"], row["device"], fmt_ns(t["median"]),
            f"[{fmt_ns(t['lo'])}, {fmt_ns(t['hi'])}]",
            f"{vs['reading']}{relative_text(vs)}" if vs else "",  # type: ignore[arg-type]
            _paired_text(row.get("paired")),
        )  # fmt: skip
    con.print(table)
    from cltui.replay.experiment.sweep_plot import bars_text

    for line in bars_text(summary):
        echo(line)
    for row in summary["others"]:
        echo(f"{row['status']}: {row['label']} on {row['device']}: {row.get('why', '')}")
    con.print(summary["verdict"]["line"], soft_wrap=True, markup=False, highlight=False)
    if summary.get("best_folder"):
        echo(f"best variant saved as {summary['best']}: {summary['best_folder']}")
