"""``cltui replay DUMPDIR RANGE``: replay a range of enqueues on devices and compare."""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, cast

import click

if TYPE_CHECKING:

    from cltui.analysis.probe import ProbeReport
    from cltui.capture.capture import Capture
    from cltui.capture.ranges import EnqueueRange
    from cltui.process.child import Child
    from cltui.replay.engine.schema import ArgTolerance, Device, DeviceChoice, Manifest, Report
    from cltui.replay.runner import ReplayJob

from cltui.commands import _common, options
from cltui.commands._common import (
    EXIT_BAD_INPUT,
    EXIT_MISMATCH,
    echo,
    fail,
    import_ahead,
)
from cltui.commands.output import format_option
from cltui.commands.replay_text import print_report


@click.command("replay")
@click.argument("dumpdir", type=click.Path())
@click.argument("range_text", metavar="RANGE")
@options.device_option()
@options.mode_option()
@click.option(
    "--repeat",
    type=click.IntRange(1, 100000),
    default=1,
    show_default=True,
    help="Launch the range N times (inputs restored) for timing statistics.",
)
@options.tolerance_options()
@options.arg_tol_option()
@options.timeout_option()
@click.option(
    "--outputs",
    type=click.Path(file_okay=False),
    default=None,
    help="Keep the replayed outputs in this folder.",
)
@click.option(
    "--probe",
    is_flag=True,
    help="Flag outputs that vary across the --repeat repetitions on one device "
    "(nondeterminism); at least 2 repetitions.",
)
@format_option("text", "json", "junit")
def replay_cmd(
    dumpdir: str,
    range_text: str,
    devices: tuple[str, ...],
    mode: str,
    repeat: int,
    atol: float | None,
    rtol: float | None,
    ulp: int | None,
    arg_tol: tuple[str, ...],
    timeout: float,
    outputs: str | None,
    probe: bool,
    fmt: str,
) -> None:
    """Replay the kernel enqueues of RANGE (12, 12-40, 12-, 12-40/saxpy) on devices.

    Each enqueue's results are compared, argument by argument, with the capture's Post
    dumps (and devices with each other).  Exit 0 when every kernel enqueue was replayed and
    every output checked and equal (PASS), 1 on a mismatch, a crash or a hang, 2 on bad
    input, 3 when nothing failed but something was skipped, unchecked or not replayed.
    With --probe, also 1 when an output varies across the repetitions.
    """
    rng, per_arg = options.range_of(range_text), options.arg_tolerances(arg_tol)
    with child_ahead("cltui.replay.runner") as ahead:  # while the capture opens
        _replay(dumpdir, rng, per_arg, devices, mode, repeat, (atol, rtol, ulp), timeout,
                outputs, probe, fmt, ahead)  # fmt: skip


def _replay(
    dumpdir: str, rng: EnqueueRange, per_arg: ArgTolerance, devices: tuple[str, ...],
    mode: str, repeat: int, tol: tuple[float | None, float | None, int | None],
    timeout: float, outputs: str | None, probe: bool, fmt: str, ahead: Child | None,
) -> None:  # fmt: skip
    from cltui.commands._common import load_capture
    from cltui.replay import runner
    from cltui.replay.engine import choice_line

    as_json = fmt != "text"  # (quiet: stdout is the report)
    cap = load_capture(dumpdir, quiet=as_json)
    plan = options.plan_of(cap, rng, mode, tol, per_arg)
    chosen, choice = _choose_devices(cap, rng, devices, ahead, timeout)
    echo(f"device: {choice_line(chosen, choice)}", err=True)
    manifest = plan.to_manifest()
    if probe:
        repeat = max(repeat, 2)
    job = runner.start(
        manifest,
        chosen,
        data_root=cap.path,
        repeat=repeat,
        arg_tolerance=per_arg,
        timeout=timeout,
        save_dir=outputs,
        probe=probe,
        ahead=ahead,
    )
    finished = _follow(job, len(plan.steps), as_json)
    report = job.report if finished else job.partial_report()
    assert report is not None
    for res in report["devices"]:
        res["device_choice"] = cast("DeviceChoice", choice)
    if not finished:  # ctrl-c, SIGTERM: what finished before it, then exit 130
        if outputs is None:
            job.cleanup()
            _forget_outputs(report)
        echo("interrupted: the report holds what finished before it", err=True)
        _emit(report, manifest, None, fmt)
        fail("interrupted", 130)
    probes = probe_report(report, manifest) if probe else None
    if outputs is None:
        job.cleanup()
        _forget_outputs(report)
    sys.exit(_emit(report, manifest, probes, fmt))


def _emit(
    report: Report, manifest: Manifest, probes: list[ProbeReport] | None, fmt: str
) -> int:
    """Print the report (text, --json or JUnit) with what --probe found; the exit code."""
    from cltui.commands import output
    from cltui.replay.junit import replay_junit

    deterministic = True
    if probes is not None:
        report["probe"] = [p.to_dict() for p in probes]
        deterministic = all(p.deterministic for p in probes)

    def text() -> None:
        print_report(report, manifest)
        if probes is not None:
            print_probe(probes)

    output.emit(output.Report(report, text, junit=lambda: replay_junit(report, manifest)), fmt)
    return exit_code(report, deterministic)


def _choose_devices(
    cap: Capture, rng: EnqueueRange, devices: tuple[str, ...],
    ahead: Child | None = None, timeout: float = 60.0,
) -> tuple[list[Device], dict[str, str]]:  # fmt: skip
    """--device as given, else the capture's device by the device rule
    (:func:`cltui.replay.devices.devices_for`); bad input: exit 2.  The devices are those
    ``ahead`` (a child started ahead of its job) listed, else listed here (``ahead`` is
    killed then: its job starts a child the usual way)."""
    from cltui.replay.devices import DeviceError, devices_for

    listed = ahead.listed_devices(timeout) if ahead is not None else None
    _started()
    if listed is None and ahead is not None:
        ahead.kill()
    try:
        return devices_for(cap, rng, devices, cast("list[Device] | None", listed))
    except DeviceError as exc:
        fail(str(exc))


@contextlib.contextmanager
def child_ahead(module: str) -> Iterator[Child | None]:
    """``python -m module`` started now, ahead of its job (it imports the engine and lists
    the devices while this process opens the capture and makes the plan: see
    :func:`cltui.process.child.start_ahead`); killed on the way out, its folder removed."""
    from cltui.process import lifecycle
    from cltui.process.child import start_ahead

    folder = lifecycle.temp_dir("replay")
    child = start_ahead(module, folder / "stderr_ahead.txt")
    # until the devices are chosen (:func:`_started`): imports, the capture's index, the
    # plan, which leave next to no cyclic garbage; the collections they would trigger cost
    # 20-40 ms here (0.2 s on heat2d_large's index), memory the same
    if _common.STANDALONE:
        gc.disable()
    try:
        yield child
    finally:
        _started()
        if child is not None:
            child.kill()
        lifecycle.remove(folder)


def _started() -> None:
    """The start-up is over: the collector on again, what start-up made frozen (modules,
    the capture's index: later collections leave them out)."""
    if _common.STANDALONE and not gc.isenabled():
        gc.freeze()
        gc.enable()


def _follow(job: ReplayJob, n_steps: int, as_json: bool) -> bool:
    """Wait for the replay, saying on stderr which device runs (and, on a terminal, which
    enqueue); False when ctrl-c or SIGTERM stopped it (the child is stopped then)."""
    show_progress = not as_json and sys.stderr.isatty()
    imported = as_json  # the report's rich: imported while the child runs
    try:
        for ev in job.events():
            if not imported and ev["type"] in ("build", "step"):
                import_ahead("rich.console", "rich.table")
                imported = True
            if ev["type"] == "device" and not as_json:
                echo(
                    f"replaying {n_steps} enqueues on {ev['device']} {ev['name']} ...",
                    err=True,
                )
            elif ev["type"] == "step" and show_progress:
                click.echo(  # numbers only; the \r redraws the progress line
                    f"\r  {ev['i'] + 1}/{ev['n']} enqueue {ev['enqueue']}   ", err=True, nl=False
                )
            elif ev["type"] == "device_done" and show_progress:
                echo("", err=True)
    except KeyboardInterrupt:  # ctrl-c, SIGTERM: stop the child
        job.cancel()
        if show_progress:
            echo("", err=True)
        return False
    return True


def _forget_outputs(report: Report) -> None:
    """Without --outputs the replayed files are removed: the report names none."""
    report["outputs"] = None
    for res in report["devices"]:
        for st in res.get("steps", []):
            for c in st["checks"]:
                c["output"] = None
        res.pop("probe", None)  # its files are gone


def exit_code(report: Report, deterministic: bool = True) -> int:
    """The verdict's exit code (0 pass, 1 fail, 3 incomplete); a nondeterministic output
    found by --probe fails."""
    from cltui.replay.engine import verdict_exit

    code = verdict_exit(str(report["verdict"]["status"]))
    return EXIT_MISMATCH if not deterministic else code  # a failure dominates incomplete


def probe_report(report: Report, manifest: Manifest) -> list[ProbeReport]:
    """One :class:`~cltui.analysis.probe.ProbeReport` per device that ran (``--probe``)."""
    from cltui.analysis.probe import meta_of, probe_outputs
    from cltui.replay.cross import probe_runs

    meta = meta_of(manifest)
    out = []
    for res in report["devices"]:
        runs = probe_runs(res)
        rep = probe_outputs(runs, meta)
        if res.get("error"):
            rep.errors.append(str(res["error"]))
        elif not runs:
            rep.errors.append("the device result holds no probed outputs")
        rep.device = f"{res['device']['id']} {res['device']['name']}"
        out.append(rep)
    return out


def print_probe(probes: list[ProbeReport]) -> None:
    """``--probe``: per device, deterministic or each varying output with its figures."""
    for p in probes:
        if p.deterministic:
            echo(f"probe {p.device}: deterministic ({p.outputs} outputs, {p.runs} runs)")
            continue
        if p.varying:
            echo(f"probe {p.device}: NONDETERMINISTIC ({len(p.varying)} of {p.outputs} "
                       f"outputs vary over {p.runs} runs)")
        else:
            echo(f"probe {p.device}: undecided (a run failed)")
        for v in p.varying:
            echo(f"  enqueue {v.enqueue} {v.meta.kernel} {v.meta.label}: {v.summary()}")
        for e in p.errors:
            echo(f"  error: {e}")
    for p in probes:
        for m in p.missing:
            echo(f"probe {p.device}: {m}")


__all__ = ["EXIT_BAD_INPUT", "replay_cmd"]
