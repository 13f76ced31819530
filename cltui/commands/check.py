"""``cltui check DUMPDIR RANGE``: replay a range on Oclgrind with its checks on."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import click

from cltui.commands import options
from cltui.commands._common import (
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    EXIT_MISMATCH,
    EXIT_OK,
    echo,
    fail,
    load_capture,
)
from cltui.commands.output import format_option

if TYPE_CHECKING:
    from cltui.analysis.check_report import CheckReport, Crash, Finding
    from cltui.process.child import Event

_ADDR = re.compile(r"0x[0-9a-fA-F]+")
_KIND_TEXT = {
    "out-of-bounds": "out-of-bounds access",
    "data-race": "data race",
    "uninitialized": "uninitialised value",
    "barrier-divergence": "barrier divergence",
    "invalid-access": "invalid access",
    "api-error": "API error",
    "fatal": "Oclgrind stopped",
}


@click.command("check")
@click.argument("dumpdir", type=click.Path())
@click.argument("range_text", metavar="RANGE")
@options.mode_option(default="isolated")
@options.timeout_option(300.0, "Seconds without progress before the run is declared hung.",
                        minimum=1.0)  # fmt: skip
@format_option("text", "json", "junit")
def check_cmd(dumpdir: str, range_text: str, mode: str, timeout: float, fmt: str) -> None:
    """Replay RANGE (12, 12-40, 12-, 12-40/kernel) on Oclgrind with its checks.

    Out-of-bounds accesses, data races, uninitialised values, barrier divergence and API
    errors are reported with the enqueue, the kernel and the line of the capture's
    program source. An enqueue that crashes Oclgrind is checked again alone, then with
    each checker off until it runs (the report names the checker), and the rest of the
    range is checked. Exit 0 when Oclgrind finds nothing, 1 on findings (or a crash,
    hang or build failure under Oclgrind), 3 when something was left unchecked (a
    checker switched off after a crash, a check process killed from outside), 2 on bad
    input, 130 when interrupted.
    """
    from cltui.analysis.check import CheckError, run_check

    rng = options.range_of(range_text)
    quiet = fmt != "text"  # stdout is the report
    cap = load_capture(dumpdir, quiet=quiet)

    def progress(ev: Event) -> None:
        if ev.get("type") == "step" and not quiet:
            echo(f"  checking enqueue {ev.get('enqueue')} "
                       f"({int(ev.get('i', 0)) + 1}/{ev.get('n')})", err=True)

    try:
        report = run_check(cap, rng, mode=mode, timeout=timeout, progress=progress)
    except CheckError as exc:
        fail(str(exc))
    interrupted = report.status == "cancelled"  # ctrl-c, SIGTERM: no token here
    if interrupted:
        echo("interrupted: the report holds what finished before it", err=True)
    from cltui.analysis.check_junit import check_junit
    from cltui.commands import output

    output.emit(output.Report(report.to_dict(), lambda: _print(report),
                              junit=lambda: check_junit(report)), fmt)
    if interrupted:
        fail("interrupted", EXIT_INTERRUPTED)
    raise SystemExit(exit_code(report))


def exit_code(report: CheckReport) -> int:
    """0 nothing found; 1 findings, a crash, hang or error; 3 incomplete; 130 cancelled."""
    if report.findings or report.status in ("findings", "crash", "hang", "error"):
        return EXIT_MISMATCH
    if report.status == "cancelled":
        return EXIT_INTERRUPTED
    if report.status in ("incomplete", "killed") or report.unchecked:
        return EXIT_INCOMPLETE
    return EXIT_OK


def _print(report: CheckReport) -> None:
    n = len(report.enqueues)
    echo(f"{report.capture}: range {report.range} ({n} kernel enqueue{'s' if n != 1 else ''}, "
         f"{report.mode}) on {report.device or 'Oclgrind'}")
    for c in report.crashes:
        _print_crash(c)
    if report.error:
        echo(f"ERROR: {report.error}")
        if report.stderr_tail and not (report.crashes
                                       and report.stderr_tail == report.crashes[-1].stderr):
            for line in oclgrind_lines(report.stderr_tail)[-8:]:
                echo(f"  | {line}")
            if report.stderr_log:
                echo(f"  the check process's output: {report.stderr_log}")
    if report.unchecked:
        echo(f"UNCHECKED: {len(report.unchecked)} enqueue(s): "
             + ", ".join(str(e) for e in report.unchecked[:20])
             + (" ..." if len(report.unchecked) > 20 else ""))
    if not report.findings and not report.error:
        if report.crashes or report.unchecked:
            echo("Oclgrind found no problem in what it could check")
        else:
            echo("Oclgrind found no problem")
    _print_findings(report.findings)
    for note in report.notes:
        echo(f"note: {note}")
    if report.findings:
        per: dict[int | None, int] = {}
        for f in report.findings:
            per[f.enqueue] = per.get(f.enqueue, 0) + 1
        echo("")
        echo(f"{len(report.findings)} finding(s) in "
             + ", ".join(f"enqueue {e}" if e is not None else "setup" for e in per))


def _print_crash(c: Crash) -> None:
    echo(f"CRASH: {c.line()}")
    tried = ", ".join(
        ("alone" if not r["without"] else "without " + "+".join(r["without"]))
        + f": {r['outcome']}" for r in c.retries)
    if tried:
        echo(f"  retried {tried}")
    for line in oclgrind_lines(c.stderr)[-8:]:
        echo(f"  | {line}")
    if not c.stderr:
        echo("  (Oclgrind wrote nothing to stderr)")
    if c.log:
        echo(f"  the check process's output: {c.log}")


def oclgrind_lines(stderr: str) -> list[str]:
    """The lines of a check process's stderr that Oclgrind wrote: Python's faulthandler
    stack of a crash (from ``Fatal Python error``) stays in the log file and ``--json``."""
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Fatal Python error"):
            return lines[:i]
    return lines


def _print_findings(findings: list[Finding]) -> None:
    """Findings of one kind and message in one enqueue are printed as one group."""
    groups: dict[tuple[int | None, str | None, str, str, tuple[str, ...]], list[Finding]] = {}
    for f in findings:
        key = (f.enqueue, f.kernel, f.kind, _ADDR.sub("<addr>", f.message), tuple(f.details))
        groups.setdefault(key, []).append(f)
    for (enqueue, kernel, kind, _msg, details), fs in groups.items():
        where = f"enqueue {enqueue}" if enqueue is not None else "outside any enqueue"
        count = sum(f.count for f in fs)
        times = f" (x{count})" if count > 1 else ""
        echo("")
        echo(f"{where}{' ' + kernel if kernel else ''}: {_KIND_TEXT.get(kind, kind)}{times}")
        echo(f"  {fs[0].message}")
        for d in details:
            echo(f"  {d}")
        for f in fs:
            for sl in f.lines:
                echo(f"  {sl.where()}: {sl.code}")
        if fs[0].entity:
            echo(f"  first work-item: {fs[0].entity}")
        if fs[0].work_group:
            echo(f"  work-group: {fs[0].work_group}")
