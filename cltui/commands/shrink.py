"""``cltui shrink DUMPDIR RANGE [--device D]``: the smallest part of a range that still fails."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from cltui.commands import options
from cltui.commands._common import EXIT_MISMATCH, EXIT_OK, echo, fail, load_capture
from cltui.commands.output import format_option

if TYPE_CHECKING:
    from cltui.analysis.shrink import ShrinkResult
    from cltui.capture.capture import Capture
    from cltui.capture.ranges import EnqueueRange
    from cltui.replay.engine.compare import Tolerance
    from cltui.replay.engine.schema import Device


@click.command("shrink")
@click.argument("dumpdir", type=click.Path())
@click.argument("range_text", metavar="RANGE")
@click.option("--device", "-d", "device", default=None,
              help="The device to replay on: P:D index or name substring (pocl, oclgrind); "
              "default: the capture's device, else the one named most like it, else the first "
              "that is not a simulator (stderr says which and why).")
@click.option("--against", default="capture", show_default=True, metavar="capture|DEVICE",
              help="Compare with the capture's Post dumps, or with the same replay on DEVICE.")
@options.mode_option(help=f"How each tried set is replayed. {options.MODE_HELP}")
@options.tolerance_options(zero=True)
@options.timeout_option(minimum=1.0)
@click.option("--export", "export_dir", type=click.Path(), default=None, metavar="OUTDIR",
              help="Export the smallest failing set as a replay bundle (as `cltui export`).")
@click.option("--force", is_flag=True, help="Replace an existing --export folder.")
@format_option("text", "json", "junit", what="the result")
def shrink_cmd(dumpdir: str, range_text: str, device: str | None, against: str, mode: str,
               atol: float, rtol: float, ulp: int, timeout: float, export_dir: str | None,
               force: bool, fmt: str) -> None:
    """Shrink RANGE to the smallest set of enqueues that still shows a mismatch.

    Enqueues are removed (delta debugging) while the replay on --device still differs
    from the capture (or from --against DEVICE); the inputs a kept kernel needs from a
    removed one are loaded from the capture. Exit 1 when a failing set is found (it is
    printed, and exported with --export), 0 when the range shows no mismatch at all,
    2 on bad input.
    """
    from cltui.analysis.junit import shrink_junit
    from cltui.analysis.shrink import ShrinkError, Trial, shrink
    from cltui.commands import output
    from cltui.replay.engine.compare import Tolerance

    as_json = fmt != "text"  # (quiet: stdout is the report)
    rng = options.range_of(range_text)
    cap = load_capture(dumpdir, quiet=as_json)
    dev, choice, other = _devices(cap, rng, device, against)

    def on_trial(t: Trial) -> None:
        if not as_json:
            what = "fails" if t.failed else "passes"
            echo(f"  tried {_set_text(t.enqueues)} ({t.mode}): {what}", err=True)

    try:
        res = shrink(cap, rng, dev, against=other, mode=mode,
                     tolerance=Tolerance(atol, rtol, ulp), timeout=timeout, on_trial=on_trial)
    except ShrinkError as exc:
        fail(str(exc))
    exported: dict[str, Any] | None = None
    export_error = ""
    if export_dir is not None and res.failed:
        exported, export_error = _export(cap, res, export_dir, mode, force,
                                         Tolerance(atol, rtol, ulp))
    data = res.to_dict()
    data["device_choice"] = choice
    data["export"] = exported
    data["export_error"] = export_error or None

    def text() -> None:
        _print(res, len(res.trials))
        if exported is not None:
            echo(f"exported to {exported['outdir']} (run: python replay.py --validate)")

    output.emit(output.Report(data, text, junit=lambda: shrink_junit(res, _set_text(res.result))),
                fmt)
    if export_error:
        echo(f"cltui: {export_error}", err=True)
    raise SystemExit(EXIT_MISMATCH if res.failed else EXIT_OK)


def _devices(
    cap: Capture, rng: EnqueueRange, device: str | None, against: str
) -> tuple[Device, dict[str, str], str | Device]:
    """The device to shrink on, why it was chosen (said on stderr), and what to compare
    with ("capture" or the --against device); bad input is one line and exit 2."""
    from cltui.replay.devices import DeviceError, devices_for, select_devices
    from cltui.replay.engine import choice_line

    try:
        found, choice = devices_for(cap, rng, [device] if device is not None else [])
        dev = found[0]  # a name that several devices share: the first of them
        click.echo(f"device: {choice_line([dev], choice)}", err=True)
        other: str | Device = "capture"
        if against.strip().lower() != "capture":
            other = select_devices([against])[0]
            if other["id"] == dev["id"]:
                fail(f"--against {against!r} is the --device itself")
    except DeviceError as exc:
        fail(str(exc))
    return dev, choice, other


def _export(
    cap: Capture, res: ShrinkResult, export_dir: str, mode: str, force: bool, tol: Tolerance
) -> tuple[dict[str, Any] | None, str]:
    """--export: the smallest failing set as a bundle; (what was written, why not)."""
    from cltui.analysis.shrink import is_kernel_range
    from cltui.capture.ranges import EnqueueRange

    if not is_kernel_range(cap, res.result):
        return None, (f"enqueues {_set_text(res.result)} are not a contiguous range of "
                      "kernel enqueues, which is what a bundle holds: not exported")
    from cltui.export import ExportError, export_range

    sub = EnqueueRange(res.result[0], res.result[-1])
    try:
        er = export_range(cap, sub, export_dir, mode=mode, force=force, tolerance=tol.to_dict())
    except ExportError as exc:
        return None, str(exc)
    return er.to_dict(), ""


def _set_text(enqueues: list[int]) -> str:
    """``3-7, 9, 12``."""
    parts: list[str] = []
    run: list[int] = []
    for e in enqueues:
        if run and e != run[-1] + 1:
            parts.append(_run_text(run))
            run = []
        run.append(e)
    if run:
        parts.append(_run_text(run))
    return ", ".join(parts) if parts else "(none)"


def _run_text(run: list[int]) -> str:
    return str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}"


def _print(res: ShrinkResult, runs: int) -> None:
    from cltui.analysis.shrink import AGAINST_CAPTURE

    vs = "the capture" if res.against == AGAINST_CAPTURE else res.against
    echo(f"{res.capture}: range {res.range} ({len(res.start)} kernel enqueues) on {res.device} "
         f"against {vs}, {res.mode} mode")
    if not res.failed:
        echo(f"the range shows no mismatch ({runs} run{'s' if runs != 1 else ''}): "
             "nothing to shrink")
        return
    how = ("fails on its own (isolated run)" if res.method == "isolated"
           else "1-minimal, found by ddmin")
    echo(f"smallest failing set: {_set_text(res.result)} ({len(res.result)} of "
         f"{len(res.start)} enqueues; {how}; {runs} run{'s' if runs != 1 else ''})")
    if res.mismatch:
        echo(f"  mismatch: {res.mismatch}")
    for note in res.notes:
        echo(f"  note: {note}")
