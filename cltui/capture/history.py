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
holds it.  Not seen: a sub-buffer's or a parent's aliasing, SVM pointers inside an allocation
(only its base pointer is searched), and enqueues that only the dump files recovered.
"""

from __future__ import annotations

import bisect
import re
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt

from cltui.capture.model import ArgKind, EnqueueKind, KernelArg, MemObject
from cltui.errors import CltuiError

if TYPE_CHECKING:
    from cltui.capture.capture import Capture

__all__ = [
    "ACCESSES",
    "HistoryEvent",
    "HistoryUnavailable",
    "ResourceHistory",
    "arg_access",
    "history_of",
    "reads_only",
]

Access = Literal["create", "write", "read", "readwrite", "map", "unmap", "release"]
WRITES = frozenset({"write", "readwrite", "map"})
READS = frozenset({"read", "readwrite", "map"})

MEMORY_ARGS = frozenset({ArgKind.BUFFER, ArgKind.IMAGE, ArgKind.SVM})
_WRITE_FIELDS = frozenset({b"dst_buffer", b"dst_image", b"dst_ptr"})
_MEM_FIELDS = frozenset(
    {b"buffer", b"image", b"memobj", b"mem", b"svm_ptr", b"src_buffer", b"src_image",
     b"src_ptr", *_WRITE_FIELDS}
)
_FIELD_RE = re.compile(rb"(\w+) = $")
_FUNC_RE = re.compile(rb" *>>>> (?:Time: \d+ )?(?:TID = \d+ )?(?:TNum = \d+ )?(cl\w+)")
_SETARG_RE = re.compile(rb"kernel = (0x[0-9a-f]+|[0-9A-F]{16}), index = (\d{1,9}), ")
_KERNEL_RE = re.compile(rb"kernel = (0x[0-9a-f]+|[0-9A-F]{16})[,;]")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_LINE_MAX = 1 << 16
_CACHED = 16


class HistoryUnavailable(CltuiError):
    """The argument is no memory object the log created (one line: why)."""


@dataclass(frozen=True, slots=True)
class HistoryEvent:
    """One thing that happened to the object: ``number`` the enqueue (None for its creation
    and release), ``offset`` the log line, ``what`` a short text, ``access`` what it did."""

    number: int | None
    offset: int
    what: str
    access: Access

    @property
    def writes(self) -> bool:
        return self.access in WRITES or (self.access == "create" and "HOST_PTR" in self.what)

    @property
    def reads(self) -> bool:
        return self.access in READS


ACCESSES: tuple[Access, ...] = ("create", "write", "read", "readwrite", "map", "unmap", "release")


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


def reads_only(a: KernelArg) -> bool:
    """The kernel cannot write the argument (``__constant``, ``const``, read-only image)."""
    tname = a.type_name or ""
    return (
        a.address_space == "constant"
        or a.access == "read_only"
        or re.search(r"\bconst\b", tname) is not None
    )


def arg_access(a: KernelArg) -> Access:
    """What a kernel may do to a memory argument, by its signature: ``read`` (const,
    ``__constant``, ``read_only``), ``write`` (``write_only`` image), else ``readwrite``."""
    if reads_only(a):
        return "read"
    if a.access == "write_only":
        return "write"
    return "readwrite"


# ------------------------------------------------------------------------------- computing
_cache: OrderedDict[tuple[int, str, int, int, int], ResourceHistory] = OrderedDict()
_order: tuple[tuple[int, int], npt.NDArray[np.int64], npt.NDArray[np.int64]] | None = None


def history_of(cap: Capture, where: tuple[int, int | None]) -> ResourceHistory:
    """The history of the memory object of enqueue ``where[0]``'s argument ``where[1]``
    (None: the object a transfer names).  Raises :class:`HistoryUnavailable`."""
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
    key = (id(cap), str(cap.path), log.size, mem.handle, mem.line_offset)
    hit = _cache.get(key)
    if hit is not None:
        _cache.move_to_end(key)
        return hit
    history = _History(cap, mem).run()
    _cache[key] = history
    while len(_cache) > _CACHED:
        _cache.popitem(last=False)
    return history


def _enqueue_order(cap: Capture) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(sorted log offsets of the logged enqueues, their positions): built once per capture."""
    global _order
    key = (id(cap), len(cap))
    if _order is None or _order[0] != key:
        logged = np.flatnonzero(cap.offsets >= 0).astype(np.int64)
        offs = cap.offsets[logged]
        order = np.argsort(offs, kind="stable")
        _order = (key, offs[order], logged[order])
    return _order[1], _order[2]


class _History:
    """One object's history, computed once (:func:`history_of`)."""

    def __init__(self, cap: Capture, mem: MemObject) -> None:
        assert cap.log is not None and cap.log.data is not None
        self.cap = cap
        self.log = cap.log
        self.mm = cap.log.data
        self.mem = mem
        self.offs, self.pos = _enqueue_order(cap)
        self.start = mem.line_offset
        self.end, released = self._lifetime()
        self.events: list[HistoryEvent] = []
        self.released = released
        self.access: dict[tuple[int, int, int], Access | None] = {}  # (kernel, name, index)
        launch = np.isin(cap.kinds[self.pos], (EnqueueKind.KERNEL, EnqueueKind.TASK))
        lo, hi = np.searchsorted(self.offs, (self.start, self.end))
        inside = launch & (np.arange(len(self.offs)) >= lo) & (np.arange(len(self.offs)) < hi)
        self.launch_offs: list[int] = self.offs[inside].tolist()
        self.launch_pos: list[int] = self.pos[inside].tolist()
        self.kernels: dict[int, bytes | None] = {}  # launch -> its kernel handle as printed

    def _lifetime(self) -> tuple[int, int | None]:
        end = self.log.size
        released = None
        for off, rel, obj in self.log.mem.get(self.mem.handle, []):
            if obj.line_offset == self.mem.line_offset:
                if rel is not None:
                    released, end = rel, min(end, rel)
            elif off > self.start:
                end = min(end, off)
        return end, released

    def run(self) -> ResourceHistory:
        mem = self.mem
        self.events.append(HistoryEvent(None, self.start, f"created ({mem.flags})", "create"))
        mm = self.mm
        for ls, at in self._lines():
            m = _FUNC_RE.match(mm, ls, at)
            if m is None:
                continue
            func = m.group(1)
            if func.startswith(b"clSetKernelArg"):
                self._binding(ls, at)
            elif func.startswith(b"clEnqueue"):
                le = mm.find(b"\n", at, at + _LINE_MAX)
                line = bytes(mm[ls : le if le >= 0 else min(len(mm), at + _LINE_MAX)])
                self._transfer(func.decode(), line, ls, at - ls)
        if self.released is not None:
            self.events.append(HistoryEvent(None, self.released, "released", "release"))
        self.events = _merged(sorted(self.events, key=lambda e: e.offset))
        size = f" ({mem.size:,} B)" if mem.size else ""
        notes = []
        if mem.kind == "subbuffer" or mem.parent is not None:
            notes.append("a sub-buffer: writes through its parent are not followed")
        if mem.kind in ("svm", "usm"):
            notes.append("SVM: only launches given the allocation's base pointer are followed")
        return ResourceHistory.of_events(
            f"{mem.kind} 0x{mem.handle:x}{size}", mem.handle, mem.kind, self.events,
            tuple(notes),
        )

    def _lines(self) -> Iterator[tuple[int, int]]:
        """(line start, place of the handle) of each place that names the handle."""
        mm, end = self.mm, self.end
        for needle in (f"0x{self.mem.handle:x}".encode(), f"{self.mem.handle:016X}".encode()):
            at = mm.find(needle, self.start, end)
            while at >= 0:
                after = at + len(needle)
                if after >= len(mm) or mm[after] not in _HEX:
                    yield mm.rfind(b"\n", max(0, at - _LINE_MAX), at) + 1, at
                at = mm.find(needle, after, end)

    def _transfer(self, func: str, line: bytes, ls: int, at: int) -> None:
        m = _FIELD_RE.search(line[max(0, at - 24) : at])
        field = m.group(1) if m is not None else b""
        if field not in _MEM_FIELDS:
            return
        number = self._number(ls)
        if number is None:
            return
        kind = EnqueueKind(int(self.cap.kinds[self._position(ls)]))
        if field in _WRITE_FIELDS:
            access: Access = "write"
        elif field.startswith(b"src_"):
            access = "read"
        elif kind in (EnqueueKind.WRITE, EnqueueKind.FILL):
            access = "write"
        elif kind is EnqueueKind.READ:
            access = "read"
        elif kind is EnqueueKind.MAP or ("Map" in func and "Unmap" not in func):
            access = "map" if b"CL_MAP_WRITE" in line else "read"
        elif kind is EnqueueKind.UNMAP or "Unmap" in func:
            access = "unmap"
        else:
            access = "readwrite"
        what = func.removeprefix("clEnqueue")
        if field.startswith((b"src_", b"dst_")):
            what += f" ({field.decode().split('_')[0]})"
        self.events.append(HistoryEvent(number, ls, what, access))

    def _position(self, ls: int) -> int:
        i = int(np.searchsorted(self.offs, ls))
        return int(self.pos[i]) if i < len(self.offs) and int(self.offs[i]) == ls else -1

    def _number(self, ls: int) -> int | None:
        p = self._position(ls)
        return int(self.cap.numbers[p]) if p >= 0 else None

    def _binding(self, ls: int, at: int) -> None:
        """A clSetKernelArg* of the handle: every launch of the kernel until the index is
        set again takes the object."""
        if self.mm[max(0, at - 8) : at] != b"value = ":
            return
        m = _SETARG_RE.search(self.mm, ls, at)
        if m is None:
            return
        khex = m.group(1)
        index = int(m.group(2))
        nxt = self.mm.find(b"kernel = " + khex + b", index = %d, " % index, at, self.end)
        stop = nxt if nxt >= 0 else self.end
        i = bisect.bisect_left(self.launch_offs, at)
        while i < len(self.launch_offs) and self.launch_offs[i] < stop:
            off = self.launch_offs[i]
            if self._launch_kernel(i) == khex:
                pos = self.launch_pos[i]
                if not self._launch(pos, off, int(khex, 16), index):
                    return  # not a memory argument: a scalar that holds the same number
            i += 1

    def _launch_kernel(self, i: int) -> bytes | None:
        """The kernel handle (as printed) of launch ``i`` (read once)."""
        if i in self.kernels:
            return self.kernels[i]
        off = self.launch_offs[i]
        eol = self.mm.find(b"\n", off, off + _LINE_MAX)
        km = _KERNEL_RE.search(self.mm, off, eol if eol >= 0 else off + _LINE_MAX)
        found = self.kernels[i] = km.group(1) if km is not None else None
        return found

    def _launch(self, pos: int, off: int, kernel: int, index: int) -> bool:
        number = int(self.cap.numbers[pos])
        kid = int(self.cap.kernel_ids[pos])
        access = self._arg_access(kernel, kid, index, off, number)
        if access is None:
            return False
        name = self.cap.kernel_names[kid] if kid >= 0 else "kernel"
        what = f"{name} arg {index}"
        if access == "readwrite" and self.dumped(number):
            changed = _dumps_changed(self.cap, number, index)
            if changed is not None:
                access = "readwrite" if changed else "read"
                what += " (changed: the dumps)" if changed else " (unchanged: the dumps)"
        self.events.append(HistoryEvent(number, off, what, access))
        return True

    def dumped(self, number: int) -> bool:
        return number in self.cap.dumps.pre and number in self.cap.dumps.post

    def _arg_access(
        self, kernel: int, kid: int, index: int, off: int, number: int
    ) -> Access | None:
        key = (kernel, kid, index)  # a handle that names another kernel later: its own
        if key not in self.access:
            arg = next((a for a in self.cap.enqueue(number).args if a.index == index), None)
            ok = arg is not None and arg.kind in MEMORY_ARGS
            self.access[key] = arg_access(arg) if ok and arg is not None else None
        return self.access[key]


def _merged(events: list[HistoryEvent]) -> list[HistoryEvent]:
    """One event per line: a launch that takes the object as two arguments is one event
    (the stronger access)."""
    out: list[HistoryEvent] = []
    for e in events:
        last = out[-1] if out else None
        if last is None or last.offset != e.offset or last.number != e.number:
            out.append(e)
            continue
        access: Access = last.access
        if e.access != last.access:
            access = "readwrite" if {e.access, last.access} <= {"read", "write", "readwrite"} \
                else last.access
        out[-1] = HistoryEvent(last.number, last.offset, f"{last.what}, {e.what}", access)
    return out


def _dumps_changed(cap: Capture, number: int, index: int) -> bool | None:
    """Whether the launch changed the argument's contents, by its Pre and Post dumps (None:
    not both dumped, or unreadable)."""
    if number not in cap.dumps.pre or number not in cap.dumps.post:
        return None
    pre = next((d for d in cap.dumps.pre[number] if d.arg == index), None)
    post = next((d for d in cap.dumps.post[number] if d.arg == index), None)
    if pre is None or post is None:
        return None
    try:
        if pre.hashed or post.hashed:
            a, b = pre.hash_value(), post.hash_value()
            return None if a is None or b is None else a != b
        return not np.array_equal(pre.array(), post.array())
    except (OSError, ValueError):
        return None
