"""One enqueue decoded: its log line's fields, exit line (event, error), queue and device,
recovery sources, and the fields of a transfer; a kernel launch goes on to
:mod:`~cltui.capture.decode.kernel`."""

from __future__ import annotations

import contextlib
import re
from typing import TYPE_CHECKING

from cltui.capture import log as li
from cltui.capture.decode.args import mem_at
from cltui.capture.decode.dumpchecks import dump_problems
from cltui.capture.decode.kernel import decode_kernel
from cltui.capture.model import Enqueue, EnqueueKind, Problem

if TYPE_CHECKING:
    from cltui.capture.capture import Capture

_EWL_RE = re.compile(r", event_wait_list = \( size = \d+ \)\[[^\]]*\]")

_EVENT_RE = re.compile(r" created event = (0x[0-9a-fA-F]+|\(nil\)|[0-9A-F]{8,16})")

_ERR_RE = re.compile(r" -> (\S+)\s*$")


def decode_enqueue(cap: Capture, pos: int) -> Enqueue:
    """Everything known about the enqueue at index position ``pos``."""
    row = cap.row(pos)
    number = row.number
    line = cap._line(pos)
    problems: list[Problem] = []
    fn = row.function
    kv = _fields(line, fn)
    off = int(cap.offsets[pos])
    enq = Enqueue(
        row=row,
        line=line.strip(),
        queue=li.parse_ptr(kv.get("queue", "")),
        event=None,
        global_offset=None,
        problems=problems,
    )
    _exit_and_device(cap, enq, fn, off)
    rec = cap._recovered.get(number) if row.recovered else None
    if rec is not None:
        enq.recovered_from = rec.sources
        enq.device = cap.recovery.device if cap.recovery is not None else None
    if row.kind in (EnqueueKind.KERNEL, EnqueueKind.TASK):
        go, _, _ = cap._sizes(line)
        enq.global_offset = rec.global_offset if rec is not None else go
        decode_kernel(cap, enq, pos, kv, off)
    elif rec is None:
        _decode_transfer(cap, enq, kv, off)
    problems.extend(p for p in dump_problems(cap.path, enq))
    return enq


def _exit_and_device(cap: Capture, enq: Enqueue, fn: str, off: int) -> None:
    """The event and error of the call's exit line, and the device of its queue."""
    log = cap.log
    if log is None or off < 0:
        return
    number = enq.number
    ex = log.exit_line(off, fn)
    if ex is None:
        enq.problems.append(Problem("no exit line for this call (log truncated?)", enqueue=number))
    else:
        m = _EVENT_RE.search(" " + ex if ex.startswith("created") else ex)
        if m:
            enq.event = li.parse_ptr(m.group(1))
        em = _ERR_RE.search(ex)
        if em and em.group(1) != "CL_SUCCESS":
            enq.problems.append(
                Problem(f"the call failed: {em.group(1)}", enqueue=number, severity="error")
            )
    enq.device = _queue_device(cap, enq.queue, off)


def _queue_device(cap: Capture, queue: int | None, off: int) -> str | None:
    """The device of the command queue ``queue`` as it was at log offset ``off``."""
    q = cap.log.queue_at(queue, off) if cap.log is not None and queue else None
    return q.device if q else None


def enqueue_device(cap: Capture, pos: int) -> str | None:
    """The device the enqueue at index position ``pos`` ran on (its queue's; a recovered
    enqueue's: the device the recovery found), without decoding the rest of it."""
    if cap.recovered[pos]:
        return cap.recovery.device if cap.recovery is not None else None
    kv = _fields(cap._line(pos), cap.functions[int(cap.function_ids[pos])])
    return _queue_device(cap, li.parse_ptr(kv.get("queue", "")), int(cap.offsets[pos]))


def _fields(line: str, fn: str) -> dict[str, str]:
    """The ``key = value`` fields of the call line of ``fn`` (the kernel name and the
    enqueue counter set aside)."""
    args_text = ""
    if line:
        i = line.find(fn)
        rest = line[i + len(fn) :] if i >= 0 else ""
        _, args_text = li.split_kernel_name(rest)
        args_text, _ = li.strip_counter(args_text)
    return li.kv_pairs(_EWL_RE.sub("", args_text))


def _decode_transfer(cap: Capture, enq: Enqueue, kv: dict[str, str], off: int) -> None:
    src = (
        kv.get("buffer")
        or kv.get("image")
        or kv.get("memobj")
        or kv.get("src_buffer")
        or kv.get("src_image")
    )
    dst = kv.get("dst_buffer") or kv.get("dst_image")
    enq.mem = mem_at(cap, li.parse_ptr(src) if src else None, off)
    enq.dst_mem = mem_at(cap, li.parse_ptr(dst) if dst else None, off)
    if cap.log is not None and off >= 0:
        # SVM/USM transfers name raw pointers: find the allocation that holds them
        svm_src = kv.get("svm_ptr") or kv.get("src_ptr")
        svm_dst = kv.get("dst_ptr")
        if enq.mem is None and svm_src:
            p = li.parse_ptr(svm_src)
            enq.mem = cap.log.svm_containing(p, off) if p else None
        if enq.dst_mem is None and svm_dst:
            p = li.parse_ptr(svm_dst)
            enq.dst_mem = cap.log.svm_containing(p, off) if p else None
    for key in ("offset", "src_offset"):
        if key in kv:
            with contextlib.suppress(ValueError):
                enq.offset = int(kv[key])
            break
    for key in ("cb", "size"):
        if key in kv:
            with contextlib.suppress(ValueError):
                enq.nbytes = int(kv[key])
            break
    if " non-blocking" in enq.line or ", non-blocking" in enq.line:
        enq.blocking = False
    elif ", blocking" in enq.line:
        enq.blocking = True
