"""Which memory object a kernel argument names, by identity and dump sizes.

An object's identity is (handle, creation, release): the log's handle at a line names the
object created with it latest before that line and not released since (``LogIndex.mem_at``).
Where the log lost lines (a NUL run, a cut) that rule alone can be wrong both ways: a
recovered enqueue has no line, so its handle names nothing, and a handle read after a lost
stretch may name an object that was released (and the handle reused) inside it.  The
argument's Pre/Post dumps settle it: they hold the whole object, so their size is its size.

- An argument bound by the log whose dumps agree on another size than the object's, where
  the log lost enqueues since the object's creation, is not that object (the handle was
  reused where the log does not show it): it is unbound (the plan then keys it by the
  layer's number in the dump names) and a problem says why.
- An argument of a recovered enqueue binds to the logged object with its handle whose
  lifetime meets the stretch the enqueue was lost in and whose size the dumps agree with;
  to none (a fresh object) when none does, with a problem when a candidate was refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cltui.capture.model import ArgKind, Enqueue, EnqueueKind, KernelArg, MemObject, Problem

if TYPE_CHECKING:
    from cltui.capture.capture import Capture

_BOUND = (ArgKind.BUFFER, ArgKind.IMAGE)
_LOOK_BACK = 16  # logged kernel enqueues with dumps searched for an object's layer number


def dump_size(arg: KernelArg) -> int | None:
    """The size the argument's raw dumps agree on, None when they do not say: no raw dump,
    dumps of different sizes (one is damaged: the dump checks name it), or a single dump
    smaller than it could be (possibly cut short) is left to ``contradicts``."""
    sizes = {d.size for d in (arg.pre, arg.post) if d is not None and not d.hashed}
    return sizes.pop() if len(sizes) == 1 else None


def contradicts(arg: KernelArg, obj: MemObject) -> int | None:
    """The dumps' size when they contradict ``obj``'s (None: they agree or do not say).
    One dump smaller than the object may be a dump cut short, not another object."""
    size = dump_size(arg)
    if size is None or not obj.size or size == obj.size:
        return None
    both = arg.pre is not None and arg.post is not None
    return size if both or size > obj.size else None


def _window(cap: Capture, pos: int) -> tuple[int, int]:
    """The log stretch a recovered enqueue at ``pos`` was lost in: after the last logged
    enqueue before it, before the first one after it (the end of the log)."""
    assert cap.log is not None
    lo, hi = 0, cap.log.size
    for p in range(pos - 1, -1, -1):
        if int(cap.offsets[p]) >= 0:
            lo = int(cap.offsets[p])
            break
    for p in range(pos + 1, len(cap.offsets)):
        if int(cap.offsets[p]) >= 0:
            hi = int(cap.offsets[p])
            break
    return lo, hi


def _candidates(cap: Capture, handle: int, lo: int, hi: int) -> list[MemObject]:
    """The logged objects with ``handle`` alive at some point of ``[lo, hi)``."""
    assert cap.log is not None
    return [
        obj
        for created, released, obj in cap.log.mem.get(handle, [])
        if created < hi and (released is None or released > lo)
    ]


def _lost_between(cap: Capture, obj: MemObject, number: int) -> bool:
    """Whether the log lost enqueues between ``obj``'s creation and enqueue ``number``
    (inclusive): only there can its handle have been reused unseen.  Elsewhere a size the
    dumps disagree with is the dump checks' matter, not the object's identity."""
    rec = cap.recovery
    if rec is None:
        return False
    return any(a <= number and b >= obj.created_at for a, b in rec.lost)


def _bytes(n: int) -> str:
    return f"{n:,} byte{'s' if n != 1 else ''}"


def _label(obj: MemObject) -> str:
    return f"the {obj.kind} created at byte {obj.line_offset:,} of the log ({_bytes(obj.size)})"


def _number(cap: Capture, obj: MemObject, pos: int) -> int | None:
    """The layer's number of logged object ``obj`` (never reused: the dump names' identity),
    from the dumps of the latest kernel enqueue before position ``pos`` bound to it (logged
    or recovered; up to ``_LOOK_BACK`` of them, none before its creation); None when none
    says."""
    seen = 0
    for p in range(pos - 1, -1, -1):
        off = int(cap.offsets[p])
        if int(cap.kinds[p]) != EnqueueKind.KERNEL:
            continue
        if 0 <= off < obj.line_offset or seen >= _LOOK_BACK:
            return None
        number = int(cap.numbers[p])
        if number not in cap.dumps.pre and number not in cap.dumps.post:
            continue
        seen += 1
        for a in cap.enqueue(number).args:
            d = a.pre or a.post
            if d is not None and a.mem is not None and a.mem.line_offset == obj.line_offset:
                return d.mem_id
    return None


def _refused(cap: Capture, arg: KernelArg, obj: MemObject, pos: int) -> str | None:
    """Why ``arg``'s dumps say it is not ``obj`` (None: nothing says so): their size, or the
    layer's number they carry against the one ``obj``'s earlier dumps carry."""
    size = contradicts(arg, obj)
    if size is not None:
        return f"its dumps hold {_bytes(size)}"
    d = arg.pre or arg.post
    if d is None:
        return None
    known = _number(cap, obj, pos)
    if known is not None and known != d.mem_id:
        kind = "image" if d.is_image else "buffer"
        return f"its dumps name {kind} {d.mem_id:04d}, that object was {kind} {known:04d}"
    return None


def bind(cap: Capture, enq: Enqueue, pos: int, arg: KernelArg) -> None:
    """Check (a logged enqueue) or make (a recovered one) the binding of a buffer or image
    argument to a logged object, by identity and dump sizes (see the module doc)."""
    if arg.kind not in _BOUND or not arg.handle or cap.log is None:
        return
    i, h = arg.index, arg.handle
    if arg.mem is not None:
        why = _refused(cap, arg, arg.mem, pos) if _lost_between(cap, arg.mem, enq.number) else None
        if why is not None:
            d = arg.pre or arg.post
            num = f" ({'image' if d.is_image else 'buffer'} {d.mem_id:04d})" if d else ""
            enq.problems.append(Problem(
                f"argument {i}: handle {h:#x} names {_label(arg.mem)} but {why}: the handle "
                f"was reused where the log does not show it; bound to the object the dumps "
                f"name{num}",
                enqueue=enq.number,
            ))  # fmt: skip
            arg.mem = None
        return
    if not enq.recovered:
        return
    lo, hi = _window(cap, pos)
    found = _candidates(cap, h, lo, hi)
    refused = {o.line_offset: _refused(cap, arg, o, pos) for o in found}
    agree = [o for o in found if refused[o.line_offset] is None]
    if agree:
        arg.mem = max(agree, key=lambda o: o.line_offset)  # the latest: alive when lost
    elif found:
        enq.problems.append(Problem(
            f"argument {i}: handle {h:#x} names {_label(found[-1])} but "
            f"{refused[found[-1].line_offset]}: another object with a reused handle; bound to "
            "a fresh object",
            enqueue=enq.number,
        ))  # fmt: skip
