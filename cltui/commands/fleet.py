"""``cltui fleet DUMPDIR RANGE --hosts INVENTORY`` / ``cltui fleet BUNDLE --hosts INVENTORY``:
one range on every host and device of an inventory, one matrix."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cltui.commands import options, output
from cltui.commands._common import echo, fail, tolerance_given
from cltui.commands.output import format_option

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.capture.ranges import EnqueueRange
    from cltui.fleet.baseline import Baseline
    from cltui.fleet.host import RunSettings
    from cltui.fleet.inventory import Host
    from cltui.progress import ProgressEvent, ProgressFn
    from cltui.replay.engine.schema import ArgTolerance


@click.command("fleet")
@click.argument("source", type=click.Path(), required=False)
@click.argument("range_text", metavar="[RANGE]", required=False)
@click.option("--hosts", "inventory", default=None, type=click.Path(),
              help="Inventory: Ansible INI or YAML, or [user@]host[:port] lines; "
              "host_vars/ and group_vars/ beside it are read as Ansible reads them.")
@click.option("--list-hosts", "list_hosts", type=click.Path(), default=None,
              metavar="INVENTORY", help="Only list each host of INVENTORY and its OpenCL "
              "devices (with --limit, --runner, --json), and exit.")
@click.option("--limit", "limit", default=None, metavar="PATTERN",
              help="Only the hosts this Ansible host pattern names: globs on host or group "
              "names, split by , or :, !PAT removes, &PAT intersects.")
@click.option("--baseline", "baseline", type=click.Path(dir_okay=False), default=None,
              help="Known divergences (YAML/JSON: device pattern, enqueue, argument, max_ulp "
              "or differs): matching ones pass, a new or a fixed one fails.")
@click.option("--artifacts", "artifacts", type=click.Path(file_okay=False), default=None,
              metavar="DIR",
              help="Keep each column's differing outputs, runner log and result here "
              "(DIR/HOST_P_D/), and the report (DIR/report.json).")
@click.option("--save-baseline", "save_baseline", type=click.Path(dir_okay=False),
              default=None, help="Write this run's divergences as a baseline file (review it).")
@click.option("--slurm", "slurm", multiple=True, metavar="SPEC",
              help="A Slurm GPU kind as one more column: PARTITION, or KEY=VALUE,... of "
              "partition, gres, constraint, account, qos, reservation, nodelist, time, args "
              "(one job each); repeat for several.")
@click.option("--runner", type=click.Choice(["python", "cpp"]), default=None,
              help="The bundle's runner on every host (default: the host's cltui_runner, "
              "else python).")
@options.device_option(help="P:D index or name substring on every host (default: the host's "
                       "cltui_devices, else every device); repeat for several.")  # fmt: skip
@click.option("--jobs", type=click.IntRange(1, 256), default=8, show_default=True,
              help="Hosts at a time.")
@options.timeout_option(120.0, help="Seconds a host may go without progress (connecting, "
                        "sending, building, replaying) before it is declared hung; also how long a "
                        "Slurm job may stay pending.")  # fmt: skip
@click.option("--retry-flaky", "retry_flaky", type=click.IntRange(0, 20), default=0,
              metavar="N", help="Run a column that differs again, up to N times: a result "
              "that changes between runs is FLAKY (a failure), never a pass.")
@click.option("--lock-wait", "lock_wait", type=click.FloatRange(0), default=600.0,
              show_default=True, help="Seconds to wait for a device that another cltui "
              "fleet is using (one fleet per device at a time); then its column is an error. "
              "0: refuse at once.")
@options.mode_option(help=f"The export's mode (DUMPDIR RANGE only). {options.MODE_HELP}")
@options.tolerance_options()
@options.arg_tol_option()
@click.option("--explain", "explain", is_flag=True,
              help="Also explain each column's first divergence from the reference column "
              "(cltui explain: where, why and which line), its runs replayed on both "
              "columns' hosts (DUMPDIR RANGE only; a column that cannot be explained says "
              "why).")
@click.option("--junit", "junit", type=click.Path(dir_okay=False), default=None,
              help="Also write JUnit XML here (one test case per enqueue and device, with "
              "time, system-out and failure types), as --format junit writes it.")
@format_option("text", "json", "junit", what="the matrix")
def fleet_cmd(
    source: str | None, range_text: str | None, inventory: str | None, slurm: tuple[str, ...],
    list_hosts: str | None,
    limit: str | None, baseline: str | None, artifacts: str | None, save_baseline: str | None,
    runner: str | None,
    devices: tuple[str, ...], jobs: int, timeout: float, retry_flaky: int, lock_wait: float,
    mode: str,
    atol: float | None,
    rtol: float | None, ulp: int | None, arg_tol: tuple[str, ...], explain: bool,
    junit: str | None, fmt: str,
) -> None:
    """Replay a range (DUMPDIR RANGE) or an exported bundle (BUNDLE) on every host of an
    inventory, over the user's own ssh, and on every Slurm kind (--slurm, or an inventory
    host with cltui_slurm_* variables: one job each), and compare everything in one matrix.

    Exit 0 when every device of every host replayed the range and every output is equal
    (PASS), 1 on a difference, a hang or a crash, 2 on bad input, 3 when nothing failed
    but something did not run or was not checked (a host down or refusing the login, a
    missing dependency, a lost connection, an enqueue that cannot run on a device), 130
    on ctrl-c or SIGTERM (what finished is printed first).  With --baseline, the
    divergences it knows pass (cells "known"); one it does not know, or one it knows that
    no longer diverges (fixed), exits 1; so does a column whose results change between the
    runs of --retry-flaky (FLAKY).  A device another cltui fleet is using is waited for
    (said), up to --lock-wait seconds.  --list-hosts INVENTORY lists each host's devices
    instead of a run.  Tolerances: the bundle's, then --ulp/--atol/--rtol, then the
    inventory's cltui_ulp, cltui_atol, cltui_rtol and cltui_tolerances (per device
    pattern) for that host.  --explain adds, for each column that diverges from the
    reference column, the explanation of its first divergent enqueue (the exit code is the
    matrix's).
    """
    from cltui.fleet.host import RunSettings
    from cltui.process import lifecycle

    as_json = fmt != "text"  # (quiet: stdout is the report)
    if list_hosts is not None:
        from cltui.commands.fleet_hosts import print_hosts

        if source is not None or inventory is not None:
            fail("--list-hosts INVENTORY runs nothing: give no SOURCE and no --hosts with it")
        if fmt == "junit":
            fail("--list-hosts lists devices, it has no verdict: --format text or json")

        print_hosts(list_hosts, limit, runner, timeout, jobs, as_json)
        return
    if source is None or (inventory is None and not slurm):
        fail("give SOURCE (DUMPDIR RANGE or BUNDLE) and --hosts INVENTORY or --slurm SPEC, or "
             "--list-hosts INVENTORY")
    known = _baseline(baseline)
    keep = _artifacts_dir(artifacts)
    per_arg = options.arg_tolerances(arg_tol)
    cap, rng = None, None
    if range_text is not None:  # a capture that is none fails first, as for every command
        from cltui.commands._common import load_capture

        cap = load_capture(source, quiet=as_json)
        rng = options.range_of(range_text)
    from cltui.commands.fleet_hosts import chosen_hosts

    hosts = (chosen_hosts(inventory, limit) if inventory else []) + _slurm_kinds(slurm)
    tol = tolerance_given(atol, rtol, ulp)
    settings = RunSettings(runner=runner, devices=devices, timeout=timeout, tolerance=tol,
                           lock_wait=lock_wait, retry_flaky=retry_flaky)
    tmp, bundle = _bundle(Path(source), cap, rng, mode, per_arg)
    try:
        report, interrupted = _run(bundle, hosts, settings, jobs, per_arg, as_json, known, keep,
                                   cap if explain else None, explain)
    finally:
        if tmp is not None:
            lifecycle.remove(tmp)
    if tmp is not None:
        report["bundle"]["path"] = None  # a private copy (--arg-tol), removed
    report["bundle"]["source"] = str(source)
    report["bundle"]["range"] = range_text
    out = _report(report)
    if junit:
        output.write_file(junit, output.render(out, "junit"))
    if keep is not None:
        _write_report(report, keep)
    if save_baseline:
        _save_baseline(report, Path(save_baseline), as_json)
    output.emit(out, fmt)
    if interrupted:
        fail("interrupted (what finished is above)", 130)
    from cltui.fleet.matrix import exit_code

    sys.exit(exit_code(report))


def _slurm_kinds(specs: tuple[str, ...]) -> list[Host]:
    from cltui.fleet.slurm.queue import kind_hosts

    try:
        return kind_hosts(specs)
    except ValueError as exc:
        fail(str(exc))


def _bundle(
    source: Path, cap: Capture | None, rng: EnqueueRange | None, mode: str, per_arg: ArgTolerance
) -> tuple[Path | None, Path]:
    """The bundle to send, and the temp folder to remove after (None: nothing to remove)."""
    from cltui.fleet.bundle import export_cached, private_copy, with_arg_tolerance

    if cap is None or rng is None:
        if not (source / "manifest.json").is_file():
            fail(f"{source} is not a bundle folder (no manifest.json): give BUNDLE, or "
                 "DUMPDIR RANGE")
        bundle = source
    else:
        bundle = export_cached(cap, rng, mode)
    tmp: Path | None = None
    if per_arg:
        tmp, bundle = private_copy(bundle)
        with_arg_tolerance(bundle, per_arg)
    return tmp, bundle


def _baseline(path: str | None) -> Baseline | None:
    if path is None:
        return None
    from cltui.fleet.baseline import BaselineError, read_baseline

    try:
        return read_baseline(path)
    except BaselineError as exc:
        fail(str(exc))


def _artifacts_dir(path: str | None) -> Path | None:
    if path is None:
        return None
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"cannot make {path}: {exc.strerror or exc}")
    return Path(path)


def _write_report(report: dict[str, Any], root: Path) -> None:
    from cltui.fleet.artifacts import ArtifactsError, write_report

    try:
        write_report(root, report)
    except ArtifactsError as exc:
        fail(str(exc))


def _save_baseline(report: dict[str, Any], path: Path, as_json: bool) -> None:
    from cltui.fleet.baseline import write_baseline

    try:
        n = write_baseline(report, path)
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}")
    if not as_json:
        echo(f"{n} divergence{'s' if n != 1 else ''} written to {path} as a baseline", err=True)


def _run(bundle: Path, hosts: list[Host], settings: RunSettings, jobs: int,
         per_arg: ArgTolerance, as_json: bool, known: Baseline | None,
         keep: Path | None, cap: Capture | None = None,
         explain: bool = False) -> tuple[dict[str, Any], bool]:  # fmt: skip
    """The fleet job in a thread (then, with ``explain``, the explanations of its columns'
    first divergences, cltui.fleet.explain), and whether it was interrupted: ctrl-c or
    SIGTERM cancels it (hosts stop, their scratch folders go) and its report keeps what
    finished."""
    from cltui.fleet.job import run_fleet
    from cltui.progress import CancelToken, wait_until_set

    token = CancelToken()
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["report"] = run_fleet(bundle, hosts, settings, jobs=jobs, cancel=token,
                                      progress=_printer(as_json), arg_tolerance=per_arg,
                                      baseline=known, artifacts=keep)
            if explain:
                from cltui.fleet.explain import explain_columns

                box["report"]["explain"] = explain_columns(
                    box["report"], cap, hosts, settings, cancel=token,
                    progress=_printer(as_json))
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
            wait_until_set(finished)  # (not finished.wait: ctrl-c may leave its lock held)
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


def _report(report: dict[str, Any]) -> output.Report:
    """The fleet's report in each of its formats."""
    from cltui.commands.fleet_text import print_fleet
    from cltui.fleet.junit import junit_xml

    return output.Report(report, lambda: print_fleet(report), junit=lambda: junit_xml(report))


__all__ = ["fleet_cmd"]
