"""Following one memory object through the log (:mod:`cltui.capture.history`): its events
within a span of the log, the whole lifetime (the history) or a window next to one enqueue (its
neighbours: the last writer before, the next reader after).

The events of a span ``[lo, hi)`` are the lines of the span that name the object's handle (a
transfer, or a ``clSetKernelArg*`` that binds it: every launch of the kernel until the index is
set again takes it), and, for a span after the object's creation, the bindings made before the
span that still hold at its start: per kernel launched in the span and per memory argument of
it, the last line before the span that sets that index (found backwards, once per kernel and
index and scan).  So a span's events are the whole history's events at its lines, and a
neighbour found window by window (growing 4x a step) costs the log between the enqueue and
the neighbour, not the object's lifetime.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from cltui.capture.history_events import (
    MEMORY_ARGS,
    Access,
    HistoryEvent,
    arg_access,
    history_label,
)
from cltui.capture.model import EnqueueKind, MemObject

if TYPE_CHECKING:
    from cltui.capture.capture import Capture

__all__ = ["WHOLE", "WINDOW", "ObjectScan", "merged"]

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
WINDOW = 8 << 10  # the first window of a neighbour search (x4 a step)
WHOLE = 1 << 20  # a lifetime up to this many bytes of log: the whole history is as cheap

Mention = tuple[int, int, int]  # (needle form, line start, place of the handle)
_Order = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64],
               npt.NDArray[np.int64]]
_order: tuple[tuple[int, int], _Order] | None = None


def enqueue_order(cap: Capture) -> _Order:
    """(sorted log offsets of the logged enqueues, their positions, the same two of the kernel
    launches alone): built once per capture."""
    global _order
    key = (id(cap), len(cap))
    if _order is None or _order[0] != key:
        logged = np.flatnonzero(cap.offsets >= 0).astype(np.int64)
        offs = cap.offsets[logged]
        order = np.argsort(offs, kind="stable")
        offs, pos = offs[order].astype(np.int64), logged[order]
        launch = np.isin(cap.kinds[pos], (EnqueueKind.KERNEL, EnqueueKind.TASK))
        _order = (key, (offs, pos, offs[launch], pos[launch]))
    return _order[1]


class ObjectScan:
    """One memory object's events, span by span (:meth:`events`); the neighbours of one
    enqueue (:meth:`last_writer`, :meth:`next_reader`)."""

    def __init__(self, cap: Capture, mem: MemObject) -> None:
        assert cap.log is not None and cap.log.data is not None
        self.cap = cap
        self.log = cap.log
        self.mm = cap.log.data
        self.mem = mem
        self.label = history_label(mem)
        self.offs, self.pos, launch_offs, launch_pos = enqueue_order(cap)
        self.start = mem.line_offset
        self.end, self.released = self._lifetime()
        lo, hi = np.searchsorted(launch_offs, (self.start, self.end))
        self.launch_offs: list[int] = launch_offs[lo:hi].tolist()
        self.launch_numbers: list[int] = cap.numbers[launch_pos[lo:hi]].tolist()
        self.launch_kids: list[int] = cap.kernel_ids[launch_pos[lo:hi]].tolist()
        self.names: dict[tuple[int, int], str] = {}  # (kernel name, index) -> event text
        self.needles = (f"0x{mem.handle:x}".encode(), f"{mem.handle:016X}".encode())
        self.access: dict[tuple[int, int, int], Access | None] = {}  # (kernel, name, index)
        self.kernels: dict[int, bytes | None] = {}  # launch -> its kernel handle as printed
        self.since: dict[int, int] = {}  # launch -> where its kernel object begins
        self.memory_args: dict[tuple[bytes, int], tuple[int, ...]] = {}  # kernel, name ->
        self.latest: dict[bytes, tuple[int, int]] = {}  # set literal -> (bound, last before)
        self.found: list[HistoryEvent] = []
        self.lo, self.hi = self.start, self.end  # the span being read
        self.span = (0, len(self.launch_offs))  # its launches

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

    def notes(self) -> tuple[str, ...]:
        mem, notes = self.mem, []
        if mem.kind == "subbuffer" or mem.parent is not None:
            notes.append("a sub-buffer: writes through its parent are not followed")
        if mem.kind in ("svm", "usm"):
            notes.append("SVM: only launches given the allocation's base pointer are followed")
        return tuple(notes)

    # ------------------------------------------------------------------------- spans
    def events(self, lo: int, hi: int, release: bool = False) -> list[HistoryEvent]:
        """The events at the log lines in ``[lo, hi)`` (line starts, within the lifetime),
        one per line, in log order; ``release``: and the release, when the log shows it."""
        lo, hi = max(lo, self.start), min(hi, self.end)
        self.found, self.lo, self.hi = [], lo, hi
        if lo >= hi:
            return []
        self.span = (bisect.bisect_left(self.launch_offs, lo),
                     bisect.bisect_left(self.launch_offs, hi))
        if lo == self.start:
            self.found.append(HistoryEvent(None, lo, f"created ({self.mem.flags})", "create"))
        mentions = list(self._lines(lo, hi))
        if lo > self.start:
            mentions = sorted(self._held_at(lo) | set(mentions))
        mm = self.mm
        for _form, ls, at in mentions:
            m = _FUNC_RE.match(mm, ls, at)
            if m is None:
                continue
            func = m.group(1)
            if func.startswith(b"clSetKernelArg"):
                self._binding(ls, at)
            elif func.startswith(b"clEnqueue") and ls >= lo:
                le = mm.find(b"\n", at, at + _LINE_MAX)
                line = bytes(mm[ls : le if le >= 0 else min(len(mm), at + _LINE_MAX)])
                self._transfer(func.decode(), line, ls, at - ls)
        if release and self.released is not None:
            self.found.append(HistoryEvent(None, self.released, "released", "release"))
        return merged(sorted(self.found, key=lambda e: e.offset))

    def last_writer(self, offset: int, window: int = WINDOW) -> HistoryEvent | None:
        """The last event before the log line ``offset`` that writes the object (searched
        back from it in windows of ``window`` bytes, 4x larger each step)."""
        hi, size = offset, window
        while hi > self.start:
            lo = max(self.start, self.mm.rfind(b"\n", self.start, max(self.start, hi - size)) + 1)
            writers = [e for e in self.events(lo, hi) if e.writes]
            if writers:
                return writers[-1]
            hi, size = lo, size * 4
        return None

    def next_reader(self, offset: int, window: int = WINDOW) -> HistoryEvent | None:
        """The first enqueue after the log line ``offset`` that reads the object."""
        eol = self.mm.find(b"\n", offset, self.end)
        lo, size = (eol + 1 if eol >= 0 else self.end), window
        while lo < self.end:
            eol = self.mm.find(b"\n", min(self.end, lo + size), self.end)
            hi = eol + 1 if eol >= 0 else self.end
            readers = [e for e in self.events(lo, hi) if e.reads and e.number is not None]
            if readers:
                return readers[0]
            lo, size = hi, size * 4
        return None

    def _lines(self, lo: int, hi: int) -> Iterator[Mention]:
        """Each place in ``[lo, hi)`` that names the handle."""
        mm = self.mm
        for form, needle in enumerate(self.needles):
            at = mm.find(needle, lo, hi)
            while at >= 0:
                after = at + len(needle)
                if after >= len(mm) or mm[after] not in _HEX:
                    yield form, mm.rfind(b"\n", max(0, at - _LINE_MAX), at) + 1, at
                at = mm.find(needle, after, hi)

    def _held_at(self, lo: int) -> set[Mention]:
        """The ``clSetKernelArg*`` lines before ``lo`` that bind the object to an argument
        of a kernel launched in the span, and still hold at ``lo`` (a handle that two
        kernels of the span share: found once)."""
        out: set[Mention] = set()
        seen: set[tuple[bytes, int]] = set()
        for i in range(*self.span):
            khex = self._launch_kernel(i)
            kid = self.launch_kids[i]
            if khex is None or (khex, kid) in seen:
                continue
            seen.add((khex, kid))
            for index in self._memory_args(khex, kid, i):
                lit = b"kernel = " + khex + b", index = %d, " % index
                p = self._last_before(lit, lo)
                if p < self._kernel_since(i):  # (none, or set on an earlier kernel object)
                    continue
                le = self.mm.find(b"\n", p, p + _LINE_MAX)
                le = le if le >= 0 else min(len(self.mm), p + _LINE_MAX)
                for form, needle in enumerate(self.needles):
                    at = self.mm.find(b"value = " + needle, p, le)
                    after = at + 8 + len(needle)
                    if at >= 0 and (after >= len(self.mm) or self.mm[after] not in _HEX):
                        out.add((form, self.mm.rfind(b"\n", 0, p) + 1, at + 8))
        return out

    def _last_before(self, lit: bytes, x: int) -> int:
        """Where ``lit`` occurs last in ``[start, x)`` (-1: nowhere), each stretch of the
        log searched once per scan."""
        bound, p = self.latest.get(lit, (self.start, -1))
        if x > bound:
            q = self.mm.rfind(lit, bound, x)
            p = q if q >= 0 else p
        elif x < bound and p + len(lit) > x:
            p = self.mm.rfind(lit, self.start, x)
        self.latest[lit] = (x, p)
        return p

    def _memory_args(self, khex: bytes, kid: int, i: int) -> tuple[int, ...]:
        """The memory arguments of a kernel (a handle the log may give a later kernel too,
        and its name), by its launch ``i``'s signature."""
        if (khex, kid) not in self.memory_args:
            enq = self.cap.enqueue(self.launch_numbers[i])
            found = tuple(a.index for a in enq.args if a.kind in MEMORY_ARGS)
            self.memory_args[(khex, kid)] = found
        return self.memory_args[(khex, kid)]

    # ------------------------------------------------------------------------- lines
    def _transfer(self, func: str, line: bytes, ls: int, at: int) -> None:
        m = _FIELD_RE.search(line[max(0, at - 24) : at])
        field = m.group(1) if m is not None else b""
        if field not in _MEM_FIELDS:
            return
        p = self._position(ls)
        if p < 0:
            return
        number = int(self.cap.numbers[p])
        kind = EnqueueKind(int(self.cap.kinds[p]))
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
        self.found.append(HistoryEvent(number, ls, what, access))

    def _position(self, ls: int) -> int:
        i = int(np.searchsorted(self.offs, ls))
        return int(self.pos[i]) if i < len(self.offs) and int(self.offs[i]) == ls else -1

    def _binding(self, ls: int, at: int) -> None:
        """A clSetKernelArg* of the handle: every launch of the kernel in the span until the
        index is set again takes the object."""
        if self.mm[max(0, at - 8) : at] != b"value = ":
            return
        m = _SETARG_RE.search(self.mm, ls, at)
        if m is None:
            return
        khex = m.group(1)
        index = int(m.group(2))
        # a binding held from before the span: its literal is nowhere in (at, lo)
        lit = b"kernel = " + khex + b", index = %d, " % index
        nxt = self.mm.find(lit, max(at, self.lo), self.hi)
        stop = nxt if nxt >= 0 else self.hi
        first, last = self.span
        i = bisect.bisect_left(self.launch_offs, at, first, last)
        while i < last and self.launch_offs[i] < stop:
            off = self.launch_offs[i]
            if self._launch_kernel(i) != khex or self._kernel_since(i) > at:
                i += 1  # another kernel, or a later kernel object with the same handle
                continue
            if not self._launch(i, off, int(khex, 16), index):
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

    def _kernel_since(self, i: int) -> int:
        """Where the kernel object of launch ``i`` begins (its arguments start empty)."""
        since = self.since.get(i)
        if since is None:
            khex = self._launch_kernel(i)
            off = self.launch_offs[i]
            since = self.since[i] = 0 if khex is None else self.log.kernel_since(int(khex, 16), off)
        return since

    def _launch(self, i: int, off: int, kernel: int, index: int) -> bool:
        number, kid = self.launch_numbers[i], self.launch_kids[i]
        access = self._arg_access(kernel, kid, index, number)
        if access is None:
            return False
        what = self.names.get((kid, index))
        if what is None:
            name = self.cap.kernel_names[kid] if kid >= 0 else "kernel"
            what = self.names[(kid, index)] = f"{name} arg {index}"
        if access == "readwrite" and self._dumped(number):
            changed = _dumps_changed(self.cap, number, index)
            if changed is not None:
                access = "readwrite" if changed else "read"
                what += " (changed: the dumps)" if changed else " (unchanged: the dumps)"
        self.found.append(HistoryEvent(number, off, what, access))
        return True

    def _dumped(self, number: int) -> bool:
        return number in self.cap.dumps.pre and number in self.cap.dumps.post

    def _arg_access(self, kernel: int, kid: int, index: int, number: int) -> Access | None:
        key = (kernel, kid, index)  # a handle that names another kernel later: its own
        if key not in self.access:
            arg = next((a for a in self.cap.enqueue(number).args if a.index == index), None)
            ok = arg is not None and arg.kind in MEMORY_ARGS
            self.access[key] = arg_access(arg) if ok and arg is not None else None
        return self.access[key]


def merged(events: list[HistoryEvent]) -> list[HistoryEvent]:
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
