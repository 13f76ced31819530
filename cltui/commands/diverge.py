"""``cltui diverge DUMP_A DUMP_B``: where two captures of one program part."""

from __future__ import annotations

import click

from cltui.commands._common import EXIT_MISMATCH, EXIT_OK, echo, emit_json, fail, load_capture


@click.command("diverge")
@click.argument("dump_a", type=click.Path(path_type=str))
@click.argument("dump_b", type=click.Path(path_type=str))
@click.option("--atol", type=float, default=0.0, show_default=True,
              help="Absolute tolerance for floating point elements.")
@click.option("--rtol", type=float, default=0.0, show_default=True,
              help="Relative tolerance for floating point elements.")
@click.option("--ulp", type=int, default=0, show_default=True,
              help="Tolerance in units in the last place.")
@click.option("--range", "range_text", default=None, metavar="RANGE",
              help="Only compare these enqueues of DUMP_A (12, 12-40, 12-).")
@click.option("--all", "show_all", is_flag=True, help="List identical enqueues too.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def diverge_cmd(dump_a: str, dump_b: str, atol: float, rtol: float, ulp: int,
                range_text: str | None, show_all: bool, as_json: bool) -> None:
    """Find where two captures of the same program diverge.

    The enqueues are aligned by number and kernel name; aligned kernels are compared on
    their Post dumps (typed by the kernel signature; by hash where a capture holds only
    hashes). Prints the first divergent enqueue, argument and element, then a summary
    of every divergent enqueue. Exit code 0 when nothing diverges, 1 when something
    does, 2 on bad input.
    """
    from cltui.analysis.diverge import diverge
    from cltui.replay.engine.compare import Tolerance

    if atol < 0 or rtol < 0 or ulp < 0:
        fail("tolerances must not be negative")
    from cltui.capture.ranges import RangeError, parse_range

    first = last = None
    if range_text:
        try:
            rng = parse_range(range_text)
        except RangeError as exc:
            fail(str(exc))
        if rng.kernel:
            fail("diverge --range takes enqueue numbers only (no /KERNEL filter)")
        first, last = rng.first, rng.last
    cap_a = load_capture(dump_a, quiet=as_json)
    cap_b = load_capture(dump_b, quiet=as_json)
    report = diverge(cap_a, cap_b, Tolerance(atol, rtol, ulp), first=first, last=last)
    if as_json:
        emit_json(report.to_dict())
    else:
        _print(report, show_all)
    sys_exit = EXIT_MISMATCH if report.first_divergent is not None else EXIT_OK
    raise SystemExit(sys_exit)


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
