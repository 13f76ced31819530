"""The bundle's ``kernels/`` folder: each program's source (else its SPIR-V, else its device
binaries) copied from the capture, and the headers a source includes copied into
``kernels/include/<n>/`` from pyopencl's own folder and the folders the user named, never from
a folder the capture names (:mod:`cltui.export.includes`); each one listed, as each include
refused or missing and each captured folder not read (:class:`HostIncludes`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cltui.capture.names import sanitize_component
from cltui.export.bundle import BundleWriter, ExportError
from cltui.export.includes import IncludeSet, resolve_includes, unread_line
from cltui.replay.engine.schema import Manifest

__all__ = [
    "NOT_FROM_SOURCE",
    "HostFile",
    "HostIncludes",
    "MissingInclude",
    "RefusedHostFile",
    "UnreadDir",
    "read_capture_file",
    "write_programs",
]

NOT_FROM_SOURCE = "the bundle may not build from source"


@dataclass(frozen=True)
class HostFile:
    """A header copied into the bundle from this machine (not from the capture)."""

    program: str
    host_path: str
    bundle_path: str
    bytes: int
    origin: str  # "pyopencl" (its package's cl folder) or "include-dir" (a folder the user named)

    def to_dict(self) -> dict[str, str | int]:
        return {
            "program": self.program,
            "host_path": self.host_path,
            "bundle_path": self.bundle_path,
            "bytes": self.bytes,
            "origin": self.origin,
        }


@dataclass(frozen=True)
class RefusedHostFile:
    """An ``#include`` whose host file was not copied (the bundle may not build from source)."""

    program: str
    include: str
    host_path: str
    why: str

    def to_dict(self) -> dict[str, str]:
        return {
            "program": self.program,
            "include": self.include,
            "host_path": self.host_path,
            "why": self.why,
        }


@dataclass(frozen=True)
class MissingInclude:
    """An ``#include`` found in no bundled folder (the bundle may not build from source)."""

    program: str
    include: str

    def to_dict(self) -> dict[str, str]:
        return {"program": self.program, "include": self.include}


@dataclass
class UnreadDir:
    """A captured ``-I`` folder that exists on this machine and was not read."""

    dir: str
    programs: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # those programs' includes not bundled

    def to_dict(self) -> dict[str, str | list[str]]:
        return {"dir": self.dir, "programs": self.programs, "missing": self.missing}


@dataclass
class HostIncludes:
    """What :func:`write_programs` took from, refused from and did not read on this machine,
    and the includes the bundle lacks."""

    copied: list[HostFile] = field(default_factory=list)
    refused: list[RefusedHostFile] = field(default_factory=list)
    missing: list[MissingInclude] = field(default_factory=list)
    unread: dict[str, UnreadDir] = field(default_factory=dict)

    def add(self, label: str, inc: IncludeSet) -> list[str]:
        """Record one program's includes; its notes (the unread folders': :meth:`notes`)."""
        notes: list[str] = []
        for r in inc.refused:
            self.refused.append(RefusedHostFile(label, r.include, r.host_path, r.why))
            why = f"not bundled ({r.why}): {NOT_FROM_SOURCE}"
            notes.append(f"{label}: #include {r.include!r} {why}")
        self.missing.extend(MissingInclude(label, m) for m in inc.missing)
        for d in inc.unread:
            u = self.unread.setdefault(d, UnreadDir(d))
            u.programs.append(label)
            u.missing.extend(m for m in inc.missing if m not in u.missing)
        if inc.missing and not inc.unread:  # else the folder's line says it
            names = ", ".join(repr(m) for m in inc.missing)
            notes.append(f"{label}: not in the bundle: #include {names}: {NOT_FROM_SOURCE}")
        return notes

    def notes(self) -> list[str]:
        """One line per captured folder not read: what the bundle lacks, how to add it."""
        return [unread_line(u.dir, u.missing) for u in self.unread.values()]


def read_capture_file(root: Path, rel: str) -> Path:
    """A capture file the plan references; a link that leads out of the capture is refused
    (its target's contents would otherwise travel with the bundle)."""
    path = root / rel
    inside = path.resolve().is_relative_to(root.resolve())
    if path.is_symlink() and not inside:
        raise ExportError(f"{path} is a symbolic link (not followed): it leads outside the capture")
    if not inside:
        raise ExportError(f"{path} leads outside the capture: not exported")
    if not path.is_file():
        raise ExportError(f"cannot read {path}: not a file")
    return path


def write_programs(
    w: BundleWriter,
    manifest: Manifest,
    root: Path,
    host: HostIncludes,
    pyopencl_headers: bool = True,
    include_dirs: Sequence[Path] = (),
) -> list[str]:
    """Sources (or binaries) into ``kernels/``, their headers into ``kernels/include/<n>/``
    (each one recorded in ``host``, as each include refused or missing): from pyopencl's
    folder unless ``pyopencl_headers`` is False, and from ``include_dirs`` (the user's)."""
    notes: list[str] = []
    data = manifest["data"]
    include_index: dict[Path, int] = {}
    done: dict[str, str] = {}  # data key -> bundle path

    def place(key: str, rel: str) -> None:
        if key in done:
            return
        ref = data[key]
        variant = ref.get("origin") == "variant"  # a variant's source, written by cltui
        src = Path(ref["path"]) if variant else read_capture_file(root, ref["path"])
        stem, dot, ext = rel.rpartition(".")
        n = 1
        while rel in w.files:  # two names that sanitise alike
            n += 1
            rel = f"{stem}-{n}{dot}{ext}"
        try:
            digest = w.copy_file(rel, src)
        except OSError as exc:
            raise ExportError(f"cannot read {src}: {exc.strerror or exc}") from None
        data[key] = {**ref, "path": rel, "sha256": digest,
                     "captured_path": key if variant else ref["path"]}  # fmt: skip
        done[key] = rel

    for pid, prog in manifest["programs"].items():
        stem = sanitize_component(f"program_{pid}", fold_case=True)
        label = prog.get("label", pid)
        src_key = prog.get("source")
        if src_key:
            place(src_key, f"kernels/{stem}.cl")
            if prog.get("binaries"):
                notes.append(f"{label}: device binaries left out (the source is in the bundle)")
            prog["binaries"] = []
            source = (w.root / done[src_key]).read_bytes()
            options = prog.get("options") or ""
            inc = resolve_includes(source, options, include_dirs, pyopencl_headers)
            prog["captured_options"] = options
            prog["options"] = inc.options
            prog["include_dirs"] = _write_includes(w, inc, str(label), include_index, host)
            notes.extend(f"{label}: {n}" for n in inc.notes)
            notes.extend(host.add(str(label), inc))
        elif il := prog.get("il"):
            place(il, f"kernels/{stem}.spv")
        for b in prog.get("binaries", []):
            name = "_".join(str(b.get("device") or "device").lower().split())
            dev = sanitize_component(name, max_len=60)
            place(b["data"], f"kernels/{stem}.{dev}.bin")
    return [*notes, *host.notes()]


def _write_includes(
    w: BundleWriter,
    inc: IncludeSet,
    label: str,
    include_index: dict[Path, int],
    host: HostIncludes,
) -> list[str]:
    """The headers a source includes into ``kernels/include/<n>/`` (one folder per host
    folder, shared by the programs); the bundle folders the program's options name."""
    dirs: list[str] = []
    for i, root in enumerate(inc.roots):
        used = {rel: path for (di, rel), path in inc.headers.items() if di == i}
        if not used:  # nothing is included from there: the folder is not needed
            continue
        n = include_index.setdefault(root.path, len(include_index))
        dirs.append(f"kernels/include/{n}")
        for rel, path in sorted(used.items()):
            target = f"kernels/include/{n}/{rel}"
            if target not in w.files:
                w.copy_file(target, path)
                size = path.stat().st_size
                host.copied.append(HostFile(label, str(path), target, size, root.origin))
    return dirs
