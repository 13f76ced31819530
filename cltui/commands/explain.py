"""``cltui explain DUMPDIR ENQUEUE -d A -d B``: where two devices' outputs of one kernel
enqueue differ, and why."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from cltui.commands import options
from cltui.commands._common import echo, fail, load_capture
from cltui.commands.output import format_option
from cltui.errors import EXIT_INCOMPLETE, EXIT_MISMATCH, EXIT_OK, CltuiError

_EXIT = {"diverges": EXIT_MISMATCH, "order-dependent": EXIT_MISMATCH, "no-divergence": EXIT_OK,
         "incomplete": EXIT_INCOMPLETE}


@click.command("explain")
@click.argument("dumpdir", type=click.Path())
@click.argument("enqueue", type=int)
@options.device_option(required=True,
              help="The two devices: P:D index or name substring (pocl, oclgrind), twice; "
              "once: whether that device's runs agree (order dependence, races).")
@options.timeout_option(minimum=1.0)
@click.option("--markdown", "markdown_file", type=click.Path(dir_okay=False), default=None,
              metavar="FILE", help="Also write the report as Markdown (for a bug report).")
@click.option("--bundle", "with_bundle", is_flag=True,
              help="With --markdown: the minimal bundle beside the report (FILE_bundle/: the "
                   "enqueue exported isolated; FILE_kernel.cl: the original source).")
@click.option("--items", "items_text", multiple=True, metavar="X[,Y[,Z]]",
              help="Work-items (global ids) to trace for the first diverging line (default: "
              "the differing ones and equal neighbours); several to a value or repeated.")
@format_option("text", "json", "junit")
def explain_cmd(dumpdir: str, enqueue: int, devices: tuple[str, ...], timeout: float,
                markdown_file: str | None, with_bundle: bool, items_text: tuple[str, ...],
                fmt: str) -> None:  # fmt: skip
    """Replay kernel enqueue ENQUEUE alone (its inputs from the capture) on devices A and B
    and, for each output that differs, say where (how many elements, by how many ULP, the
    pattern, the worst elements, which device agrees with the capture) and why: controlled
    rebuilds that each remove one known cause (contraction, native_/half_ and built-in
    accuracy, an image write's conversion, subnormals, relaxed math and division,
    optimisation), run on both devices; whether the difference is within the OpenCL
    specification; a second run, and a run with the work-items in reverse order, on each
    device for order dependence (a race, an atomic or reduction order); and which line:
    the kernel instrumented (libclang) to record every assignment's value for a few
    work-items, run on both devices, the first statement whose value differs with both
    values and whether its operands were equal; when an operand read from memory already
    differs, the walk upstream to the work-item and line that wrote it. When the outputs
    differ between runs on one device, the differing elements are watched: two work-items
    that write one element are named with their lines (a write-write race). With -d once:
    only that device's runs (a second run, the reverse order) and the race.

    Exit 1 when the devices diverge (one device: its runs differ), 0 when they agree, 3 when
    something could not run, 2 on bad input.
    """
    from cltui.analysis.explain import ExplainError, explain_enqueue
    from cltui.analysis.explain.line import parse_items
    from cltui.analysis.explain.text import markdown, text_lines
    from cltui.analysis.junit import explain_junit
    from cltui.capture.ranges import EnqueueRange
    from cltui.commands import output
    from cltui.progress import CancelToken, ProgressEvent
    from cltui.replay.devices import DeviceError, devices_for

    as_json = fmt != "text"  # (quiet: stdout is the report)
    try:
        items = parse_items(list(items_text))
    except CltuiError as exc:
        fail(str(exc))
    if len(devices) not in (1, 2):
        fail(f"explain compares two devices, or one device's runs: give -d twice or once "
             f"(got {len(devices)})")
    if with_bundle and markdown_file is None:
        fail("--bundle goes with --markdown FILE")
    cap = load_capture(dumpdir, quiet=as_json)
    try:
        chosen, _ = devices_for(cap, EnqueueRange(enqueue, enqueue), list(devices))
    except DeviceError as exc:
        fail(str(exc))
    picked = two_devices(chosen, devices) if len(devices) == 2 else one_device(chosen, devices[0])

    def said(ev: ProgressEvent) -> None:
        if not as_json:
            echo(f"{ev.what} ...", err=True)

    cancel = CancelToken()
    try:
        report = explain_enqueue(cap, enqueue, picked, timeout=timeout, cancel=cancel,
                                 progress=said, items=items or None)  # fmt: skip
    except ExplainError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        cancel.cancel()
        fail("interrupted", 130)
    if markdown_file is not None and with_bundle:
        _save(cap, report, Path(markdown_file))
    elif markdown_file is not None:
        _write(Path(markdown_file), markdown(report))

    def text() -> None:
        for line in text_lines(report):
            echo(line)

    output.emit(output.Report(report, text, junit=lambda: explain_junit(report)), fmt)
    sys.exit(_EXIT[report["verdict"]["status"]])


def one_device(chosen: list[Any], spec: str) -> list[Any]:
    """The device ``spec`` names (the first of several)."""
    from cltui.replay.devices import DeviceError, select_devices

    try:
        return [select_devices([spec], chosen)[0]]
    except DeviceError as exc:
        fail(str(exc))


def two_devices(chosen: list[Any], specs: tuple[str, ...]) -> list[Any]:
    """The device each spec names (the first of several), two different ones."""
    from cltui.replay.devices import DeviceError, select_devices

    out: list[Any] = []
    for spec in specs:
        try:
            found = select_devices([spec], chosen)
        except DeviceError as exc:
            fail(str(exc))
        out.append(found[0])
    if out[0]["id"] == out[1]["id"]:
        fail(f"-d {specs[0]!r} and -d {specs[1]!r} name the same device ({out[0]['name']}): "
             "explain compares two devices")
    return out


def _save(cap: Any, report: dict[str, Any], path: Path) -> None:
    """The Markdown report with the minimal bundle beside it."""
    from cltui.export.bundle import ExportError
    from cltui.export.explain_bundle import save_explanation

    try:
        save_explanation(cap, report, path)
    except ExportError as exc:
        fail(f"--bundle: {exc}")
    except OSError as exc:
        fail(f"--markdown {path}: {exc.strerror or exc}")


def _write(path: Path, text: str) -> None:
    """The Markdown report (control characters from the capture escaped)."""
    from cltui.text.escape import escape_controls

    try:
        path.write_text(escape_controls(text, keep_newlines=True), encoding="utf-8")
    except OSError as exc:
        fail(f"--markdown {path}: {exc.strerror or exc}")
