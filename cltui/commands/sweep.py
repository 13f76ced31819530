"""``cltui sweep DUMPDIR RANGE --local 16,32,64 --define VWM=2,4 ...``: many configurations
of a range, each checked against the capture, the correct ones ranked by time."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cltui.commands import output
from cltui.commands._common import echo, fail, import_ahead
from cltui.commands._experiment import (
    applied,
    chosen_devices,
    common_options,
    load_plan,
    program_changes,
)
from cltui.commands.output import format_option

if TYPE_CHECKING:
    from cltui.process.child import Child
    from cltui.replay.engine.schema import Device, Manifest
    from cltui.replay.experiment.runs import Confirmed
    from cltui.replay.experiment.sweep import Row, SweepSpec
    from cltui.replay.experiment.variant import Variant


def _spec(range_text: str, kernel: str | None, local: tuple[str, ...], glob: tuple[str, ...],
          options: tuple[str, ...], defines: tuple[str, ...], params: tuple[str, ...] = (),
          restrict: tuple[str, ...] = ()) -> SweepSpec:  # fmt: skip
    """The values to try, parsed (commas separate values, ``x`` dimensions); exit 2."""
    from cltui.replay.experiment.params import number, validate_restriction
    from cltui.replay.experiment.sweep import SweepSpec
    from cltui.replay.experiment.variant import (
        parse_define,
        parse_param,
        parse_size,
        parse_target,
    )

    def sizes(texts: tuple[str, ...]) -> tuple[tuple[int, ...], ...]:
        return tuple(dict.fromkeys(parse_size(v) for t in texts for v in t.split(",") if v))

    def values(texts: tuple[str, ...], parse: Any) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for text in texts:
            key, value = parse(text)
            out.setdefault(key, []).extend(v.strip() for v in value.split(",") if v.strip())
        return out

    try:
        defs = values(defines, parse_define)
        pars = values(params, parse_param)
        follow = [t.strip() for t in local if t.strip() in pars]
        if follow and (len(follow) > 1 or len(local) > 1):
            raise ValueError("--local NAME follows one --param; give it alone")
        for key in follow:
            if not all(v.isdigit() and int(v) > 0 for v in pars[key]):
                raise ValueError(f"--local {key}: every value of --param {key} must be a "
                                 "positive whole number")  # fmt: skip
        for expr in restrict:
            validate_restriction(expr, set(pars))
        if restrict:
            for key, vals in pars.items():
                for v in vals:
                    try:
                        number(v)
                    except ValueError:
                        raise ValueError(f"--restrict needs numbers: --param {key} has "
                                         f"{v!r}") from None  # fmt: skip
        return SweepSpec(
            range=range_text, kernel=kernel, target=parse_target(kernel),
            local=() if follow else sizes(local), global_=sizes(glob),
            options=tuple(dict.fromkeys(o.strip() for t in options for o in t.split(",")
                                        if o.strip())),
            defines=tuple((k, tuple(dict.fromkeys(v))) for k, v in defs.items()),
            params=tuple((k, tuple(dict.fromkeys(v))) for k, v in pars.items()),
            local_param=follow[0] if follow else None,
            restrict=tuple(restrict),
        )  # fmt: skip
    except ValueError as exc:
        fail(str(exc))


@click.command("sweep")
@click.argument("dumpdir", type=click.Path())
@click.argument("range_text", metavar="RANGE")
@click.option("--local", "local", multiple=True, metavar="N[,N...]|NAME",
              help="Local sizes to try: 16,32,64 or 8x8,16x16; or a --param NAME: the local "
              "size follows that parameter (--local WGS).")
@click.option("--global", "glob", multiple=True, metavar="N[,N...]", help="Global sizes.")
@click.option("--options", multiple=True, metavar="OPT[,OPT...]",
              help="Build options to try (each added on its own), e.g. --options=-cl-mad-enable.")
@click.option("--define", "defines", multiple=True, metavar="K=V[,V...]",
              help="-D K=V with each value, e.g. --define VWM=2,4,8 (refused where the "
              "source's own #define K would override it: use --param).")
@click.option("--param", "params", multiple=True, metavar="NAME=V[,V...]",
              help="The source's own #define NAME set to each value (a -D where the source "
              "has none), e.g. --param WGS=64,128,256.")
@click.option("--restrict", "restrict", multiple=True, metavar="EXPR",
              help="Only points whose --param values meet EXPR, e.g. 'WGS % VW == 0' "
              "(arithmetic, comparisons, and, or, not); pruned before they run.")
@click.option("--source", "sources", multiple=True, metavar="[PROG=]FILE",
              help="A new source for program PROG, in every point but the capture's own.")
@click.option("--patch", "patches", multiple=True, metavar="[PROG=]FILE",
              help="A unified diff applied to PROG's source in every point but the "
              "capture's own (--param then rewrites the patched source).")
@click.option("--budget", type=click.IntRange(1), default=None,
              help="Run a random sample of N points (the capture's own among them).")
@click.option("--seed", type=int, default=0, show_default=True, help="The sample's seed.")
@click.option("--repeat", type=click.IntRange(2, 100000), default=10, show_default=True,
              help="Runs per point: the first validates, the others are timed.")
@click.option("--results", type=click.Path(dir_okay=False), default=None,
              help="Append each point's row to FILE; a sweep given the same FILE resumes.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False), default=None,
              metavar="FILE", help="Every row as CSV (one column per dimension).")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              metavar="FILE.svg", help="The time per value of each dimension as an SVG.")
@click.option("--save", default="sweep-best", show_default=True, metavar="NAME",
              help="Name the best correct variant is saved under.")
@common_options
@format_option("text", "json", "junit", "csv")
def sweep_cmd(dumpdir: str, range_text: str, local: tuple[str, ...], glob: tuple[str, ...],
              options: tuple[str, ...], defines: tuple[str, ...], params: tuple[str, ...],
              restrict: tuple[str, ...], sources: tuple[str, ...], patches: tuple[str, ...],
              budget: int | None, seed: int, repeat: int,
              results: str | None, csv_path: str | None, plot_path: str | None, save: str,
              devices: tuple[str, ...], mode: str,
              atol: float | None, rtol: float | None, ulp: int | None, arg_tol: tuple[str, ...],
              timeout: float, kernel: str | None, fmt: str) -> None:  # fmt: skip
    """Run every configuration of the values given (the cross product, or a sample of
    --budget N points; the capture's own configuration is always one), each checked
    against the capture on each device; configurations a device refuses (work-group
    limits) are skipped; the correct ones are ranked by the range's device time with their
    95% intervals; the fastest 3 per device run again beside the capture's own configuration,
    timed in turns (paired), and the best variant (the one measurably faster there by the
    most) is saved (--save) with what it got.  Each --options list also tries no option;
    --patch/--source go into every point but the capture's own; --csv and --plot write the
    rows and the time per value of each dimension.

    Rows stream as points end; ctrl-c stops (exit 130), and --results FILE resumes.  Exit
    0 when a correct variant was found, 1 when none was, 2 on bad input.
    """
    from cltui.commands.replay import child_ahead
    from cltui.replay.experiment.worker import MODULE

    as_json = fmt != "text"  # (quiet: stdout is the report)
    with child_ahead(MODULE) as ahead:  # it lists the devices while the capture opens
        from cltui.process import lifecycle
        from cltui.replay.experiment.runs import summarize
        from cltui.replay.experiment.sweep import load_results, points
        from cltui.replay.experiment.variant import VariantError

        spec = _spec(range_text, kernel, local, glob, options, defines, params, restrict)
        if sources or patches:
            spec = dataclasses.replace(spec, programs=tuple(program_changes(sources, patches)))
        cap, base, per_arg, rng = load_plan(dumpdir, range_text, mode, (atol, rtol, ulp), arg_tol,
                                       as_json)  # fmt: skip
        pts = points(spec, budget, seed)
        if budget is not None:
            echo(f"sweep: a random sample of {len(pts)} points (seed {seed}), the capture's "
                 f"own configuration among them", err=True)
        path = Path(results) if results else None
        try:
            done = load_results(path, spec, str(cap.path)) if path else []
        except VariantError as exc:
            fail(str(exc))
        chosen = chosen_devices(cap, rng, devices, ahead, timeout)
        workdir = lifecycle.temp_dir("sweep")
        try:
            plans = {_id(v): applied(base, v, cap.path, workdir) for v in pts}
            pts = same_dropped(pts, plans, base)
            rows, interrupted, confirmed = _run(spec, cap.path, pts, plans, chosen, done, path,
                                                repeat, per_arg, timeout, as_json,
                                                ahead)  # fmt: skip
        finally:
            lifecycle.remove(workdir)
    summary = summarize(spec, cap.path, pts, rows, [d["id"] for d in chosen], budget, seed,
                        path, save, interrupted, confirmed, base)  # fmt: skip
    report = _report(summary)
    output.emit(report, fmt)
    _files(report, csv_path, plot_path, as_json)
    sys.exit(130 if interrupted else (0 if summary["verdict"]["status"] == "pass" else 1))


def same_dropped(pts: list[Variant], plans: dict[str, Manifest],
                 base: Manifest) -> list[Variant]:  # fmt: skip
    """The points without those that run exactly the capture's own configuration (said on
    stderr, also with --json)."""
    from cltui.replay.experiment.apply import changes_nothing

    keep = [v for v in pts if v.empty or not changes_nothing(base, plans[_id(v)])]
    if len(keep) < len(pts):
        same = ", ".join(v.short() for v in pts if v not in keep)
        echo(f"sweep: the capture's own configuration already: {same} (not run again)", err=True)
    return keep


def _id(v: Variant) -> str:
    from cltui.replay.experiment.sweep import point_id

    return point_id(v)


def _run(spec: SweepSpec, root: Any, pts: list[Variant], plans: dict[str, Manifest],
         devices: list[Device], done: list[Row], path: Path | None, repeat: int, per_arg: Any,
         timeout: float, quiet: bool,
         ahead: Child | None) -> tuple[list[Row], bool, dict[str, Confirmed]]:  # fmt: skip
    """Each device's points not done yet (a child per device); rows as they end; then the
    fastest few re-measured side by side with the capture's own configuration."""
    from cltui.commands.experiment_text import sweep_row_text
    from cltui.progress import CancelToken
    from cltui.replay.experiment.runs import TOP, SweepRun

    cancel = CancelToken()
    run = SweepRun(spec, root, pts, plans, devices, done, path, repeat=repeat,
                   arg_tolerance=per_arg, timeout=timeout, cancel=cancel,
                   ahead=ahead)  # fmt: skip
    for dev in devices:  # on stderr, also with --json: what a resume skips
        before = len(pts) - len(run.todo(dev))
        echo(f"sweep on {dev['id']} {dev['name']}: {len(pts) - before} of {len(pts)} points "
             "to run" + (f" ({before} done before)" if before else ""), err=True)
    try:
        for n, row in enumerate(run.rows()):
            if not quiet:
                if n == 0:  # the child runs: this process waits, it can import the table's
                    import_ahead("rich.console", "rich.table")
                echo(sweep_row_text(dict(row)))
        echo(f"sweep: the fastest {TOP} correct points per device run again, side by side "
             "with the capture's own configuration (paired)", err=True)
        confirmed = run.confirm(TOP)
    except KeyboardInterrupt:
        cancel.cancel()
        return run.done, True, {}
    finally:
        run.close()  # a sweep process still waiting to confirm ends
    return run.done, False, confirmed


def _report(summary: dict[str, Any]) -> output.Report:
    """The sweep's report in each of its formats."""
    from cltui.commands.experiment_text import print_sweep
    from cltui.replay.experiment.junit import sweep_junit
    from cltui.replay.experiment.sweep_plot import csv_rows

    return output.Report(summary, lambda: print_sweep(summary),
                         junit=lambda: sweep_junit(summary), csv=lambda: csv_rows(summary))


def _files(report: output.Report, csv_path: str | None, plot_path: str | None,
           quiet: bool) -> None:  # fmt: skip
    """``--csv`` (the CSV format) and ``--plot``: written whole (a temporary file, then
    renamed)."""
    from cltui.replay.experiment.sweep_plot import svg_text

    for path, fmt in ((csv_path, "csv"), (plot_path, "svg")):
        if path is None:
            continue
        output.write_file(path, output.render(report, fmt) if fmt == "csv"
                          else svg_text(report.data))
        if not quiet:
            echo(f"wrote {path}", err=True)
