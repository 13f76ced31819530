"""``export_range``: a range of a capture -> a standalone replay bundle folder.

The bundle is the replay plan of :mod:`cltui.replay.plan` (``manifest.json``) with every data
reference rewritten to a file inside the bundle, plus the programs that run it:

* ``data/<sha256>.bin``: every input and expected output, each distinct content once;
* ``kernels/``: program sources (device binaries / SPIR-V only when that is all there is) and,
  under ``kernels/include/<n>/``, the headers the sources include;
* ``replay.py`` + ``lib/`` (:func:`engine_modules`): cltui's own engine package
  ``lib/cltui/replay/engine/``, copied whole and unchanged, with the four standard-library
  modules of cltui it imports (``errors.py``, ``text/units.py``, ``text/shellwords.py``,
  ``capture/safeopen.py``) and the markers of their parent packages;
* ``replay.cpp`` + ``cpp/*.hpp`` + ``CMakeLists.txt`` (:func:`cpp_files`; with
  ``cpp/manifest_schema.hpp``, the engine's ``manifest.schema.json``): the same replay in
  C++17 (``--lang cpp``);
* ``README.md`` and ``SHA256SUMS``.

Export-side changes to the plan (the plan itself is not modified): ``data[key].path`` points into
the bundle and gains ``sha256``; each program gets ``include_dirs`` (bundle-relative folders the
runners add as ``-I``), its ``options`` lose the pyopencl include folders that were mapped to
the bundle (the original text stays in ``captured_options``), and device binaries are dropped
when the source is there.  A top-level ``bundle`` section records what was exported from where,
with ``host_files`` (each header copied from this machine: its host path, bundle path and
origin: pyopencl's package or a folder the user named), ``refused_includes`` (each include whose
host file was not copied, and why), ``missing_includes`` (each include found in no bundled
folder) and ``unread_include_dirs`` (each captured ``-I`` folder that exists here and was not
read, by the rule of :mod:`cltui.export.includes`).
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cltui.capture.devinfo import captured_devices
from cltui.capture.names import sanitize_component
from cltui.export.bundle import BUNDLE_FORMAT, BundleWriter, ExportCancelled, ExportError
from cltui.export.kernels_folder import (
    HostFile,
    HostIncludes,
    MissingInclude,
    RefusedHostFile,
    UnreadDir,
    read_capture_file,
    write_programs,
)
from cltui.export.readme import render_readme
from cltui.process import lifecycle
from cltui.progress import CancelToken, ProgressEvent, ProgressFn, no_progress
from cltui.replay.engine.schema import Manifest, ToleranceSpec

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.capture.ranges import EnqueueRange
    from cltui.replay.experiment.variant import Variant
    from cltui.replay.plan import Plan

BUNDLE_VERSION = 1
LANGS = ("python", "cpp")
MODES = ("chain", "isolated", "strict")



@dataclass
class ExportResult:
    outdir: Path
    steps: int  # kernel enqueues in the bundle
    enqueues: list[int]
    files: int  # files in the bundle (SHA256SUMS included)
    data_files: int  # distinct contents under data/
    data_bytes: int  # their total size
    data_refs: int  # data references in the plan (inputs + expected outputs + sources)
    langs: list[str]
    mode: str
    notes: list[str] = field(default_factory=list)
    variant: list[str] | None = None  # the variant's changes, one line each
    host_files: list[HostFile] = field(default_factory=list)
    refused_includes: list[RefusedHostFile] = field(default_factory=list)
    missing_includes: list[MissingInclude] = field(default_factory=list)
    unread_include_dirs: list[UnreadDir] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "outdir": str(self.outdir),
            "steps": self.steps,
            "enqueues": self.enqueues,
            "files": self.files,
            "data_files": self.data_files,
            "data_bytes": self.data_bytes,
            "data_refs": self.data_refs,
            "langs": self.langs,
            "mode": self.mode,
            "notes": self.notes,
            "variant": self.variant,
            "host_files": [h.to_dict() for h in self.host_files],
            "refused_includes": [r.to_dict() for r in self.refused_includes],
            "missing_includes": [m.to_dict() for m in self.missing_includes],
            "unread_include_dirs": [u.to_dict() for u in self.unread_include_dirs],
        }


def bundle_name(capture_path: str | Path, rng: EnqueueRange | str) -> str:
    """A default folder name for a bundle: ``<capture>-<range>`` made safe (``/`` -> ``_``)."""
    text = f"{Path(capture_path).name}-{rng}".replace("/", "_")
    return sanitize_component(text, max_len=80)


def _runner_file(*parts: str) -> bytes:
    """A file of the bundle runners (:mod:`cltui.runners`), byte for byte."""
    return resources.files("cltui.runners").joinpath(*parts).read_bytes()


# The parent packages of the engine in a bundle: markers only (cltui's own
# ``cltui/capture/__init__.py`` imports the whole capture model, which a bundle does not carry).
ENGINE_MARKERS = {
    "lib/cltui/__init__.py": '"""The parts of cltui a replay bundle carries."""\n',
    "lib/cltui/capture/__init__.py": (
        '"""The standard-library helpers of cltui.capture the replay engine imports."""\n'
    ),
    "lib/cltui/replay/__init__.py": '"""cltui.replay in a bundle: its engine package only."""\n',
    "lib/cltui/text/__init__.py": (
        '"""The text helpers of cltui (durations, shell words) the replay engine imports."""\n'
    ),
}

# The standard-library modules of cltui the engine imports (by relative imports that resolve
# the same in cltui and under ``lib/`` in a bundle).
ENGINE_HELPERS = (
    "errors.py", "text/units.py", "text/shellwords.py", "capture/safeopen.py"
)


def engine_modules() -> dict[str, bytes]:
    """What a bundle's ``replay.py`` imports, by bundle path: the engine package
    ``cltui/replay/engine/`` whole (every file, byte for byte) under ``lib/``, the modules of
    :data:`ENGINE_HELPERS` byte for byte, and the package markers of :data:`ENGINE_MARKERS`."""
    root = resources.files("cltui")
    out = {rel: text.encode("utf-8") for rel, text in ENGINE_MARKERS.items()}
    for rel in ENGINE_HELPERS:
        out[f"lib/cltui/{rel}"] = root.joinpath(*rel.split("/")).read_bytes()
    folder = root / "replay" / "engine"
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.is_file():  # (not __pycache__)
            out[f"lib/cltui/replay/engine/{entry.name}"] = entry.read_bytes()
    return out


def cpp_files() -> dict[str, bytes]:
    """The C++ replay's files, by bundle path: ``replay.cpp``, its ``cpp/*.hpp`` and
    ``CMakeLists.txt``, byte for byte."""
    folder = resources.files("cltui.runners") / "cpp" / "cpp"
    out = {"replay.cpp": _runner_file("cpp", "replay.cpp"),
           "CMakeLists.txt": _runner_file("cpp", "CMakeLists.txt")}  # fmt: skip
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".hpp"):
            out[f"cpp/{entry.name}"] = entry.read_bytes()
    out["cpp/manifest_schema.hpp"] = _schema_header()
    return out


def _schema_header() -> bytes:
    """``cpp/manifest_schema.hpp``: the engine's ``manifest.schema.json`` as a C++ string,
    the schema replay.cpp holds a bundle's manifest to (cpp/verify.hpp): one file for both
    runners."""
    text = (resources.files("cltui.replay.engine") / "manifest.schema.json").read_text("utf-8")
    if ")cltui_schema\"" in text:
        raise ValueError("manifest.schema.json holds the C++ string's end marker")
    return (
        "// cpp/manifest_schema.hpp: written by cltui export from the engine's\n"
        "// manifest.schema.json (the schema cpp/verify.hpp holds manifest.json to).\n"
        "#pragma once\n\nnamespace cltui {\n\n"
        f'inline const char* const kManifestSchema = R"cltui_schema({text})cltui_schema";\n'
        "\n}  // namespace cltui\n"
    ).encode()


def parse_langs(langs: str | Sequence[str]) -> list[str]:
    items = langs.split(",") if isinstance(langs, str) else list(langs)
    out: list[str] = []
    for item in items:
        word = item.strip().lower()
        word = {"py": "python", "c++": "cpp", "cxx": "cpp"}.get(word, word)
        if not word:
            continue
        if word not in LANGS:
            raise ExportError(f"unknown language {item!r} (python, cpp)")
        if word not in out:
            out.append(word)
    if not out:
        raise ExportError("no language chosen (python, cpp)")
    return out


def export_range(
    capture: Capture,
    range: EnqueueRange | str,  # the documented keyword (shadows the builtin here only)
    outdir: str | Path,
    langs: str | Sequence[str] = LANGS,
    mode: str = "chain",
    force: bool = False,
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
    *,
    tolerance: ToleranceSpec | None = None,
    pyopencl_headers: bool = True,
    include_dirs: Sequence[str | Path] = (),
    variant: Variant | None = None,
) -> ExportResult:
    """Write the bundle for ``range`` (an ``EnqueueRange`` or its text) of ``capture``.

    ``tolerance`` ({atol, rtol, ulp}) becomes the manifest's default tolerance.
    ``variant``: its changes are applied to the plan (``cltui.replay.experiment``); the
    manifest's ``variant`` section and the README say which.
    Headers the sources include are bundled from the local pyopencl package's ``cl`` folder
    (where a captured ``-I`` is a pyopencl one; ``pyopencl_headers=False``: not even those) and
    from ``include_dirs``, folders the user names (searched in order for what is still
    unresolved); a folder the capture names is never read (:mod:`cltui.export.includes`).
    ``progress``
    is called with (fraction, text) from the calling thread; setting ``cancel`` stops the
    export at the next file and removes what was written.

    Raises :class:`ExportError` (one-line message) for bad input, an existing ``outdir``
    without ``force``, unreadable capture files, or cancellation (nothing is left behind).
    """
    report = progress or no_progress
    chosen = parse_langs(langs)
    if mode not in MODES:
        raise ExportError(f"unknown mode {mode!r} (chain, isolated or strict)")
    rng = _parse_range(range)
    dirs = _include_dirs(include_dirs)
    if getattr(capture, "path", None) is not None:
        _check_apart(Path(capture.path), Path(outdir))
    report(ProgressEvent(0.0, "planning"))
    plan = _plan(capture, rng, mode, tolerance)
    if cancel is not None and cancel.is_set():
        raise ExportCancelled("export cancelled")
    manifest = copy.deepcopy(plan.to_manifest())
    try:
        with contextlib.ExitStack() as stack:
            if variant is not None:  # its changed sources live in a scratch folder meanwhile
                tmp = stack.enter_context(lifecycle.scratch("variant"))
                manifest = _with_variant(manifest, variant, plan.capture_path, Path(tmp))
            return _write_bundle(
                manifest, plan.capture_path, capture, rng, outdir, chosen, mode, force, report,
                cancel, pyopencl_headers, dirs,
            )  # fmt: skip
    except OSError as exc:  # a full disk, a read-only folder: one line, nothing left behind
        where = exc.filename or outdir
        raise ExportError(f"cannot write {where}: {exc.strerror or exc}") from None


def export_plan(capture: Capture, manifest: Manifest, outdir: str | Path,
                langs: str | Sequence[str] = ("python",), mode: str = "isolated",
                cancel: CancelToken | None = None) -> ExportResult:  # fmt: skip
    """The bundle of a plan made from ``capture`` and changed here (a variant's sources
    where they lie, memory objects added): an explanation's rebuild or instrumented run
    that a fleet host replays (:mod:`cltui.fleet.explain`).  :class:`ExportError` as
    :func:`export_range`."""
    from cltui.capture.ranges import EnqueueRange

    enqueues = [int(s["enqueue"]) for s in manifest["steps"]] or [0]
    _check_apart(Path(capture.path), Path(outdir))
    try:
        return _write_bundle(copy.deepcopy(manifest), Path(capture.path), capture,
                             EnqueueRange(min(enqueues), max(enqueues)), outdir,
                             parse_langs(langs), mode, False, no_progress, cancel)  # fmt: skip
    except OSError as exc:
        raise ExportError(f"cannot write {exc.filename or outdir}: {exc.strerror or exc}") from None


def _include_dirs(dirs: Sequence[str | Path]) -> list[Path]:
    """The user's include folders (absolute); one that is not a folder: one line."""
    out: list[Path] = []
    for d in dirs:
        p = Path(d).expanduser().absolute()
        if not p.is_dir():
            raise ExportError(f"include folder {d}: not a folder")
        out.append(p)
    return out


def _with_variant(manifest: Manifest, variant: Variant, root: Path, tmp: Path) -> Manifest:
    """The plan with the variant's changes (a change that does not fit: one line)."""
    from cltui.replay.experiment.apply import apply_variant
    from cltui.replay.experiment.variant import VariantError

    try:
        return apply_variant(manifest, variant, root, tmp)
    except VariantError as exc:
        raise ExportError(str(exc)) from None


def _parse_range(range: EnqueueRange | str) -> EnqueueRange:
    from cltui.capture.ranges import EnqueueRange, RangeError, parse_range

    try:
        return range if isinstance(range, EnqueueRange) else parse_range(str(range))
    except RangeError as exc:
        raise ExportError(str(exc)) from None


def _plan(
    capture: Capture, rng: EnqueueRange, mode: str, tolerance: ToleranceSpec | None
) -> Plan:
    from cltui.replay.engine.compare import Tolerance
    from cltui.replay.plan import PlanError, build_plan

    try:
        return build_plan(capture, rng, mode=mode, tolerance=Tolerance.from_dict(tolerance))
    except (PlanError, ValueError) as exc:
        raise ExportError(str(exc)) from None


def _write_bundle(
    manifest: Manifest,
    root: Path,
    capture: Capture,
    rng: EnqueueRange,
    outdir: str | Path,
    chosen: list[str],
    mode: str,
    force: bool,
    report: ProgressFn,
    cancel: CancelToken | None,
    pyopencl_headers: bool = True,
    include_dirs: Sequence[Path] = (),
) -> ExportResult:
    with BundleWriter(outdir, force=force, cancel=cancel) as w:
        host = HostIncludes()
        notes = write_programs(w, manifest, root, host, pyopencl_headers, include_dirs)
        _write_data(w, manifest, root, report)
        report(ProgressEvent(0.95, "writing programs"))
        manifest["bundle"] = _bundle_info(capture, manifest, rng, mode, chosen, notes)
        manifest["bundle"]["host_files"] = [h.to_dict() for h in host.copied]
        manifest["bundle"]["refused_includes"] = [r.to_dict() for r in host.refused]
        manifest["bundle"]["missing_includes"] = [m.to_dict() for m in host.missing]
        manifest["bundle"]["unread_include_dirs"] = [u.to_dict() for u in host.unread.values()]
        w.write_text("manifest.json", json.dumps(manifest, indent=1) + "\n")
        for name, data in engine_modules().items():
            w.write_bytes(name, data)
        w.write_bytes("replay.py", _runner_file("python", "replay.py"), executable=True)
        if "cpp" in chosen:
            for name, data in cpp_files().items():
                w.write_bytes(name, data)
        w.write_text("README.md", render_readme(manifest, sorted(w.files)))
        w.write_checksums()
        data_files = len(w.data_sizes)
        data_bytes = sum(w.data_sizes.values())
        files = len(w.files) + 1
        final = w.commit()
    report(ProgressEvent(1.0, "done"))
    return ExportResult(
        outdir=final,
        steps=len(manifest["steps"]),
        enqueues=[int(s["enqueue"]) for s in manifest["steps"]],
        files=files,
        data_files=data_files,
        data_bytes=data_bytes,
        data_refs=len(manifest["data"]),
        langs=chosen,
        mode=mode,
        notes=[*manifest.get("notes", []), *notes],
        variant=(manifest.get("variant") or {}).get("lines"),
        host_files=host.copied,
        refused_includes=host.refused,
        missing_includes=host.missing,
        unread_include_dirs=list(host.unread.values()),
    )


def _check_apart(capture: Path, outdir: Path) -> None:
    """The bundle never goes inside the capture, nor replaces a folder holding it."""
    cap, out = capture.resolve(), outdir.absolute().resolve()
    if out == cap or out.is_relative_to(cap):
        raise ExportError(f"{outdir} is inside the capture {capture}: choose another folder")
    if cap.is_relative_to(out):
        raise ExportError(f"{outdir} holds the capture {capture}: choose another folder")


def _write_data(
    w: BundleWriter, manifest: Manifest, root: Path, report: ProgressFn
) -> None:
    """Every other data reference -> ``data/<sha256>.bin`` (each content stored once)."""
    data = manifest["data"]
    pending = [k for k, v in data.items() if "sha256" not in v]
    for i, key in enumerate(pending):
        if i % 16 == 0:
            report(ProgressEvent(0.05 + 0.9 * i / max(len(pending), 1), f"data {i}/{len(pending)}"))
        src = read_capture_file(root, data[key]["path"])
        try:
            rel, digest = w.add_data(src)
        except OSError as exc:
            raise ExportError(f"cannot read {src}: {exc.strerror or exc}") from None
        data[key] = {
            "path": rel,
            "size": w.data_sizes[digest],
            "sha256": digest,
            "captured_path": data[key]["path"],
        }


def _bundle_info(
    capture: Capture,
    manifest: Manifest,
    rng: EnqueueRange,
    mode: str,
    langs: list[str],
    notes: list[str],
) -> dict[str, Any]:
    from cltui import __version__

    devices = sorted({str(s.get("device")) for s in manifest["steps"] if s.get("device")})
    # the device of the range's first kernel: the runners' default device (replay.py's
    # engine.choose_device, replay.cpp's choose_device) is this one where it is present
    first = next((str(s["device"]) for s in manifest["steps"] if s.get("device")), None)
    identity = (
        dict(captured_devices(getattr(capture, "log", None), [first])[0]) if first else None
    )
    timing = {
        str(s["enqueue"]): s["captured_time"] for s in manifest["steps"] if s.get("captured_time")
    }
    cap_path = Path(getattr(capture, "path", manifest.get("source", {}).get("capture", "")))
    return {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "cltui": __version__,
        "range": str(rng),
        "mode": mode,
        "languages": langs,
        "capture": {
            "name": cap_path.name,
            "path": str(cap_path),
            "devices": devices,
            "device": identity,
            "captured_time_ns": timing,
        },
        "notes": notes,
    }
