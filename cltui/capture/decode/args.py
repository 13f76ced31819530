"""One argument of a kernel launch: its raw bytes (SetKernelArg dump > Replay folder > log
text), its kind (buffer, image, SVM, sampler, local, scalar), the memory object it names and
its typed value."""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

from cltui.capture import log as li
from cltui.capture.cltypes import CType, decode_value
from cltui.capture.confine import read_bytes_inside
from cltui.capture.model import ArgKind, Enqueue, KernelArg, MemObject, Problem
from cltui.capture.replayfolder import ReplayFolder

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.capture.signature import Param

_SKA_STEPS = 64  # earlier SetKernelArg groups a launch may complete


def mem_at(cap: Capture, handle: int | None, off: int) -> MemObject | None:
    """The memory object ``handle`` names at log offset ``off`` (None: none, or no log)."""
    if not handle or cap.log is None or off < 0:
        return None
    return cap.log.mem_at(handle, off)


def set_arg_indexes(cap: Capture, number: int, kname: str) -> set[int]:
    """Argument indexes the SetKernelArg dumps hold for a launch of ``kname`` at ``number``
    (its own group and the earlier groups of the same kernel that it completes)."""
    table = cap.dumps.setkernelarg
    out: set[int] = set()
    j = bisect.bisect_right(cap._ska_keys, number) - 1
    steps = 0
    while j >= 0 and steps < _SKA_STEPS:
        mine = {i for k, i in table[cap._ska_keys[j]] if k == kname}
        if out and not mine:
            break
        out |= mine
        if 0 in mine:
            break
        j -= 1
        steps += 1
    return out


def set_arg_raw(
    cap: Capture, number: int, kname: str, i: int, setarg: li.SetArg | None
) -> bytes | None:
    """The SetKernelArg dump of argument ``i``: the one ``setarg``'s counter names, else
    (no clSetKernelArg line) the last one at or before enqueue ``number``."""
    table = cap.dumps.setkernelarg
    path = None
    if setarg is not None and setarg.counter is not None:
        path = table.get(setarg.counter, {}).get((kname, i))
    elif setarg is None and cap._ska_keys:
        j = bisect.bisect_right(cap._ska_keys, number) - 1
        while j >= 0 and path is None:
            path = table[cap._ska_keys[j]].get((kname, i))
            j -= 1
    if path is None:
        return None
    try:
        return read_bytes_inside(cap.path, path)
    except OSError:
        return None


def make_arg(
    cap: Capture,
    enq: Enqueue,
    i: int,
    param: Param | None,
    setarg: li.SetArg | None,
    replay: ReplayFolder | None,
    kname: str,
    off: int,
    memory_hint: bool = False,
    svm_hint: bool = False,
) -> KernelArg:
    """Argument ``i`` of kernel enqueue ``enq`` (``param``: its declaration, when the
    signature is known; ``off``: the log offset whose objects its handles name)."""
    arg = KernelArg(index=i, kind=ArgKind.UNKNOWN, size=setarg.size if setarg else 0)
    ctype = None
    ckind: str | None = None
    if param is not None:
        ctype = param.ctype
        arg.name = param.name
        arg.type_name = param.type_text
        arg.address_space = param.address_space
        arg.access = param.access
        ckind = "pointer" if param.is_pointer else param.ctype.kind
    _raw_value(cap, arg, enq.number, kname, setarg, replay)
    is_local_ptr = ckind == "pointer" and param is not None and param.address_space == "local"
    _classify(cap, arg, ckind, is_local_ptr, setarg, replay, off, memory_hint, svm_hint)
    if arg.kind is ArgKind.SVM:
        _svm_allocation(cap, arg, replay, off)
    _typed_value(enq, arg, ctype, ckind, setarg)
    return arg


def _raw_value(
    cap: Capture,
    arg: KernelArg,
    number: int,
    kname: str,
    setarg: li.SetArg | None,
    replay: ReplayFolder | None,
) -> bytes | None:
    """The argument's raw bytes (SetKernelArg dump > Replay Argument file > log text), set
    on ``arg`` with where they came from (and its size, when the log gave none)."""
    i = arg.index
    raw = None
    if setarg is None or not setarg.is_svm:
        raw = set_arg_raw(cap, number, kname, i, setarg)
        if raw is not None:
            arg.raw_source = "setkernelarg"
    if raw is None and replay is not None and i in replay.arguments:
        raw = replay.arguments[i]
        arg.raw_source = "replay"
    if raw is None and setarg is not None and setarg.raw is not None:
        raw = setarg.raw
        arg.raw_source = "log"
    arg.raw = raw
    if not arg.size and raw is not None:
        arg.size = len(raw)
    return raw


def _classify(
    cap: Capture,
    arg: KernelArg,
    ckind: str | None,
    is_local_ptr: bool,
    setarg: li.SetArg | None,
    replay: ReplayFolder | None,
    off: int,
    memory_hint: bool,
    svm_hint: bool,
) -> None:
    """Set ``arg.kind`` (and its handle, local size, sampler or memory object) from the
    declared kind ``ckind`` (None: no signature), the log's clSetKernelArg and the dumps."""
    i, raw = arg.index, arg.raw
    local = replay.locals.get(i) if replay is not None else None
    if setarg is not None and setarg.is_svm:
        arg.kind = ArgKind.SVM
        arg.handle = setarg.pointer
    elif svm_hint and raw is not None and len(raw) == 8:
        arg.kind = ArgKind.SVM  # the Replay folder's Argument holds the allocation base
        arg.handle = int.from_bytes(raw, "little")
    elif is_local_ptr or (local is not None and raw is None):
        arg.kind = ArgKind.LOCAL
        arg.local_size = local if local is not None else (setarg.size if setarg else None)
    elif (
        (setarg is not None and setarg.sampler is not None)
        or ckind == "sampler"
        or (ckind is None and replay is not None and i in replay.samplers)
    ):
        _sampler(cap, arg, setarg, replay, off)
    elif ckind in ("pointer", "image") or (
        ckind is None and (memory_hint or is_mem(cap, raw, off))
    ):
        _memory(cap, arg, ckind, replay, off)
    elif raw is not None or ckind is not None:
        arg.kind = ArgKind.SCALAR
    elif setarg is not None:
        # a size without a value and no type: a __local argument or an unprinted scalar
        arg.kind = ArgKind.LOCAL if setarg.size not in (1, 2, 4, 8, 16) else ArgKind.UNKNOWN
        if arg.kind is ArgKind.LOCAL:
            arg.local_size = setarg.size


def _sampler(
    cap: Capture,
    arg: KernelArg,
    setarg: li.SetArg | None,
    replay: ReplayFolder | None,
    off: int,
) -> None:
    """A sampler argument: the log's description, the Replay folder's, or the sampler its
    handle names in the log."""
    i, raw = arg.index, arg.raw
    arg.kind = ArgKind.SAMPLER
    arg.sampler = setarg.sampler if setarg is not None else None
    if replay is not None and i in replay.samplers:
        arg.sampler = arg.sampler or replay.samplers[i]
    if arg.sampler is None and raw is not None and len(raw) == 8 and cap.log:
        arg.handle = int.from_bytes(raw, "little")
        arg.sampler = cap.log.sampler_at(arg.handle, off)


def _memory(
    cap: Capture, arg: KernelArg, ckind: str | None, replay: ReplayFolder | None, off: int
) -> None:
    """A memory argument: NULL, an image, a buffer, or an SVM pointer into an allocation."""
    i, raw = arg.index, arg.raw
    h = int.from_bytes(raw[:8], "little") if raw is not None and len(raw) >= 8 else None
    arg.handle = h
    if h == 0:
        arg.kind = ArgKind.NULL
        return
    arg.mem = mem_at(cap, h, off)
    svm = replay.svm_offsets.get(i) if replay is not None else None
    if arg.mem is None and h is not None and cap.log is not None and svm is None:
        alloc = cap.log.svm_containing(h, off)
        if alloc is not None:
            arg.kind = ArgKind.SVM
            arg.mem = alloc
            arg.svm_offset = h - alloc.handle
    if arg.kind is ArgKind.UNKNOWN:
        if (
            ckind == "image"
            or (arg.mem is not None and arg.mem.kind == "image")
            or (ckind is None and replay is not None and i in replay.image_meta)
        ):
            arg.kind = ArgKind.IMAGE
        else:
            arg.kind = ArgKind.BUFFER


def _svm_allocation(cap: Capture, arg: KernelArg, replay: ReplayFolder | None, off: int) -> None:
    """An SVM argument's allocation (the log's, holding its pointer) and its offset in it
    (the Replay folder's, when it has one)."""
    if arg.mem is None and arg.handle and cap.log is not None:
        alloc = cap.log.svm_containing(arg.handle, off)
        if alloc is not None:
            arg.mem = alloc
            arg.svm_offset = arg.handle - alloc.handle
    svm = replay.svm_offsets.get(arg.index) if replay is not None else None
    if svm is not None:
        arg.svm_offset = svm


def _typed_value(
    enq: Enqueue,
    arg: KernelArg,
    ctype: CType | None,
    ckind: str | None,
    setarg: li.SetArg | None,
) -> None:
    """The argument's dtype and element type, and a scalar's decoded value (problems: a
    value of another size than its type, a scalar no file holds)."""
    i, raw, number = arg.index, arg.raw, enq.number
    if ctype is not None and ckind not in ("image", "sampler"):
        arg.dtype = ctype.dtype
        pointee = ctype.element if ctype.kind == "pointer" else None
        arg.ctype = pointee if pointee is not None else ctype
    if arg.kind is ArgKind.SCALAR and raw is not None and ctype is not None:
        arg.value = decode_value(raw, ctype)
        size = ctype.size
        if size and len(raw) != size:
            enq.problems.append(
                Problem(
                    f"argument {i}: {len(raw)} value bytes for type {arg.type_name} ({size} bytes)",
                    enqueue=number,
                )
            )
    elif arg.kind is ArgKind.SCALAR and raw is None and setarg is not None:
        enq.problems.append(
            Problem(
                f"argument {i}: the log prints no value for {setarg.size}-byte values and "
                "no SetKernelArg/Replay dump holds it",
                enqueue=number,
            )
        )


def is_mem(cap: Capture, raw: bytes | None, off: int) -> bool:
    """Whether 8 raw bytes are NULL or the handle of a memory object live at ``off``."""
    if raw is None or len(raw) != 8 or cap.log is None:
        return False
    h = int.from_bytes(raw, "little")
    return h == 0 or mem_at(cap, h, off) is not None
