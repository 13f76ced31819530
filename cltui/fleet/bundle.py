"""The bundle a fleet run sends: a bundle folder as given, or a range exported with cltui's
exporter; per-argument tolerances (``--arg-tol``) written into its checks (the runners read a
check's ``tol``), in a private copy (hard links) when the bundle is not the run's own.

An export of ``DUMPDIR RANGE`` is kept in a local cache (``$XDG_CACHE_HOME/cltui/fleet-exports``,
the :data:`KEEP` most recently used), keyed by everything it is made from: the capture's
files (names, sizes, modification times), the range, the mode and the content of cltui's own
source files (not their times, not ``__pycache__``).  A second run of the same range of an
unchanged capture sends the same bundle, which the hosts hold already; an export made again
(the entry evicted) has the same bundle id too (:func:`cltui.fleet.cache.bundle_files`: the
manifest's ``created`` time is not part of it).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from cltui.capture.capture import Capture
from cltui.capture.ranges import EnqueueRange
from cltui.capture.safeopen import MAX_JSON, read_text_limited
from cltui.export import ExportError, export_range
from cltui.export.bundle import sha256_file
from cltui.fleet.cache import CacheError, bundle_files
from cltui.process import lifecycle
from cltui.progress import CancelToken, ProgressFn
from cltui.replay.engine.schema import ArgTolerance

__all__ = ["export_cached", "export_temp", "private_copy", "with_arg_tolerance"]

KEEP = 8


def export_temp(
    capture: Capture,
    rng: EnqueueRange,
    mode: str,
    *,
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
) -> tuple[Path, Path]:
    """The range exported (Python and C++) into a new private temp folder: (folder to remove
    at the end, the bundle)."""
    tmp = lifecycle.temp_dir("fleet-bundle")
    out = tmp / "bundle"
    export_range(capture, rng, out, langs=("python", "cpp"), mode=mode,
                 progress=progress, cancel=cancel)
    return tmp, out


def cache_root() -> Path:
    return lifecycle.cache_folder() / "fleet-exports"


def _stat_lines(root: Path) -> list[str]:
    """``relpath size mtime_ns`` of every file under ``root`` (links not followed)."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            p = Path(dirpath) / name
            with contextlib.suppress(OSError):
                st = p.lstat()
                out.append(f"{p.relative_to(root)} {st.st_size} {st.st_mtime_ns}")
    return out


def _code_lines(root: Path) -> list[str]:
    """``relpath sha256`` of cltui's own source files: content, not times; no bytecode
    (``__pycache__``, rewritten by any import, changes nothing an export holds)."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith((".pyc", ".pyo")):
                continue
            p = Path(dirpath) / name
            with contextlib.suppress(OSError):
                if p.is_file() and not p.is_symlink():
                    out.append(f"{p.relative_to(root)} {sha256_file(p)}")
    return out


def export_key(capture: Path, rng: EnqueueRange, mode: str) -> str:
    """What an export is made from, as one sha256: the capture's files (names, sizes and
    times: a capture is large), the range, the mode and the content of cltui's sources."""
    import cltui

    h = hashlib.sha256()
    for part in (str(capture.resolve()), str(rng), mode):
        h.update(part.encode() + b"\0")
    for line in _stat_lines(capture) + _code_lines(Path(cltui.__file__).parent):
        h.update(line.encode("utf-8", "surrogateescape") + b"\n")
    return h.hexdigest()


def export_cached(
    capture: Capture,
    rng: EnqueueRange,
    mode: str,
    *,
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
) -> Path:
    """The range's bundle from the local cache, exported there first when missing (or
    damaged); the least recently used entries beyond :data:`KEEP` are removed."""
    root = cache_root()
    entry = root / export_key(Path(capture.path), rng, mode)
    bundle = entry / "bundle"
    if bundle.is_dir():
        try:
            bundle_files(bundle)  # every file held to its sum
            os.utime(entry)
            return bundle
        except CacheError:
            shutil.rmtree(entry, ignore_errors=True)
    entry.mkdir(parents=True, exist_ok=True)
    try:
        export_range(capture, rng, bundle, langs=("python", "cpp"), mode=mode,
                     progress=progress, cancel=cancel)
    except ExportError:
        if not (bundle / "SHA256SUMS").is_file():  # not made meanwhile by another run
            shutil.rmtree(entry, ignore_errors=True)
            raise
    _prune(root, keep=entry)
    return bundle


def _prune(root: Path, keep: Path) -> None:
    entries = sorted((p for p in root.iterdir() if p.is_dir()),
                     key=lambda p: p.stat().st_mtime, reverse=True)
    for old in [p for p in entries if p != keep][KEEP - 1 :]:
        shutil.rmtree(old, ignore_errors=True)


def private_copy(bundle: Path) -> tuple[Path, Path]:
    """A copy of the user's bundle to change (hard links where the disk allows)."""
    tmp = lifecycle.temp_dir("fleet-bundle")
    out = tmp / "bundle"

    def link(src: str, dst: str) -> object:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)
        return dst

    shutil.copytree(bundle, out, copy_function=link, symlinks=True)
    return tmp, out


def with_arg_tolerance(bundle: Path, arg_tol: ArgTolerance) -> None:
    """Write ``arg_tol`` into the checks of the bundle's manifest (each check of an argument
    it names gets that argument's tolerance) and its line of ``SHA256SUMS``."""
    if not arg_tol:
        return
    mpath = bundle / "manifest.json"
    try:
        plan: dict[str, Any] = json.loads(read_text_limited(mpath, MAX_JSON))
    except (OSError, ValueError) as exc:
        raise CacheError(f"{mpath}: cannot read the manifest: {exc}") from None
    for st in plan.get("steps", []):
        for c in [*st.get("checks", []), *st.get("prechecks", [])]:
            tol = dict(c.get("tol") or {})
            for a in c.get("args", []):
                tol.update(arg_tol.get(int(a), {}))
            if tol:
                c["tol"] = tol
    data = (json.dumps(plan, indent=1) + "\n").encode()
    mpath.unlink()  # a hard link to the user's file: replaced, never written through
    mpath.write_bytes(data)
    sums = bundle / "SHA256SUMS"
    digest = hashlib.sha256(data).hexdigest()
    lines = [f"{digest}  manifest.json" if ln.endswith("  manifest.json") else ln
             for ln in read_text_limited(sums, MAX_JSON).splitlines()]
    sums.unlink()
    sums.write_text("\n".join(lines) + "\n", encoding="utf-8")
