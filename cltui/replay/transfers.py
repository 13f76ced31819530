"""Host-side transfers inside a replayed range (fills, copies, writes, maps the log shows):
recorded in order, settled at the next kernel that uses the object (replayed as operations,
put back from the next Pre dump, or named as not replayed, by the mode's rule in
:mod:`cltui.replay.modes`), and the host changes the dumps show between two kernels.  A part
of the plan builder (:mod:`cltui.replay.plan`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np

from cltui.capture.model import Dump, Enqueue, EnqueueKind, KernelArg, MemObject
from cltui.replay.engine.compare import bytes_equal
from cltui.replay.modes import input_rule


class _BuilderState:
    """What the plan builder's parts read and set (assigned in ``_Builder.__init__``)."""

    cap: Any
    mode: str
    memory: dict[str, dict[str, Any]]
    changes: list[dict[str, Any]]
    state: dict[str, tuple[int, Dump | None]]
    pending: dict[str, list[dict[str, Any]]]
    queued_ops: list[dict[str, Any]]
    transfers: dict[int, dict[str, Any]]
    taint: dict[str, int]
    key: Callable[[Path], str]
    check: Callable[..., dict[str, Any]]


class _Transfers(_BuilderState):
    """Host-side transfers inside a range, recorded as the builder passes them and settled at
    the next kernel that uses their object."""

    def check_before(
        self,
        n: int,
        mid: str,
        margs: list[KernelArg],
        label: str,
        pre: Dump,
        dspec: Any,
        shape: list[int] | None,
    ) -> dict[str, Any]:
        """The pre-check of ``mid`` before enqueue ``n``: the replayed state against the
        captured Pre dump (after a host-side change the capture shows)."""
        return self.check(
            mid, margs, label, pre, dspec, shape,
            note=f"replayed state before enqueue {n} vs captured Pre",
        )  # fmt: skip

    # ---- host-side transfers the log shows inside the range
    def transfer(self, enq: Enqueue) -> None:
        """A non-kernel enqueue between two steps: what it changes and whether it can be
        replayed.  Replayed as an operation: fills (the pattern is not logged: it is read
        from the next Pre dump of the object, where the filled region repeats one pattern)
        and copies from an object of the range whose replayed state is known here (buffer,
        rect, and image copies, whole-object: the log has no image origin/region).  Writes
        and mapped writes carry data the log does not hold: replayed only by a reload from
        the next Pre dump of the object (chain mode), see :meth:`settle`."""
        kind, fn, n = enq.row.kind, enq.row.function, enq.number
        kv = _line_kv(enq.line)
        dst: MemObject | None = None
        deps: list[dict[str, Any]] = []
        op: dict[str, Any] | None = None
        why = ""
        runnable = False
        if kind is EnqueueKind.FILL:
            dst = enq.mem
            ps = _int(kv.get("pattern_size"))
            if fn == "clEnqueueFillBuffer" and enq.nbytes and ps:
                op = {
                    "op": "fill",
                    "offset": enq.offset or 0,
                    "size": enq.nbytes,
                    "pattern_size": ps,
                }
                runnable = True
            else:
                why = "the fill colour and region are not logged"
        elif kind is EnqueueKind.COPY:
            dst, src = enq.dst_mem, enq.mem
            smid = _mid(src) if src is not None else None
            if fn == "clEnqueueCopyBuffer" and enq.nbytes is not None:
                op = {
                    "op": "copy",
                    "src_offset": enq.offset or 0,
                    "dst_offset": _int(kv.get("dst_offset")),
                    "size": enq.nbytes,
                }
            elif fn == "clEnqueueCopyBufferRect":
                op = {"op": "copy_rect"}
                for key in ("src_origin", "dst_origin", "region"):
                    op[key] = _triple(kv.get(key))
                for key in ("src_row_pitch", "src_slice_pitch", "dst_row_pitch", "dst_slice_pitch"):
                    op[key] = _int(kv.get(key))
                if op["region"] is None:
                    op = None
            elif fn in (
                "clEnqueueCopyImage",
                "clEnqueueCopyImageToBuffer",
                "clEnqueueCopyBufferToImage",
            ):
                op = {"op": "copy_whole"}  # origin/region not logged: the whole object
            if op is None:
                why = "its region is not logged"
            elif smid is None or smid not in self.state:
                why = "its source is not an object whose replayed state is known here"
            elif smid in self.taint or not all(d["runnable"] for d in self.pending.get(smid, [])):
                why = "its source follows a host-side change that is not replayed"
            else:  # the source's own pending transfers (replayable) run before it, in order
                op["src"] = smid
                runnable = True
                deps = list(self.pending.get(smid, []))
        elif kind is EnqueueKind.WRITE:
            dst, why = enq.mem, "the written data is not in the log"
        elif kind is EnqueueKind.MAP:
            if "WRITE" in kv.get("map_flags", "WRITE"):
                dst, why = enq.mem, "what the host wrote through the map is not in the log"
        elif kind in (EnqueueKind.SVM, EnqueueKind.USM):
            if "Memcpy" in fn:
                dst = enq.dst_mem
            elif "Fill" in fn or ("Map" in fn and "WRITE" in kv.get("map_flags", "WRITE")):
                dst = enq.mem
            why = "SVM and USM transfers are not replayed"
        if dst is None:
            return
        t: dict[str, Any] = {
            "enqueue": n,
            "function": fn,
            "mem": _mid(dst),
            "op": op,
            "replayed": None,
            "why": why,
            "runnable": runnable,
            "deps": deps,
        }
        self.pending.setdefault(t["mem"], []).append(t)
        if op is not None:
            self.queued_ops.append(t)

    def decide(self, t: dict[str, Any], mid: str, how: str | None, why: str) -> None:
        """Record how transfer ``t`` is replayed: ``op``, ``reload`` (its result loaded from
        the next Pre dump), ``input`` (before the object's first use) or None (not)."""
        t["replayed"] = how
        if why:
            t["why"] = why
        if how is None and not t["why"]:
            t["why"] = "not replayed"
        if how != "op":
            t["runnable"] = False
        self.transfers[t["enqueue"]] = {
            "enqueue": t["enqueue"],
            "function": t["function"],
            "mem": mid,
            "label": self.memory[mid]["label"],
            "replayed": how,
            "why": "" if how else t["why"],
        }

    def settle(
        self,
        enq: Enqueue,
        mid: str,
        margs: list[KernelArg],
        label: str,
        pre: Dump | None,
        dspec: Any,
        shape: list[int] | None,
        moved: list[dict[str, Any]],
        loads: list[dict[str, Any]],
        prechecks: list[dict[str, Any]],
    ) -> None:
        """The transfers the log shows on ``mid`` since its last step, at its next step."""
        n = enq.number
        prev_n, _prev_post = self.state[mid]
        raw = pre is not None and not pre.hashed
        info = self.memory[mid]
        for k, t in enumerate(moved):
            op = t["op"]
            if op is None or not t["runnable"]:
                continue
            if op["op"] == "fill":
                pat = _fill_pattern(pre, op) if raw and k == len(moved) - 1 else None
                if pat is None or info["kind"] != "buffer":
                    t["runnable"] = False
                    t["why"] = "the fill pattern is not logged and no later dump shows it"
                else:
                    op["pattern"] = pat.hex()
            if any(not d["runnable"] for d in t["deps"]):
                t["runnable"] = False
                t["why"] = "its source follows a host-side change that is not replayed"
            elif op["op"] == "copy_whole":
                src = self.memory.get(op["src"], {})
                if src.get("size") != info["size"] or (
                    src.get("kind") == "image"
                    and info["kind"] == "image"
                    and src.get("image") != info.get("image")
                ):
                    t["runnable"] = False
                    t["why"] = "its region is not logged and the objects differ in size"
        nums = ", ".join(f"{t['enqueue']} {t['function'].replace('clEnqueue', '')}" for t in moved)
        by = [f"{t['enqueue']} {t['function'].replace('clEnqueue', '')}" for t in moved]
        rule = input_rule(
            self.mode,
            "transfers",
            pre=_pre_state(pre),
            transfers_replayable=all(t["runnable"] for t in moved),
        )
        action = rule.action
        if action == "replay":
            for t in moved:
                self.decide(t, mid, "op", "")
            if rule.precheck:
                assert pre is not None
                note = f"replayed state after host-side {nums} vs captured Pre"
                prechecks.append(self.check(mid, margs, label, pre, dspec, shape, note=note))
            if rule.load is not None:
                assert pre is not None
                loads.append(
                    {
                        "mem": mid,
                        "data": self.key(pre.path),
                        "why": rule.load,
                        "note": f"after {nums} (replayed): reloaded if it differs",
                    }
                )
        elif action == "reload":
            assert pre is not None and rule.load is not None
            for t in moved:
                self.decide(t, mid, "reload", "")
            prechecks.append(self.check_before(n, mid, margs, label, pre, dspec, shape))
            loads.append(
                {
                    "mem": mid,
                    "data": self.key(pre.path),
                    "why": rule.load,
                    "note": f"changed between enqueue {prev_n} and {n} by {nums}",
                }
            )
        else:
            first = None
            for t in moved:
                if t["runnable"]:
                    self.decide(t, mid, "op", "")
                else:
                    self.decide(t, mid, None, "")
                    first = t["enqueue"] if first is None else first
            if first is not None:
                self.taint[mid] = first
            if rule.precheck:
                assert pre is not None
                prechecks.append(self.check_before(n, mid, margs, label, pre, dspec, shape))
        self.changes.append(
            {
                "enqueue": n,
                "mem": mid,
                "label": info["label"],
                "args": [a.index for a in margs],
                "after": prev_n,
                "by": by,
                "transfers": [t["enqueue"] for t in moved],
                "action": action,
            }
        )

    def host_change(self, prev_post: Dump | None, pre: Dump | None) -> bool:
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

    def changed_by(self, mid: str, after: int, before: int) -> list[str]:
        """Enqueues between two steps that touch the object (bounded scan of the log)."""
        cap = self.cap
        rec = getattr(cap, "recovery", None)
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
            touched = False
            kind = e.row.kind
            if kind is EnqueueKind.COPY:
                targets = [e.dst_mem]
            elif kind in (EnqueueKind.READ, EnqueueKind.MARKER, EnqueueKind.BARRIER):
                targets = []  # these do not change the object
            else:
                targets = [e.mem, e.dst_mem]
            for m in targets:
                if m is not None and f"h{m.handle:x}@{m.line_offset}" == mid:
                    touched = True
            for a in e.args:
                if a.mem is not None and f"h{a.mem.handle:x}@{a.mem.line_offset}" == mid:
                    touched = True
            if touched:
                name = e.row.kernel or e.row.function.replace("clEnqueue", "")
                out.append(f"{number} {name}")
        return out


def _mid(m: MemObject) -> str:
    return f"h{m.handle:x}@{m.line_offset}"


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


def _fill_pattern(pre: Dump | None, op: dict[str, Any]) -> bytes | None:
    """The fill's pattern as the next Pre dump shows it: the filled region must repeat one
    ``pattern_size``-byte pattern (the log does not hold the pattern)."""
    if pre is None:
        return None
    off, size, ps = int(op["offset"]), int(op["size"]), int(op["pattern_size"])
    try:
        arr = pre.array()
    except (OSError, ValueError):
        return None
    if ps <= 0 or size <= 0 or size % ps or off + size > arr.size:
        return None
    region = np.asarray(arr[off : off + size]).reshape(-1, ps)
    if not bool((region == region[0]).all()):
        return None
    return bytes(region[0])
