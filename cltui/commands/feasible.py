"""``cltui feasible BUNDLE | DUMPDIR RANGE``: will the range run on a device?  The replay
engine's pre-flight alone: per device, every kernel enqueue that cannot run there and why."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cltui.commands import options
from cltui.commands._common import EXIT_INCOMPLETE, EXIT_OK, echo, fail
from cltui.commands.output import format_option

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.capture.ranges import EnqueueRange
    from cltui.replay.engine.schema import Device, Feasibility, Manifest


@click.command("feasible")
@click.argument("path", type=click.Path())
@click.argument("range_text", metavar="[RANGE]", required=False)
@options.device_option()
@click.option("--all-devices", "all_devices", is_flag=True, help="Check every device here.")
@options.mode_option(help=f"The replay mode of the plan (a capture only). {options.MODE_HELP}")
@options.timeout_option()
@format_option("text", "json", "junit", what="the result")
def feasible_cmd(
    path: str,
    range_text: str | None,
    devices: tuple[str, ...],
    all_devices: bool,
    mode: str,
    timeout: float,
    fmt: str,
) -> None:
    """Say, before anything runs, which kernel enqueues of a range cannot run on a device
    and why: local sizes over the device's or the kernel's work-group size, missing fp64,
    fp16, images, 3D image writes, SVM or subgroups, image formats, allocations over the
    device's limits, local memory, the OpenCL C version.

    PATH is an exported bundle (its manifest) or a capture with a RANGE.  Without
    --device, the device the replay would choose (the capture's, else the one named most
    like it, else the first that is not a simulator).  Exit 0 when every enqueue can run
    on every device checked and nothing of the range went unchecked (skipped by the plan, lost
    with the log), 3 otherwise, 2 on bad input.
    """
    from cltui.commands import output
    from cltui.replay import feasibility
    from cltui.replay.junit import feasible_junit

    as_json = fmt != "text"  # (quiet: stdout is the report)
    bundle = feasibility.is_bundle(path)
    range_of: tuple[Capture, EnqueueRange] | None = None
    if bundle:
        if range_text:
            fail(f"{path} is a bundle: it holds its range (RANGE is for a capture)")
        plan, root, source = _bundle_plan(path)
    else:
        if not range_text:
            fail("RANGE is needed with a capture (e.g. 12-40), or give a bundle folder")
        cap, rng, plan, source = _capture_plan(path, range_text, mode, as_json)
        root = str(cap.path)
        range_of = (cap, rng)
    chosen, choice = _devices(plan, range_of, devices, all_devices)
    if not as_json:
        echo(f"checking {len(plan['steps'])} kernel enqueues on {len(chosen)} device(s) ...",
             err=True)  # fmt: skip
    try:
        results = feasibility.check(plan, chosen, root, bundle=bundle, timeout=timeout)
    except KeyboardInterrupt:
        fail("interrupted", 130)
    for r in results:
        r["device_choice"] = choice  # type: ignore[typeddict-item]  # JSON-shaped rule
    status, line = feasibility.overall(results, plan)
    out = {"source": source, "steps": len(plan["steps"]), "status": status, "line": line,
           "devices": results}  # fmt: skip
    output.emit(output.Report(out, lambda: _print(results, line),
                              junit=lambda: feasible_junit(out, plan)), fmt)
    sys.exit(EXIT_OK if status == "ok" else EXIT_INCOMPLETE)


def _bundle_plan(path: str) -> tuple[Manifest, str, dict[str, Any]]:
    from cltui.replay.feasibility import BundleError, load_bundle

    try:
        plan = load_bundle(path)
    except BundleError as exc:
        fail(str(exc))
    src = plan.get("source") or {}
    return plan, path, {"path": str(Path(path)), "kind": "bundle", "range": src.get("range"),
                        "mode": src.get("mode")}  # fmt: skip


def _capture_plan(
    path: str, range_text: str, mode: str, quiet: bool
) -> tuple[Capture, EnqueueRange, Manifest, dict[str, Any]]:
    from cltui.commands._common import load_capture
    from cltui.replay.plan import PlanError, build_plan

    rng = options.range_of(range_text)
    cap = load_capture(path, quiet=quiet)
    try:
        plan = build_plan(cap, rng, mode).to_manifest()
    except PlanError as exc:
        fail(str(exc))
    return cap, rng, plan, {"path": str(cap.path), "kind": "capture", "range": range_text,
                       "mode": mode}  # fmt: skip


def _devices(
    plan: Manifest, range_of: tuple[Capture, EnqueueRange] | None, specs: tuple[str, ...],
    every: bool,
) -> tuple[list[Device], dict[str, str]]:  # fmt: skip
    """-d as given, every device, or the replay's default device (the device rule): for a
    capture's range (``range_of``) as ``cltui replay`` chooses, for a bundle as its replay.py
    does."""
    from cltui.replay.devices import (
        DeviceError,
        default_device,
        devices_for,
        list_devices,
        select_devices,
    )
    from cltui.replay.engine import user_choice
    from cltui.replay.feasibility import bundle_captured

    try:
        if range_of is not None and not every:
            return devices_for(*range_of, specs)
        if specs:
            return select_devices(list(specs)), user_choice(specs)
        here = list_devices()
        if every:
            if not here:
                fail("no OpenCL device found (is an ICD installed?)")
            return here, {"rule": "user", "why": "every device here (--all-devices)"}
        dev, choice = default_device(here, bundle_captured(plan))
        if dev is None:
            fail(choice["why"] + " (is an ICD installed?)")
        return [dev], choice
    except DeviceError as exc:
        fail(str(exc))


def _print(results: list[Feasibility], line: str) -> None:
    """The verdict line first, then a table per device: each enqueue that cannot run, its kind
    and why; the line again after the tables when there is one (a long output ends with it)."""
    from rich.table import Table

    from cltui.commands._common import escape_tree, text_console

    con = text_console()
    con.print(line, markup=False, highlight=False)
    tables = False
    for r in escape_tree(results):
        d = r["device"]
        con.print(f"[bold]== {d['id']} {d['name']}[/] ({d['platform']})", highlight=False)
        choice = r.get("device_choice") or {}
        if choice.get("why"):
            con.print(f"   chosen: {choice['why']}", style="dim", markup=False, highlight=False)
        if r["status"] == "error":
            con.print(f"   NOT CHECKED: {r['error']}", style="bold red", markup=False)
            continue
        for f in r.get("at_launch", []):
            con.print(f"   enqueue {f['enqueue']} {f['kernel']}: {f['reason']}: the driver "
                      "decides when the replay launches it", style="yellow", markup=False,
                      highlight=False)  # fmt: skip
        if not r["cannot_run"]:
            con.print(f"   all {r['steps']} kernel enqueues can run", style="green")
            continue
        table = Table(title=f"{r['steps'] - r['runnable']}/{r['steps']} kernel enqueues "
                      "cannot run", title_justify="left")  # fmt: skip
        for col in ("enqueue", "kernel", "kind", "why"):
            table.add_column(col, justify="right" if col == "enqueue" else "left",
                             overflow="fold")  # fmt: skip
        for f in r["cannot_run"]:
            table.add_row(str(f["enqueue"]), f["kernel"], f["kind"], f["reason"])
        con.print(table)
        tables = True
    if tables:
        con.print(line, markup=False, highlight=False)
