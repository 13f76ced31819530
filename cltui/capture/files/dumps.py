"""The dump folders (capture-format §3, §4, §6.1), indexed by enqueue number in one
``os.scandir`` pass per folder: memDump Pre/Post, map/unmap dumps, SetKernelArg dumps and the
``Replay/`` folder names (a folder's content is :mod:`cltui.capture.replayfolder`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from cltui.capture.confine import open_inside
from cltui.capture.files.listing import (
    TOO_LARGE,
    is_dir,
    is_file,
    not_regular,
    not_regular_problem,
    rel,
    scandir,
    unrecognised,
)
from cltui.capture.model import Dump, Problem
from cltui.capture.names import (
    BUFFER_DUMP_RE,
    IMAGE_DUMP_RE,
    ParsedDumpName,
    ParsedMapUnmapName,
    parse_dump_name,
    parse_mapunmap_name,
    parse_replay_dir_name,
    parse_setkernelarg_name,
    too_large_number,
)

_P = TypeVar("_P")

__all__ = [
    "DumpIndex",
    "DumpTable",
    "MapUnmapDump",
    "looks_like_hash_dump",
    "make_dump",
    "scan_dumps",
]

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


def make_dump(
    path: Path, p: ParsedDumpName, buffer_hashed: bool, image_hashed: bool, root: Path | None
) -> Dump:
    """The :class:`~cltui.capture.model.Dump` of one parsed dump file name."""
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
                dumps.append(make_dump(path, p, self._buffer_hashed, self._image_hashed, self.root))
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
    _objects: dict[int, list[tuple[int, str]]] | None = field(default=None, repr=False)

    @property
    def hashes_only(self) -> bool:
        return self.buffer_hashes or self.image_hashes

    def object_dumps(self) -> dict[int, list[tuple[int, str]]]:
        """The layer's memory-object number -> (size, name inside the capture) of each of its
        raw dumps: memDump Pre and Post, and the ``Replay/*/Pre`` and ``Post`` copies (hash
        dumps and links left out).  Built once, one ``stat`` per file: the evidence that a
        dump file was cut short (:mod:`cltui.capture.decode.dumpsizes`)."""
        if self._objects is not None:
            return self._objects
        out: dict[int, list[tuple[int, str]]] = {}
        folders = [self.pre.folder, self.post.folder]
        for rdir in self.replay.values():
            folders += [rdir / "Pre", rdir / "Post"]
        scratch: list[Problem] = []  # a folder that cannot be listed is reported elsewhere
        for folder in folders:
            if not folder.name:  # an empty table's folder
                continue
            for entry in scandir(folder, scratch, self.root):
                p = parse_dump_name(entry.name) if is_file(entry) else None
                if p is None or (self.image_hashes if p.is_image else self.buffer_hashes):
                    continue
                try:
                    size = entry.stat().st_size  # links that lead out were left out
                except OSError:
                    continue
                out.setdefault(p.mem_id, []).append((size, rel(Path(entry.path), self.root)))
        self._objects = out
        return out

    def dumps(self, enqueue: int, when: str = "pre") -> list[Dump]:
        table = self.pre if when == "pre" else self.post
        return table.get(enqueue, [])


def _probe_hashed(paths: list[str], root: Path) -> bool:
    if not paths:
        return False
    sample = sorted(paths)[:_HASH_PROBE]
    return all(looks_like_hash_dump(p, root) for p in sample)


def _scan_dump_folder(folder: Path, root: Path, problems: list[Problem]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for entry in scandir(folder, problems, root):
        name = entry.name
        if (kind := not_regular(entry)) is not None:
            problems.append(not_regular_problem(kind, rel(Path(entry.path), root)))
            continue
        m = BUFFER_DUMP_RE.fullmatch(name) or IMAGE_DUMP_RE.fullmatch(name)
        if m is None or not is_file(entry) or too_large_number(name):
            msg = (
                unrecognised("dump file name", name)
                if m is None
                else ("unexpected entry (not a file)" if not is_file(entry) else TOO_LARGE)
            )
            problems.append(Problem(msg, rel(Path(entry.path), root)))
            continue
        out.setdefault(int(m[1]), []).append(name)
    return dict(sorted(out.items()))


def _parsed_entries(
    root: Path, folder: str, what: str, parse: Callable[[str], _P | None], problems: list[Problem]
) -> Iterator[tuple[os.DirEntry[str], _P]]:
    """Every regular file of ``root/folder`` whose name ``parse`` reads, with what it read;
    any other entry is a problem (not a regular file, or an unrecognised ``what``)."""
    for entry in scandir(root / folder, problems, root):
        if (kind := not_regular(entry)) is not None:
            problems.append(not_regular_problem(kind, rel(Path(entry.path), root)))
            continue
        parsed = parse(entry.name) if is_file(entry) else None
        if parsed is None:
            problems.append(Problem(unrecognised(what, entry.name), rel(Path(entry.path), root)))
            continue
        yield entry, parsed


def _scan_mapunmap(root: Path, problems: list[Problem]) -> list[tuple[str, ParsedMapUnmapName]]:
    """(path, parsed name) of every ``memDumpCreateMapUnmap/`` file, in listing order."""
    found = _parsed_entries(root, "memDumpCreateMapUnmap", "map/unmap dump name",
                            parse_mapunmap_name, problems)  # fmt: skip
    return [(entry.path, pm) for entry, pm in found]


def _probe_hashes(
    root: Path,
    folders: tuple[tuple[Path, dict[int, list[str]]], ...],
    mapunmap: list[tuple[str, ParsedMapUnmapName]],
    hashes_only: bool | None,
    image_hashes_only: bool | None,
) -> tuple[bool, bool]:
    """(buffer dumps hold hashes, image dumps hold hashes): given, else the §3.4 heuristic on
    up to 16 files per kind of the Pre and Post folders (map/unmap dumps count as buffers)."""
    if hashes_only is not None and image_hashes_only is not None:
        return hashes_only, image_hashes_only
    buffers: list[str] = []
    images: list[str] = []
    for folder, table in folders:
        for names in table.values():
            for n in names:
                (images if n.endswith(".raw") else buffers).append(str(folder / n))
            if len(buffers) >= _HASH_PROBE and len(images) >= _HASH_PROBE:
                break
    if hashes_only is None:
        hashes_only = _probe_hashed(buffers + [p for p, _ in mapunmap], root)
    if image_hashes_only is None:
        image_hashes_only = _probe_hashed(images, root)
    return hashes_only, image_hashes_only


def _scan_setkernelarg(
    root: Path, problems: list[Problem]
) -> dict[int, dict[tuple[str, int], Path]]:
    """``SetKernelArg/`` files: enqueue number at set time -> (kernel, arg index) -> file."""
    ska: dict[int, dict[tuple[str, int], Path]] = {}
    found = _parsed_entries(root, "SetKernelArg", "SetKernelArg file name",
                            parse_setkernelarg_name, problems)  # fmt: skip
    for entry, ps in found:
        ska.setdefault(ps.enqueue, {})[(ps.kernel, ps.arg)] = Path(entry.path)
    return dict(sorted(ska.items()))


def _scan_replay_names(idx: DumpIndex) -> None:
    """``Replay/Enqueue_<E>_<k>`` folders into ``idx.replay`` and ``idx.replay_kernels`` (the
    first by name wins when two name one enqueue)."""
    root, probs = idx.root, idx.problems
    for entry in sorted(scandir(root / "Replay", probs, root), key=lambda e: e.name):
        pr = parse_replay_dir_name(entry.name) if is_dir(entry) else None
        if pr is None:
            msg = unrecognised("Replay entry", entry.name)
            probs.append(Problem(msg, rel(Path(entry.path), root)))
            continue
        if pr.enqueue in idx.replay:
            probs.append(
                Problem(
                    f"two Replay folders for one enqueue (kept {idx.replay[pr.enqueue].name!r};"
                    " one is probably from an earlier run)",
                    rel(Path(entry.path), root),
                    pr.enqueue,
                )
            )
            continue
        idx.replay[pr.enqueue] = Path(entry.path)
        idx.replay_kernels[pr.enqueue] = pr.kernel
    idx.replay = dict(sorted(idx.replay.items()))


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
    mapunmap = _scan_mapunmap(root, probs)
    if image_hashes_only is None:
        image_hashes_only = hashes_only
    buf_h, img_h = _probe_hashes(
        root, ((pre_dir, pre), (post_dir, post)), mapunmap, hashes_only, image_hashes_only
    )
    idx.buffer_hashes = buf_h
    idx.image_hashes = img_h
    idx.pre = DumpTable(pre_dir, pre, buf_h, img_h, root)
    idx.post = DumpTable(post_dir, post, buf_h, img_h, root)
    idx.mapunmap = sorted(
        (MapUnmapDump(Path(p), m.kind, m.mem_id, m.offset, m.enqueue, buf_h) for p, m in mapunmap),
        key=lambda m: (m.enqueue, m.kind, m.mem_id, m.offset),
    )
    idx.setkernelarg = _scan_setkernelarg(root, probs)
    _scan_replay_names(idx)
    return idx
