"""What ``cltui try``, ``cltui sweep`` and ``cltui variant`` share: the capture's plan, the
devices, a variant from the command line, applying it (bad input: one line, exit 2)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from cltui.capture.safeopen import MAX_SOURCE, read_text_limited
from cltui.commands import options
from cltui.commands._common import fail

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.capture.ranges import EnqueueRange
    from cltui.process.child import Child
    from cltui.replay.engine.schema import ArgTolerance, Device, Manifest
    from cltui.replay.experiment.variant import ProgramChange, Variant

F = TypeVar("F", bound=Callable[..., Any])


def common_options(f: F) -> F:
    """The options every experiment command takes (devices, mode, tolerances, the kernel);
    each takes its own formats (:func:`cltui.commands.output.format_option`)."""
    opts = [
        options.device_option(),
        options.mode_option(),
        options.tolerance_options(),
        options.arg_tol_option(),
        options.timeout_option(),
        click.option("--kernel", default=None, metavar="NAME|N",
                     help="Work sizes, scalars and program changes apply to this kernel "
                     "(a name, or an enqueue number for sizes and scalars) only."),
    ]  # fmt: skip
    for opt in reversed(opts):
        f = opt(f)
    return f


def load_plan(
    dumpdir: str, range_text: str, mode: str, tol: tuple[float | None, float | None, int | None],
    arg_tol: tuple[str, ...], quiet: bool,
) -> tuple[Capture, Manifest, ArgTolerance, EnqueueRange]:  # fmt: skip
    """The capture, its plan of RANGE and the range (bad input: exit 2)."""
    from cltui.commands._common import load_capture

    rng, per_arg = options.range_of(range_text), options.arg_tolerances(arg_tol)
    cap = load_capture(dumpdir, quiet=quiet)
    return cap, options.plan_of(cap, rng, mode, tol, per_arg).to_manifest(), per_arg, rng


def chosen_devices(cap: Capture, rng: EnqueueRange, devices: tuple[str, ...],
                   ahead: Child | None = None, timeout: float = 60.0) -> list[Device]:  # fmt: skip
    """``--device`` as given, else the capture's device by the house rule (a line on stderr);
    of the devices ``ahead`` listed (the experiment's child, started ahead of its job)."""
    from cltui.commands._common import echo
    from cltui.commands.replay import _choose_devices
    from cltui.replay.engine import choice_line

    chosen, choice = _choose_devices(cap, rng, devices, ahead, timeout)
    echo(f"device: {choice_line(chosen, choice)}", err=True)
    return chosen


def program_changes(sources: tuple[str, ...], patches: tuple[str, ...]) -> list[ProgramChange]:
    """``--source [PROG=]FILE`` and ``--patch [PROG=]FILE`` read (a missing file: exit 2)."""
    from cltui.replay.experiment.variant import ProgramChange

    out: list[ProgramChange] = []
    for spec, is_patch in [(s, False) for s in sources] + [(p, True) for p in patches]:
        prog, eq, path = spec.partition("=")
        if not eq or Path(spec).exists():
            prog, path = "", spec
        try:
            text = read_text_limited(path, MAX_SOURCE, follow=True)  # not a FIFO, bounded
        except (OSError, UnicodeDecodeError) as exc:
            what = "--patch" if is_patch else "--source"
            fail(f"{what} {path}: {getattr(exc, 'strerror', None) or exc}")
        out.append(ProgramChange(prog, None if is_patch else text, text if is_patch else None))
    return out


def applied(manifest: Manifest, variant: Variant, root: str | Path, workdir: Path) -> Manifest:
    """The variant's plan (a change that does not fit the range: exit 2)."""
    from cltui.replay.experiment.apply import apply_variant
    from cltui.replay.experiment.variant import VariantError

    try:
        return apply_variant(manifest, variant, root, workdir)
    except VariantError as exc:
        fail(str(exc))


def target_of(kernel: str | None) -> str:
    from cltui.replay.experiment.variant import parse_target

    return parse_target(kernel)
