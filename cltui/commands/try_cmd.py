"""``cltui try DUMPDIR RANGE [changes]``: the range as captured (A) and with changes (B), in
one process per device, both checked against the capture, timed in turns (A B B A ...)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from cltui.commands._common import echo, fail, import_ahead
from cltui.commands._experiment import (
    applied,
    chosen_devices,
    common_options,
    load_plan,
    program_changes,
    target_of,
)
from cltui.commands.output import format_option

if TYPE_CHECKING:
    from cltui.replay.experiment.variant import Variant


def variant_options(f: Any) -> Any:
    """The changes ``try`` takes (one value each)."""
    opts = [
        click.option("--source", "sources", multiple=True, metavar="[PROG=]FILE",
                     help="A new source for program PROG (p17, 17, 0017)."),
        click.option("--patch", "patches", multiple=True, metavar="[PROG=]FILE",
                     help="A unified diff applied to PROG's source (strictly)."),
        click.option("--options", "options_add", multiple=True, metavar="TEXT",
                     help="Build options to add, e.g. --options=-cl-mad-enable."),
        click.option("--remove-option", "options_remove", multiple=True, metavar="TEXT",
                     help="A build option to remove (every occurrence)."),
        click.option("--replace-options", default=None, metavar="TEXT",
                     help="Build options in place of the captured ones."),
        click.option("--define", "defines", multiple=True, metavar="K=V",
                     help="-D K=V (replaces a captured -D K; refused where the source's own "
                     "#define K would override it: use --param)."),
        click.option("--param", "params", multiple=True, metavar="NAME=V",
                     help="Set the source's own #define NAME to V (a -D where the source "
                     "has none), e.g. --param WGS=64."),
        click.option("--local", "local_size", default=None, metavar="NxN", help="Local size."),
        click.option("--global", "global_size", default=None, metavar="NxN",
                     help="Global size."),
        click.option("--offset", default=None, metavar="NxN", help="Global offset."),
        click.option("--arg", "scalars", multiple=True, metavar="I=V",
                     help="Scalar argument I set to V."),
    ]  # fmt: skip
    for opt in reversed(opts):
        f = opt(f)
    return f


def variant_from_cli(range_text: str, kernel: str | None, kw: dict[str, Any]) -> Variant:
    """The variant the options describe (bad input: exit 2)."""
    from cltui.replay.experiment.variant import (
        ScalarChange,
        SizeChange,
        Variant,
        parse_define,
        parse_param,
        parse_size,
    )

    target = target_of(kernel)
    try:
        sizes: list[SizeChange] = []
        g, loc, off = (kw.get("global_size"), kw.get("local_size"), kw.get("offset"))
        if g or loc or off:
            sizes.append(SizeChange(
                target,
                parse_size(g) if g else None,
                parse_size(loc) if loc else None,
                parse_size(off, zero=True) if off else None,
            ))  # fmt: skip
        scalars = []
        for spec in kw.get("scalars", ()):
            idx, eq, value = spec.partition("=")
            if not eq or not idx.strip().isdigit():
                raise ValueError(f"--arg {spec!r} is not I=V")
            scalars.append(ScalarChange(target, int(idx), value.strip()))
        defines = tuple(parse_define(d) for d in kw.get("defines", ()))
        params = tuple(parse_param(d) for d in kw.get("params", ()))
    except ValueError as exc:
        fail(str(exc))
    return Variant(
        range=range_text,
        kernel=kernel,
        programs=tuple(program_changes(kw.get("sources", ()), kw.get("patches", ()))),
        options_add=tuple(kw.get("options_add", ())),
        options_remove=tuple(kw.get("options_remove", ())),
        options_replace=kw.get("replace_options"),
        defines=defines,
        params=params,
        sizes=tuple(sizes),
        scalars=tuple(scalars),
    )


@click.command("try")
@click.argument("dumpdir", type=click.Path())
@click.argument("range_text", metavar="RANGE")
@variant_options
@click.option("--variant", "variant_ref", default=None, metavar="NAME|PATH",
              help="Run a saved variant (cltui variant list) instead of the changes given.")
@click.option("--repeat", type=click.IntRange(2, 100000), default=30, show_default=True,
              help="Runs of each side: the first validates, the others are timed in turns.")
@click.option("--save", default=None, metavar="NAME",
              help="Keep the variant under NAME (cltui variant list).")
@click.option("--min-effect", type=click.FloatRange(0.0, 100.0, max_open=True), default=None,
              metavar="PCT", help="The smallest change (%% of A's time) called faster or "
              "slower [default: the device's A/A calibration, measured once and kept].")
@common_options
@format_option("text", "json", "junit")
def try_cmd(dumpdir: str, range_text: str, variant_ref: str | None, repeat: int,
            save: str | None, min_effect: float | None, devices: tuple[str, ...], mode: str,
            atol: float | None, rtol: float | None, ulp: int | None, arg_tol: tuple[str, ...],
            timeout: float, kernel: str | None, fmt: str, **kw: Any) -> None:  # fmt: skip
    """Run RANGE as captured (A) and with the changes given (B) on each device, in one
    process, each checked against the capture's outputs; the timing difference of B
    against A per enqueue and for the range (median, 95% bootstrap interval).

    The verdict line leads: the variant's checks first (a variant that breaks a check is
    FAIL whatever its speed), then its timing: faster or slower only when the interval
    excludes zero and the change reaches the device's noise floor (the spread of an A/A
    run, a no-op change, measured the first time on each device and kept), else "within
    noise"; the per-step rows' intervals are widened for their number (Bonferroni).
    Exit 0 when the variant passes, 1 when it fails or cannot run, 2 on bad input, 3 when
    nothing failed but something was left unchecked, 130 on ctrl-c.
    """
    from cltui.commands.replay import child_ahead
    from cltui.replay.experiment.worker import MODULE

    as_json = fmt != "text"  # (quiet: stdout is the report)
    if variant_ref is not None and any(v for v in kw.values()):
        fail("give either --variant NAME or changes (--patch, --local, ...), not both")
    with child_ahead(MODULE) as ahead:  # it lists the devices while the capture opens
        from cltui.process import lifecycle
        from cltui.replay.experiment.variant import VariantError

        cap, base, per_arg, rng = load_plan(dumpdir, range_text, mode, (atol, rtol, ulp), arg_tol,
                                       as_json)  # fmt: skip
        if variant_ref is not None:
            from cltui.replay.experiment.store import load_variant

            try:
                variant = load_variant(cap.path, variant_ref)
            except VariantError as exc:
                fail(str(exc))
        else:
            variant = variant_from_cli(range_text, kernel, kw)
        workdir = lifecycle.temp_dir("variant")
        try:
            plan = applied(base, variant, cap.path, workdir)
            chosen = chosen_devices(cap, rng, devices, ahead, timeout)
            report = run_ab(base, plan, chosen, cap.path, repeat, per_arg, timeout, as_json,
                            ahead, None if min_effect is None else min_effect / 100.0)  # fmt: skip
        finally:
            lifecycle.remove(workdir)
    if save:
        _save(cap.path, variant, save, as_json)
    sys.exit(emit(report, fmt, plan))


def _save(path: Any, variant: Variant, name: str, quiet: bool) -> None:
    from cltui.replay.experiment.store import save_variant
    from cltui.replay.experiment.variant import VariantError

    try:
        folder = save_variant(path, variant, name)
    except (VariantError, OSError) as exc:
        fail(f"cannot save the variant: {exc}")
    if not quiet:
        echo(f"saved as variant {name} ({folder})", err=True)


def run_ab(base: Any, plan: Any, devices: Any, root: Any, repeat: int, per_arg: Any,
           timeout: float, quiet: bool, ahead: Any = None,
           min_effect: float | None = None) -> Any:  # fmt: skip
    """A and B on each device (a child each); the report; ctrl-c: exit 130."""
    from cltui.progress import CancelToken, ProgressEvent
    from cltui.replay.experiment.runs import run_ab as run

    def said(ev: ProgressEvent) -> None:
        if not quiet:
            echo(f"{ev.what} ...", err=True)

    if not quiet:
        import_ahead("rich.console", "rich.table")  # for the report at the end
    cancel = CancelToken()
    try:
        return run(base, plan, devices, root, repeat, arg_tolerance=per_arg, timeout=timeout,
                   cancel=cancel, progress=said, ahead=ahead,
                   min_effect=min_effect)  # fmt: skip
    except KeyboardInterrupt:
        cancel.cancel()
        fail("interrupted", 130)


def emit(report: Any, fmt: str, plan: Any) -> int:
    """Print the report (``plan``: the variant's) in the format chosen; its exit code (the
    variant's verdict)."""
    from cltui.commands import output
    from cltui.commands.experiment_text import print_ab
    from cltui.replay.engine import verdict_exit
    from cltui.replay.experiment.junit import ab_junit

    output.emit(output.Report(report, lambda: print_ab(report),
                              junit=lambda: ab_junit(report, plan)), fmt)
    return verdict_exit(str(report["verdict"]["status"]))
