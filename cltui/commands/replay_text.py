"""The text report of ``cltui replay`` (without ``--json``): the verdict, the plan's notes
and host-side changes, the table of checks, timing, and the devices against each other."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from collections.abc import Mapping

    from rich.console import Console

    from cltui.replay.engine.schema import CheckResult, DeviceResult, Manifest, Report

from cltui.commands._common import escape_tree, text_console
from cltui.replay.check_text import check_cell
from cltui.text.units import fmt_ns

__all__ = ["print_report", "print_verdict"]

MAX_NOTES = 20

_STYLE = {"equal": "green", "within": "yellow", "different": "bold red", "unchecked": "dim"}


def _short(c: CheckResult) -> str:
    """A table cell: the status and the key figure (one rule with the app's)."""
    return check_cell(c)


def print_report(report: Report, manifest: Manifest) -> None:
    """Rich tables: checks per enqueue x argument x device, host changes, timing."""
    con = text_console()
    report, manifest = escape_tree(report), escape_tree(manifest)  # names from the capture
    _print_header(con, report)
    _print_results(con, report["devices"])
    _print_timing(con, report, manifest)
    _print_cross(con, report)
    print_verdict(con, report, details=False)


def _print_header(con: Console, report: Report) -> None:
    """The range line, the verdict, the plan's notes and changes, device errors and notes."""
    devs = report["devices"]
    plan = report["plan"]
    con.print(
        f"[bold]range {plan['range']}[/] mode {plan['mode']}, {plan['steps']} enqueues, "
        f"{len(devs)} device(s)"
    )
    print_verdict(con, report)
    notes = plan["notes"]
    for note in notes[:MAX_NOTES]:
        con.print(f"note: {note}", soft_wrap=True, markup=False, highlight=False, style="dim")
    if len(notes) > MAX_NOTES:
        con.print(
            f"... and {len(notes) - MAX_NOTES} more notes (--json lists them all)", style="dim"
        )
    for ch in plan["changes"]:
        by = ", ".join(ch["by"]) if ch["by"] else "something outside the replayed kernels"
        act = _ACTIONS.get(ch["action"], ch["action"])
        con.print(
            f"host-side change before enqueue {ch['enqueue']}: {ch['label']} "
            f"changed after enqueue {ch['after']} (by {by}); {act}",
            soft_wrap=True,
            markup=False,
            highlight=False,
            style="cyan",
        )
    for r in devs:
        d = r["device"]
        for f in r.get("cannot_run", []):
            con.print(
                f"{d['id']} {d['name']}: enqueue {f['enqueue']} ({f['kernel']}) cannot run: "
                f"{f['reason']}",
                soft_wrap=True, markup=False, highlight=False, style="yellow",
            )  # fmt: skip
        if r.get("error"):  # one line: the child's stack and messages are in its log
            log = r.get("stderr_log")
            said = f" (the replay process's output: {log})" if log else ""
            con.print(f"{d['id']} {d['name']}: {r['status']}: {r['error']}{said}",
                      soft_wrap=True, markup=False, highlight=False, style="bold red")  # fmt: skip

    seen: dict[str, list[str]] = {}
    for r in devs:
        for note in r.get("notes", []):
            seen.setdefault(note, []).append(r["device"]["id"])
    for note, ids in seen.items():
        con.print(
            f"{', '.join(ids)} note: {note}",
            soft_wrap=True,
            markup=False,
            highlight=False,
            style="dim",
        )


def _print_results(con: Console, devs: list[DeviceResult]) -> None:
    """The table of checks (enqueue x argument x device) and a line per unequal check."""
    from rich.table import Table

    table = Table(title="results against the capture")
    table.add_column("enqueue", justify="right")
    table.add_column("kernel", overflow="fold")
    table.add_column("argument", overflow="fold")
    for r in devs:
        table.add_column(r["device"]["id"])
    rows: dict[tuple[int, str], list[str]] = {}
    order: list[tuple[int, str, str]] = []
    details: list[str] = []
    for col, r in enumerate(devs):
        for st in r.get("steps", []):
            pres = st.get("prechecks", [])
            for c in [*pres, *st["checks"]]:
                pre = any(c is p for p in pres)
                label = ("before: " if pre else "") + c["label"]
                key = (st["enqueue"], label)
                if key not in rows:
                    rows[key] = [""] * len(devs)
                    order.append((st["enqueue"], st["kernel"] or "?", label))
                style = "cyan" if pre else _STYLE.get(c["status"], "")
                rows[key][col] = f"[{style}]{_short(c)}[/]" if style else _short(c)
                if c["status"] != "equal":
                    details.append(
                        f"{r['device']['id']} enqueue {st['enqueue']} {label}: {c['status']}: "
                        f"{c.get('summary', '')}"
                    )
    for enq, kernel, label in order:
        table.add_row(str(enq), kernel, label, *rows[(enq, label)])
    if order:
        con.print(", ".join(f"{r['device']['id']} = {r['device']['name']}" for r in devs))
        con.print(table)
    for line in details:
        con.print(line, soft_wrap=True, markup=False, highlight=False)


def _print_timing(con: Console, report: Report, manifest: Manifest) -> None:
    """Median kernel and host times per enqueue and device; with --repeat, the stages."""
    from rich.table import Table

    devs = report["devices"]
    timing = Table(
        title=f"timing (median of {report['repeat']} run(s); captured = the capture's "
        "own device time)"
    )
    timing.add_column("enqueue", justify="right")
    timing.add_column("kernel")
    timing.add_column("captured", justify="right")
    for r in devs:
        timing.add_column(f"{r['device']['id']} kernel", justify="right")
        timing.add_column("host enqueue", justify="right")
    captured = {s["enqueue"]: s.get("captured_time") for s in manifest["steps"]}
    steps_by_dev = [{st["enqueue"]: st for st in r.get("steps", [])} for r in devs]
    for s in manifest["steps"]:
        n = s["enqueue"]
        cells = [str(n), s["kernel"], fmt_ns((captured.get(n) or {}).get("start_to_end"), "-")]
        for sd in steps_by_dev:
            ran = sd.get(n)
            if ran is None:
                cells += ["-", "-"]
                continue
            kern, host = ran["timing"]["start_to_end"], ran["timing"]["host_enqueue"]
            cells.append(fmt_ns(kern["median"] if kern else None, "-"))
            cells.append(fmt_ns(host["median"] if host else None, "-"))
        timing.add_row(*cells)
    if any(r.get("steps") for r in devs):
        con.print(timing)
        if report["repeat"] > 1:
            _print_stages(con, report)


def _print_stages(con: Console, report: Report) -> None:
    """min / median / max of every timing stage per device, and the timing loop's host time."""
    from rich.table import Table

    devs = report["devices"]
    stages = ("queued_to_submit", "submit_to_start", "start_to_end", "host_enqueue")
    for r in devs:
        if not r.get("steps"):
            continue
        stats = Table(
            title=f"{r['device']['id']} {r['device']['name']}: min / median / max "
            f"over {report['repeat']} runs"
        )
        stats.add_column("enqueue", justify="right")
        for title in ("queued->submit", "submit->start", "start->end", "host enqueue"):
            stats.add_column(title, justify="right", no_wrap=True)
        for st in r["steps"]:
            cells = [str(st["enqueue"])]
            for stage in stages:
                v = cast("Mapping[str, Any]", st["timing"]).get(stage)
                cells.append(
                    " / ".join(fmt_ns(v[k], "-") for k in ("min", "median", "max"))
                    if v
                    else "-"
                )
            stats.add_row(*cells)
        con.print(stats)
        loop_info: dict[str, Any] = r.get("loop") or {}
        loop = loop_info.get("host_ns_per_repetition")
        if loop:
            per = loop["median"] / max(int(r["loop"]["launches"]), 1)
            per_text = fmt_ns(per, "-")
            con.print(f"host time per launch in the timing loop: {per_text} (median)")


def _print_cross(con: Console, report: Report) -> None:
    if report["cross"]:
        same = sum(1 for c in report["cross"] if c["status"] == "equal")
        con.print(f"devices against each other: {same}/{len(report['cross'])} outputs bit-exact")
        for x in report["cross"]:
            if x["status"] != "equal":
                con.print(
                    f"  enqueue {x['enqueue']} {x['kernel']} {x['label']}: {x['a']} vs "
                    f"{x['b']}: {x['status']}: {x['summary']}",
                    soft_wrap=True,
                    markup=False,
                    highlight=False,
                )


_ACTIONS = {
    "reload": "reloaded from the capture",
    "none": "not reloaded (strict)",
    "replay": "replayed",
    "unreplayed": "NOT replayed (its data is not in the capture)",
}
_VERDICT_STYLE = {"pass": "bold green", "fail": "bold red", "error": "bold red"}


def print_verdict(con: Any, report: Report, details: bool = True) -> None:
    """The verdict line, per device when there are several, and (``details``) each host
    transfer that was not replayed: never collapsed."""
    v = report["verdict"]
    style = _VERDICT_STYLE.get(v["status"], "bold yellow")
    con.print(v["line"], style=style, soft_wrap=True, markup=False, highlight=False)
    devs = report["devices"]
    if len(devs) > 1 and details:
        for r in devs:
            d = r.get("verdict") or {}
            con.print(
                f"  {r['device']['id']} {r['device']['name']}: {d.get('line', '')}",
                soft_wrap=True,
                markup=False,
                highlight=False,
            )
    for r in devs[: 1 if details else 0]:
        for st in r.get("steps", []):
            for t in st.get("transfers", []):
                if not t.get("replayed"):
                    con.print(
                        f"host transfer {t['enqueue']} {t['function']} before enqueue "
                        f"{st['enqueue']}: not replayed ({t['why']})",
                        soft_wrap=True,
                        markup=False,
                        highlight=False,
                        style="yellow",
                    )
