"""The options and arguments several commands take, in one wording each, and their parsing
(bad input: one line, exit 2).  A command that differs on purpose (``check``'s isolated
mode and 300 s, ``shrink``'s zero tolerances) says so through the parameters."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from cltui.commands._common import fail

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.capture.ranges import EnqueueRange
    from cltui.replay.engine.schema import ArgTolerance
    from cltui.replay.plan import Plan

F = TypeVar("F", bound=Callable[..., Any])

MODES = ("chain", "isolated", "strict")
MODE_HELP = ("chain: carry state, reload at host-side changes; isolated: each kernel from its "
             "own Pre dumps; strict: never reload.")  # fmt: skip
DEVICE_HELP = "P:D index or name substring (pocl, oclgrind); repeat for several devices."
HUNG_HELP = "Seconds without progress before a device is declared hung."


def device_option(help: str = DEVICE_HELP, **extra: Any) -> Callable[[F], F]:
    """``--device/-d`` into ``devices`` (repeatable): P:D index or name substring."""
    return click.option("--device", "-d", "devices", multiple=True, help=help, **extra)


def mode_option(default: str = "chain", help: str = MODE_HELP) -> Callable[[F], F]:
    """``--mode`` chain / isolated / strict."""
    return click.option("--mode", type=click.Choice(MODES), default=default,
                        show_default=True, help=help)  # fmt: skip


def tolerance_options(zero: bool = False, what: str = "") -> Callable[[F], F]:
    """``--atol``, ``--rtol``, ``--ulp``: unset by default (``None``: the plan's or the
    bundle's defaults stand), or 0 with ``zero``; never negative.  ``what`` starts each
    help ("Default " for export's bundle defaults)."""
    floats = click.FloatRange(min=0.0) if zero else float
    helps = [f"{what}{word} tolerance (floats)." for word in (
        ("absolute", "relative", "ULP") if what else ("Absolute", "Relative", "ULP"))]

    def wrap(f: F) -> F:
        f = click.option("--ulp", type=click.IntRange(0), default=0 if zero else None,
                         show_default=zero, help=helps[2])(f)
        f = click.option("--rtol", type=floats, default=0.0 if zero else None,
                         show_default=zero, help=helps[1])(f)
        return click.option("--atol", type=floats, default=0.0 if zero else None,
                            show_default=zero, help=helps[0])(f)

    return wrap


def arg_tol_option() -> Callable[[F], F]:
    """``--arg-tol I:KEY=V[,KEY=V]`` (repeatable), read by :func:`arg_tolerances`."""
    return click.option("--arg-tol", "arg_tol", multiple=True, metavar="I:KEY=V[,KEY=V]",
                        help="Tolerance for argument I only, e.g. 0:ulp=2.")  # fmt: skip


def timeout_option(
    default: float = 60.0, help: str = HUNG_HELP, minimum: float | None = None
) -> Callable[[F], F]:
    """``--timeout`` in seconds: a finite number, at least ``minimum`` or else positive;
    anything else is refused by click (exit 2) for every command (``try``/``sweep`` and
    ``latency`` took 0, and a NaN passed every command's check)."""

    def check(_ctx: click.Context, _param: click.Parameter, value: float) -> float:
        ok = math.isfinite(value) and (value >= minimum if minimum is not None else value > 0)
        if not ok:
            raise click.BadParameter(
                f"{value} is not a number of seconds "
                + (f">= {minimum:g}" if minimum is not None else "> 0")
            )
        return value

    return click.option("--timeout", type=float, default=default, show_default=True,
                        help=help, callback=check)  # fmt: skip


def range_of(text: str) -> EnqueueRange:
    """RANGE (12, 12-40, 12-, 12-40/saxpy) parsed; bad input is one line and exit 2."""
    from cltui.capture.ranges import RangeError, parse_range

    try:
        return parse_range(text)
    except RangeError as exc:
        fail(str(exc))


def arg_tolerances(specs: tuple[str, ...]) -> ArgTolerance:
    """The ``--arg-tol`` specs parsed; bad input is one line and exit 2."""
    from cltui.replay.tolerance import parse_arg_tolerances

    try:
        return parse_arg_tolerances(specs)
    except ValueError as exc:
        fail(f"bad --arg-tol {exc}")


def plan_of(
    cap: Capture, rng: EnqueueRange, mode: str,
    tol: tuple[float | None, float | None, int | None], per_arg: ArgTolerance,
) -> Plan:  # fmt: skip
    """The plan of RANGE in ``mode`` with ``--atol/--rtol/--ulp`` (unset: 0) and ``--arg-tol``;
    a range the plan refuses is one line and exit 2."""
    from cltui.replay.engine.compare import Tolerance
    from cltui.replay.plan import PlanError, build_plan

    atol, rtol, ulp = tol
    try:
        return build_plan(cap, rng, mode, Tolerance(atol or 0.0, rtol or 0.0, ulp or 0), per_arg)
    except PlanError as exc:
        fail(str(exc))
