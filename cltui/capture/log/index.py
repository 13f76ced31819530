"""The enqueue index of one log (:class:`LogIndex`): numpy arrays over the mapped file, and
lazy lookups (the memory object, kernel, queue, sampler and argument state an enqueue saw)."""

from __future__ import annotations

import bisect
import contextlib
import mmap
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from cltui.capture.log.grammar import (
    _COUNTER_TAG,
    _INDEX_GAP,
    _PTR,
    _SETARG_ANY_RE,
    _dec,
    _exit_pattern,
    _setarg_needle,
    _setarg_pattern,
    parse_ptr,
)
from cltui.capture.log.objects import (
    KernelRecord,
    ProgramRecord,
    QueueRecord,
    SetArg,
    SetArgs,
    _decode_setarg,
)
from cltui.capture.model import (
    MemObject,
    Problem,
    SamplerDesc,
)

_R = TypeVar("_R")

_ARGS_WINDOW = 16 << 10  # first backward window of kernel_args_at (x4 per step)
_ARGS_WINDOW_MAX = 64 << 20
_ARGS_STATES = 4096  # argument states remembered per log (kernel_args_at)

# the objects whose last release LogIndex.released keeps (memory objects keep theirs in
# LogIndex.mem): the release that ends the identity a handle had
RELEASED_KINDS = {
    "clReleaseKernel": "kernel",
    "clReleaseProgram": "program",
    "clReleaseCommandQueue": "queue",
    "clReleaseSampler": "sampler",
}


# the per-enqueue arrays of an index (one entry per enqueue, log order): LogIndex's, and
# IndexColumns' beside its own ``recovered``
ROW_ARRAYS = ("numbers", "offsets", "kinds", "function_ids", "kernel_ids", "device_times")


def take_rows(index: object, rows: npt.NDArray[np.bool_] | npt.NDArray[np.intp],
              arrays: tuple[str, ...] = ROW_ARRAYS) -> None:  # fmt: skip
    """Keep the ``rows`` (a mask, or an order) of each per-enqueue array of ``index``."""
    for name in arrays:
        setattr(index, name, getattr(index, name)[rows])


@dataclass
class LogIndex:
    """The result of one scan; arrays are in log order (one entry per enqueue)."""

    path: Path
    size: int
    numbers: npt.NDArray[np.int64]
    offsets: npt.NDArray[np.int64]
    kinds: npt.NDArray[np.uint8]
    function_ids: npt.NDArray[np.uint16]
    functions: list[str]
    kernel_ids: npt.NDArray[np.int32]
    kernel_names: list[str]
    device_times: npt.NDArray[np.int64]
    controls: dict[str, str] = field(default_factory=dict)
    sessions: list[int] = field(default_factory=list)  # banner offsets
    shutdowns: int = 0
    leading_fragment: bool = False
    problems: list[Problem] = field(default_factory=list)
    mem: dict[int, list[tuple[int, int | None, MemObject]]] = field(default_factory=dict)
    kernels: dict[int, list[KernelRecord]] = field(default_factory=dict)
    programs: dict[int, list[ProgramRecord]] = field(default_factory=dict)
    queues: dict[int, list[QueueRecord]] = field(default_factory=dict)
    samplers: dict[int, list[tuple[int, SamplerDesc]]] = field(default_factory=dict)
    # (kind, handle) -> offsets of its last releases, in log order (RELEASED_KINDS)
    released: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    name_mapping: dict[str, str] = field(default_factory=dict)  # k_<n> -> long name
    replay_lines: int = 0
    _mm: mmap.mmap | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # kernel_args_at: (kernel, stop, nargs) -> sorted enqueue offsets with a known state
    _args_offsets: dict[tuple[int, int, int], list[int]] = field(default_factory=dict)
    _args_states: OrderedDict[tuple[tuple[int, int, int], int], SetArgs] = field(
        default_factory=OrderedDict
    )
    _args_lock: threading.Lock = field(default_factory=threading.Lock)

    # ---- raw access ----
    @property
    def data(self) -> mmap.mmap | None:
        """The log's bytes (a read-only memory map), None once closed."""
        return self._mm

    def read_line(self, offset: int, limit: int = 1 << 20) -> str:
        """The line starting at ``offset`` (sampler continuation joined), NULs removed."""
        mm = self._mm
        if mm is None or offset < 0 or offset >= self.size:
            return ""
        end = mm.find(b"\n", offset, min(self.size, offset + limit))
        if end < 0:
            end = min(self.size, offset + limit)
        line = mm[offset:end]
        nxt = end + 1
        if mm[nxt : nxt + len(_COUNTER_TAG)] == _COUNTER_TAG:
            e2 = mm.find(b"\n", nxt)
            line += mm[nxt : e2 if e2 >= 0 else self.size]
        return _dec(line)

    def exit_line(self, entry_offset: int, function: str, limit: int = 1 << 16) -> str | None:
        """The first ``<<<< ... <function>`` line after an entry (same-function pairing)."""
        mm = self._mm
        if mm is None:
            return None
        m = _exit_pattern(function).search(mm, entry_offset, min(self.size, entry_offset + limit))
        return _dec(m.group(1)) if m else None

    def exit_time(self, entry_offset: int, function: str, limit: int = 1 << 16) -> int | None:
        """The ``Time:`` stamp (us, ``CallLoggingElapsedTime``) of the first ``<<<<`` line of
        ``function`` after an entry; None when that line has none."""
        mm = self._mm
        if mm is None:
            return None
        pat = re.compile(rb"<<<< Time: (\d+) (?:TID = \d+ )?(?:TNum = \d+ )?"
                         + re.escape(function.encode()) + rb"\b")  # fmt: skip
        m = pat.search(mm, entry_offset, min(self.size, entry_offset + limit))
        return int(m.group(1)) if m else None

    # ---- lookups that respect handle recycling ----
    # An object's identity is (handle, creation, release): a handle at a log offset names
    # the object created with it latest before that offset, unless that object's last
    # release lies in between (then it names none: its next object's creation was lost).
    @staticmethod
    def _latest(lst: list[_R] | None, before: int, start: Callable[[_R], int]) -> _R | None:
        """The record of ``lst`` (one handle's, in creation order) that starts latest
        before ``before`` (``start``: where a record starts)."""
        if not lst:
            return None
        keys = [start(r) for r in lst]
        i = bisect.bisect_right(keys, before) - 1
        return lst[i] if i >= 0 else None

    def last_release(self, kind: str, handle: int, before: int) -> int:
        """The offset of the last release of the ``kind`` object (``RELEASED_KINDS``) with
        this handle before ``before``, -1 if none: where the identity the handle had ends."""
        offs = self.released.get((kind, handle))
        if not offs:
            return -1
        i = bisect.bisect_left(offs, before) - 1
        return offs[i] if i >= 0 else -1

    def _live(self, kind: str, handle: int, created: int | None, before: int) -> bool:
        """Whether the ``kind`` object created at ``created`` (None: not found) with this
        handle is still the one it names at ``before`` (no last release in between)."""
        return created is not None and self.last_release(kind, handle, before) < created

    def mem_at(self, handle: int, before: int) -> MemObject | None:
        """The memory object with this handle created latest before ``before`` (still alive)."""
        rec = self._latest(self.mem.get(handle), before, lambda r: r[0])
        if rec is None:
            return None
        _, released, obj = rec
        if released is not None and released < before:
            return None
        return obj

    def svm_containing(self, ptr: int, before: int) -> MemObject | None:
        """An SVM/USM allocation (alive at ``before``) whose range contains ``ptr``."""
        best: MemObject | None = None
        for lst in self.mem.values():
            for off, released, obj in lst:
                if obj.kind not in ("svm", "usm") or off > before:
                    continue
                if released is not None and released < before:
                    continue
                inside = obj.handle <= ptr < obj.handle + max(obj.size, 1)
                if inside and (best is None or obj.line_offset > best.line_offset):
                    best = obj
        return best

    def kernel_at(self, handle: int, before: int) -> KernelRecord | None:
        """The kernel this handle names at ``before`` (None: released since its creation,
        or created where the log does not show it)."""
        r = self._latest(self.kernels.get(handle), before, lambda r: r.entry_offset)
        if r is None:
            r = self._kernels_in_program(handle, before)
        if not isinstance(r, KernelRecord):
            return None
        return r if self._live("kernel", handle, r.entry_offset, before) else None

    def kernel_since(self, handle: int, before: int) -> int:
        """Where the kernel object this handle names at ``before`` begins: its creation, or,
        when the log does not show it, just after the last release of the handle's earlier
        kernel (0: neither).  Its arguments start empty there.  (No search of the log: a
        kernel of ``clCreateKernelsInProgram`` counts once :meth:`kernel_at` found it.)"""
        made = self._latest(self.kernels.get(handle), before, lambda r: r.entry_offset)
        start = made.entry_offset if made is not None else 0
        return max(start, self.last_release("kernel", handle, before) + 1)

    def _kernels_in_program(self, handle: int, before: int) -> KernelRecord | None:
        """Lazy: a kernel created by ``clCreateKernelsInProgram`` (not indexed up front)."""
        mm = self._mm
        if mm is None:
            return None
        hx = re.compile(rb"[\[ ,]" + f"0x{handle:x}".encode() + rb"[ ,\]]")
        tag = b"clCreateKernelsInProgram"
        at = min(before, self.size)
        for _ in range(10000):
            at = mm.rfind(tag, 0, at)
            if at < 0:
                return None
            ls = mm.rfind(b"\n", 0, at) + 1
            le = mm.find(b"\n", at)
            line = mm[ls : le if le >= 0 else self.size]
            if line.lstrip(b" \x00").startswith(b"<<<< ") and hx.search(line):
                e = mm.rfind(b" clCreateKernelsInProgram: program = ", 0, ls)
                prog = None
                if e >= 0:
                    pe = mm.find(b"\n", e)
                    m = re.search(_PTR, mm[e : pe if pe >= 0 else self.size])
                    prog = parse_ptr(_dec(m.group(1))) if m else None
                rec = KernelRecord(handle, prog, "", e if e >= 0 else ls, ls)
                lst = self.kernels.setdefault(handle, [])
                lst.append(rec)
                lst.sort(key=lambda r: r.entry_offset)
                return rec
        return None

    def program_at(self, handle: int, before: int) -> ProgramRecord | None:
        r = self._latest(self.programs.get(handle), before, lambda r: r.entry_offset)
        if not isinstance(r, ProgramRecord):
            return None
        return r if self._live("program", handle, r.entry_offset, before) else None

    def queue_at(self, handle: int, before: int) -> QueueRecord | None:
        r = self._latest(self.queues.get(handle), before, lambda q: q.offset)
        if not isinstance(r, QueueRecord):
            return None
        return r if self._live("queue", handle, r.offset, before) else None

    def sampler_at(self, handle: int, before: int) -> SamplerDesc | None:
        r = self._latest(self.samplers.get(handle), before, lambda r: r[0])
        if r is None or not self._live("sampler", handle, r[0], before):
            return None
        return r[1]

    def num_args_after(self, offset: int) -> int | None:
        """``Num Args: N`` of the Kernel Info block that follows a clCreateKernel exit."""
        mm = self._mm
        if mm is None:
            return None
        num_args = re.compile(rb"\n\s*Num Args: (\d{1,9})\b")
        m = num_args.search(mm, offset, min(self.size, offset + 4096))
        if m is None:
            return None
        between = mm[offset : m.start()]
        if b">>>> " in between:
            return None
        return int(m.group(1))

    def kernel_args_at(
        self, kernel: int, enqueue_offset: int, stop_offset: int, nargs: int | None
    ) -> dict[int, SetArg]:
        """The argument state of ``kernel`` at an enqueue: per index, the latest
        ``clSetKernelArg*`` line on ``kernel`` in ``[stop_offset, enqueue_offset)``
        (``stop_offset``: the kernel's creation).

        With ``nargs`` known (the signature's parameter count) the result holds only the
        lines from the earliest of the latest lines of indexes ``0..nargs-1`` on (so an
        index outside the signature counts only when it was set after every real
        index was), when all of them are set; otherwise every index found.  The log is
        read backwards in growing windows (one literal search per window) and the scan
        stops as soon as every index is found; the state at each enqueue is kept per
        kernel so that the next enqueue of the same kernel reads only the lines between
        the two.  The result does not depend on the order of calls.
        """
        mm = self._mm
        if mm is None:
            return {}
        stop = max(0, stop_offset)
        hi = min(enqueue_offset, self.size)
        if hi <= stop or nargs == 0:
            return {}
        key = (kernel, stop, -1 if nargs is None else nargs)
        base_at, base = self._args_checkpoint(key, hi)
        floor = max(stop, base_at)
        found: dict[int, SetArg] = {}
        want = -1 if nargs is None else nargs  # indexes 0..want-1 must all be found
        missing = want
        window = _ARGS_WINDOW
        complete = False
        while hi > floor and not complete:
            lo = max(floor, hi - window)
            if lo > floor:  # a line start, so that no line is cut
                nl = mm.rfind(b"\n", floor, lo)
                lo = nl + 1 if nl >= 0 else floor
            for m in self._setarg_lines(kernel, lo, hi, found):
                i = int(m.group(2))
                if i in found:
                    continue
                found[i] = _decode_setarg(m, mm, self.size)
                if i < want:
                    missing -= 1
                    if missing == 0:
                        complete = True
                        break
            hi = lo
            window = min(window * 4, _ARGS_WINDOW_MAX)
        if not complete and base is not None:
            for i, s in base.items():
                if i not in found:
                    found[i] = s
        if nargs is not None and all(i in found for i in range(nargs)):
            first = min(found[i].offset for i in range(nargs))
            found = {i: s for i, s in found.items() if s.offset >= first}
        if enqueue_offset == 0 or mm[enqueue_offset - 1 : enqueue_offset] == b"\n":
            self._args_remember(key, enqueue_offset, found)
        return dict(found)

    def _setarg_lines(
        self, kernel: int, lo: int, hi: int, known: dict[int, SetArg]
    ) -> list[re.Match[bytes]]:
        """The ``clSetKernelArg*`` entry lines on ``kernel`` within ``[lo, hi)``, last first
        (``lo``: a line start or the scan floor), less lines that can only set an index in
        ``known``.  A literal search finds the candidates; a pattern confirms each line."""
        mm = self._mm
        if mm is None:
            return []
        lit = _setarg_needle(kernel, frozenset(known))
        at_a = b"kernel = " + f"0x{kernel:x}".encode()
        at_b = b"kernel = " + f"{kernel:016X}".encode()
        out: list[re.Match[bytes]] = []
        last_ls = -1
        for c in reversed(list(lit.finditer(mm, lo, hi))):
            ls = mm.rfind(b"\n", lo, c.start()) + 1 or lo
            if ls == last_ls:
                continue
            last_ls = ls
            le = mm.find(b"\n", c.end(), hi)
            le = le if le >= 0 else hi
            # the generic pattern finds the same match as the kernel's own one whenever the
            # handle it stopped at is this kernel's (the usual line); compiling a pattern
            # per kernel costs more than a whole decode
            m = _SETARG_ANY_RE.search(mm, ls, le)
            if m is not None:
                h = m.start(2) - _INDEX_GAP
                if mm[h - len(at_a) : h] != at_a and mm[h - len(at_b) : h] != at_b:
                    m = _setarg_pattern(kernel).search(mm, ls, le)
            if m is not None:
                out.append(m)
        return out

    def _args_checkpoint(self, key: tuple[int, int, int], at: int) -> tuple[int, SetArgs | None]:
        """The remembered argument state at the latest enqueue offset <= ``at``."""
        with self._args_lock:
            offs = self._args_offsets.get(key)
            if not offs:
                return -1, None
            j = bisect.bisect_right(offs, at) - 1
            if j < 0:
                return -1, None
            x = offs[j]
            state = self._args_states[(key, x)]
            self._args_states.move_to_end((key, x))
            return x, state

    def _args_remember(self, key: tuple[int, int, int], at: int, state: SetArgs) -> None:
        with self._args_lock:
            if (key, at) in self._args_states:
                self._args_states.move_to_end((key, at))
                return
            self._args_states[(key, at)] = state
            bisect.insort(self._args_offsets.setdefault(key, []), at)
            while len(self._args_states) > _ARGS_STATES:
                (k, x), _ = self._args_states.popitem(last=False)
                offs = self._args_offsets[k]
                offs.pop(bisect.bisect_left(offs, x))
                if not offs:
                    del self._args_offsets[k]

    def close(self) -> None:
        with self._lock:
            if self._mm is not None:
                with contextlib.suppress(BufferError, ValueError):
                    self._mm.close()
                self._mm = None
