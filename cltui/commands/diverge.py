"""``cltui diverge DUMP_A DUMP_B``: where two captures of one program part."""

from __future__ import annotations

import click

from cltui.commands import options
from cltui.commands._common import EXIT_MISMATCH, EXIT_OK, echo, fail, load_capture
from cltui.commands.output import format_option


@click.command("diverge")
@click.argument("dump_a", type=click.Path(path_type=str))
@click.argument("dump_b", type=click.Path(path_type=str))
@options.tolerance_options(zero=True)
@click.option("--range", "range_text", default=None, metavar="RANGE",
              help="Only compare these enqueues of DUMP_A (12, 12-40, 12-).")
@click.option("--all", "show_all", is_flag=True, help="List identical enqueues too.")
@click.option("--explain", "explain", is_flag=True,
              help="Also explain the first divergent kernel enqueue (cltui explain): replay it "
                   "from DUMP_A's inputs on two devices here.")
@options.device_option(help="With --explain: the two devices (twice); default: the device "
                       "each capture was made on.")  # fmt: skip
@format_option("text", "json", "junit")
def diverge_cmd(dump_a: str, dump_b: str, atol: float, rtol: float, ulp: int,
                range_text: str | None, show_all: bool, explain: bool,
                devices: tuple[str, ...], fmt: str) -> None:
    """Find where two captures of the same program diverge.

    The enqueues are aligned by number and kernel name; aligned kernels are compared on
    their Post dumps (typed by the kernel signature; by hash where a capture holds only
    hashes). Prints the first divergent enqueue, argument and element, then a summary
    of every divergent enqueue. With --explain, the first divergent kernel enqueue is
    explained as ``cltui explain`` does (where and why, on two devices here). Exit code 0
    when nothing diverges, 1 when something does, 2 on bad input.
    """
    from cltui.analysis.diverge import diverge
    from cltui.analysis.junit import diverge_junit
    from cltui.commands import output
    from cltui.replay.engine.compare import Tolerance

    as_json = fmt != "text"  # (quiet: stdout is the report)
    if devices and not explain:
        fail("-d/--device goes with --explain")
    if explain and len(devices) not in (0, 2):
        fail(f"--explain compares two devices: give -d twice or not at all (got {len(devices)})")
    first = last = None
    if range_text:
        rng = options.range_of(range_text)
        if rng.kernel:
            fail("diverge --range takes enqueue numbers only (no /KERNEL filter)")
        first, last = rng.first, rng.last
    cap_a = load_capture(dump_a, quiet=as_json)
    cap_b = load_capture(dump_b, quiet=as_json)
    report = diverge(cap_a, cap_b, Tolerance(atol, rtol, ulp), first=first, last=last)
    data = report.first_data_divergent
    said = _explain(cap_a, cap_b, data.number if data else None, devices, as_json) \
        if explain else None
    out: dict[str, object] = dict(report.to_dict())
    if explain:
        out["explain"] = said

    def text() -> None:
        _print(report, show_all)
        if explain:
            _print_explain(said)

    output.emit(output.Report(out, text, junit=lambda: diverge_junit(report, said)), fmt)
    sys_exit = EXIT_MISMATCH if report.first_divergent is not None else EXIT_OK
    raise SystemExit(sys_exit)


def _explain(cap_a: object, cap_b: object, enqueue: int | None, specs: tuple[str, ...],
             quiet: bool) -> dict[str, object] | None:  # fmt: skip
    """The explain report of the first divergent enqueue (None: nothing diverges), or
    ``{"error": why}`` when it cannot be explained."""
    from cltui.analysis.explain import ExplainError, explain_first_divergence
    from cltui.capture.capture import Capture
    from cltui.capture.ranges import EnqueueRange
    from cltui.commands.explain import two_devices
    from cltui.progress import ProgressEvent
    from cltui.replay.devices import DeviceError, devices_for

    assert isinstance(cap_a, Capture) and isinstance(cap_b, Capture)
    if enqueue is None:
        return None
    rng = EnqueueRange(enqueue, enqueue)
    try:
        if specs:
            chosen, _ = devices_for(cap_a, rng, list(specs))
            picked = two_devices(chosen, specs)
        else:  # the device each capture was made on
            picked = [devices_for(cap, rng, [])[0][0] for cap in (cap_a, cap_b)]
    except DeviceError as exc:
        fail(f"--explain: {exc}")
    if picked[0]["id"] == picked[1]["id"]:
        fail(f"--explain: both captures' devices are {picked[0]['name']} here: give the two "
             "devices with -d twice")

    def progress(ev: ProgressEvent) -> None:
        if not quiet:
            echo(f"explain: {ev.what} ...", err=True)

    try:
        return explain_first_divergence(cap_a, enqueue, picked, progress=progress)
    except ExplainError as exc:
        return {"error": f"enqueue {enqueue} cannot be explained: {exc}"}


def _print_explain(said: dict[str, object] | None) -> None:
    from cltui.analysis.explain.text import text_lines

    if said is None:
        return
    echo("")
    if "error" in said:
        echo(f"explain: {said['error']}")
        return
    for line in text_lines(said):
        echo(line)


def _num(v: object) -> str:
    return f"{v:.9g}" if isinstance(v, float) else str(v)


def _print(report: object, show_all: bool) -> None:
    from cltui.analysis.diverge_report import DIVERGENT, IDENTICAL, SEQUENCE, DivergeReport

    assert isinstance(report, DivergeReport)
    echo(f"A: {report.path_a} ({report.count_a} enqueues)")
    echo(f"B: {report.path_b} ({report.count_b} enqueues)")
    if report.sequence_identical:
        echo(f"sequence: identical ({report.aligned} enqueues aligned)")
    else:
        seq = report.sequence_diffs
        echo(f"sequence: differs at {len(seq)} place(s), {report.aligned} enqueues aligned")
        for e in seq[:20]:
            echo(f"  {e.number}: {'; '.join(e.notes)}")
        if len(seq) > 20:
            echo(f"  ... and {len(seq) - 20} more")
    first = report.first_data_divergent
    if first is None:
        echo("no aligned enqueue differs beyond tolerance")
    else:
        echo("")
        echo(f"first divergent enqueue: {first.number} {first.label()}")
        fa = first.first_arg
        if fa is not None:
            echo(f"  {fa.label()}: {fa.summary()}")
            if fa.result is not None and fa.result.first is not None:
                f = fa.result.first
                ulp = fa.result.max_ulp
                echo(f"  first element {f.where()}: A {_num(f.expected)}  B {_num(f.actual)}"
                     + (f"  (max {ulp:g} ULP)" if ulp is not None else ""))
        if first.starts_here:
            echo("  its unchanged inputs are identical on both sides: the divergence starts here")
        elif first.inputs == "different":
            args = ", ".join(str(i) for i in first.inputs_differ)
            echo(f"  its inputs already differ (argument {args})")
        for n in first.notes:
            echo(f"  note: {n}")
    div = [e for e in report.enqueues if e.status == DIVERGENT]
    if div:
        echo("")
        echo(f"divergent enqueues ({len(div)}):")
        for e in div:
            fa = e.first_arg
            origin = " [starts here]" if e.starts_here else ""
            what = f"{fa.label()}: {fa.summary()}" if fa is not None else ""
            echo(f"  {e.number:>6} {e.label():<28} {what}{origin}")
    if show_all:
        echo("")
        for e in report.enqueues:
            if e.status in (DIVERGENT, SEQUENCE):
                continue
            extra = "" if e.status == IDENTICAL else f" ({'; '.join(e.notes)})"
            echo(f"  {e.number:>6} {e.label():<28} {e.status}{extra}")
    c = report.counts()
    echo("")
    echo(", ".join(f"{k}: {v}" for k, v in c.items()))
