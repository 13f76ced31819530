"""``cltui latency DUMPDIR RANGE``: the stages of every launch of a range, the runners
against the floor, and the range's sensitivity to launch overhead."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from cltui.commands import options
from cltui.commands._common import echo, fail, load_capture
from cltui.commands.output import format_option


@click.command("latency")
@click.argument("dumpdir", type=click.Path())
@click.argument("range_text", metavar="RANGE")
@options.device_option(
    help=f"{options.DEVICE_HELP} Default: the capture's device by the replay rule.")
@click.option("--repeat", type=click.IntRange(3, 100000), default=50, show_default=True,
              help="Timing repetitions per runner (and rounds of the floor and each delay).")
@click.option("--delays", default="0,50,200,1000,5000,20000", show_default=True,
              help="Host wait before each launch (ns; a sleep from 2 us, a busy-wait below), for "
                   "the sensitivity fit.")
@click.option("--no-native", is_flag=True,
              help="Only the Python engine (no C++ runner: no floor, no sensitivity).")
@options.timeout_option(120.0)
@click.option("--trace", "trace_file", type=click.Path(dir_okay=False), default=None,
              help="Also write a Chrome trace-event / Perfetto JSON of the capture and the "
              "replays here (as --format trace writes it).")
@format_option("text", "json", "junit", "trace")
def latency_cmd(
    dumpdir: str,
    range_text: str,
    devices: tuple[str, ...],
    repeat: int,
    delays: str,
    no_native: bool,
    timeout: float,
    trace_file: str | None,
    fmt: str,
) -> None:
    """Launch latency of RANGE (12-40, 12-, 12-40/saxpy): host enqueue call, queued→submit,
    submit→start, start→end and end→next start of every launch, per kernel and for the
    range, from the capture and from replays; the Python engine's and the C++ runner's
    host time per launch against the bare launch loop (the floor); the range's wall time
    against a host delay per launch (slope ~0: device-bound, ~1: launch-bound).

    Exit 0 when every device was measured, 1 when one failed, 2 on bad input, 3 when
    launches of the range cannot run on a device (INCOMPLETE: not launched, named) or the
    plan skips or the log lost enqueues of the range (INCOMPLETE, counted)."""
    from cltui.commands import output
    from cltui.latency.junit import latency_junit
    from cltui.latency.measure import LatencyError, Options, measure
    from cltui.latency.text import report_lines
    from cltui.latency.trace import trace_json

    as_json = fmt != "text"  # (quiet: stdout is the report)
    rng = options.range_of(range_text)
    try:
        ladder = sorted({int(x) for x in delays.split(",") if x.strip()})
    except ValueError:
        fail(f"bad --delays {delays!r} (nanoseconds, comma-separated)")
    if not ladder or ladder[0] < 0:
        fail("--delays needs non-negative nanoseconds")
    if 0 not in ladder:
        ladder.insert(0, 0)
    cap = load_capture(dumpdir, quiet=as_json)
    opts = Options(repeat=repeat, delays=ladder, timeout=timeout, native=not no_native)
    try:
        done = measure(cap, rng, devices, opts)
    except LatencyError as exc:
        fail(str(exc))
    rep = done.report

    def text() -> None:
        for line in report_lines(rep, done.replays):
            echo(line)

    report = output.Report(rep, text, junit=lambda: latency_junit(rep), trace=lambda: trace_json(
        ("capture " + rep["range"], done.capture_launches), done.replays))
    if trace_file:
        output.write_file(trace_file, output.render(report, "trace"))
        rep["trace"] = str(Path(trace_file))
    output.emit(report, fmt)
    if any(d["error"] for d in rep["devices"]):
        sys.exit(1)
    incomplete = rep["not_measured"] or any(d["cannot_run"] for d in rep["devices"])
    sys.exit(3 if incomplete else 0)
