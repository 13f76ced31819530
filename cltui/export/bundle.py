"""Writing a bundle folder safely: a temp folder next to the destination, renamed into place.

:class:`BundleWriter` knows nothing about replay: it stores files under relative paths that it
checks (no absolute paths, no ``..``, no component that :func:`sanitize_component` would change),
stores data by content hash (each distinct content once), writes ``SHA256SUMS`` and moves the
finished tree into place.  :func:`stream_tar` writes a finished tree as a tar archive.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from cltui.capture.names import sanitize_component
from cltui.capture.safeopen import MAX_JSON, open_regular, read_text_limited
from cltui.errors import Cancelled, CltuiError
from cltui.process import lifecycle
from cltui.progress import CancelToken

CHUNK = 1 << 20


class ExportError(CltuiError):
    """A specific one-line problem with an export (destination exists, cancelled, unreadable)."""


class ExportCancelled(Cancelled, ExportError):
    """The caller's cancel event was set; nothing was left behind."""


def safe_relpath(rel: str) -> str:
    """``rel`` as a checked POSIX relative path inside the bundle, or :class:`ValueError`."""
    if not rel or "\\" in rel or "\0" in rel:
        raise ValueError(f"unsafe bundle path {rel!r}")
    p = PurePosixPath(rel)
    if p.is_absolute() or p.as_posix() != rel:  # also refuses "a//b", "a/./b", "a/"
        raise ValueError(f"unsafe bundle path {rel!r}")
    for part in p.parts:
        if part in ("", ".", "..") or sanitize_component(part) != part:
            raise ValueError(f"unsafe bundle path {rel!r}")
    return p.as_posix()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open_regular(path, follow=True) as f:  # never a FIFO: it would block
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


BUNDLE_FORMAT = "cltui-bundle"  # manifest.json's "bundle": {"format": ...}: what --force replaces


def is_cltui_bundle(folder: Path) -> bool:
    """``folder`` holds a ``manifest.json`` (a regular file, not a link, read bounded) whose
    ``bundle.format`` is :data:`BUNDLE_FORMAT`: a bundle cltui exported."""
    try:
        manifest = json.loads(read_text_limited(folder / "manifest.json", MAX_JSON))
    except (OSError, ValueError):
        return False
    info = manifest.get("bundle") if isinstance(manifest, dict) else None
    return isinstance(info, dict) and info.get("format") == BUNDLE_FORMAT


def _holds(folder: Path, path: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


def replace_refusal(outdir: Path) -> str | None:
    """Why ``--force`` may not replace the existing folder ``outdir``, or None.

    Never ``/``, the home folder, the current folder or a folder holding either (by rule,
    before anything is read); else only a cltui bundle (:func:`is_cltui_bundle`) or an empty
    folder: anything else is a user's folder."""
    real = outdir.resolve()
    if real == Path(real.anchor):
        return f"{outdir} is the root folder: not replacing it"
    home = os.environ.get("HOME")
    if home and _holds(real, Path(home).resolve()):
        return f"{outdir} is the home folder or holds it: not replacing it"
    try:
        cwd = Path.cwd().resolve()
    except OSError:
        cwd = None
    if cwd is not None and _holds(real, cwd):
        return f"{outdir} is the current folder or holds it: not replacing it"
    try:
        empty = not any(os.scandir(real))
    except OSError as exc:
        return f"cannot look into {outdir}: {exc.strerror or exc}: not replacing it"
    if empty or is_cltui_bundle(real):
        return None
    return f"{outdir} is not a cltui bundle: not replacing it"


class BundleWriter:
    """Collects a bundle in a temp folder next to ``outdir``; :meth:`commit` moves it there.

    Use as a context manager: leaving the block without :meth:`commit` (an error, a
    cancellation) removes the temp folder, and ``outdir`` is untouched.
    """

    def __init__(
        self, outdir: str | Path, *, force: bool = False, cancel: CancelToken | None = None
    ) -> None:
        self.outdir = Path(outdir).absolute()
        self.force = force
        self.cancel = cancel
        if self.outdir.exists() or self.outdir.is_symlink():
            if not force:
                raise ExportError(f"{self.outdir} already exists (use --force to replace it)")
            if not self.outdir.is_dir() or self.outdir.is_symlink():
                raise ExportError(f"{self.outdir} exists and is not a folder: not replacing it")
            if (why := replace_refusal(self.outdir)) is not None:
                raise ExportError(why)
        parent = self.outdir.parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ExportError(f"cannot create {parent}: {exc.strerror or exc}") from None
        # staging folders of a killed export of this target (owner dead) go first
        lifecycle.sweep_staging(self.outdir)
        try:
            self.root = lifecycle.temp_dir(
                "export", parent=parent, prefix=f".{self.outdir.name[:40]}.tmp-"
            )
            lifecycle.note_staging(self.outdir, self.root)
        except OSError as exc:
            raise ExportError(f"cannot write in {parent}: {exc.strerror or exc}") from None
        self.files: dict[str, str] = {}  # relative path -> sha256
        self.data_sizes: dict[str, int] = {}  # sha256 -> size (files under data/)
        self._committed = False

    def __enter__(self) -> BundleWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._committed:
            self.abort()

    # ---- adding files ------------------------------------------------------

    def check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise ExportCancelled("export cancelled")

    def _target(self, rel: str) -> Path:
        rel = safe_relpath(rel)
        if rel in self.files:
            raise ValueError(f"{rel} written twice")
        path = self.root / rel
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._write_error(rel, exc) from None
        return path

    def write_bytes(self, rel: str, data: bytes, *, executable: bool = False) -> str:
        """Store ``data`` at ``rel``; returns its sha256."""
        self.check_cancel()
        path = self._target(rel)
        try:
            path.write_bytes(data)
        except OSError as exc:
            raise self._write_error(rel, exc) from None
        if executable:
            path.chmod(0o755)
        digest = hashlib.sha256(data).hexdigest()
        self.files[safe_relpath(rel)] = digest
        return digest

    def write_text(self, rel: str, text: str, *, executable: bool = False) -> str:
        return self.write_bytes(rel, text.encode("utf-8"), executable=executable)

    def copy_file(self, rel: str, src: Path) -> str:
        """Copy ``src`` (read-only access) to ``rel``; returns its sha256."""
        self.check_cancel()
        digest = self._copy(src, rel, self._target(rel))
        self.files[safe_relpath(rel)] = digest
        return digest

    def _copy(self, src: Path, rel: str, path: Path) -> str:
        """Copy ``src`` to ``path`` (the bundle's ``rel``); its sha256.  An error names the
        side it came from: ``src`` (an OSError, the caller's "cannot read") or the bundle
        file (an :class:`ExportError`: "cannot write <bundle path>", a full disk)."""
        h = hashlib.sha256()
        with open_regular(src, follow=True) as fi:  # a regular file (never a FIFO or device)
            try:
                fo = path.open("wb")
            except OSError as exc:
                raise self._write_error(rel, exc) from None
            try:
                while chunk := fi.read(CHUNK):
                    h.update(chunk)
                    try:
                        fo.write(chunk)
                    except OSError as exc:
                        raise self._write_error(rel, exc) from None
                    self.check_cancel()
            finally:
                try:
                    fo.close()  # flushes: a full disk can show here first
                except OSError as exc:
                    raise self._write_error(rel, exc) from None
        return h.hexdigest()

    def _write_error(self, rel: str, exc: OSError) -> ExportError:
        """A bundle file that could not be written, named where the bundle will be."""
        return ExportError(f"cannot write {self.outdir / rel}: {exc.strerror or exc}")

    def add_data(self, src: Path, *, prefix: str = "data", suffix: str = ".bin") -> tuple[str, str]:
        """Store the contents of ``src`` once under ``prefix/<sha256><suffix>``.

        Returns (relative path, sha256).  A content already stored is not written again.
        """
        self.check_cancel()
        digest = sha256_file(src)
        rel = f"{prefix}/{digest}{suffix}"
        if rel not in self.files:
            path = self._target(rel)
            self._copy(src, rel, path)
            self.files[rel] = digest
            self.data_sizes[digest] = path.stat().st_size
        return rel, digest

    def add_data_bytes(self, data: bytes, *, prefix: str = "data", suffix: str = ".bin") -> str:
        digest = hashlib.sha256(data).hexdigest()
        rel = f"{prefix}/{digest}{suffix}"
        if rel not in self.files:
            self.write_bytes(rel, data)
            self.data_sizes[digest] = len(data)
        return rel

    # ---- finishing ---------------------------------------------------------

    def write_checksums(self, name: str = "SHA256SUMS") -> None:
        """``sha256sum -c`` format: ``<hex>  <path>``, sorted, every file but itself."""
        lines = [f"{digest}  {rel}\n" for rel, digest in sorted(self.files.items())]
        path = self._target(name)
        try:
            path.write_text("".join(lines), encoding="utf-8")
        except OSError as exc:
            raise self._write_error(name, exc) from None

    def commit(self) -> Path:
        """Move the finished tree to ``outdir`` (replacing an old one only with ``force``)."""
        self.check_cancel()
        for p in [self.root, *self.root.rglob("*")]:
            if p.is_dir():
                p.chmod(0o755)
            elif not os.access(p, os.X_OK):
                p.chmod(0o644)
        old: Path | None = None
        if self.outdir.exists():
            why = None if not self.force else replace_refusal(self.outdir)
            if not self.force or why is not None or self.outdir.is_symlink():
                self.abort()
                why = why or f"{self.outdir} already exists (use --force to replace it)"
                raise ExportError(why)
            old = Path(
                tempfile.mkdtemp(
                    prefix=f".{self.outdir.name[:40]}.old-p{os.getpid()}-", dir=self.outdir.parent
                )
            )
            os.rmdir(old)
            lifecycle.note_staging(self.outdir, old)
            os.rename(self.outdir, old)
        try:
            os.rename(self.root, self.outdir)
        except OSError as exc:
            if old is not None:
                os.rename(old, self.outdir)
            self.abort()
            raise ExportError(f"cannot move the bundle to {self.outdir}: {exc.strerror}") from None
        self._committed = True
        lifecycle.release(self.root)
        lifecycle.forget_staging(self.root)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
            lifecycle.forget_staging(old)
        return self.outdir

    def abort(self) -> None:
        lifecycle.remove(self.root)
        lifecycle.forget_staging(self.root)


def _walk(root: Path) -> Iterator[Path]:
    """Every directory and file under ``root``, sorted, parents before children."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        base = Path(dirpath)
        if base != root:
            yield base
        for name in sorted(filenames):
            yield base / name


def stream_tar(root: Path, out: BinaryIO, arcname: str | None = None) -> None:
    """Write the tree at ``root`` to ``out`` as an uncompressed tar stream.

    Members are named ``<arcname>/...`` (default: the folder's name), in sorted order, with
    plain permissions and no owner names, so ``tar x`` recreates the same files.
    """
    top = sanitize_component(arcname or root.name)

    def clean(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mode = 0o755 if info.isdir() or info.mode & 0o111 else 0o644
        return info

    with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        tar.add(root, arcname=top, recursive=False, filter=clean)
        for p in _walk(root):
            if p.is_symlink():
                continue
            tar.add(
                p, arcname=f"{top}/{p.relative_to(root).as_posix()}", recursive=False, filter=clean
            )
