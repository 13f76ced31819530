"""The history of one memory object (buffer, image, SVM allocation): which enqueues wrote it
and read it, from its creation to its release, and the neighbours of one enqueue in it (the
last writer before, the next reader after).

Computed on demand for one object, from the log only (memory-mapped; nothing is decoded but
one enqueue per kernel that takes the object, for its signature): the object's handle is
searched as a literal within its lifetime (its creation to its release or the next object
with the same handle), each line naming it is one of

- an enqueue that names it as its memory (``buffer``, ``image``, ``memobj``, ``src_*``,
  ``dst_*``, ``svm_ptr``): a host write, fill, copy, map or read back;
- a ``clSetKernelArg*`` that binds it to a kernel's argument: every launch of that kernel
  until the argument is set again takes it, as read or written by the signature's address
  space, ``const`` and access qualifier (:func:`arg_access`).

The cost is linear in the lines of the object's lifetime that name it or launch a kernel that
holds it.  The two neighbours alone (:func:`neighbours_of`, what ``cltui show`` prints) are
found window by window from the enqueue, each window the whole history's events at its lines
(:mod:`cltui.capture.history_scan`): their cost is the log between the enqueue and each
neighbour.  Not seen: a sub-buffer's or a parent's aliasing, SVM pointers inside an allocation
(only its base pointer is searched), and enqueues that only the dump files recovered.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from cltui.capture.history_events import (
    ACCESSES,
    MEMORY_ARGS,
    HistoryEvent,
    arg_access,
    history_label,
    reads_only,
)
from cltui.capture.model import MemObject
from cltui.errors import CltuiError

if TYPE_CHECKING:
    from cltui.capture.capture import Capture

__all__ = [
    "ACCESSES",
    "HistoryEvent",
    "HistoryUnavailable",
    "Neighbours",
    "ResourceHistory",
    "arg_access",
    "history_label",
    "history_of",
    "neighbours_of",
    "reads_only",
]

_CACHED = 16


class HistoryUnavailable(CltuiError):
    """The argument is no memory object the log created (one line: why)."""


@dataclass(frozen=True, eq=False)
class ResourceHistory:
    """Every event of one memory object, in log order, as columns (one entry per event: a
    history of 150,000 launches crosses the reader's pipe in milliseconds)."""

    label: str  # "buffer 0x3f046980 (32,768 B)"
    handle: int
    kind: str
    numbers: npt.NDArray[np.int64]  # the enqueue, -1 for the creation and the release
    offsets: npt.NDArray[np.int64]  # the log line
    access_codes: npt.NDArray[np.uint8]  # index into ACCESSES
    text_ids: npt.NDArray[np.int32]  # index into texts
    texts: tuple[str, ...]
    writes: npt.NDArray[np.bool_]
    reads: npt.NDArray[np.bool_]
    notes: tuple[str, ...] = ()

    @classmethod
    def of_events(
        cls, label: str, handle: int, kind: str, events: list[HistoryEvent],
        notes: tuple[str, ...] = (),
    ) -> ResourceHistory:
        table: dict[str, int] = {}
        ids = [table.setdefault(e.what, len(table)) for e in events]
        return cls(
            label=label,
            handle=handle,
            kind=kind,
            numbers=np.array([-1 if e.number is None else e.number for e in events], np.int64),
            offsets=np.array([e.offset for e in events], dtype=np.int64),
            access_codes=np.array([ACCESSES.index(e.access) for e in events], dtype=np.uint8),
            text_ids=np.array(ids, dtype=np.int32),
            texts=tuple(table),
            writes=np.array([e.writes for e in events], dtype=bool),
            reads=np.array([e.reads and e.number is not None for e in events], dtype=bool),
            notes=notes,
        )

    def __len__(self) -> int:
        return len(self.offsets)

    def event(self, i: int) -> HistoryEvent:
        number = int(self.numbers[i])
        return HistoryEvent(
            None if number < 0 else number,
            int(self.offsets[i]),
            self.texts[int(self.text_ids[i])],
            ACCESSES[int(self.access_codes[i])],
        )

    @property
    def events(self) -> list[HistoryEvent]:
        return [self.event(i) for i in range(len(self))]

    def last_writer(self, offset: int) -> HistoryEvent | None:
        """The last enqueue before the log line ``offset`` (an enqueue's) that writes it (or
        its creation, when that copied the host's data)."""
        at = int(np.searchsorted(self.offsets, offset, side="left"))
        hits = np.flatnonzero(self.writes[:at])
        return self.event(int(hits[-1])) if len(hits) else None

    def next_reader(self, offset: int) -> HistoryEvent | None:
        """The first enqueue after the log line ``offset`` that reads it."""
        at = int(np.searchsorted(self.offsets, offset, side="right"))
        hits = np.flatnonzero(self.reads[at:])
        return self.event(at + int(hits[0])) if len(hits) else None

    def index_of(self, offset: int) -> int | None:
        """The event at the log line ``offset``, if any."""
        at = int(np.searchsorted(self.offsets, offset, side="left"))
        return at if at < len(self) and int(self.offsets[at]) == offset else None

    def counts(self) -> dict[str, int]:
        """Events by access (``write``, ``read``, ``readwrite``, ...)."""
        values, counts = np.unique(self.access_codes, return_counts=True)
        return {ACCESSES[int(v)]: int(c) for v, c in zip(values, counts, strict=True)}


# ------------------------------------------------------------------------------- computing
_cache: OrderedDict[tuple[int, str, int, int, int], ResourceHistory] = OrderedDict()


def _object_of(cap: Capture, where: tuple[int, int | None]) -> MemObject:
    """The memory object of enqueue ``where[0]``'s argument ``where[1]`` (None: the object a
    transfer names), in a capture with a call log.  Raises :class:`HistoryUnavailable`."""
    number, index = where
    enq = cap.enqueue(number)
    mem: MemObject | None
    if index is None:
        mem = enq.mem
        if mem is None:
            raise HistoryUnavailable(f"enqueue {number} names no memory object")
    else:
        arg = next((a for a in enq.args if a.index == index), None)
        if arg is None:
            raise HistoryUnavailable(f"enqueue {number} has no argument {index}")
        if arg.kind not in MEMORY_ARGS:
            raise HistoryUnavailable(f"argument {index} is a {arg.kind.value}, no memory object")
        mem = arg.mem
        if mem is None:
            raise HistoryUnavailable(
                f"argument {index}: the log does not show the object's creation"
            )
    log = cap.log
    if log is None or log.data is None:
        raise HistoryUnavailable("the capture has no call log to follow the object in")
    return mem


def _key(cap: Capture, mem: MemObject) -> tuple[int, str, int, int, int]:
    assert cap.log is not None
    return (id(cap), str(cap.path), cap.log.size, mem.handle, mem.line_offset)


def history_of(cap: Capture, where: tuple[int, int | None]) -> ResourceHistory:
    """The history of the memory object of enqueue ``where[0]``'s argument ``where[1]``
    (None: the object a transfer names).  Raises :class:`HistoryUnavailable`."""
    from cltui.capture.history_scan import ObjectScan

    mem = _object_of(cap, where)
    key = _key(cap, mem)
    hit = _cache.get(key)
    if hit is not None:
        _cache.move_to_end(key)
        return hit
    scan = ObjectScan(cap, mem)
    history = ResourceHistory.of_events(
        scan.label, mem.handle, mem.kind, scan.events(scan.start, scan.end, release=True),
        scan.notes(),
    )
    _cache[key] = history
    while len(_cache) > _CACHED:
        _cache.popitem(last=False)
    return history


@dataclass(frozen=True, slots=True)
class Neighbours:
    """The object's events next to one enqueue: what :meth:`ResourceHistory.last_writer`
    and :meth:`ResourceHistory.next_reader` say, without the whole history."""

    label: str
    handle: int
    last_writer: HistoryEvent | None
    next_reader: HistoryEvent | None


def neighbours_of(cap: Capture, where: tuple[int, int | None]) -> Neighbours:
    """The last writer before and the next reader after enqueue ``where[0]`` of the memory
    object of its argument ``where[1]`` (None: the object a transfer names), searched from
    the enqueue outwards (a history computed already answers at once).  Raises
    :class:`HistoryUnavailable`."""
    from cltui.capture.history_scan import WHOLE, ObjectScan

    pos = cap.position_of(where[0])
    offset = -1 if pos is None else int(cap.offsets[pos])
    if offset < 0:
        raise HistoryUnavailable("a recovered enqueue: the log does not hold it")
    mem = _object_of(cap, where)
    hit = _cache.get(_key(cap, mem))
    if hit is None:
        scan = ObjectScan(cap, mem)
        if scan.end - scan.start > WHOLE:
            return Neighbours(scan.label, mem.handle, scan.last_writer(offset),
                              scan.next_reader(offset))
        hit = history_of(cap, where)  # a short lifetime: the whole history costs no more
    return Neighbours(hit.label, mem.handle, hit.last_writer(offset), hit.next_reader(offset))
