"""The bundle's ``kernels/`` folder: each program's source (else its SPIR-V, else its device
binaries) copied from the capture, and the headers a source includes through its ``-I``
folders copied from this machine into ``kernels/include/<n>/`` (each one listed, as each one
refused: :class:`HostIncludes`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cltui.capture.names import sanitize_component
from cltui.export.bundle import BundleWriter, ExportError
from cltui.export.includes import IncludeSet, resolve_includes
from cltui.replay.engine.schema import Manifest

__all__ = [
    "NOT_FROM_SOURCE",
    "HostFile",
    "HostIncludes",
    "RefusedHostFile",
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

    def to_dict(self) -> dict[str, str | int]:
        return {
            "program": self.program,
            "host_path": self.host_path,
            "bundle_path": self.bundle_path,
            "bytes": self.bytes,
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


@dataclass
class HostIncludes:
    """What :func:`write_programs` took from, and refused from, this machine."""

    copied: list[HostFile] = field(default_factory=list)
    refused: list[RefusedHostFile] = field(default_factory=list)


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
    host_includes: bool = True,
) -> list[str]:
    """Sources (or binaries) into ``kernels/``, their headers into ``kernels/include/<n>/``
    (each one recorded in ``host``, as each include refused)."""
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
            inc = resolve_includes(source, prog.get("options") or "", host_includes)
            prog["captured_options"] = prog.get("options") or ""
            prog["options"] = inc.options
            prog["include_dirs"] = _write_includes(w, inc, str(label), include_index, host)
            notes.extend(f"{label}: {n}" for n in inc.notes)
            for r in inc.refused:
                host.refused.append(RefusedHostFile(str(label), r.include, r.host_path, r.why))
                notes.append(
                    f"{label}: #include {r.include!r} not bundled ({r.why}): {NOT_FROM_SOURCE}"
                )
        elif il := prog.get("il"):
            place(il, f"kernels/{stem}.spv")
        for b in prog.get("binaries", []):
            name = "_".join(str(b.get("device") or "device").lower().split())
            dev = sanitize_component(name, max_len=60)
            place(b["data"], f"kernels/{stem}.{dev}.bin")
    return notes


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
    for i, local in enumerate(inc.dirs):
        used = {rel: path for (di, rel), path in inc.headers.items() if di == i}
        if not used:  # nothing is included from there: the folder is not needed
            continue
        n = include_index.setdefault(local, len(include_index))
        dirs.append(f"kernels/include/{n}")
        for rel, path in sorted(used.items()):
            target = f"kernels/include/{n}/{rel}"
            if target not in w.files:
                w.copy_file(target, path)
                size = path.stat().st_size
                host.copied.append(HostFile(label, str(path), target, size))
    return dirs
