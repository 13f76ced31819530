"""What the browser screen reads and computes apart from Textual: the status line's range
summary and data size, and decodes run by the capture's reader process.

A decode or a dump listing goes to the capture's reader process when it has one (pcpp and
hashing never hold the app's GIL), else runs in the calling thread; a cancelled call raises
:class:`ReadCancelled`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import numpy.typing as npt

from cltui.capture.model import ArgKind, Enqueue, EnqueueKind, KernelArg
from cltui.errors import Cancelled
from cltui.progress import CancelToken
from cltui.text.escape import escape_controls

if TYPE_CHECKING:
    from cltui.capture.capture import Capture

__all__ = [
    "DUMPS_PER_CALL",
    "MEMORY_KINDS",
    "ReadCancelled",
    "arg_by_index",
    "decode_off_loop",
    "dumped_bytes",
    "dumps_of",
    "log_size",
    "memory_arg_indexes",
    "off_loop",
    "range_bytes",
    "range_summary",
]

DUMPS_PER_CALL = 32  # enqueues per reader call: a details decode waits for one such call

MEMORY_KINDS = frozenset({ArgKind.BUFFER, ArgKind.IMAGE, ArgKind.SVM})


def arg_by_index(enq: Enqueue | None, index: int | None) -> KernelArg | None:
    """The argument with kernel argument index ``index`` (not a list position: an enqueue
    whose log lost a clSetKernelArg lists its arguments with a gap)."""
    if enq is None or index is None:
        return None
    return next((a for a in enq.args if a.index == index), None)


def memory_arg_indexes(enq: Enqueue | None, *, images_only: bool = False) -> list[int]:
    """The indexes of the arguments that hold memory contents (buffers, images, SVM, or a
    dump), the ones ``.``/``,`` step through on the Buffer (and, ``images_only``, Image) tab."""
    if enq is None:
        return []
    if images_only:
        return [a.index for a in enq.args if a.kind is ArgKind.IMAGE]
    return [
        a.index for a in enq.args
        if a.kind in MEMORY_KINDS or a.pre is not None or a.post is not None
    ]


T = TypeVar("T")
R = TypeVar("R")


class ReadCancelled(Cancelled):
    """The worker was cancelled (the cursor moved on, the app exits) while the reader ran."""


def off_loop(cap: Capture, fn: Callable[[Capture, T], R], arg: T, cancel: CancelToken) -> R:
    """``fn(cap, arg)`` run by the capture's reader process when it has one (pcpp and hashing
    never hold this process's GIL), else in this thread (also when the reader died);
    :class:`ReadCancelled` when ``cancel`` stops it or the reader was closed for the exit."""
    from cltui.capture.background import CallCancelled, ReaderGone, reader_of

    reader = reader_of(cap)
    if reader is not None and reader.alive:
        try:
            return reader.call(fn, arg, cancel=cancel)
        except CallCancelled:
            raise ReadCancelled() from None
        except ReaderGone:
            if cancel.is_set():  # closed because the app exits
                raise ReadCancelled() from None
            # else it died: run here, as without a reader
    return fn(cap, arg)


def decode_off_loop(cap: Capture, number: int, cancel: CancelToken) -> Enqueue:
    """``cap.enqueue(number)``, decoded off the app's process when it can be."""
    from cltui.capture.background import decode_enqueue

    return off_loop(cap, decode_enqueue, number, cancel)


def dumps_of(cap: Capture, numbers: list[int]) -> list[tuple[int, int]]:
    """(memory object id, bytes) of each argument dump (Pre, else Post) of the enqueues
    ``numbers``: what the status line adds up (run by the reader process)."""
    out: list[tuple[int, int]] = []
    for number in numbers:
        for arg in cap.enqueue(number).args:
            dump = arg.pre or arg.post
            if dump is not None:
                out.append((dump.mem_id, dump.size))
    return out


def _dumps_off_loop(
    cap: Capture, numbers: list[int], cancel: CancelToken
) -> list[tuple[int, int]]:
    return off_loop(cap, dumps_of, numbers, cancel)


def log_size(path: Path) -> int:
    """Bytes of the capture's call log (0 when there is none, or it cannot be seen)."""
    try:
        return (path / "clintercept_log.txt").stat().st_size
    except OSError:
        return 0


def dumped_bytes(args: Sequence[KernelArg], seen: set[int]) -> int:
    """Bytes of the dumps of ``args`` whose memory object is not in ``seen`` (then added)."""
    total = 0
    for arg in args:
        dump = arg.pre or arg.post
        if dump is None or dump.mem_id in seen:
            continue
        seen.add(dump.mem_id)
        total += dump.size
    return total


def range_summary(cap: Capture, first: int, last: int, label: str) -> str:
    """The status line's text for the rows ``first``..``last``: what ``r`` (and ``e``, ``C``,
    ``L``, ``X``, ``y``) act on, ``r: enqueue 151`` or ``r: enqueues 21-23``, its count of
    enqueues and its kernels."""
    kinds = cap.kinds[first : last + 1]
    kernel_ids = cap.kernel_ids[first : last + 1]
    n_kernels = int(np.count_nonzero(kinds == EnqueueKind.KERNEL))
    ids = kernel_ids[kernel_ids >= 0]
    unique, first_seen = np.unique(ids, return_index=True)
    names = [escape_controls(cap.kernel_names[int(k)]) for k in unique[np.argsort(first_seen)]]
    a, b = int(cap.numbers[first]), int(cap.numbers[last])
    text = f"{label}r: enqueue {a}" if first == last else f"{label}r: enqueues {a}-{b}"
    text += f" · {last - first + 1:,} enq · {n_kernels:,} kernel"
    if names:
        shown = ", ".join(names[:3]) + (f" +{len(names) - 3}" if len(names) > 3 else "")
        text += f" ({shown})"
    return text


def _dumped_positions(cap: Capture, first: int, last: int) -> npt.NDArray[np.int64]:
    has_pre = getattr(cap, "has_pre", None)
    has_post = getattr(cap, "has_post", None)
    if has_pre is not None and has_post is not None:  # the index's flag arrays: no row reads
        flags = np.asarray(has_pre[first : last + 1]) | np.asarray(has_post[first : last + 1])
        return np.flatnonzero(flags) + first
    kernel_pos = np.flatnonzero(cap.kinds[first : last + 1] == EnqueueKind.KERNEL) + first
    return np.array(
        [p for p in kernel_pos if cap.row(int(p)).has_pre or cap.row(int(p)).has_post],
        dtype=np.int64,
    )


def range_bytes(
    cap: Capture, first: int, last: int, cancel: CancelToken
) -> tuple[int, int, int] | None:
    """Bytes of dumped data the rows ``first``..``last`` need (each memory object's first
    Pre dump, once): (bytes, objects, dumped enqueues); None when ``cancel`` was cancelled
    between two reader calls, :class:`ReadCancelled` when it stopped one."""
    dumped_pos = _dumped_positions(cap, first, last)
    seen: set[int] = set()
    total = 0
    numbers = [int(n) for n in cap.numbers[dumped_pos]]
    for at in range(0, len(numbers), DUMPS_PER_CALL):
        if cancel.is_set():
            return None
        chunk = numbers[at : at + DUMPS_PER_CALL]
        for mem_id, size in _dumps_off_loop(cap, chunk, cancel):
            if mem_id not in seen:
                seen.add(mem_id)
                total += size
    return total, len(seen), len(dumped_pos)
