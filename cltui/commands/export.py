"""``cltui export DUMPDIR RANGE -o OUTDIR``: a range as a standalone replay bundle."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cltui.commands import options
from cltui.commands._common import echo, emit_json, fail, tolerance_given
from cltui.process import lifecycle

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.capture.ranges import EnqueueRange
    from cltui.export import ExportResult
    from cltui.replay.engine.schema import ToleranceSpec
    from cltui.replay.experiment.variant import Variant


@click.command("export")
@click.argument("dumpdir", type=click.Path())
@click.argument("range_text", metavar="RANGE")
@click.option(
    "-o",
    "--output",
    "outdir",
    type=click.Path(),
    default=None,
    help="The bundle folder to create (with --tar: the folder name in the archive).",
)
@click.option(
    "--lang",
    "langs",
    default="python,cpp",
    show_default=True,
    help="Replay programs to include: python, cpp or both (comma-separated).",
)
@options.mode_option()
@click.option("--force", is_flag=True, help="Replace an existing OUTDIR (or --tar FILE).")
@click.option(
    "--tar",
    "tar",
    metavar="FILE|-",
    default=None,
    help="Write the bundle as a tar archive to FILE, or to stdout with '-'.",
)
@options.tolerance_options(what="Default ")
@click.option(
    "--include-dir",
    "include_dirs",
    multiple=True,
    metavar="DIR",
    help="A folder of yours to bundle the headers the sources include from (repeatable, "
    "searched in order for each include still unresolved). A folder the capture names is "
    "never read.",
)
@click.option(
    "--no-host-includes",
    "no_host_includes",
    is_flag=True,
    help="Bundle no header from this machine, not even pyopencl's (no --include-dir); the "
    "bundle may then not build from source.",
)
@click.option(
    "--variant",
    "variant_ref",
    default=None,
    metavar="NAME|PATH",
    help="Apply a saved variant (cltui variant list) or a variant folder.",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
def export_cmd(
    dumpdir: str,
    range_text: str,
    outdir: str | None,
    langs: str,
    mode: str,
    force: bool,
    tar: str | None,
    atol: float | None,
    rtol: float | None,
    ulp: int | None,
    include_dirs: tuple[str, ...],
    no_host_includes: bool,
    variant_ref: str | None,
    as_json: bool,
) -> None:
    """Export the kernel enqueues of RANGE (12, 12-40, 12-, 12-40/saxpy) as a bundle.

    The bundle runs without cltui: `python replay.py --validate` (numpy + pyopencl) or
    `cmake -S . -B build && cmake --build build && ./build/replay --validate`.  It is
    written to a temporary folder and renamed into place; an existing OUTDIR is replaced
    only with --force.  Over SSH: `ssh host cltui export DUMP 12-40 --tar - | tar x`.

    The headers a source includes are bundled from pyopencl's own package (where the capture
    names a pyopencl include folder) and from the folders given with --include-dir, never from
    a folder the capture names: such a folder is not read, and the summary says which includes
    the bundle then lacks.  A header is copied only when it is a header-like text file (.h,
    .hpp, .cl, .clh, .inc ..., at most 1 MiB) outside system and credentials folders; each
    one is listed with its host path.
    """
    from cltui.commands._common import load_capture
    from cltui.export import ExportError, parse_langs

    if outdir is None and tar is None:
        fail("give the bundle folder with -o OUTDIR (or --tar FILE|-)")
    rng = options.range_of(range_text)
    try:
        chosen = parse_langs(langs)
    except ExportError as exc:
        fail(str(exc))
    to_stdout = tar == "-"
    if to_stdout and sys.stdout.isatty():
        fail("not writing a tar archive to a terminal: pipe it (--tar - | tar x) or give a file")
    tol = tolerance_given(atol, rtol, ulp)
    cap = load_capture(dumpdir)
    variant = _load_variant(cap, variant_ref)
    if include_dirs and no_host_includes:
        fail("--no-host-includes copies no header from this machine: drop it or --include-dir")
    job = _Job(cap, rng, chosen, mode, tol, not no_host_includes, include_dirs, variant)
    if tar is None:
        assert outdir is not None
        result = _export(job, outdir, force)
        _report(result.to_dict(), as_json, err=False)
        return

    _report(_export_tar(job, dumpdir, outdir, tar, force), as_json, err=to_stdout)


@dataclass(frozen=True)
class _Job:
    """What to export: the capture's range, the languages, the mode and the tolerance."""

    cap: Capture
    rng: EnqueueRange
    chosen: list[str]
    mode: str
    tol: ToleranceSpec
    pyopencl_headers: bool
    include_dirs: tuple[str, ...] = ()
    variant: Variant | None = None


def _load_variant(cap: Capture, ref: str | None) -> Variant | None:
    """``--variant``: a saved variant of the capture, or a variant folder (exit 2)."""
    if ref is None:
        return None
    from cltui.replay.experiment.store import load_variant
    from cltui.replay.experiment.variant import VariantError

    try:
        return load_variant(cap.path, ref)
    except VariantError as exc:
        fail(str(exc))


def _export_tar(
    job: _Job, dumpdir: str, outdir: str | None, tar: str, force: bool
) -> dict[str, Any]:
    """The bundle written into a scratch folder and archived to ``tar`` (``-``: stdout); the
    result's JSON names the archive instead of a folder."""
    from cltui.capture.names import sanitize_component
    from cltui.export import bundle_name

    to_stdout = tar == "-"
    tar_path = None if to_stdout else Path(tar).absolute()
    if tar_path is not None:
        _check_tar_path(tar_path, Path(job.cap.path), force)
    with lifecycle.scratch("export") as tmp:
        name = sanitize_component(Path(outdir).name) if outdir else bundle_name(dumpdir, job.rng)
        folder = Path(tmp) / name
        result = _export(job, folder, False)
        info = result.to_dict()
        if tar_path is None:
            _tar_to_stdout(folder)
        else:
            _tar_to_file(folder, tar_path)
        info["outdir"] = None
        info["tar"] = "-" if tar_path is None else str(tar_path)
    return info


def _export(job: _Job, outdir: str | Path, force: bool) -> ExportResult:
    """``export_range``; an :class:`ExportError` is one line and exit 2."""
    from cltui.export import ExportError, export_range

    try:
        return export_range(
            job.cap, job.rng, outdir, job.chosen, job.mode, force, tolerance=job.tol,
            pyopencl_headers=job.pyopencl_headers, include_dirs=job.include_dirs,
            variant=job.variant,
        )  # fmt: skip
    except ExportError as exc:
        fail(str(exc))


def _check_tar_path(tar_path: Path, capture: Path, force: bool) -> None:
    if tar_path.resolve().is_relative_to(capture.resolve()):
        fail(f"{tar_path} is inside the capture {capture}: choose another place")
    if tar_path.exists() and not force:
        fail(f"{tar_path} already exists (use --force to replace it)")
    if tar_path.is_dir():
        fail(f"{tar_path} is a folder")


def _tar_to_file(folder: Path, tar_path: Path) -> None:
    """The archive written beside ``tar_path`` and renamed into place."""
    from cltui.export import stream_tar

    partial = None
    try:
        fd, partial = tempfile.mkstemp(prefix=f".{tar_path.name}.", dir=tar_path.parent)
        with os.fdopen(fd, "wb") as fh:
            stream_tar(folder, fh)
        os.replace(partial, tar_path)
        partial = None
    except OSError as exc:
        fail(f"cannot write {tar_path}: {exc.strerror or exc}")
    finally:
        if partial is not None and os.path.exists(partial):
            os.unlink(partial)


def _tar_to_stdout(folder: Path) -> None:
    """The archive on stdout; a reader that closes early or a full disk: one line, exit 2."""
    from cltui.export.bundle import stream_tar

    out = sys.stdout.buffer
    try:
        stream_tar(folder, out)
        out.flush()
    except OSError as exc:
        import errno

        # nothing more can go to stdout: point it at /dev/null so that the interpreter's
        # final flush does not fail again
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        if isinstance(exc, BrokenPipeError) or exc.errno == errno.EPIPE:
            fail("the archive was not complete: the reader of stdout closed the pipe early")
        fail(f"cannot write the archive to stdout: {exc.strerror or exc}")


def _report(info: dict[str, Any], as_json: bool, *, err: bool) -> None:
    """A summary (stderr when stdout carries the archive)."""
    if as_json and not err:
        emit_json(info)
        return
    if as_json:
        import json

        click.echo(json.dumps(info, indent=2), err=True)  # JSON: exact
        return
    where = info.get("tar") or info["outdir"]
    if where == "-":
        where = "stdout (tar)"
    echo(
        f"exported {info['steps']} kernel enqueue{'s' if info['steps'] != 1 else ''} "
        f"({info['mode']}, {', '.join(info['langs'])}) to {where}: {info['files']} files, "
        f"{info['data_files']} distinct data contents ({info['data_bytes']} bytes)",
        err=err,
    )
    for note in info.get("notes", []):
        echo(f"  note: {note}", err=err)
    for h in info.get("host_files", []):
        echo(f"  host file ({h['origin']}): {h['host_path']} -> {h['bundle_path']}", err=err)
    for r in info.get("refused_includes", []):
        echo(
            f"  refused host file: #include {r['include']!r} -> {r['host_path']} ({r['why']}): "
            "the bundle may not build from source",
            err=err,
        )
