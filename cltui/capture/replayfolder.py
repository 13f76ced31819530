"""One ``Replay/Enqueue_<E>_<k>/`` folder (capture-format.md §6.2): its kernel source or
binaries, build options, work sizes, arguments, samplers, image metadata and raw Pre/Post
dumps, decoded; unreadable or unexpected files become problems."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cltui.capture import images
from cltui.capture.confine import (
    open_inside,
)
from cltui.capture.files.dumps import make_dump
from cltui.capture.files.listing import (
    TOO_LARGE,
    is_dir,
    is_file,
    not_regular,
    not_regular_problem,
    scandir,
    unrecognised,
)
from cltui.capture.files.text import lenient_text, parse_sampler_text
from cltui.capture.model import Dump, Problem, SamplerDesc
from cltui.capture.names import (
    parse_dump_name,
    parse_replay_dir_name,
    parse_replay_file_name,
    too_large_number,
)
from cltui.capture.safeopen import MAX_SMALL_TEXT, MAX_SOURCE, open_regular

__all__ = ["ImageMeta", "ReplayFolder", "image_type_name", "read_replay_folder", "read_worksizes"]

# Replay folders (§6.2)

_CL_MEM_OBJECT_TYPES: dict[int, str] = {
    0x10F0: "CL_MEM_OBJECT_BUFFER",
    0x10F1: "CL_MEM_OBJECT_IMAGE2D",
    0x10F2: "CL_MEM_OBJECT_IMAGE3D",
    0x10F3: "CL_MEM_OBJECT_IMAGE2D_ARRAY",
    0x10F4: "CL_MEM_OBJECT_IMAGE1D",
    0x10F5: "CL_MEM_OBJECT_IMAGE1D_ARRAY",
    0x10F6: "CL_MEM_OBJECT_IMAGE1D_BUFFER",
    0x10F7: "CL_MEM_OBJECT_PIPE",
}


def image_type_name(value: int) -> str:
    return _CL_MEM_OBJECT_TYPES.get(value, f"0x{value:X}")


@dataclass(frozen=True, slots=True)
class ImageMeta:
    """``Image_MetaData_<i>.txt`` (§6.2).  ``width/height/depth`` are the dump region (§3.3);
    the type line is computed by the layer and misreports 1D images (§6.2)."""

    width: int
    height: int
    depth: int
    element_size: int  # bytes per texel
    row_pitch: int  # device pitch, not the packed .raw pitch
    slice_pitch: int
    channel_data_type: int
    channel_order: int
    image_type: int

    @property
    def channel_data_type_name(self) -> str:
        return images.type_name(self.channel_data_type)

    @property
    def channel_order_name(self) -> str:
        return images.order_name(self.channel_order)

    @property
    def image_type_name(self) -> str:
        return image_type_name(self.image_type)

    @property
    def region(self) -> tuple[int, int, int]:
        return (self.width, self.height, self.depth)

    @property
    def packed_size(self) -> int:
        """Bytes of the tightly packed ``.raw`` dump of this region."""
        return self.width * self.height * self.depth * self.element_size

    def numpy_dtype_and_channels(self) -> tuple[np.dtype[np.generic], int] | None:
        """The texel component dtype and channels per texel, or None for unknown enums.

        Packed formats (565, 555, 101010, 101010_2, UNORM_INT24) give one channel of the
        packing word's dtype.  A file holding ``W·H·D`` texels reshapes to
        ``(D, H, W, channels)`` with this dtype.
        """
        order = images.channel_order(self.channel_order)
        ctype = images.channel_type(self.channel_data_type)
        if order is None or ctype is None:
            return None
        return np.dtype(ctype.component), 1 if ctype.packed else order.channels


def _parse_image_meta(text: str) -> ImageMeta | None:
    fields = text.split()
    if len(fields) != 9:
        return None
    try:
        v = [int(x) for x in fields]
    except ValueError:
        return None
    if any(x < 0 for x in v):
        return None
    return ImageMeta(*v)


@dataclass
class ReplayFolder:
    """Everything in one ``Replay/Enqueue_<E>_<k>/`` folder (§6.2), decoded."""

    path: Path
    enqueue: int | None  # enqueueNumber.txt, else the folder name
    kernel_name: str  # kernelName.txt, else the folder name
    global_size: tuple[int, ...] = ()  # () when worksizes.txt is missing/garbled
    local_size: tuple[int, ...] | None = None  # None = NULL local size (all zeros)
    offset: tuple[int, ...] = ()
    build_options: str | None = None  # buildOptions.txt without its line end
    arg_types: list[str] = field(default_factory=list)  # not aligned with arg indexes (§6.2)
    kernel_source: bytes | None = None  # kernel.cl without NULs; None if empty/absent
    kernel_source_path: Path | None = None
    spirv: Path | None = None
    device_binaries: list[Path] = field(default_factory=list)  # by device index
    arguments: dict[int, bytes] = field(default_factory=dict)
    argument_paths: dict[int, Path] = field(default_factory=dict)
    locals: dict[int, int] = field(default_factory=dict)
    samplers: dict[int, SamplerDesc] = field(default_factory=dict)
    svm_offsets: dict[int, int] = field(default_factory=dict)
    image_meta: dict[int, ImageMeta] = field(default_factory=dict)
    pre: dict[int, Dump] = field(default_factory=dict)  # arg index -> dump (always raw)
    post: dict[int, Dump] = field(default_factory=dict)
    has_run_py: bool = False
    problems: list[Problem] = field(default_factory=list)
    root: Path | None = None  # the capture folder: nothing is read outside it

    @property
    def arg_indices(self) -> list[int]:
        """Every argument index that any file of the folder mentions."""
        keys: set[int] = set()
        for d in (self.arguments, self.locals, self.samplers, self.svm_offsets, self.image_meta):
            keys.update(d)
        keys.update(self.pre)
        keys.update(self.post)
        return sorted(keys)


_MAX_SMALL = MAX_SMALL_TEXT  # text files of a replay folder larger than this are garbage


def _read_small(path: Path, rf: ReplayFolder, limit: int = _MAX_SMALL) -> bytes | None:
    try:
        with open_inside(rf.root, path) as f:
            # read(n) allocates n bytes first: ask for the file's size, not the limit (1 GB)
            size = os.fstat(f.fileno()).st_size
            data = f.read(min(limit, size or limit) + 1)
    except OSError as e:
        rf.problems.append(Problem(f"cannot read: {e.strerror or e}", path.name, rf.enqueue))
        return None
    if len(data) > limit:
        rf.problems.append(Problem("file is unexpectedly large; ignored", path.name, rf.enqueue))
        return None
    return data


def _strip_eol(s: str) -> str:
    if s.endswith("\n"):
        s = s[:-1]
    if s.endswith("\r"):
        s = s[:-1]
    return s


def _parse_int_file(data: bytes) -> int | None:
    s = lenient_text(data).strip()
    if not s or not (s.isdigit() or (s[0] == "-" and s[1:].isdigit())) or len(s) > 20:
        return None
    v = int(s)
    return v if -(1 << 63) <= v < (1 << 63) else None


def _parse_worksizes(
    text: str,
) -> tuple[tuple[int, ...], tuple[int, ...] | None, tuple[int, ...]] | None:
    lines = [ln for ln in text.replace("\r", "").split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) != 3:
        return None
    try:
        g, lo, off = (tuple(int(x) for x in ln.split()) for ln in lines)
    except ValueError:
        return None
    if not g or len(lo) != len(g) or len(off) != len(g) or min(g + lo + off) < 0:
        return None
    return g, (None if all(x == 0 for x in lo) else lo), off


def read_worksizes(
    folder: Path | str,
) -> tuple[tuple[int, ...], tuple[int, ...] | None, tuple[int, ...]] | None:
    """(global, local or None, offset) from a Replay folder's ``worksizes.txt``; None when it
    is missing, unreadable or garbled (one small read, for recovering enqueues without a log)."""
    try:
        with open_regular(Path(folder) / "worksizes.txt", follow=True) as f:
            data = f.read(4097)
    except OSError:
        return None
    if len(data) > 4096:
        return None
    return _parse_worksizes(lenient_text(data))


def _scan_sub_dumps(folder: Path, rf: ReplayFolder, sub: str) -> dict[int, Dump]:
    out: dict[int, Dump] = {}
    for entry in scandir(folder, rf.problems, rf.path, rf.root):
        if (kind := not_regular(entry)) is not None:
            rf.problems.append(not_regular_problem(kind, f"{sub}/{entry.name}", rf.enqueue))
            continue
        p = parse_dump_name(entry.name) if is_file(entry) else None
        if p is None:
            msg = unrecognised("dump file name", entry.name)
            rf.problems.append(Problem(msg, f"{sub}/{entry.name}"))
            continue
        if rf.enqueue is not None and p.enqueue != rf.enqueue & 0xFFFFFFFF:
            rf.problems.append(
                Problem(
                    f"dump names enqueue {p.enqueue}, folder is for {rf.enqueue}",
                    f"{sub}/{entry.name}",
                    rf.enqueue,
                )
            )
        if p.arg in out:
            rf.problems.append(
                Problem(f"two dumps for argument {p.arg}", f"{sub}/{entry.name}", rf.enqueue)
            )
            continue
        out[p.arg] = make_dump(Path(entry.path), p, False, False, rf.root)
    return dict(sorted(out.items()))


def read_replay_folder(path: Path | str, root: Path | str | None = None) -> ReplayFolder:
    """Decode one Replay folder.  Never raises: every odd file is a :class:`Problem`.

    ``root``: the capture folder, which no file read may lead out of (default: the folder
    above ``Replay/``, else the folder holding ``path``)."""
    path = Path(path)
    if root is None:
        root = path.parent.parent if path.parent.name == "Replay" else path.parent
    rf = _named_folder(path, Path(root))
    entries = scandir(path, rf.problems, path, rf.root)
    if not entries:
        if not path.is_dir():
            rf.problems.append(Problem("Replay folder not found", str(path), rf.enqueue, "error"))
        else:
            rf.problems.append(Problem("Replay folder is empty", path.name, rf.enqueue))
        return _finish_replay(rf)
    seen: set[str] = set()
    device_bins: dict[int, Path] = {}
    for entry in sorted(entries, key=lambda e: e.name):
        if is_dir(entry):
            _read_subfolder(rf, entry.name, Path(entry.path))
        elif (kind := not_regular(entry)) is not None:
            seen.add(pf.kind if (pf := parse_replay_file_name(entry.name)) else "")
            rf.problems.append(not_regular_problem(kind, entry.name, rf.enqueue))
        else:
            _read_file(rf, entry.name, Path(entry.path), seen, device_bins)
    rf.device_binaries = [device_bins[k] for k in sorted(device_bins)]
    _check_complete(rf, seen)
    return _finish_replay(rf)


def _named_folder(path: Path, root: Path) -> ReplayFolder:
    """An empty :class:`ReplayFolder` with what the folder's name says (a problem if it is
    not ``Enqueue_<number>_<kernel>``)."""
    parsed_dir = parse_replay_dir_name(path.name)
    rf = ReplayFolder(
        path=path,
        enqueue=parsed_dir.enqueue if parsed_dir else None,
        kernel_name=parsed_dir.kernel if parsed_dir else path.name,
        root=root,
    )
    if parsed_dir is None:
        msg = (
            TOO_LARGE
            if too_large_number(path.name)
            else "folder name is not Enqueue_<number>_<kernel>"
        )
        rf.problems.append(Problem(msg, path.name))
    return rf


def _bad(rf: ReplayFolder, name: str, msg: str) -> None:
    rf.problems.append(Problem(msg, name, rf.enqueue))


def _read_subfolder(rf: ReplayFolder, name: str, fpath: Path) -> None:
    """``Pre/`` and ``Post/`` dumps; ``Test/`` is written by run.py when a user replays."""
    if name == "Pre":
        rf.pre = _scan_sub_dumps(fpath, rf, name)
    elif name == "Post":
        rf.post = _scan_sub_dumps(fpath, rf, name)
    elif name != "Test":
        _bad(rf, name, "unexpected folder")


def _read_file(
    rf: ReplayFolder, name: str, fpath: Path, seen: set[str], device_bins: dict[int, Path]
) -> None:
    """One file of the folder, by the kind its name gives (``seen``: the kinds met so far)."""
    pf = parse_replay_file_name(name)
    if pf is None:
        _bad(rf, name, TOO_LARGE if too_large_number(name) else "unexpected file")
        return
    seen.add(pf.kind)
    kind, i = pf.kind, pf.index
    if kind == "run_py":
        rf.has_run_py = True
    elif kind == "spirv":
        rf.spirv = fpath
    elif kind == "device_binary":
        assert i is not None
        device_bins[i] = fpath
    elif kind == "kernel_source":
        data = _read_small(fpath, rf, MAX_SOURCE)
        rf.kernel_source_path = fpath
        if data is not None:
            src = data.replace(b"\0", b"")
            rf.kernel_source = src if src.strip() else None
    elif kind == "argument":
        assert i is not None
        data = _read_small(fpath, rf)
        if data is not None:
            rf.arguments[i] = data
            rf.argument_paths[i] = fpath
    else:
        data = _read_small(fpath, rf)
        if data is not None:
            _decode_replay_text(rf, kind, i, data, name)


def _check_complete(rf: ReplayFolder, seen: set[str]) -> None:
    """A problem for each file the layer always writes that is missing; tables sorted."""
    for kind, fname in (
        ("enqueue_number", "enqueueNumber.txt"),
        ("kernel_name", "kernelName.txt"),
        ("worksizes", "worksizes.txt"),
    ):
        if kind not in seen:
            _bad(rf, fname, "missing")
    if "kernel_source" not in seen and rf.spirv is None and not rf.device_binaries:
        _bad(rf, "kernel.cl", "no kernel.cl, kernel.spv or DeviceBinary*.bin: cannot be rebuilt")
    rf.arguments = dict(sorted(rf.arguments.items()))
    rf.locals = dict(sorted(rf.locals.items()))
    rf.samplers = dict(sorted(rf.samplers.items()))
    rf.svm_offsets = dict(sorted(rf.svm_offsets.items()))
    rf.image_meta = dict(sorted(rf.image_meta.items()))


def _finish_replay(rf: ReplayFolder) -> ReplayFolder:
    """Make every problem's ``where`` relative to the capture (``Replay/<folder>/<file>``)
    and attach the folder's (final) enqueue number to it."""
    path = rf.path
    base = f"Replay/{path.name}" if path.parent.name == "Replay" else path.name
    fixed = []
    for p in rf.problems:
        where = base if p.where in (path.name, str(path)) else f"{base}/{p.where}"
        fixed.append(dataclasses.replace(p, where=where, enqueue=rf.enqueue))
    rf.problems = fixed
    return rf


def _decode_replay_text(
    rf: ReplayFolder,
    kind: str,
    i: int | None,
    data: bytes,
    name: str,
) -> None:
    """A small text file of the folder into ``rf`` (a problem when it does not parse)."""
    text = lenient_text(data)
    if i is not None:
        _decode_indexed(rf, kind, i, data, text, name)
    elif kind == "enqueue_number":
        n = _parse_int_file(data)
        if n is None or n < 0:
            _bad(rf, name, f"not an enqueue number: {text.strip()[:40]!r}")
        else:
            if rf.enqueue is not None and n != rf.enqueue:
                _bad(rf, name, f"says enqueue {n} but the folder name says {rf.enqueue}")
            rf.enqueue = n
    elif kind == "kernel_name":
        kname = _strip_eol(text)
        if not kname:
            _bad(rf, name, "empty kernel name")
        else:
            rf.kernel_name = kname
    elif kind == "worksizes":
        ws = _parse_worksizes(text)
        if ws is None:
            _bad(rf, name, "expected 3 lines of global / local / offset sizes")
        else:
            rf.global_size, rf.local_size, rf.offset = ws
    elif kind == "build_options":
        rf.build_options = _strip_eol(text)
    elif kind == "arg_types":
        rf.arg_types = [ln.strip() for ln in text.splitlines() if ln.strip()]


def _decode_indexed(rf: ReplayFolder, kind: str, i: int, data: bytes, text: str, name: str) -> None:
    """A per-argument text file (local size, SVM offset, sampler, image metadata) into ``rf``."""
    if kind in ("local", "svm_offset"):
        n = _parse_int_file(data)
        if n is None or n < 0:
            _bad(rf, name, f"not a byte count: {text.strip()[:40]!r}")
        elif kind == "local":
            rf.locals[i] = n
        else:
            rf.svm_offsets[i] = n
    elif kind == "sampler":
        s = parse_sampler_text(_strip_eol(text))
        if s is None:
            _bad(rf, name, "not a sampler description")
        else:
            rf.samplers[i] = s
    elif kind == "image_meta":
        meta = _parse_image_meta(text)
        if meta is None:
            _bad(rf, name, "expected 9 non-negative integers")
        else:
            rf.image_meta[i] = meta
