"""``cltui fleet DUMPDIR RANGE --hosts INVENTORY`` / ``cltui fleet BUNDLE --hosts INVENTORY``:
one range on every host and device of an inventory, one matrix."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cltui.commands._common import echo, emit_json, fail

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.fleet.host import RunSettings
    from cltui.fleet.inventory import Host
    from cltui.progress import ProgressEvent, ProgressFn
    from cltui.replay.engine.schema import ArgTolerance, ToleranceSpec


@click.command("fleet")
@click.argument("source", type=click.Path())
@click.argument("range_text", metavar="[RANGE]", required=False)
@click.option("--hosts", "inventory", required=True, type=click.Path(),
              help="Inventory: Ansible INI or YAML, or [user@]host[:port] lines.")
@click.option("--runner", type=click.Choice(["python", "cpp"]), default=None,
              help="The bundle's runner on every host (default: the host's cltui_runner, "
              "else python).")
@click.option("--device", "-d", "devices", multiple=True,
              help="P:D index or name substring on every host (default: the host's "
              "cltui_devices, else every device); repeat for several.")
@click.option("--jobs", type=click.IntRange(1, 256), default=8, show_default=True,
              help="Hosts at a time.")
@click.option("--timeout", type=float, default=120.0, show_default=True,
              help="Seconds a host may go without progress (connecting, sending, building, "
              "replaying) before it is declared hung.")
@click.option("--mode", type=click.Choice(["chain", "isolated", "strict"]), default="chain",
              show_default=True, help="The export's mode (DUMPDIR RANGE only).")
@click.option("--atol", type=float, default=None, help="Absolute tolerance (floats).")
@click.option("--rtol", type=float, default=None, help="Relative tolerance (floats).")
@click.option("--ulp", type=click.IntRange(0), default=None, help="ULP tolerance (floats).")
@click.option("--arg-tol", "arg_tol", multiple=True, metavar="I:KEY=V[,KEY=V]",
              help="Tolerance for argument I only, e.g. 0:ulp=2.")
@click.option("--json", "as_json", is_flag=True, help="The matrix as JSON.")
@click.option("--junit", "junit", type=click.Path(dir_okay=False), default=None,
              help="Also write JUnit XML here (one test case per enqueue and device).")
def fleet_cmd(
    source: str, range_text: str | None, inventory: str, runner: str | None,
    devices: tuple[str, ...], jobs: int, timeout: float, mode: str, atol: float | None,
    rtol: float | None, ulp: int | None, arg_tol: tuple[str, ...], as_json: bool,
    junit: str | None,
) -> None:
    """Replay a range (DUMPDIR RANGE) or an exported bundle (BUNDLE) on every host of an
    inventory, over the user's own ssh, and compare everything in one matrix.

    Exit 0 when every device of every host replayed the range and every output is equal
    (PASS), 1 on a difference, a hang or a crash, 2 on bad input, 3 when nothing failed
    but something did not run or was not checked (a host down or refusing the login, a
    missing dependency, a lost connection, an enqueue that cannot run on a device), 130
    on ctrl-c or SIGTERM (what finished is printed first).
    """
    from cltui.fleet.host import RunSettings
    from cltui.fleet.inventory import read_inventory
    from cltui.replay import lifecycle

    if timeout <= 0:
        fail("--timeout must be positive")
    per_arg = _arg_tol(arg_tol)
    cap = None
    if range_text is not None:  # a capture that is none fails first, as for every command
        from cltui.commands._common import load_capture

        cap = load_capture(source, quiet=as_json)
    hosts = read_inventory(inventory)
    tol: ToleranceSpec = {}
    if atol is not None:
        tol["atol"] = atol
    if rtol is not None:
        tol["rtol"] = rtol
    if ulp is not None:
        tol["ulp"] = ulp
    settings = RunSettings(runner=runner, devices=devices, timeout=timeout, tolerance=tol)
    tmp, bundle = _bundle(Path(source), cap, range_text, mode, per_arg)
    try:
        report, interrupted = _run(bundle, hosts, settings, jobs, per_arg, as_json)
    finally:
        if tmp is not None:
            lifecycle.remove(tmp)
    if tmp is not None:
        report["bundle"]["path"] = None  # a private copy (--arg-tol), removed
    report["bundle"]["source"] = str(source)
    report["bundle"]["range"] = range_text
    if junit:
        _write_junit(report, Path(junit))
    if as_json:
        emit_json(report)
    else:
        from cltui.commands.fleet_text import print_fleet

        print_fleet(report)
    if interrupted:
        fail("interrupted (what finished is above)", 130)
    from cltui.fleet.matrix import exit_code

    sys.exit(exit_code(report))


def _arg_tol(specs: tuple[str, ...]) -> ArgTolerance:
    from cltui.replay.tolerance import parse_arg_tolerances

    try:
        return parse_arg_tolerances(specs)
    except ValueError as exc:
        fail(f"bad --arg-tol {exc}")


def _bundle(
    source: Path, cap: Capture | None, range_text: str | None, mode: str, per_arg: ArgTolerance
) -> tuple[Path | None, Path]:
    """The bundle to send, and the temp folder to remove after (None: nothing to remove)."""
    from cltui.fleet.bundle import export_cached, private_copy, with_arg_tolerance

    if cap is None or range_text is None:
        if not (source / "manifest.json").is_file():
            fail(f"{source} is not a bundle folder (no manifest.json): give BUNDLE, or "
                 "DUMPDIR RANGE")
        bundle = source
    else:
        bundle = export_cached(cap, range_text, mode)
    tmp: Path | None = None
    if per_arg:
        tmp, bundle = private_copy(bundle)
        with_arg_tolerance(bundle, per_arg)
    return tmp, bundle


def _run(bundle: Path, hosts: list[Host], settings: RunSettings, jobs: int,
         per_arg: ArgTolerance, as_json: bool) -> tuple[dict[str, Any], bool]:
    """The fleet job in a thread, and whether it was interrupted: ctrl-c or SIGTERM cancels
    it (hosts stop, their scratch folders go) and its report keeps what finished."""
    from cltui.fleet.job import run_fleet
    from cltui.progress import CancelToken

    token = CancelToken()
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["report"] = run_fleet(bundle, hosts, settings, jobs=jobs, cancel=token,
                                      progress=_printer(as_json), arg_tolerance=per_arg)
        except BaseException as exc:  # handed to the main thread
            box["error"] = exc
        finally:
            finished.set()

    finished = threading.Event()  # (not Thread.join: an interrupted join may misreport)
    th = threading.Thread(target=work, name="cltui-fleet", daemon=True)
    th.start()
    interrupted = False
    while not finished.is_set():
        try:
            finished.wait(0.2)
        except KeyboardInterrupt:  # the hosts stop (bounded), then what finished is said
            if interrupted:  # twice: no more waiting (the ssh masters stop at exit)
                fail("interrupted twice: stopped without waiting for the hosts", 130)
            token.cancel("interrupted")
            interrupted = True
    if "error" in box:
        if interrupted:
            fail("interrupted", 130)
        raise box["error"]
    return dict(box["report"]), interrupted
def _printer(as_json: bool) -> ProgressFn:
    """Progress on stderr: each host's stages; enqueue by enqueue on a terminal."""
    tty = sys.stderr.isatty()

    def show(ev: ProgressEvent) -> None:
        if as_json or (": enqueue " in ev.what and not tty):
            return
        echo(ev.what, err=True)

    return show


def _write_junit(report: dict[str, Any], path: Path) -> None:
    from cltui.fleet.junit import junit_xml

    try:
        path.write_text(junit_xml(report), encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}")


__all__ = ["fleet_cmd"]
