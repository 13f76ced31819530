"""Everything the capture model reads from files other than the call log.

* one-pass scans of the dump folders (§3, §4, §6.1) and of the ``CLI_`` program files (§5);
* lenient text reading and sampler descriptions.

The layer's hash is :mod:`cltui.capture.hashing`, a ``Replay/`` folder
:mod:`cltui.capture.replayfolder`, memory maps :func:`cltui.capture.confine.map_bytes`.

The file-name grammar lives in :mod:`cltui.capture.names`, the report parser in
:mod:`cltui.capture.report`; both are re-exported here.  Nothing in this module raises on bad
input: unreadable or unexpected files become :class:`~cltui.capture.model.Problem` entries.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cltui.capture.confine import (
    entry_leaves,
    leaves,
    map_bytes,
    open_inside,
    outside_message,
    real_root,
)
from cltui.capture.model import Dump, Problem, Program, SamplerDesc
from cltui.capture.names import (
    BUFFER_DUMP_RE,
    IMAGE_DUMP_RE,
    ParsedDumpName,
    ParsedProgramFileName,
    parse_dump_name,
    parse_mapunmap_name,
    parse_program_file_name,
    parse_replay_dir_name,
    parse_replay_file_name,
    parse_setkernelarg_name,
    sanitize_component,
    too_large_number,
)
from cltui.capture.report import Report, TimingRow, TimingTable, parse_report

__all__ = [
    "BUFFER_DUMP_RE",
    "IMAGE_DUMP_RE",
    "DumpIndex",
    "DumpTable",
    "MapUnmapDump",
    "ParsedDumpName",
    "ParsedProgramFileName",
    "ProgramFiles",
    "Report",
    "TimingRow",
    "TimingTable",
    "looks_like_hash_dump",
    "map_bytes",
    "parse_dump_name",
    "parse_mapunmap_name",
    "parse_program_file_name",
    "parse_replay_dir_name",
    "parse_replay_file_name",
    "parse_report",
    "parse_sampler_text",
    "parse_setkernelarg_name",
    "read_text_lenient",
    "sanitize_component",
    "scan_dumps",
    "scan_program_files",
    "scan_programs",
    "source_is_utf8",
]

# ---------------------------------------------------------------------------------------------
# Memory maps


# ---------------------------------------------------------------------------------------------
# Text helpers


def read_text_lenient(path: Path | str, root: Path | str | None = None) -> str:
    """A text file as str: UTF-8 with replacement characters, NUL bytes removed.

    For program sources, build logs and option files (byte-exact copies of what the application
    or driver produced, §5.1, §8.4).  Line ends are kept as they are (CRLF stays CRLF).
    With the capture ``root``, a file that leads outside it raises
    :class:`~cltui.capture.confine.OutsideCapture` (an ``OSError``).
    """
    with open_inside(root, path) as f:
        data = f.read()
    return data.replace(b"\0", b"").decode("utf-8", "replace")


def source_is_utf8(path: Path | str) -> bool:
    """True if the file (NULs removed) decodes as strict UTF-8."""
    try:
        Path(path).read_bytes().replace(b"\0", b"").decode("utf-8")
    except (UnicodeDecodeError, OSError):
        return False
    return True


def _text(data: bytes) -> str:
    return data.replace(b"\0", b"").decode("utf-8", "replace")


_SAMPLER_RE = re.compile(
    r"\s*CL_SAMPLER_NORMALIZED_COORDS\s*=\s*(CL_TRUE|CL_FALSE|1|0)\s*,"
    r"\s*CL_SAMPLER_ADDRESSING_MODE\s*=\s*([A-Z0-9_]+)\s*,"
    r"\s*CL_SAMPLER_FILTER_MODE\s*=\s*([A-Z0-9_]+)\s*"
)


def parse_sampler_text(text: str) -> SamplerDesc | None:
    """Parse a sampler description (``Sampler<i>.txt`` or the log's ``clSetKernelArg`` text)."""
    m = _SAMPLER_RE.fullmatch(text.replace("\0", ""))
    if m is None:
        return None
    return SamplerDesc(m[1] in ("CL_TRUE", "1"), m[2], m[3])


# ---------------------------------------------------------------------------------------------
# Dump folders (§3, §4, §6.1)

_HEX = frozenset(b"0123456789abcdefABCDEF")
_HASH_PROBE = 16  # files sampled per kind by the hash-only heuristic


def looks_like_hash_dump(path: Path | str, root: Path | str | None = None) -> bool:
    """The §3.4 heuristic: ≤ 17 bytes, 1-16 hex digits followed by ``\\n`` (or ``\\r\\n``)."""
    try:
        with open_inside(root, path) as f:
            head = f.read(18)
    except OSError:
        return False
    if len(head) > 17 or not head.endswith(b"\n"):
        return False
    body = head.rstrip(b"\r\n")
    return 1 <= len(body) <= 16 and all(ch in _HEX for ch in body)


@dataclass(frozen=True, slots=True)
class MapUnmapDump:
    """One ``memDumpCreateMapUnmap/`` file (§3.5)."""

    path: Path
    kind: str  # "create" | "map" | "unmap"
    mem_id: int
    offset: int
    enqueue: int
    hashed: bool = False


@dataclass
class DumpIndex:
    """What the dump folders hold, by enqueue number (from one ``os.scandir`` pass per folder)."""

    root: Path
    # enqueue -> dumps (read-only mappings; Dump objects built per enqueue on first access)
    pre: DumpTable = field(default_factory=lambda: DumpTable(Path(), {}))
    post: DumpTable = field(default_factory=lambda: DumpTable(Path(), {}))
    # enqueue number at set time (E4) -> (short kernel name, arg index) -> file
    setkernelarg: dict[int, dict[tuple[str, int], Path]] = field(default_factory=dict)
    replay: dict[int, Path] = field(default_factory=dict)  # enqueue -> Replay/Enqueue_<E>_<k>
    replay_kernels: dict[int, str] = field(default_factory=dict)  # enqueue -> <k> of the folder
    mapunmap: list[MapUnmapDump] = field(default_factory=list)  # sorted by (enqueue, kind, mem)
    buffer_hashes: bool = False  # the hashed flag given to buffer dumps
    image_hashes: bool = False  # the hashed flag given to image dumps
    problems: list[Problem] = field(default_factory=list)

    @property
    def hashes_only(self) -> bool:
        return self.buffer_hashes or self.image_hashes

    def dumps(self, enqueue: int, when: str = "pre") -> list[Dump]:
        table = self.pre if when == "pre" else self.post
        return table.get(enqueue, [])


def _scandir(
    path: Path, problems: list[Problem], root: Path, capture: Path | None = None
) -> list[os.DirEntry[str]]:
    """The entries of ``path`` (``root``: what problem locations are relative to), without
    any entry that is a link leading outside the ``capture`` folder (default ``root``): each
    one is a problem.  A ``path`` that is itself such a link is not listed."""
    boundary = real_root(capture or root)
    try:
        if os.path.islink(path):
            target = leaves(capture or root, path, root_real=boundary)
            if target is not None:
                problems.append(_outside(path, root, target))
                return []
        with os.scandir(path) as it:
            entries = list(it)
    except FileNotFoundError:
        return []
    except OSError as e:
        problems.append(Problem(f"cannot list folder: {e.strerror or e}", _rel(path, root)))
        return []
    kept = []
    for entry in entries:
        target = entry_leaves(entry, boundary)
        if target is None:
            kept.append(entry)
        else:
            problems.append(_outside(Path(entry.path), root, target))
    return kept


def _outside(path: Path, root: Path, target: str) -> Problem:
    return Problem(outside_message(target), _rel(path, root))


_TOO_LARGE = "a number in the name does not fit in 64 bits: file skipped"


def _unrecognised(what: str, name: str) -> str:
    return _TOO_LARGE if too_large_number(name) else f"unrecognised {what}"


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()  # d_type from readdir: no stat on Linux
    except OSError:
        return False


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _probe_hashed(paths: list[str], root: Path) -> bool:
    if not paths:
        return False
    sample = sorted(paths)[:_HASH_PROBE]
    return all(looks_like_hash_dump(p, root) for p in sample)


def _make_dump(
    path: Path, p: ParsedDumpName, buffer_hashed: bool, image_hashed: bool, root: Path | None
) -> Dump:
    return Dump(
        path=path,
        enqueue=p.enqueue,
        kernel=p.kernel,
        arg=p.arg,
        mem_id=p.mem_id,
        is_image=p.is_image,
        image_region=p.image_region,
        image_bpp=p.image_bpp,
        hashed=image_hashed if p.is_image else buffer_hashed,
        root=root,
    )


class DumpTable(Mapping[int, list[Dump]]):
    """enqueue number -> the dumps of one folder, sorted by (arg, mem_id).

    A read-only mapping: the scan keeps only file names grouped by enqueue; the
    :class:`~cltui.capture.model.Dump` objects of one enqueue are built on first access.
    """

    def __init__(
        self,
        folder: Path,
        names: dict[int, list[str]],
        buffer_hashed: bool = False,
        image_hashed: bool = False,
        root: Path | None = None,
    ) -> None:
        self.folder = folder
        self.root = root  # the capture folder (dumps are read only inside it)
        self._names = names
        self._buffer_hashed = buffer_hashed
        self._image_hashed = image_hashed
        self._cache: dict[int, list[Dump]] = {}

    def __getitem__(self, enqueue: int) -> list[Dump]:
        cached = self._cache.get(enqueue)
        if cached is not None:
            return cached
        dumps: list[Dump] = []
        for name in self._names[enqueue]:
            p = parse_dump_name(name)
            if p is not None:  # always: names were validated by the scan
                path = self.folder / name
                dumps.append(
                    _make_dump(path, p, self._buffer_hashed, self._image_hashed, self.root)
                )
        dumps.sort(key=lambda d: (d.arg, d.mem_id, d.path.name))
        self._cache[enqueue] = dumps
        return dumps

    def __iter__(self) -> Iterator[int]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, enqueue: object) -> bool:
        return enqueue in self._names

    def file_count(self) -> int:
        """Number of dump files, without building any Dump."""
        return sum(len(v) for v in self._names.values())

    def file_names(self, enqueue: int) -> list[str]:
        return list(self._names.get(enqueue, []))

    def all_hashed(self, enqueue: int) -> bool:
        """True if every dump of ``enqueue`` is a hash-only file (cheap: no Dump built)."""
        names = self._names.get(enqueue)
        if not names:
            return False
        return all(self._image_hashed if n.endswith(".raw") else self._buffer_hashed for n in names)

    def kernel(self, enqueue: int) -> str | None:
        """The short kernel name of the enqueue's dumps (cheap: one name parsed)."""
        names = self._names.get(enqueue)
        p = parse_dump_name(names[0]) if names else None
        return p.kernel if p is not None else None

    def __repr__(self) -> str:
        return f"DumpTable({str(self.folder)!r}, {len(self)} enqueues, {self.file_count()} files)"


def _scan_dump_folder(folder: Path, root: Path, problems: list[Problem]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for entry in _scandir(folder, problems, root):
        name = entry.name
        m = BUFFER_DUMP_RE.fullmatch(name) or IMAGE_DUMP_RE.fullmatch(name)
        if m is None or not _is_file(entry) or too_large_number(name):
            msg = (
                _unrecognised("dump file name", name)
                if m is None
                else ("unexpected entry (not a file)" if not _is_file(entry) else _TOO_LARGE)
            )
            problems.append(Problem(msg, _rel(Path(entry.path), root)))
            continue
        out.setdefault(int(m[1]), []).append(name)
    return dict(sorted(out.items()))


def scan_dumps(
    root: Path | str,
    hashes_only: bool | None = None,
    *,
    image_hashes_only: bool | None = None,
) -> DumpIndex:
    """Index every dump file of a capture directory, without a ``stat`` per file.

    ``hashes_only``: whether buffer dumps hold hashes (the log's ``DumpBufferHashes`` control);
    ``image_hashes_only`` the same for image dumps (``DumpImageHashes``; defaults to
    ``hashes_only``).  ``None`` means "unknown": decided by the §3.4 heuristic on a sample of up
    to 16 files per kind (buffers / images) of the pre and post folders.
    """
    root = Path(root)
    idx = DumpIndex(root=root)
    probs = idx.problems
    pre_dir, post_dir = root / "memDumpPreEnqueue", root / "memDumpPostEnqueue"
    pre = _scan_dump_folder(pre_dir, root, probs)
    post = _scan_dump_folder(post_dir, root, probs)

    mapunmap_raw: list[tuple[str, Any]] = []
    for entry in _scandir(root / "memDumpCreateMapUnmap", probs, root):
        pm = parse_mapunmap_name(entry.name) if _is_file(entry) else None
        if pm is None:
            msg = _unrecognised("map/unmap dump name", entry.name)
            probs.append(Problem(msg, _rel(Path(entry.path), root)))
            continue
        mapunmap_raw.append((entry.path, pm))

    if image_hashes_only is None:
        image_hashes_only = hashes_only
    if hashes_only is None or image_hashes_only is None:
        buffers: list[str] = []
        images: list[str] = []
        for folder, table in ((pre_dir, pre), (post_dir, post)):
            for names in table.values():
                for n in names:
                    (images if n.endswith(".raw") else buffers).append(str(folder / n))
                if len(buffers) >= _HASH_PROBE and len(images) >= _HASH_PROBE:
                    break
        if hashes_only is None:
            hashes_only = _probe_hashed(buffers + [p for p, _ in mapunmap_raw], root)
        if image_hashes_only is None:
            image_hashes_only = _probe_hashed(images, root)
    idx.buffer_hashes = hashes_only
    idx.image_hashes = image_hashes_only
    idx.pre = DumpTable(pre_dir, pre, hashes_only, image_hashes_only, root)
    idx.post = DumpTable(post_dir, post, hashes_only, image_hashes_only, root)
    idx.mapunmap = sorted(
        (
            MapUnmapDump(Path(p), pm.kind, pm.mem_id, pm.offset, pm.enqueue, hashes_only)
            for p, pm in mapunmap_raw
        ),
        key=lambda m: (m.enqueue, m.kind, m.mem_id, m.offset),
    )

    ska: dict[int, dict[tuple[str, int], Path]] = {}
    for entry in _scandir(root / "SetKernelArg", probs, root):
        ps = parse_setkernelarg_name(entry.name) if _is_file(entry) else None
        if ps is None:
            msg = _unrecognised("SetKernelArg file name", entry.name)
            probs.append(Problem(msg, _rel(Path(entry.path), root)))
            continue
        ska.setdefault(ps.enqueue, {})[(ps.kernel, ps.arg)] = Path(entry.path)
    idx.setkernelarg = dict(sorted(ska.items()))

    replay_entries = sorted(_scandir(root / "Replay", probs, root), key=lambda e: e.name)
    for entry in replay_entries:
        pr = parse_replay_dir_name(entry.name) if _is_dir(entry) else None
        if pr is None:
            msg = _unrecognised("Replay entry", entry.name)
            probs.append(Problem(msg, _rel(Path(entry.path), root)))
            continue
        if pr.enqueue in idx.replay:
            probs.append(
                Problem(
                    f"two Replay folders for one enqueue (kept {idx.replay[pr.enqueue].name!r};"
                    " one is probably from an earlier run)",
                    _rel(Path(entry.path), root),
                    pr.enqueue,
                )
            )
            continue
        idx.replay[pr.enqueue] = Path(entry.path)
        idx.replay_kernels[pr.enqueue] = pr.kernel
    idx.replay = dict(sorted(idx.replay.items()))
    return idx


# ---------------------------------------------------------------------------------------------
# Program files (§5)


@dataclass
class ProgramFiles:
    """Every ``CLI_`` file of one program (number, hash), for the capture engineer."""

    number: int | None  # None with OmitProgramNumber
    hash: str
    source: Path | None = None
    # compile count -> (options hash, kind, file); kind: options / compile_options / link_options
    options: dict[int, list[tuple[str, str, Path]]] = field(default_factory=dict)
    build_logs: dict[tuple[int, str], Path] = field(default_factory=dict)  # (count, dev) -> file
    input_binaries: dict[str, Path] = field(default_factory=dict)  # dev -> file
    output_binaries: dict[tuple[int, str], Path] = field(default_factory=dict)
    spirv: Path | None = None
    spvasm: Path | None = None
    isa: list[tuple[ParsedProgramFileName, Path]] = field(default_factory=list)

    def last_options(self) -> tuple[int, str, Path] | None:
        """(compile count, options hash, file) of the highest compile count."""
        if not self.options:
            return None
        count = max(self.options)
        entries = sorted(self.options[count], key=lambda t: (t[1] != "options", t[0]))
        ohash, _kind, p = entries[0]
        return count, ohash, p


def scan_program_files(
    root: Path | str,
) -> tuple[dict[tuple[int | None, str], ProgramFiles], list[Problem]]:
    """Group the top-level ``CLI_`` files by (program number, hash), one ``os.scandir``."""
    root = Path(root)
    problems: list[Problem] = []
    progs: dict[tuple[int | None, str], ProgramFiles] = {}
    for entry in _scandir(root, problems, root):
        if not entry.name.startswith("CLI_") or not _is_file(entry):
            continue
        p = parse_program_file_name(entry.name)
        if p is None:
            problems.append(Problem(_unrecognised("program file name", entry.name), entry.name))
            continue
        pf = progs.get(p.program_key)
        if pf is None:
            pf = progs[p.program_key] = ProgramFiles(p.number, p.hash)
        fpath = Path(entry.path)
        cc = p.compile_count if p.compile_count is not None else 0
        if p.kind == "source":
            pf.source = fpath
        elif p.kind in ("options", "compile_options", "link_options"):
            pf.options.setdefault(cc, []).append((p.options_hash or "", p.kind, fpath))
        elif p.kind == "build_log":
            pf.build_logs[(cc, p.device or "")] = fpath
        elif p.kind == "input_binary":
            pf.input_binaries[p.device or ""] = fpath
        elif p.kind == "output_binary":
            pf.output_binaries[(cc, p.device or "")] = fpath
        elif p.kind == "spirv":
            pf.spirv = fpath
        elif p.kind == "spvasm":
            pf.spvasm = fpath
        elif p.kind == "isabin":
            pf.isa.append((p, fpath))
    for pf in progs.values():
        for lst in pf.options.values():
            lst.sort()
    ordered = sorted(progs.items(), key=lambda kv: (kv[0][0] is None, kv[0][0] or 0, kv[0][1]))
    return dict(ordered), problems


def _read_options(path: Path, problems: list[Problem], root: Path) -> str:
    try:
        return read_text_lenient(path, root)
    except OSError as e:
        problems.append(Problem(f"cannot read options: {e.strerror or e}", _rel(path, root)))
        return ""


def scan_programs(root: Path | str) -> tuple[list[Program], list[Problem]]:
    """One :class:`~cltui.capture.model.Program` per (number, hash) found in ``CLI_`` names.

    ``options`` is the text of the last build's options file (highest compile count);
    ``build_logs`` / ``binaries`` map the device tag to the file of the last compile count that
    has one (``binaries`` also holds input binaries under ``"input:<dev>"``).  Programs named
    ``0000_00000000`` with only a build log are the §5.3 link quirk and are kept as they are.
    """
    root = Path(root)
    groups, problems = scan_program_files(root)
    out: list[Program] = []
    for pf in groups.values():
        last = pf.last_options()
        options, options_path = "", None
        if last is not None:
            options_path = last[2]
            options = _read_options(options_path, problems, root)
        logs: dict[str, Path] = {}
        for (_cc, dev), p in sorted(pf.build_logs.items()):
            logs[dev] = p  # later compile counts overwrite earlier ones
        bins: dict[str, Path] = {f"input:{d}": p for d, p in sorted(pf.input_binaries.items())}
        for (_cc, dev), p in sorted(pf.output_binaries.items()):
            bins[dev] = p
        out.append(
            Program(
                number=pf.number if pf.number is not None else -1,
                hash=pf.hash,
                source_path=pf.source or pf.spirv,
                options=options,
                options_path=options_path,
                build_logs=logs,
                binaries=bins,
            )
        )
    return out, problems


def iter_source_files(root: Path | str) -> Iterator[tuple[ParsedProgramFileName, Path]]:
    """Every ``CLI_*_source.cl`` with its parsed name (for hash checks and kernel lookup)."""
    root = Path(root)
    boundary = real_root(root)
    with os.scandir(root) as it:
        for entry in it:
            if entry_leaves(entry, boundary) is not None:
                continue
            p = parse_program_file_name(entry.name)
            if p is not None and p.kind == "source":
                yield p, Path(entry.path)
