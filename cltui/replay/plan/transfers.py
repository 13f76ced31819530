"""Host-side transfers inside a replayed range (fills, copies, writes, maps the log shows):
recorded in order, settled at the next kernel that uses the object (replayed as operations,
put back from the next Pre dump, or named as not replayed, by the mode's rule in
:mod:`cltui.replay.modes`), and the host changes the dumps show between two kernels.  A part
of the plan builder (:mod:`cltui.replay.plan`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal, cast

import numpy as np

from cltui.capture.model import Dump, Enqueue, EnqueueKind, MemObject
from cltui.replay.engine.compare import bytes_equal
from cltui.replay.engine.schema import Change, TransferOp, TransferSpec
from cltui.replay.modes import InputRule, input_rule
from cltui.replay.plan.base import Obj, Pending, PlanState, StepIO
from cltui.replay.plan.checks import check, check_before

How = Literal["op", "reload", "input"] | None
_NOT_IN_RANGE = "its source is not an object whose replayed state is known here"
_AFTER_UNREPLAYED = "its source follows a host-side change that is not replayed"
_NO_PATTERN = "the fill pattern is not logged and no later dump shows it"
_SOURCE_FILL = "its source was filled with a pattern that is not logged"


@dataclass
class _Seen:
    """What the log line of a transfer says: the object it changes and how to replay it."""

    dst: MemObject | None = None
    op: TransferOp | None = None
    why: str = ""
    runnable: bool = False
    deps: list[Pending] = field(default_factory=list)


"""Host-side transfers inside a range, recorded as the builder passes them and settled at
the next kernel that uses their object."""


def transfer(st: PlanState, enq: Enqueue) -> None:
    """A non-kernel enqueue between two steps: what it changes and whether it can be
    replayed.  Replayed as an operation: fills (the pattern is not logged: it is read
    from the next Pre dump of the object, where the filled region repeats one pattern)
    and copies from an object of the range whose replayed state is known here (buffer,
    rect, and image copies, whole-object: the log has no image origin/region).  Writes
    and mapped writes carry data the log does not hold: replayed only by a reload from
    the next Pre dump of the object (chain mode), see :meth:`settle`."""
    seen = _seen(st, enq)
    if seen.dst is None:
        return
    mid = _mid(seen.dst)
    spec: TransferSpec = {
        "enqueue": enq.number,
        "function": enq.row.function,
        "mem": mid,
        "op": seen.op,
        "replayed": None,
        "why": seen.why,
    }
    st.pending.setdefault(mid, []).append(Pending(spec, seen.runnable, seen.deps))
    if seen.op is not None:
        st.queued_ops.append(spec)


def _seen(st: PlanState, enq: Enqueue) -> _Seen:
    kind, fn = enq.row.kind, enq.row.function
    kv = _line_kv(enq.line)
    if kind is EnqueueKind.FILL:
        ps = _int(kv.get("pattern_size"))
        if fn == "clEnqueueFillBuffer" and enq.nbytes and ps:
            fill = _op(op="fill", offset=enq.offset or 0, size=enq.nbytes, pattern_size=ps)
            return _Seen(enq.mem, fill, runnable=True)
        return _Seen(enq.mem, why="the fill colour and region are not logged")
    if kind is EnqueueKind.COPY:
        return _copy(st, enq, *_copy_op(enq, kv))
    if kind is EnqueueKind.WRITE:
        return _Seen(enq.mem, why="the written data is not in the log")
    if kind is EnqueueKind.MAP:
        if "WRITE" in kv.get("map_flags", "WRITE"):
            return _Seen(enq.mem, why="what the host wrote through the map is not in the log")
        return _Seen()
    if kind in (EnqueueKind.SVM, EnqueueKind.USM):
        dst = None
        if "Memcpy" in fn:
            dst = enq.dst_mem
        elif "Fill" in fn or ("Map" in fn and "WRITE" in kv.get("map_flags", "WRITE")):
            dst = enq.mem
        return _Seen(dst, why="SVM and USM transfers are not replayed")
    return _Seen()


def _copy(st: PlanState, enq: Enqueue, op: TransferOp | None, why: str) -> _Seen:
    """A copy runs when its region is logged and its source's replayed state is known
    (the source's own pending transfers, all replayable, run before it, in order)."""
    dst, src = enq.dst_mem, enq.mem
    smid = _mid(src) if src is not None else None
    if op is None:
        return _Seen(dst, why=why)
    if smid is None or smid not in st.state:
        return _Seen(dst, op, _NOT_IN_RANGE)
    before = st.pending.get(smid, [])
    if smid in st.taint or not all(d.runnable for d in before):
        return _Seen(dst, op, _AFTER_UNREPLAYED)
    op["src"] = smid
    return _Seen(dst, op, runnable=True, deps=list(before))


def decide(st: PlanState, p: Pending, mid: str, how: How, why: str) -> None:
    """Record how transfer ``p`` is replayed: ``op``, ``reload`` (its result loaded from
    the next Pre dump), ``input`` (before the object's first use) or None (not)."""
    t = p.spec
    if t["replayed"] == "op" and how != "op":  # a replayed copy read its result: it runs
        how, why = "op", ""  # (what its own object's step does after it stands)
    t["replayed"] = how
    if why:
        t["why"] = why
    if how is None and not t["why"]:
        t["why"] = "not replayed"
    if how != "op":
        p.runnable = False
    else:  # what a replayed copy reads runs before it, even where its object is not
        for d in p.deps:  # used again (a fill's pattern is checked by _check_ops)
            if d.spec["replayed"] is None and d.spec["enqueue"] not in st.transfers:
                decide(st, d, d.spec["mem"], "op", "")
    st.transfers[t["enqueue"]] = {
        "enqueue": t["enqueue"],
        "function": t["function"],
        "mem": mid,
        "label": st.memory[mid]["label"],
        "replayed": how,
        "why": "" if how else t["why"],
    }


def settle(st: PlanState, enq: Enqueue, o: Obj, moved: list[Pending], io: StepIO) -> None:
    """The transfers the log shows on the object since its last step, at its next step:
    replayed, reloaded, or not, by the mode's rule (:func:`~cltui.replay.modes.input_rule`)."""
    n = enq.number
    prev_n, _prev_post = st.state[o.mid]
    check_ops(st, o, moved)
    names = [f"{p.spec['enqueue']} {_short(p.spec['function'])}" for p in moved]
    nums = ", ".join(names)
    rule = input_rule(
        st.mode,
        "transfers",
        pre=_pre_state(o.pre),
        transfers_replayable=all(p.runnable for p in moved),
    )
    if rule.action == "replay":
        replay_ops(st, o, moved, rule, nums, io)
    elif rule.action == "reload":
        assert o.pre is not None and rule.load is not None
        for p in moved:
            decide(st, p, o.mid, "reload", "")
        io.prechecks.append(check_before(st, n, o))
        note = f"changed between enqueue {prev_n} and {n} by {nums}"
        io.loads.append({"mem": o.mid, "data": st.key(o.pre.path), "why": rule.load,
                         "note": note})  # fmt: skip
    else:
        first = None
        for p in moved:
            decide(st, p, o.mid, "op" if p.runnable else None, "")
            if not p.runnable:
                first = p.spec["enqueue"] if first is None else first
        if first is not None:
            st.taint[o.mid] = first
        if rule.precheck:
            io.prechecks.append(check_before(st, n, o))
    assert rule.action is not None
    transfers = [p.spec["enqueue"] for p in moved]
    st.changes.append(change(st, n, o, prev_n, names, rule.action, transfers))


def check_ops(st: PlanState, o: Obj, moved: list[Pending]) -> None:
    """Whether each operation can run here: a fill needs its pattern from the Pre dump
    (only the last transfer's result shows in it), a copy a source that ran, a whole
    copy two objects of one size (and format)."""
    raw = o.pre is not None and not o.pre.hashed
    info = st.memory[o.mid]
    for k, p in enumerate(moved):
        op = p.spec["op"]
        if op is None or not p.runnable:
            continue
        if op["op"] == "fill":
            last = raw and k == len(moved) - 1
            pat = _fill_pattern(o.pre, _fill_region(op)) if last else None
            if pat is None or info["kind"] != "buffer":
                p.runnable = False
                p.spec["why"] = _NO_PATTERN
            else:
                op["pattern"] = pat.hex()
        if any(not d.runnable for d in p.deps):
            p.runnable = False
            p.spec["why"] = _AFTER_UNREPLAYED
        elif any(_unsettled_fill(d) for d in p.deps):
            p.runnable = False
            p.spec["why"] = _SOURCE_FILL
        elif op["op"] == "copy_whole":
            src = st.memory.get(op["src"])
            if (
                src is None
                or src["size"] != info["size"]
                or (
                    src["kind"] == "image"
                    and info["kind"] == "image"
                    and src.get("image") != info.get("image")
                )
            ):
                p.runnable = False
                p.spec["why"] = "its region is not logged and the objects differ in size"


def replay_ops(
    st: PlanState, o: Obj, moved: list[Pending], rule: InputRule, nums: str, io: StepIO
) -> None:
    """Every transfer replays as an operation (a pre-check, a verifying load after)."""
    for p in moved:
        decide(st, p, o.mid, "op", "")
    if rule.precheck:
        assert o.pre is not None
        note = f"replayed state after host-side {nums} vs captured Pre"
        io.prechecks.append(check(st, o, o.pre, note=note))
    if rule.load is not None:
        assert o.pre is not None
        note = f"after {nums} (replayed): reloaded if it differs"
        io.loads.append({"mem": o.mid, "data": st.key(o.pre.path), "why": rule.load,
                         "note": note})  # fmt: skip


def change(
    st: PlanState,
    n: int,
    o: Obj,
    after: int,
    by: list[str],
    action: Literal["replay", "reload", "none", "unreplayed"],
    transfers: list[int],
) -> Change:
    """The record of a host-side change of the object between enqueues ``after`` and
    ``n``."""
    return {
        "enqueue": n,
        "mem": o.mid,
        "label": st.memory[o.mid]["label"],
        "args": o.indices,
        "after": after,
        "by": by,
        "transfers": transfers,
        "action": action,
    }


def host_change(st: PlanState, prev_post: Dump | None, pre: Dump | None) -> bool:
    """True when the capture shows the object changed between two replayed kernels."""
    if prev_post is None or pre is None:
        return False
    if prev_post.hashed or pre.hashed:
        return prev_post.hash_value() != pre.hash_value() or prev_post.hashed != pre.hashed
    if prev_post.path == pre.path:
        return False
    try:
        return not bytes_equal(prev_post.array(), pre.array())
    except (OSError, ValueError):
        return False


def changed_by(st: PlanState, mid: str, after: int, before: int) -> list[str]:
    """Enqueues between two steps that touch the object (bounded scan of the log)."""
    cap = st.cap
    rec = cap.recovery
    lost: list[str] = []
    if rec is not None:
        nums = rec.unknown_between(after + 1, before - 1, 20)
        lost = [f"{u} (lost with the log)" for u in nums]
    if cap.log is None:
        return lost
    positions = cap.find(first=after + 1, last=before - 1)
    if len(positions) > 200:
        return [f"enqueues {after + 1}-{before - 1}"]
    out: list[str] = lost
    for pos in positions:
        number = int(cap.numbers[pos])
        e = cap.enqueue(number)
        if _touches(e, mid):
            name = e.row.kernel or e.row.function.replace("clEnqueue", "")
            out.append(f"{number} {name}")
    return out


def _unsettled_fill(d: Pending) -> bool:
    """A fill of a copy's source whose pattern no Pre dump has shown yet."""
    op = d.spec["op"]
    return op is not None and op["op"] == "fill" and "pattern" not in op


def covers(op: TransferOp, size: int) -> bool:
    """The operation writes every byte of an object of ``size`` bytes (whole-object copies
    are checked against the objects' sizes and formats by ``_check_ops``)."""
    fields = cast(dict[str, object], op)
    kind = op["op"]
    if kind == "copy_whole":
        return True
    if kind in ("copy", "fill"):
        start = int(cast(int, fields.get("dst_offset" if kind == "copy" else "offset") or 0))
        return start == 0 and int(cast(int, fields.get("size") or 0)) >= size > 0
    if kind == "copy_rect":
        region = cast(list[int], fields.get("region") or [0, 0, 0])
        origin = cast(list[int], fields.get("dst_origin") or [0, 0, 0])
        pitches = (fields.get("dst_row_pitch"), fields.get("dst_slice_pitch"))
        plain = not any(pitches) or pitches == (region[0], region[0] * region[1])
        return plain and not any(origin) and region[0] * region[1] * region[2] == size > 0
    return False


def _touches(e: Enqueue, mid: str) -> bool:
    """The enqueue may change object ``mid`` (a copy's destination, a transfer's object, a
    kernel's argument)."""
    kind = e.row.kind
    if kind is EnqueueKind.COPY:
        targets = [e.dst_mem]
    elif kind in (EnqueueKind.READ, EnqueueKind.MARKER, EnqueueKind.BARRIER):
        targets = []  # these do not change the object
    else:
        targets = [e.mem, e.dst_mem]
    if any(m is not None and _mid(m) == mid for m in targets):
        return True
    return any(a.mem is not None and _mid(a.mem) == mid for a in e.args)


def _short(function: str) -> str:
    return function.replace("clEnqueue", "")


def _mid(m: MemObject) -> str:
    return f"h{m.handle:x}@{m.line_offset}"


def _op(**fields: object) -> TransferOp:
    """A transfer's operation as the plan writes it (``schema.TransferOp`` lacks the fill's
    ``offset``/``pattern_size`` and the rect copy's keys)."""
    return cast(TransferOp, fields)


def _copy_op(enq: Enqueue, kv: dict[str, str]) -> tuple[TransferOp | None, str]:
    """A copy's operation, or None and why it cannot be replayed from what the log holds."""
    fn = enq.row.function
    if fn == "clEnqueueCopyBuffer":
        if enq.nbytes is None:
            return None, "its size is not logged"
        return _op(op="copy", src_offset=enq.offset or 0, dst_offset=_int(kv.get("dst_offset")),
                   size=enq.nbytes), ""  # fmt: skip
    if fn == "clEnqueueCopyBufferRect":
        region = _triple(kv.get("region"))
        src, dst = _triple(kv.get("src_origin")), _triple(kv.get("dst_origin"))
        if region is None or src is None or dst is None:
            return None, "its region is not logged"
        pitches = ("src_row_pitch", "src_slice_pitch", "dst_row_pitch", "dst_slice_pitch")
        # the layer logs no pitches: without them only a copy inside one row is known
        if not any(key in kv for key in pitches) and (
            region[1] > 1 or region[2] > 1 or any(src[1:]) or any(dst[1:])
        ):
            return None, "its row and slice pitches are not logged"
        return _op(
            op="copy_rect",
            src_origin=src,
            dst_origin=dst,
            region=region,
            **{key: _int(kv.get(key)) for key in pitches},
        ), ""
    if fn in ("clEnqueueCopyImage", "clEnqueueCopyImageToBuffer", "clEnqueueCopyBufferToImage"):
        return _op(op="copy_whole"), ""  # origin/region not logged: the whole object
    return None, "its region is not logged"


# linear in a line of any content: a key starts a word (no retry inside a long one) and a
# ``< ... >`` value cannot run past the next ``<`` (no rescan from each of a run of them)
_KV_RE = re.compile(r"(?<!\w)(\w+) = (<[^<>]*>|[^,;]*)")


def _line_kv(line: str) -> dict[str, str]:
    """``key = value`` pairs of a transfer's log line (values: text or ``< a, b, c >``)."""
    return {m.group(1): m.group(2).strip() for m in _KV_RE.finditer(line)}


def _int(text: str | None) -> int:
    try:
        return int(str(text).split()[0], 0)
    except (ValueError, IndexError):
        return 0


def _triple(text: str | None) -> list[int] | None:
    if not text:
        return None
    parts = [p.strip() for p in text.strip("<> ").split(",")]
    try:
        vals = [int(p) for p in parts if p]
    except ValueError:
        return None
    return [*vals, 1, 1, 1][:3] if vals else None


def _pre_state(pre: Dump | None) -> Literal["none", "hash", "raw"]:
    if pre is None:
        return "none"
    return "hash" if pre.hashed else "raw"


def _fill_region(op: TransferOp) -> tuple[int, int, int]:
    """(offset, size, pattern size) of a fill operation (made by :func:`_seen`)."""
    fields = cast(dict[str, int], op)
    return int(fields["offset"]), int(fields["size"]), int(fields["pattern_size"])


def _fill_pattern(pre: Dump | None, region: tuple[int, int, int]) -> bytes | None:
    """The fill's pattern as the next Pre dump shows it: the filled region must repeat one
    ``pattern_size``-byte pattern (the log does not hold the pattern)."""
    if pre is None:
        return None
    off, size, ps = region
    try:
        arr = pre.array()
    except (OSError, ValueError):
        return None
    if ps <= 0 or size <= 0 or size % ps or off + size > arr.size:
        return None
    region_bytes = np.asarray(arr[off : off + size]).reshape(-1, ps)
    if not bool((region_bytes == region_bytes[0]).all()):
        return None
    return bytes(region_bytes[0])
