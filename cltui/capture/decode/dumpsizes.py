"""Dump files cut short or emptied: each dump's size against its memory object's size, from
the log (a buffer's ``size``), the image dump's own name (its region and texel size) and the
other dumps of the same object (memDump Pre/Post of every enqueue, the ``Replay/`` copies).
A damaged dump is never data: the replay neither loads nor compares it (its check is
``unchecked (damaged dump: ...)``), and it is a problem named in ``info``, ``show`` and the app.

Pure: file names and sizes in (one ``stat`` per dump, once per capture), a sentence out."""

from __future__ import annotations

from cltui.capture.files.dumps import DumpIndex
from cltui.capture.files.listing import rel
from cltui.capture.model import ArgKind, Dump, KernelArg, Problem

__all__ = ["damage_reason", "damaged_dumps", "dump_damage"]


def _name(d: Dump, idx: DumpIndex) -> str:
    return rel(d.path, idx.root)


def dump_damage(idx: DumpIndex, d: Dump, a: KernelArg | None = None) -> str | None:
    """Why dump ``d`` (of argument ``a``, when known) cannot be the object's bytes, or None:
    ``memDumpPostEnqueue/...bin: 0 bytes, the buffer is 49152 bytes (log)``."""
    why = damage_reason(idx, d, a)
    return None if why is None else f"{_name(d, idx)}: {why}"


def damage_reason(idx: DumpIndex, d: Dump, a: KernelArg | None = None) -> str | None:
    """:func:`dump_damage` without the file's name: ``0 bytes, the buffer is 49152 bytes (log)``."""
    if d.hashed:
        return None
    size, name = d.size, _name(d, idx)
    kind = "image" if d.is_image else "buffer"
    if d.is_image and d.image_region is not None and d.image_bpp:
        w, h, dd = d.image_region
        want = w * h * dd * d.image_bpp // 8
        if size != want:
            return f"{size} bytes, the image is {want} bytes (its file name)"
        return None
    if a is not None and a.kind is ArgKind.BUFFER and a.mem is not None and a.mem.size:
        if size != a.mem.size:
            return f"{size} bytes, the buffer is {a.mem.size} bytes (log)"
        return None
    others = [(s, n) for s, n in idx.object_dumps().get(d.mem_id, []) if n != name]
    if others:
        big, where = max(others)
        if size < big:  # cut short: the object is at least as large as its largest dump
            return f"{size} bytes, the {kind} is {big} bytes ({where})"
    if size == 0:
        return "0 bytes (a memory object is never empty)"
    return None


def damaged_dumps(idx: DumpIndex) -> list[Problem]:
    """Every raw dump of the capture that is shorter than another dump of the same object,
    or empty (names and sizes only, without the log: ``show`` adds the log's sizes)."""
    out: list[Problem] = []
    for _mem, files in sorted(idx.object_dumps().items()):
        big = max(s for s, _ in files)
        for size, name in sorted(files, key=lambda t: t[1]):
            if size < big or size == 0:
                where = next(n for s, n in files if s == big)
                why = (
                    "0 bytes (a memory object is never empty)"
                    if big == 0
                    else f"{size} bytes, another dump of the object is {big} bytes ({where})"
                )
                out.append(Problem(f"damaged dump: {why}", name))
    return out
