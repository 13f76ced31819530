"""Dumps that disagree with their argument: a dump of an argument that is no memory object,
an image dump whose size or region is not its name's or its image's, a buffer dump of
another size than its buffer, a size that is no multiple of the element type."""

from __future__ import annotations

import os
from pathlib import Path

from cltui.capture import log as li
from cltui.capture.decode.dumpsizes import damage_reason
from cltui.capture.files.dumps import DumpIndex
from cltui.capture.model import ArgKind, Dump, Enqueue, KernelArg, Problem

_MEMORY_KINDS = (ArgKind.BUFFER, ArgKind.IMAGE, ArgKind.SVM, ArgKind.UNKNOWN)


def rel(root: Path, p: Path) -> str:
    """``p`` relative to ``root`` when inside it, else ``p`` as given."""
    rs, ps = str(root), str(p)
    if len(ps) > len(rs) + 1 and ps.startswith(rs) and ps[len(rs)] == os.sep and rs != os.sep:
        return ps[len(rs) + 1 :]  # the usual case, without pathlib
    try:
        return str(Path(p).relative_to(root))
    except ValueError:
        return str(p)


def dump_problems(root: Path, enq: Enqueue, idx: DumpIndex | None = None) -> list[Problem]:
    """What is wrong with the Pre/Post dumps of ``enq``'s arguments (``root``: the capture;
    ``idx``: its dump index, for the sizes of the objects' other dumps)."""
    out: list[Problem] = []
    for a in enq.args:
        for which, d in (("pre", a.pre), ("post", a.post)):
            if d is not None:
                out.extend(_one_dump(root, enq.number, a, which, d, idx))
    return out


def _one_dump(
    root: Path, number: int, a: KernelArg, which: str, d: Dump, idx: DumpIndex | None
) -> list[Problem]:
    out: list[Problem] = []
    where = rel(root, d.path)
    if a.kind not in _MEMORY_KINDS:
        out.append(
            Problem(
                f"argument {a.index} ({a.type_name or a.kind.value}) is not a memory "
                f"object, yet the layer dumped a {which} buffer for it (stale "
                "argument state of an earlier kernel with the same handle)",
                where,
                number,
            )
        )
        return out
    if d.hashed:
        return out
    size = d.size
    damage = damage_reason(idx, d, a) if idx is not None else None
    if damage is not None:  # cut short or emptied: never data (the replay does not use it)
        out.append(Problem(f"argument {a.index}: damaged {which} dump: {damage}", where, number))
    elif d.is_image and d.image_region is not None and d.image_bpp:
        out.extend(_image_dump(number, a, which, d, where))
    elif a.mem is not None and a.mem.size and a.kind is ArgKind.BUFFER and size != a.mem.size:
        out.append(
            Problem(
                f"argument {a.index}: {which} dump holds {size} bytes, the buffer "
                f"has {a.mem.size}",
                where,
                number,
            )
        )
    if damage is None and a.dtype is not None and a.dtype.itemsize and size % a.dtype.itemsize:
        out.append(
            Problem(
                f"argument {a.index}: {which} dump size {size} is not a multiple of "
                f"{a.type_name} ({a.dtype.itemsize} bytes)",
                where,
                number,
            )
        )
    return out


def _image_dump(number: int, a: KernelArg, which: str, d: Dump, where: str) -> list[Problem]:
    """An image dump's size against its name's region, its region against the image's."""
    out: list[Problem] = []
    assert d.image_region is not None and d.image_bpp
    size = d.size
    w, h, dd = d.image_region
    want = w * h * dd * d.image_bpp // 8
    if size != want:
        out.append(
            Problem(
                f"argument {a.index}: {which} image dump holds {size}"
                f" bytes, its name says {want}",
                where,
                number,
            )
        )
    if a.mem is not None and a.mem.image is not None:
        reg = li.image_region(a.mem.image)
        if reg != d.image_region:
            out.append(
                Problem(
                    f"argument {a.index}: {which} image dump region "
                    f"{d.image_region} differs from the image {reg}",
                    where,
                    number,
                )
            )
    return out
