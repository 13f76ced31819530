"""One-pass enqueue index over ``clintercept_log.txt`` (capture-format.md §2, §8).

The log is memory-mapped and cut into line-aligned pieces; each piece is scanned with
as few passes as possible: one regex pass for enqueue entry lines (literal prefix
``clEnqueue``), ``bytes.find`` loops for the rare markers (`` returned ``, a last
``clReleaseMemObject``), and one vectorised numpy pass over the newlines that yields the
side lines (banner, controls, program dumps...) and the ``Device Time`` lines.  Python
work happens per *match* (per enqueue, per device-time line and per rare line), never per
log line.  Logs over ``PARALLEL_MIN`` bytes are scanned by forked worker processes (one
per CPU) whose compact pieces are merged in file order.  ``clSetKernelArg`` lines are not
touched at index time: the argument state of a kernel enqueue is found lazily by scanning
backwards from the enqueue (:meth:`LogIndex.kernel_args_at`).
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import itertools
import mmap
import os
import pickle
import re
import select
import signal
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from cltui.capture import images
from cltui.capture.confine import is_file, leaves, outside_message
from cltui.capture.model import (
    CaptureError,
    EnqueueKind,
    ImageFormat,
    MemObject,
    Problem,
    SamplerDesc,
)
from cltui.errors import Cancelled

CHUNK = 16 * 1024 * 1024
_PREFIX = rb"(?:Time: \d+ )?(?:TID = \d+ )?(?:TNum = \d+ )?"
# Enqueue entry lines (the line start is checked per match, in Python).
# (the name stops before another "clEnqueue" and is possessive: a word of a million
# "clEnqueue" costs a few bytes a try, not the rest of the word; a lookbehind instead would
# cost the literal-prefix search)
_ENQ_RE = re.compile(rb"(clEnqueue(?:(?!clEnqueue)\w)++)([(:;][^\n]*)")
# Exit lines of creators: their entry is found by a short backward search.
_RET_RE = re.compile(rb" returned [^\n]*")
_EXIT_LINE_RE = re.compile(rb" *<<<< " + _PREFIX + rb"(cl\w+)([^\n]*)")
_RELEASE_RE = re.compile(rb"clReleaseMemObject: \[ ref count = 1 \] mem = (\S+)")
_DEVTIME_RE = re.compile(
    rb"Device Time for [^\n]*? \(enqueue (\d+)\) = (\d+) ns \(queued -> submit\), "
    rb"(\d+) ns \(submit -> start\), (\d+) ns \(start -> end\)"
)
# the same for a search anywhere: the name part cannot run over another "Device Time for "
# (the lazy name would otherwise rescan the rest of the line from every one of a line of
# repeated heads without a tail: quadratic); the groups found are the same
_DEVTIME_ANY_RE = re.compile(
    rb"Device Time for (?:(?!Device Time for )[^\n])*? \(enqueue (\d++)\) = (\d++) ns "
    rb"\(queued -> submit\), (\d++) ns \(submit -> start\), (\d++) ns \(start -> end\)"
)
_SIDE_TAG_LIST = (
    b"Dumping program to file",
    b"Dumping input program binary to file",
    b"Dumping program options to file",
    b"Build Info for program ",
    b"Added kernel name mapping: ",
    b"Control ",
    b"-=-=-=-=-=-=-=-=",
    b"CLIntercept is shutting down",
    b"-------> Start of Build Log",
    b"Dumping kernel capture replay to directory: ",
)
_SIDE_TAGS = b"(" + b"|".join(re.escape(t) for t in _SIDE_TAG_LIST) + rb")([^\n]*)"
_SIDE_RE = re.compile(rb"\n" + _SIDE_TAGS)
_CREATORS = (
    b"clCreate",
    b"clSVMAlloc",
    b"clLinkProgram",
    b"clHostMemAlloc",
    b"clDeviceMemAlloc",
    b"clSharedMemAlloc",
)
_END_BUILD_LOG = b"<------- End of Build Log"

_PTR = rb"(0x[0-9a-fA-F]+|\(nil\)|[0-9A-F]{8,16})"
_COUNTER_TAG = b"; EnqueueCounter: "
_INDEX_GAP = len(b", index = ")
_ARGS_WINDOW = 16 << 10  # first backward window of kernel_args_at (x4 per step)
_ARGS_WINDOW_MAX = 64 << 20
_ARGS_STATES = 4096  # argument states remembered per log (kernel_args_at)

KIND_OF_FUNCTION: dict[str, EnqueueKind] = {
    "clEnqueueNDRangeKernel": EnqueueKind.KERNEL,
    "clEnqueueTask": EnqueueKind.TASK,
    "clEnqueueNativeKernel": EnqueueKind.OTHER,
    "clEnqueueReadBuffer": EnqueueKind.READ,
    "clEnqueueReadBufferRect": EnqueueKind.READ,
    "clEnqueueReadImage": EnqueueKind.READ,
    "clEnqueueWriteBuffer": EnqueueKind.WRITE,
    "clEnqueueWriteBufferRect": EnqueueKind.WRITE,
    "clEnqueueWriteImage": EnqueueKind.WRITE,
    "clEnqueueCopyBuffer": EnqueueKind.COPY,
    "clEnqueueCopyBufferRect": EnqueueKind.COPY,
    "clEnqueueCopyImage": EnqueueKind.COPY,
    "clEnqueueCopyImageToBuffer": EnqueueKind.COPY,
    "clEnqueueCopyBufferToImage": EnqueueKind.COPY,
    "clEnqueueFillBuffer": EnqueueKind.FILL,
    "clEnqueueFillImage": EnqueueKind.FILL,
    "clEnqueueMapBuffer": EnqueueKind.MAP,
    "clEnqueueMapImage": EnqueueKind.MAP,
    "clEnqueueUnmapMemObject": EnqueueKind.UNMAP,
    "clEnqueueMarker": EnqueueKind.MARKER,
    "clEnqueueMarkerWithWaitList": EnqueueKind.MARKER,
    "clEnqueueWaitForEvents": EnqueueKind.MARKER,
    "clEnqueueBarrier": EnqueueKind.BARRIER,
    "clEnqueueBarrierWithWaitList": EnqueueKind.BARRIER,
    "clEnqueueMigrateMemObjects": EnqueueKind.MIGRATE,
}


def kind_of(function: str) -> EnqueueKind:
    k = KIND_OF_FUNCTION.get(function)
    if k is not None:
        return k
    if function.startswith("clEnqueueSVM"):
        return EnqueueKind.SVM
    if function.endswith("INTEL") and ("Mem" in function or "Migrate" in function):
        return EnqueueKind.USM
    return EnqueueKind.OTHER


class IndexCancelled(Cancelled, CaptureError):
    """Raised when the ``cancel`` event is set while indexing."""

    def __init__(self) -> None:
        super().__init__("cancelled")


def parse_ptr(text: str) -> int | None:
    """A ``%p`` value: ``0x1a2b``, ``(nil)`` -> 0, or bare upper-case hex (Windows)."""
    t = text.strip()
    if t == "(nil)":
        return 0
    try:
        if t.startswith(("0x", "0X")):
            return int(t, 16)
        if 8 <= len(t) <= 16:
            return int(t, 16)
    except ValueError:
        return None
    return None


def _dec(b: bytes) -> str:
    if b"\x00" in b:
        b = b.replace(b"\x00", b"")
    return b.decode("utf-8", "replace")


def split_kernel_name(rest: str) -> tuple[str | None, str]:
    """``( name ): args`` -> (name, args); the name may contain ``(``, ``)``, spaces."""
    if not rest.startswith("( "):
        return None, rest[2:] if rest.startswith(": ") else rest
    for sep in (" ): ", " ); "):
        j = rest.find(sep)
        if j >= 0:
            tail = rest[j + 3 :]
            return rest[2:j], tail[1:] if sep == " ): " and tail.startswith(" ") else tail
    if rest.endswith(" )"):
        return rest[2:-2], ""
    return None, rest


def strip_counter(args: str) -> tuple[str, int | None]:
    j = args.rfind("; EnqueueCounter: ")
    if j < 0:
        return args, None
    try:
        return args[:j], int(args[j + 18 :].strip())
    except ValueError:
        return args[:j], None


_SHORT_HASH_RE = re.compile(r"\$(\d{4,}_)?[0-9A-F]{8}_\d{4,}_[0-9A-F]{8}$")


def short_kernel_name(name: str) -> str:
    """Drop a ``KernelNameHashTracking`` suffix (§5.4)."""
    return _SHORT_HASH_RE.sub("", name)


@dataclass(slots=True)
class KernelRecord:
    handle: int
    program: int | None  # program handle
    name: str
    entry_offset: int  # offset of the creation entry line
    exit_offset: int


@dataclass(slots=True)
class ProgramRecord:
    handle: int
    number: int | None
    entry_offset: int
    source_path: str | None = None
    options_path: str | None = None
    build_tag: str | None = None  # P4_H8_C4_O8


@dataclass(slots=True)
class QueueRecord:
    handle: int
    device: str | None
    offset: int


@dataclass(slots=True)
class SetArg:
    """One ``clSetKernelArg*`` line, decoded."""

    index: int
    size: int
    text: str  # the value text after ``value = `` (or the four words), "" if none
    raw: bytes | None  # value bytes rebuilt from the text (4/8/16-byte values)
    is_svm: bool
    sampler: SamplerDesc | None
    offset: int  # byte offset of the line
    pointer: int | None  # 8-byte values and SVM pointers as integers
    counter: int | None = None  # EnqueueCounter at set time (= SetKernelArg_<E4> number)


SetArgs = dict[int, SetArg]


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

    # ---- lookups that respect handle recycling ----
    @staticmethod
    def _latest(table: dict[int, list[Any]], handle: int, before: int) -> Any:
        lst = table.get(handle)
        if not lst:
            return None
        keys = [r[0] if isinstance(r, tuple) else r.entry_offset for r in lst]
        i = bisect.bisect_right(keys, before) - 1
        return lst[i] if i >= 0 else None

    def mem_at(self, handle: int, before: int) -> MemObject | None:
        """The memory object with this handle created latest before ``before`` (still alive)."""
        rec = self._latest(self.mem, handle, before)
        if rec is None:
            return None
        _, released, obj = rec
        if released is not None and released < before:
            return None
        return obj  # type: ignore[no-any-return]

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
        r = self._latest(self.kernels, handle, before)
        if r is None:
            r = self._kernels_in_program(handle, before)
        return r if isinstance(r, KernelRecord) else None

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
        r = self._latest(self.programs, handle, before)
        return r if isinstance(r, ProgramRecord) else None

    def queue_at(self, handle: int, before: int) -> QueueRecord | None:
        lst = self.queues.get(handle)
        if not lst:
            return None
        keys = [q.offset for q in lst]
        i = bisect.bisect_right(keys, before) - 1
        return lst[i] if i >= 0 else None

    def sampler_at(self, handle: int, before: int) -> SamplerDesc | None:
        r = self._latest(self.samplers, handle, before)
        return r[1] if r else None

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


_SETARG_ANY_RE = re.compile(
    rb">>>> " + _PREFIX + rb"clSetKernelArg(SVMPointer|MemPointerINTEL|DevicePointerEXT)?"
    rb"\( [^\n]*?: kernel = (?:0x[0-9a-f]+|[0-9A-F]{16}), index = (\d{1,9}), ([^\n]*)"
)


@functools.lru_cache(maxsize=256)
def _setarg_needle(kernel: int, known: frozenset[int]) -> re.Pattern[bytes]:
    """The literal search for ``kernel = <handle>, index = `` (the handle printed ``0x1a2b``
    or as bare upper-case hex on Windows), except where the index is one of ``known``: a
    line naming the kernel only there cannot set another index (the kernel's own
    pattern takes the first such place whose index is a number)."""
    hx = f"0x{kernel:x}".encode() + rb"|" + f"{kernel:016X}".encode()
    skip = b"(?!(?:" + b"|".join(b"%d" % i for i in sorted(known)) + b"), )" if known else b""
    return re.compile(rb"kernel = (?:" + hx + rb"), index = " + skip)


@functools.lru_cache(maxsize=64)
def _setarg_pattern(kernel: int) -> re.Pattern[bytes]:
    """The entry-line pattern of one kernel handle (only for lines the generic one
    matched at another handle)."""
    hx = f"0x{kernel:x}".encode() + rb"|" + f"{kernel:016X}".encode()
    return re.compile(
        rb">>>> " + _PREFIX + rb"clSetKernelArg(SVMPointer|MemPointerINTEL|DevicePointerEXT)?"
        rb"\( [^\n]*?: kernel = (?:" + hx + rb"), index = (\d{1,9}), ([^\n]*)"
    )


@functools.lru_cache(maxsize=64)
def _exit_pattern(function: str) -> re.Pattern[bytes]:
    return re.compile(rb"<<<< " + _PREFIX + re.escape(function.encode()) + rb"\b([^\n]*)")


def _decode_setarg(m: re.Match[bytes], mm: mmap.mmap, size: int) -> SetArg:
    is_svm = m.group(1) is not None
    idx = int(m.group(2))
    rest = _dec(m.group(3))
    off = m.start()
    if "; EnqueueCounter: " not in rest:
        # the sampler quirk: the counter sits on the next line
        e = m.end()
        if mm[e + 1 : e + 1 + len(_COUNTER_TAG)] == _COUNTER_TAG:
            e2 = mm.find(b"\n", e + 1, min(size, e + 64))
            rest += _dec(mm[e + 1 : e2 if e2 >= 0 else min(size, e + 64)])
    rest, counter = strip_counter(rest)
    if is_svm:
        text = rest.split("value = ", 1)[1].strip() if "value = " in rest else ""
        p = parse_ptr(text)
        return SetArg(idx, 8, text, None, True, None, off, p, counter)
    sz = 0
    ms = re.match(r"size = (\d{1,19})\b", rest)  # longer: no size (int() refuses 4,300 digits)
    if ms:
        sz = int(ms.group(1))
    text = ""
    raw: bytes | None = None
    sampler: SamplerDesc | None = None
    pointer: int | None = None
    if "valueX = " in rest:
        words = re.findall(r"value[XYZW] = (0x[0-9a-fA-F]+)", rest)
        text = ", ".join(words)
        try:
            raw = b"".join(int(w, 16).to_bytes(4, "little") for w in words)
        except (ValueError, OverflowError):
            raw = None
    elif "value = " in rest:
        text = rest.split("value = ", 1)[1].rstrip()
        if text.startswith("CL_SAMPLER_"):
            sampler = parse_sampler_props(text)
        else:
            v = parse_ptr(text)
            if v is not None:
                try:
                    if sz == 8:
                        raw = v.to_bytes(8, "little")
                        pointer = v
                    elif sz in (1, 2, 4):
                        raw = v.to_bytes(sz, "little")
                except OverflowError:
                    raw = None
    return SetArg(idx, sz, text, raw, False, sampler, off, pointer, counter)


_SAMPLER_RE = re.compile(
    r"CL_SAMPLER_NORMALIZED_COORDS = (CL_TRUE|CL_FALSE)"
    r"(?:, CL_SAMPLER_ADDRESSING_MODE = (\w+))?(?:, CL_SAMPLER_FILTER_MODE = (\w+))?"
)


def parse_sampler_props(text: str) -> SamplerDesc | None:
    m = _SAMPLER_RE.search(text)
    if m is None:
        return None
    return SamplerDesc(
        normalized_coords=m.group(1) == "CL_TRUE",
        addressing_mode=m.group(2) or "CL_ADDRESS_CLAMP",
        filter_mode=m.group(3) or "CL_FILTER_NEAREST",
    )


# keys start at a word start: a long word is tried once, not from each of its characters
_KV_RE = re.compile(r"(?<![\w>\-])([\w>\-]++) = ([^,\]]*+)")
_CREATED_RE = re.compile(r"returned " + _PTR.decode())


def _kv(args: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in _KV_RE.finditer(args):
        out.setdefault(part.group(1), part.group(2).strip())
    return out


def _flags(text: str) -> str:
    """``CL_MEM_READ_WRITE (1)`` -> ``CL_MEM_READ_WRITE`` (no regex: linear in any text)."""
    t = text.strip()
    if t.endswith(")"):
        j = t.rfind("(")
        h = t[j + 1 : -1]
        if j >= 0 and h and all(c in _HEX for c in h):
            return t[:j].strip()
    return t


_HEX = frozenset("0123456789abcdefABCDEF")
_DEVICE_TYPE = " (CL_DEVICE_TYPE"


def _queue_device(args: str) -> str | None:
    """The device of a ``clCreateCommandQueue`` line: what follows the first ``device = ``
    up to the first `` (CL_DEVICE_TYPE...) (`` after it (one pass, whatever the line)."""
    s = args.find("device = ")
    if s < 0:
        return None
    nl = args.find("\n", s)
    stop = len(args) if nl < 0 else nl
    c = args.find(_DEVICE_TYPE, s + 9, stop)
    while c >= 0:
        q = args.find(")", c + 2, stop)
        if q < 0:
            return None
        if args.startswith(") (", q):
            return args[s + 9 : c]
        c = args.find(_DEVICE_TYPE, q, stop)
    return None


class _Builder:
    """Pairs rare entry/exit lines (sorted by offset) into the handle tables."""

    def __init__(self, idx: LogIndex) -> None:
        self.idx = idx
        self.pending: dict[str, list[tuple[int, str, int]]] = {}
        self.options_path: str | None = None
        self.last_program: ProgramRecord | None = None

    def entry(self, off: int, fn: str, rest: str, counter: int) -> None:
        if fn.startswith("clRelease"):
            self._release(off, fn, rest)
            return
        if fn in ("clBuildProgram", "clCompileProgram"):
            _, args = split_kernel_name(rest)
            m = re.search(r"program = " + _PTR.decode(), args)
            if m and self.options_path is not None:
                p = parse_ptr(m.group(1))
                if p is not None:
                    rec = self.idx.program_at(p, off)
                    if rec is not None:
                        rec.options_path = self.options_path
            self.options_path = None
            return
        if fn in ("clSVMFree", "clMemFreeINTEL"):
            m = re.search(r"(?:svm_pointer|ptr) = " + _PTR.decode(), rest)
            if m:
                p = parse_ptr(m.group(1))
                if p is not None:
                    self._close_mem(p, off)
            return
        self.pending.setdefault(fn, []).append((off, rest, counter))

    def _close_mem(self, handle: int, off: int) -> None:
        lst = self.idx.mem.get(handle)
        if lst:
            o, rel, obj = lst[-1]
            if rel is None and o < off:
                lst[-1] = (o, off, obj)

    def _release(self, off: int, fn: str, rest: str) -> None:
        m = re.search(r"\[ ref count = (\d+) \] \w+ = " + _PTR.decode(), rest)
        if not m or m.group(1) != "1":
            return
        h = parse_ptr(m.group(2))
        if h is None:
            return
        if fn == "clReleaseMemObject":
            self._close_mem(h, off)

    def exit(self, off: int, fn: str, rest: str) -> None:
        stack = self.pending.get(fn)
        if not stack:
            return
        eoff, args, counter = stack.pop()
        try:
            self._created(fn, eoff, off, args, rest, counter)
        except (ValueError, IndexError, KeyError, OverflowError):
            self.idx.problems.append(
                Problem(f"could not decode {fn} at byte {eoff}", "clintercept_log.txt")
            )

    def _created(self, fn: str, eoff: int, xoff: int, args: str, ret: str, counter: int) -> None:
        idx = self.idx
        args, _ = strip_counter(args)
        args = args[2:] if args.startswith(": ") else args
        m = _CREATED_RE.search(ret)
        handle = parse_ptr(m.group(1)) if m else None
        if fn == "clCreateKernelsInProgram":
            pm = re.search(r"program = " + _PTR.decode(), args)
            prog = parse_ptr(pm.group(1)) if pm else None
            for k in re.findall(_PTR.decode(), ret.split("kernels = ", 1)[-1]):
                h = parse_ptr(k)
                if h:
                    idx.kernels.setdefault(h, []).append(KernelRecord(h, prog, "", eoff, xoff))
            return
        if not handle:
            return
        kv = _kv(args)
        if fn.startswith("clCreateBuffer"):
            obj = MemObject(
                handle,
                "buffer",
                int(kv.get("size", "0") or 0),
                _flags(kv.get("flags", "")),
                counter,
                eoff,
            )
            idx.mem.setdefault(handle, []).append((eoff, None, obj))
        elif fn == "clCreateSubBuffer":
            parent = parse_ptr(kv.get("buffer", ""))
            rm = re.search(r"origin = (\d+), size = (\d+)", args)
            kv["origin"], kv["size"] = (rm.group(1), rm.group(2)) if rm else ("0", "0")
            obj = MemObject(
                handle,
                "subbuffer",
                int(kv.get("size", "0") or 0),
                _flags(kv.get("flags", "")),
                counter,
                eoff,
                parent=parent,
                origin=int(kv.get("origin", "0") or 0),
            )
            idx.mem.setdefault(handle, []).append((eoff, None, obj))
        elif fn.startswith("clCreateImage") or fn.startswith("clCreateFromGL"):
            img = _image_format(kv, fn)
            obj = MemObject(
                handle,
                "image",
                _image_bytes(img),
                _flags(kv.get("flags", "")),
                counter,
                eoff,
                image=img,
            )
            idx.mem.setdefault(handle, []).append((eoff, None, obj))
        elif fn in ("clSVMAlloc", "clSVMAllocWithPropertiesKHR") or fn.endswith("MemAllocINTEL"):
            kind = "svm" if fn.startswith("clSVM") else "usm"
            obj = MemObject(
                handle,
                kind,
                int(kv.get("size", "0") or 0),
                _flags(kv.get("flags", "")),
                counter,
                eoff,
            )
            idx.mem.setdefault(handle, []).append((eoff, None, obj))
        elif fn == "clCreateKernel":
            pm = re.search(r"program = " + _PTR.decode(), args)
            prog = parse_ptr(pm.group(1)) if pm else None
            name = args.split("kernel_name = ", 1)[1].strip() if "kernel_name = " in args else ""
            idx.kernels.setdefault(handle, []).append(KernelRecord(handle, prog, name, eoff, xoff))
        elif fn.startswith("clCreateProgramWith") or fn == "clLinkProgram":
            nm = re.search(r"program number = (\d+)", ret)
            rec = ProgramRecord(handle, int(nm.group(1)) if nm else None, eoff)
            idx.programs.setdefault(handle, []).append(rec)
            self.last_program = rec
        elif fn.startswith("clCreateCommandQueue"):
            idx.queues.setdefault(handle, []).append(QueueRecord(handle, _queue_device(args), eoff))
        elif fn.startswith("clCreateSampler"):
            s = parse_sampler_props(args)
            if s is not None:
                idx.samplers.setdefault(handle, []).append((eoff, s))

    def side(self, off: int, tag: str, rest: str) -> None:
        idx = self.idx
        if tag.startswith("Dumping program to file") or tag.startswith("Dumping input program"):
            path = rest.split(": ", 1)[-1].strip()
            if self.last_program is not None and self.last_program.source_path is None:
                self.last_program.source_path = path
                if self.last_program.number is None:
                    pm = re.search(r"CLI_(\d{4,})_", Path(path).name)
                    if pm:
                        self.last_program.number = int(pm.group(1))
        elif tag.startswith("Dumping program options to file"):
            self.options_path = rest.split(": ", 1)[-1].strip()
        elif tag.startswith("Build Info for program "):
            m = re.match(_PTR.decode() + r" \((\w+)\)", rest)
            if m:
                h = parse_ptr(m.group(1))
                rec = idx.program_at(h, off) if h is not None else None
                if rec is not None:
                    rec.build_tag = m.group(2)
                    if self.options_path is not None and m.group(2) in self.options_path:
                        rec.options_path = self.options_path
                    if rec.number is None:
                        with contextlib.suppress(ValueError):
                            rec.number = int(m.group(2).split("_")[0])
        elif tag.startswith("Added kernel name mapping"):
            m = re.match(r"(.*) to (k_\d+)$", rest.strip())
            if m:
                idx.name_mapping[m.group(2)] = m.group(1)
        elif tag.startswith("Control "):
            m = re.match(r"(\w+) is set to non-default value: (.*)$", rest)
            if m:
                idx.controls[m.group(1)] = m.group(2).rstrip("\r")
        elif tag.startswith("-=-=-="):
            idx.sessions.append(off)
        elif tag.startswith("CLIntercept is shutting down"):
            idx.shutdowns += 1
        elif tag.startswith("Dumping kernel capture replay"):
            idx.replay_lines += 1


def _image_format(kv: dict[str, str], fn: str) -> ImageFormat:
    def gi(*keys: str) -> int:
        for k in keys:
            v = kv.get(k)
            if v is not None:
                try:
                    return int(v)
                except ValueError:
                    return 0
        return 0

    itype = kv.get("desc->type")
    if itype is None:
        itype = "CL_MEM_OBJECT_IMAGE3D" if fn == "clCreateImage3D" else "CL_MEM_OBJECT_IMAGE2D"
    return ImageFormat(
        channel_order=kv.get("format->channel_order", ""),
        channel_data_type=kv.get("format->channel_data_type", ""),
        image_type=itype,
        width=gi("desc->width", "image_width"),
        height=gi("desc->height", "image_height"),
        depth=gi("desc->depth", "image_depth"),
        array_size=gi("desc->array_size"),
        row_pitch=gi("desc->row_pitch", "image_row_pitch"),
        slice_pitch=gi("desc->slice_pitch", "image_slice_pitch"),
    )


def image_texel_bytes(fmt: ImageFormat) -> int:
    """Bytes of one texel of ``fmt`` (0 for an unknown order or data type)."""
    return images.texel_bytes(fmt.channel_order, fmt.channel_data_type)


def image_region(fmt: ImageFormat) -> tuple[int, int, int]:
    """The full region (W, H, D) the layer dumps for an image (arrays fold into H or D)."""
    t = fmt.image_type
    w = max(fmt.width, 1)
    if t.endswith("IMAGE1D_ARRAY"):
        return (w, max(fmt.array_size, 1), 1)
    if t.endswith("IMAGE2D_ARRAY"):
        return (w, max(fmt.height, 1), max(fmt.array_size, 1))
    if t.endswith("IMAGE3D"):
        return (w, max(fmt.height, 1), max(fmt.depth, 1))
    if t.endswith("IMAGE2D"):
        return (w, max(fmt.height, 1), 1)
    return (w, 1, 1)


def _image_bytes(fmt: ImageFormat) -> int:
    w, h, d = image_region(fmt)
    return w * h * d * image_texel_bytes(fmt)


def find_logs(root: Path, problems: list[Problem] | None = None) -> list[Path]:
    """``clintercept_log.txt`` first, then ``clintercept_log-N.txt`` variants in N order.

    A log that is a link leading outside ``root`` is left out (a problem in ``problems``)."""
    out: list[Path] = []
    candidates: list[tuple[int, Path]] = [(-1, root / "clintercept_log.txt")]
    for p in root.glob("clintercept_log-*.txt"):
        m = re.match(r"clintercept_log-(\d+)\.txt$", p.name)
        if m:
            candidates.append((int(m.group(1)), p))
    for _, p in sorted(candidates):
        target = leaves(root, p) if p.is_symlink() else None
        if target is not None:
            if problems is not None:
                problems.append(Problem(outside_message(target), p.name))
        else:
            ok, why = is_file(p)
            if ok:
                out.append(p)
            elif why is not None and problems is not None:
                problems.append(Problem(why, p.name))
    return out


def build_index(
    path: Path,
    progress: Callable[[float], None] | None = None,
    cancel: threading.Event | None = None,
) -> LogIndex:
    """Scan one log file and build its :class:`LogIndex` (raises only CaptureError)."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - kept open only while mapping
    except OSError as e:
        raise CaptureError(f"cannot read {path}: {e.strerror or e}") from None
    with f:
        try:
            size = f.seek(0, 2)
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else None
        except (OSError, ValueError) as e:
            raise CaptureError(f"cannot map {path}: {e}") from None
    try:
        return _scan(path, mm, size, progress, cancel)
    except BaseException:
        if mm is not None:
            mm.close()
        raise


# ---- the scan -------------------------------------------------------------------------------
#
# A log is cut into line-aligned pieces; each piece is scanned by :func:`_scan_piece` into a
# compact :class:`_Piece` (arrays with piece-local function / kernel-name ids) and the pieces
# are merged in file order.  Logs over ``PARALLEL_MIN`` bytes are scanned by forked worker
# processes (one per CPU), each mapping the file itself; smaller ones in this process.

PARALLEL_MIN = 64 * 1024 * 1024
MIN_PIECE = 1024 * 1024  # the smallest piece a worker gets
_UNKNOWN = -(1 << 62)  # a creator's counter that the merge fills in (no EnqueueCounter)
# creators' exit lines: "<fn>: returned <ptr>" (the colon makes the search ~25% faster)
_RETURNED = b": returned "
_RELEASE1 = b"clReleaseMemObject: [ ref count = 1 ] mem = "
_SIDE_AT_RE = re.compile(_SIDE_TAGS)
_I64_MAX = np.iinfo(np.int64).max
_MADVISE = hasattr(mmap.mmap, "madvise") and hasattr(mmap, "MADV_DONTNEED")


@dataclass(slots=True)
class _Piece:
    """What one piece of the log holds (offsets are file offsets)."""

    start: int
    end: int
    numbers: array[int] = field(default_factory=lambda: array("q"))
    offsets: array[int] = field(default_factory=lambda: array("q"))
    fids: array[int] = field(default_factory=lambda: array("H"))
    kids: array[int] = field(default_factory=lambda: array("i"))
    fix: array[int] = field(default_factory=lambda: array("q"))  # local rows numbered by order
    missing: int = 0  # rows of ``fix`` that had no EnqueueCounter at all
    functions: list[bytes] = field(default_factory=list)
    knames: list[bytes] = field(default_factory=list)
    dt: bytes = b""  # int64 (number, q, s, d) quadruples
    rare: list[tuple[int, int, str, str, int]] = field(default_factory=list)
    build_starts: list[int] = field(default_factory=list)  # "Start of Build Log" tags
    first_nul: int = -1


def _line_aligned_cuts(path: Path, size: int, step: int) -> list[tuple[int, int]]:
    """``[start, end)`` pieces of about ``step`` bytes, each ending just after a newline
    (or, inside a line longer than ``step``, where the step ends).

    The newlines are looked for with ``pread``, not through the map: a page touched through
    a map counts in this process's RSS, and with large page-cache folios each touch maps
    up to megabytes (128 cuts of a 2 GB log put 75 MB of it in the RSS of the process)."""
    cuts: list[tuple[int, int]] = []
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        raise CaptureError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        pos = 0
        while pos < size:
            end = min(size, pos + step)
            if end < size:
                nl = _newline_before(fd, pos, end)
                if nl > pos:
                    end = nl + 1
                # else: a line longer than a piece is cut where the piece ends (a log of
                # one line still goes to every worker); only a match that crosses the cut
                # in such a line is lost
            cuts.append((pos, end))
            pos = end
    finally:
        os.close(fd)
    return cuts


_CUT_WINDOW = 64 * 1024


def _newline_before(fd: int, lo: int, hi: int) -> int:
    """The offset of the last newline in ``[lo, hi)``, or -1."""
    while hi > lo:
        a = max(lo, hi - _CUT_WINDOW)
        k = os.pread(fd, hi - a, a).rfind(b"\n")
        if k >= 0:
            return a + k
        hi = a
    return -1


def _line_candidates(mm: mmap.mmap, pos: int, end: int) -> tuple[list[int], list[int]]:
    """Starts of the lines in ``[pos, end)`` that may carry a side tag (not ``>>>>``/``<<<<``/
    ``De``) and of the ``De`` lines (device times): one vectorised pass over the newlines
    instead of a regex scan per kind of line."""
    lo = pos - 1 if pos > 0 else 0  # a side tag needs the newline before it
    a = np.frombuffer(mm, dtype=np.uint8, count=end - lo, offset=lo)
    try:
        nl = np.flatnonzero(a[:-1] == 10)
        first = a[nl + 1]
        keep = (first != 62) & (first != 60)
        dee = np.flatnonzero(keep & (first == 68))
        devs: list[int] = []
        if len(dee):
            nxt = nl[dee] + 2
            inside = nxt < len(a)
            dev = np.zeros(len(dee), dtype=bool)
            dev[inside] = a[nxt[inside]] == 101  # "De": Device Time
            keep[dee[dev]] = False
            devs = (nl[dee[dev]] + (lo + 1)).tolist()
        side: list[int] = (nl[keep] + (lo + 1)).tolist()
    finally:
        del a
    return side, devs


_TAG_FIRST = np.zeros(256, dtype=bool)  # the first bytes of the side tags
_TAG_FIRST[[t[0] for t in _SIDE_TAG_LIST]] = True


_NUL_WINDOW = 1 << 20


def _nul_run_ends(mm: mmap.mmap, lo: int, end: int) -> list[int]:
    """The offsets just after each NUL run in ``[lo, end)`` whose next byte may start a
    side tag (a regex ``\\x00+<tag>`` retries from every NUL of a run: quadratic in its
    length).  Vectorised over windows that hold a NUL (``lo`` is one); ``bytes.find``
    jumps from one such window to the next."""
    out: list[int] = []
    at = lo
    while 0 <= at < end - 1:
        hi = min(end, at + _NUL_WINDOW)
        a = np.frombuffer(mm, dtype=np.uint8, count=hi - at, offset=at)
        try:
            z = a == 0
            e = np.flatnonzero(z[:-1] > z[1:]) + 1  # a NUL, then not a NUL
            e = e[_TAG_FIRST[a[e]]]
            out.extend((e + at).tolist())
        finally:
            del a
        # the pair (hi - 1, hi) is the next window's first
        at = mm.find(b"\x00", hi - 1, end) if hi < end else -1
    return out


def _heads(mm: mmap.mmap, size: int) -> tuple[int, int]:
    """The offsets of the log's first byte that is not a NUL and of its first that is
    neither a NUL nor a space (``size`` if none): what a line that starts more than a
    window back (so, for the scan, at offset 0) begins with once stripped.  One pass over
    a leading NUL run, in the parent, instead of a copy from offset 0 per long line."""
    out = []
    at = 0
    for blank in (False, True):
        while at < size:
            n = min(size - at, _NUL_WINDOW)
            a = np.frombuffer(mm, dtype=np.uint8, count=n, offset=at)
            try:
                skip = (a == 0) | (a == 32) if blank else a == 0
                k = int(np.argmin(skip))
                if not skip[k]:
                    at += k
                    break
            finally:
                del a
            at += n
        out.append(at)
    return out[0], out[1]


def _scan_piece(
    mm: mmap.mmap, pos: int, end: int, size: int, heads: tuple[int, int] | None = None
) -> _Piece:
    if heads is None:
        heads = _heads(mm, size)
    p = _Piece(pos, end)
    rare = p.rare
    nul = mm.find(b"\x00", pos, end)
    p.first_nul = nul
    if pos == 0:
        head = mm[: min(size, 64)].lstrip(b"\x00")
        if head.startswith(b"-=-=-=-="):
            rare.append((0, 2, "-=-=-=-=", "", 0))
    # side lines
    side: list[re.Match[bytes]] = []
    match_side = _SIDE_AT_RE.match
    side_at, dev_at = _line_candidates(mm, pos, end)
    for s in side_at:
        m = match_side(mm, s, end)
        if m is not None:
            side.append(m)
    if nul >= 0:
        done = -1  # a match takes the rest of its line: later tags in it are its text
        for z in _nul_run_ends(mm, nul, end):
            if z < done:
                continue
            m = match_side(mm, z, end)
            if m is not None:
                side.append(m)
                done = m.end()
    for m in side:
        tag = m.group(1).decode()
        off = m.start(1)
        if tag.startswith("-------> Start of Build Log"):
            p.build_starts.append(off)  # its end: the first end tag after it, at the merge
            continue
        rare.append((off, 2, tag, _dec(m.group(2)), 0))
    # enqueue entry lines
    numbers = p.numbers
    offsets = p.offsets
    fids = p.fids
    kids = p.kids
    fix = p.fix
    functions = p.functions
    knames = p.knames
    fmap: dict[bytes, int] = {}
    kmap: dict[bytes, int] = {}
    rfind = mm.rfind
    row = 0
    for m in _ENQ_RE.finditer(mm, pos, end):
        s = m.start()
        ls = rfind(b"\n", s - 512 if s > 512 else 0, s) + 1
        if mm[ls : ls + 5] != b">>>> ":
            if ls == 0:  # (the same as the stripped copy of mm[0:s], without the copy)
                h = heads[1]
                if h + 5 > s or mm[h : h + 5] != b">>>> ":
                    continue
            elif not mm[ls:s].lstrip(b" \x00").startswith(b">>>> "):
                continue
        fnb, rest = m.group(1, 2)
        j = rest.rfind(_COUNTER_TAG)
        num = 0
        if j >= 0:
            try:
                num = int(rest[j + 18 :])
            except ValueError:
                fix.append(row)
        else:
            fix.append(row)
            p.missing += 1
        fid = fmap.get(fnb)
        if fid is None:
            fid = fmap[fnb] = len(functions)
            functions.append(fnb)
        kid = -1
        if rest[0] == 40:  # "( name ): ..."
            k = rest.find(b" ): ", 2)
            if k < 0:
                k = rest.find(b" );", 2)
                if k < 0:
                    k = rest.rfind(b" )", 2)
            if k >= 0:
                kb = rest[2:k]
                kid = kmap.get(kb, -1)
                if kid < 0:
                    kid = kmap[kb] = len(knames)
                    knames.append(kb)
        try:
            numbers.append(num)
        except OverflowError:  # a counter past int64: numbered by order
            numbers.append(0)
            fix.append(row)
        offsets.append(ls)
        fids.append(fid)
        kids.append(kid)
        row += 1
    # exit lines of creators (" returned "), last releases of memory objects
    find = mm.find
    at = find(_RETURNED, pos, end)
    memo: dict[bytes, tuple[int, int, tuple[int, int, str, str, int] | None]] = {}
    while at >= 0:
        le = _creation(mm, at, rare, memo, heads[0])
        at = find(_RETURNED, le, end) if 0 <= le < end else -1
    at = find(_RELEASE1, pos, end)
    while at >= 0:
        m = _RELEASE_RE.match(mm, at, end)
        if m is not None:
            rare.append((at, 3, "clReleaseMemObject", _dec(m.group(1)), 0))
            le = find(b"\n", m.end(), end)  # one release per line (a line of them is one)
            at = find(_RELEASE1, le, end) if le >= 0 else -1
        else:
            at = find(_RELEASE1, at + 1, end)
    p.dt = _device_quads(mm, pos, end, nul, dev_at)
    if _MADVISE:
        # drop the scanned pages from our RSS (they stay in the page cache)
        a0 = (pos // mmap.PAGESIZE) * mmap.PAGESIZE
        a1 = (end // mmap.PAGESIZE) * mmap.PAGESIZE
        if a1 > a0:
            with contextlib.suppress(OSError, ValueError):
                mm.madvise(mmap.MADV_DONTNEED, a0, a1 - a0)
    return p


def _device_quads(mm: mmap.mmap, pos: int, end: int, nul: int, dev_at: list[int]) -> bytes:
    """The ``Device Time`` lines of a piece as int64 (number, q, s, d) quadruples."""
    if pos == 0 or nul >= 0:  # a line may start mid-NUL-run (or at offset 0): full search
        found = _DEVTIME_ANY_RE.findall(mm, pos, end)
    else:
        match_dev = _DEVTIME_RE.match
        found = [m.groups() for s in dev_at if (m := match_dev(mm, s, end)) is not None]
    return _quads(found) if found else b""


def _quads(found: list[tuple[bytes, bytes, bytes, bytes]]) -> bytes:
    """The device-time groups as int64 (number, q, s, d) quadruples."""
    q = np.fromstring(b" ".join(itertools.chain.from_iterable(found)), dtype=np.int64, sep=" ")
    if len(q) == 4 * len(found) and not (q == _I64_MAX).any():
        return bytes(q.tobytes())
    out = array("q")  # a value past int64: keep the lines that fit
    for t in found:
        if max(len(x) for x in t) > 19:  # past int64 (and int() refuses 4,300 digits)
            continue
        v = [int(x) for x in t]
        if max(v) <= _I64_MAX:
            out.extend(v)
    return out.tobytes()


def _workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _pieces(
    path: Path,
    mm: mmap.mmap,
    size: int,
    progress: Callable[[float], None] | None,
    cancel: threading.Event | None,
) -> Iterator[_Piece]:
    """The scanned pieces in file order (in worker processes when the log is large)."""
    parallel = size >= PARALLEL_MIN and hasattr(os, "fork") and hasattr(select, "poll")
    nproc = _workers() if parallel else 1
    heads = _heads(mm, size)
    if nproc < 2:
        for pos, end in _line_aligned_cuts(path, size, CHUNK):
            if cancel is not None and cancel.is_set():
                raise IndexCancelled()
            yield _scan_piece(mm, pos, end, size, heads)
            if progress is not None:
                progress(end / size)
        return
    if cancel is not None and cancel.is_set():
        raise IndexCancelled()
    step = min(CHUNK, max(MIN_PIECE, size // (4 * nproc)))
    step = max(step, size // 16000 + 1)  # the job list must fit in a pipe's buffer
    cuts = _line_aligned_cuts(path, size, step)
    nproc = min(nproc, len(cuts))
    workers: list[tuple[int, int]] = []
    reaped: set[int] = set()
    # the jobs (piece numbers) wait in a pipe: a worker takes the next one when it is free
    jr, jw = os.pipe()
    try:
        os.write(jw, b"".join(i.to_bytes(4, "little") for i in range(len(cuts))))
    finally:
        os.close(jw)
    try:
        for _ in range(nproc):
            workers.append(_fork_worker(path, size, cuts, jr, heads))
        os.close(jr)
        jr = -1
        inbox = _Inbox(path, workers, len(cuts), reaped)
        for i, (_, end) in enumerate(cuts):
            while i not in inbox.pieces:
                if cancel is not None and cancel.is_set():
                    raise IndexCancelled()
                inbox.receive(50)
            if cancel is not None and cancel.is_set():
                raise IndexCancelled()
            yield inbox.pieces.pop(i)
            if progress is not None:
                progress(end / size)
    finally:
        if jr >= 0:
            os.close(jr)
        for pid, fd in workers:
            os.close(fd)
            if pid not in reaped:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                with contextlib.suppress(OSError):
                    os.waitpid(pid, 0)


class _Inbox:
    """Pickled pieces arriving on the workers' pipes, each message prefixed by its length
    and its piece number (-1: a one-line failure message)."""

    def __init__(
        self, path: Path, workers: list[tuple[int, int]], total: int, reaped: set[int]
    ) -> None:
        self.path = path
        self.reaped = reaped  # workers that have exited (and been waited for)
        self.workers = {fd: pid for pid, fd in workers}
        self.bufs = {fd: bytearray() for _, fd in workers}
        self.pieces: dict[int, _Piece] = {}
        self.missing = total  # pieces not received yet
        self.poller = select.poll()  # (select.select fails on descriptors past FD_SETSIZE)
        for _, fd in workers:
            self.poller.register(fd, select.POLLIN)

    def _failed(self, why: str) -> CaptureError:
        return CaptureError(f"cannot index {self.path.name}: {why}")

    def receive(self, timeout_ms: int) -> None:
        events = self.poller.poll(timeout_ms)
        for fd, _ in events:
            chunk = os.read(fd, 1 << 20)
            if not chunk:  # the worker has exited: all right if it had no more jobs
                self.poller.unregister(fd)
                _, status = os.waitpid(self.workers[fd], 0)
                self.reaped.add(self.workers[fd])
                self.workers[fd] = -1
                if status != 0:
                    raise self._failed("a worker process died (out of memory?)")
                continue
            buf = self.bufs[fd]
            buf += chunk
            while len(buf) >= 16:
                n = int.from_bytes(buf[:8], "little")
                if len(buf) < 16 + n:
                    break
                i = int.from_bytes(buf[8:16], "little", signed=True)
                obj = pickle.loads(buf[16 : 16 + n])
                del buf[: 16 + n]
                if not isinstance(obj, _Piece) or i < 0:
                    raise self._failed(str(obj))
                self.pieces[i] = obj
                self.missing -= 1
        if self.missing and all(pid < 0 for pid in self.workers.values()):
            raise self._failed("the worker processes stopped early")


def _fork_worker(
    path: Path, size: int, cuts: list[tuple[int, int]], jobs: int, heads: tuple[int, int]
) -> tuple[int, int]:
    """A child process that maps the log itself, takes piece numbers from the ``jobs`` pipe
    and sends each piece back, pickled (a failure as a one-line message)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.close(r)
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is the parent's business
            try:
                with open(path, "rb") as f:
                    wm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                while len(job := os.read(jobs, 4)) == 4:
                    i = int.from_bytes(job, "little")
                    pos, end = cuts[i]
                    piece = _scan_piece(wm, pos, end, size, heads)
                    _send(w, i, pickle.dumps(piece, protocol=5))
            except (OSError, ValueError, MemoryError) as e:
                _send(w, -1, pickle.dumps(f"{type(e).__name__}: {e}"))
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    return pid, r


def _send(fd: int, piece: int, blob: bytes) -> None:
    head = len(blob).to_bytes(8, "little") + piece.to_bytes(8, "little", signed=True)
    data = memoryview(head + blob)
    while data:
        data = data[os.write(fd, data) :]


def _scan(
    path: Path,
    mm: mmap.mmap | None,
    size: int,
    progress: Callable[[float], None] | None,
    cancel: threading.Event | None,
) -> LogIndex:
    numbers = array("q")
    offsets = array("q")
    fids = array("H")
    kids = array("i")
    dev = _DeviceTimes()
    functions: list[str] = []
    fkind: list[int] = []
    fmap: dict[bytes, int] = {}
    kmap: dict[bytes, int] = {}
    knames: list[str] = []
    rare: list[tuple[int, int, str, str, int]] = []  # (offset, type, fn/tag, rest, counter)
    build_starts: list[int] = []
    missing_counter = 0
    first_nul = -1
    by_order: list[int] = []  # rows numbered by order (no usable EnqueueCounter)
    for p in _pieces(path, mm, size, progress, cancel) if mm is not None else ():
        if first_nul < 0:
            first_nul = p.first_nul
        if p.functions:
            remap = np.array([_global_id(fmap, functions, fb, fkind) for fb in p.functions])
            fids.frombytes(remap.astype(np.uint16)[np.frombuffer(p.fids, np.uint16)].tobytes())
        if p.knames:
            kre = np.array([_kernel_id(kmap, knames, kb) for kb in p.knames] + [-1], np.int32)
            kids.frombytes(kre[np.frombuffer(p.kids, np.int32)].tobytes())  # -1 -> -1
        else:
            kids.extend(p.kids)
        if p.fix:
            _number_by_order(p.numbers, p.fix, numbers[-1] if numbers else -1)
            base = len(numbers)
            by_order.extend(int(r) + base for r in p.fix)
        numbers.extend(p.numbers)
        offsets.extend(p.offsets)
        missing_counter += p.missing
        dev.add_rows(p.numbers)
        if p.dt:
            dev.add_quads(numbers, p.dt)
        rare.extend(p.rare)
        build_starts.extend(p.build_starts)
        del p
    # a build log spans from its start tag to the first end tag after it (or the end of the
    # file); one search serves every start before the end it found, so the file is
    # searched at most once in all (not to its end from each start tag)
    skip_spans: list[tuple[int, int]] = []
    e = -2  # the end found by the last search (-1: none after it), -2: no search yet
    for a in sorted(build_starts):
        if mm is not None and (e == -2 or 0 <= e < a):
            e = mm.find(_END_BUILD_LOG, a, size)
        skip_spans.append((a, size if e < 0 else e))
    del build_starts
    fk = np.array(fkind, dtype=np.uint8)
    idx = LogIndex(
        path=path,
        size=size,
        numbers=_arr(numbers, np.int64) if numbers else _empty(np.int64),
        offsets=_arr(offsets, np.int64) if offsets else _empty(np.int64),
        kinds=fk[_arr(fids, np.uint16)] if fids else _empty(np.uint8),
        function_ids=_arr(fids, np.uint16) if fids else _empty(np.uint16),
        functions=functions,
        kernel_ids=_arr(kids, np.int32) if kids else _empty(np.int32),
        kernel_names=knames,
        device_times=dev.table(),
    )
    del numbers, offsets, fids, kids
    idx._mm = mm
    # creators logged without an EnqueueCounter: the number the next enqueue would get
    for i, r in enumerate(rare):
        if r[4] == _UNKNOWN:
            k = int(np.searchsorted(idx.offsets, r[0]))
            rare[i] = (r[0], r[1], r[2], r[3], int(idx.numbers[k - 1]) + 1 if k else 0)
    n = len(idx.numbers)
    if skip_spans and n:
        # enqueue-like lines inside build logs are not enqueues (offsets are in file order)
        keep: npt.NDArray[np.bool_] | None = None
        for a, e in skip_spans:
            i0, i1 = np.searchsorted(idx.offsets, [a, e])
            if i1 > i0:
                if keep is None:
                    keep = np.ones(n, dtype=bool)
                keep[i0:i1] = False
        if keep is not None:
            idx.numbers = idx.numbers[keep]
            idx.offsets = idx.offsets[keep]
            idx.kinds = idx.kinds[keep]
            idx.function_ids = idx.function_ids[keep]
            idx.kernel_ids = idx.kernel_ids[keep]
            if (idx.device_times[~keep, 0] >= 0).any():
                dev.early = False  # device times of non-enqueues: count them as the log does
            idx.device_times = idx.device_times[keep]
            n = len(idx.numbers)
    if n > 1:
        n = _drop_duplicates(idx, rare, skip_spans, by_order)
    if n:
        dev.finish(idx, mm, size)
    del dev
    if missing_counter and n:
        idx.problems.append(
            Problem(
                f"{missing_counter} enqueue lines have no EnqueueCounter (numbered by order)",
                path.name,
            )
        )
    # rare lines, in file order
    rare.sort(key=lambda r: r[0])
    b = _Builder(idx)
    for off, typ, fn, rest, counter in rare:
        if skip_spans and _inside(skip_spans, off):
            continue
        if typ == 0:
            b.entry(off, fn, rest, counter)
        elif typ == 1:
            b.exit(off, fn, rest)
        elif typ == 2:
            b.side(off, fn, rest)
        else:
            h = parse_ptr(rest)
            if h is not None:
                b._close_mem(h, off)
    _check_structure(idx, mm, size, first_nul)
    return idx


def _drop_duplicates(
    idx: LogIndex,
    rare: list[tuple[int, int, str, str, int]],
    skip_spans: list[tuple[int, int]],
    by_order: list[int],
) -> int:
    """Rows whose EnqueueCounter an earlier row of the same session (between two banners)
    already has: a duplicated log line.  The first row of each number is kept, the others
    dropped, and a problem says which numbers were duplicated.  Returns the row count.
    (The usual log is strictly increasing: one vectorised comparison and nothing else.)"""
    nums = idx.numbers
    if bool(np.all(nums[1:] > nums[:-1])):
        return len(nums)
    banners = sorted(
        r[0]
        for r in rare
        if r[1] == 2
        and r[2].startswith("-=-=-=")
        and not (skip_spans and _inside(skip_spans, r[0]))
    )
    session = np.searchsorted(np.array(banners, dtype=np.int64), idx.offsets, side="right")
    order = np.lexsort((nums, session))  # stable: file order among equal (session, number)
    sn, ss = nums[order], session[order]
    dup_sorted = np.zeros(len(nums), dtype=bool)
    dup_sorted[1:] = (sn[1:] == sn[:-1]) & (ss[1:] == ss[:-1])
    dup = np.zeros(len(nums), dtype=bool)
    dup[order] = dup_sorted
    if by_order:
        dup[np.array(by_order, dtype=np.int64)] = False  # numbered by order: not a counter
    if not dup.any():
        return len(nums)
    # keep the first intact line of each number: a line that a NUL run joined to the tail
    # of a later line carries that line's counter (it is the copy, not the enqueue)
    # (a device time went to the last line of a number: it moves to the line kept)
    mm = idx._mm
    ordered = set(by_order)
    dts = idx.device_times
    first = np.flatnonzero(dup_sorted[1:] & ~dup_sorted[:-1])  # group starts (sorted)
    for g in first.tolist():
        rows = [int(order[g])]
        k = g + 1
        while k < len(order) and dup_sorted[k]:
            rows.append(int(order[k]))
            k += 1
        rows = [r for r in rows if r not in ordered]
        if len(rows) < 2:
            continue
        kept = rows[0]
        if mm is not None:
            intact = [r for r in rows if not _has_nul(mm, int(idx.offsets[r]), idx.size)]
            if intact:
                kept = intact[0]
        dup[rows] = True
        dup[kept] = False
        timed = [r for r in rows if dts[r, 0] >= 0]
        if timed and dts[kept, 0] < 0:
            dts[kept] = dts[timed[-1]]
    keep = ~dup
    numbers = sorted({int(x) for x in nums[dup]})
    shown = ", ".join(str(x) for x in numbers[:10])
    more = f" and {len(numbers) - 10} more" if len(numbers) > 10 else ""
    lines = int(dup.sum())
    idx.problems.append(
        Problem(
            f"EnqueueCounter {shown}{more} appear{'s' if len(numbers) == 1 else ''} on more than "
            f"one enqueue line of one session ({lines} duplicated line{'s' if lines > 1 else ''}, "
            "probably repeated in the log): the first intact line of each is kept",
            idx.path.name,
        )
    )
    idx.numbers = idx.numbers[keep]
    idx.offsets = idx.offsets[keep]
    idx.kinds = idx.kinds[keep]
    idx.function_ids = idx.function_ids[keep]
    idx.kernel_ids = idx.kernel_ids[keep]
    idx.device_times = idx.device_times[keep]
    return len(idx.numbers)


def _has_nul(mm: mmap.mmap, off: int, size: int) -> bool:
    """Whether the line starting at ``off`` holds a NUL byte."""
    e = mm.find(b"\n", off)
    return mm.find(b"\x00", off, size if e < 0 else e) >= 0


def _global_id(fmap: dict[bytes, int], functions: list[str], fb: bytes, fkind: list[int]) -> int:
    fid = fmap.get(fb)
    if fid is None:
        fid = fmap[fb] = len(functions)
        fn = _dec(fb)
        functions.append(fn)
        fkind.append(int(kind_of(fn)))
    return fid


def _kernel_id(kmap: dict[bytes, int], knames: list[str], kb: bytes) -> int:
    kid = kmap.get(kb)
    if kid is None:
        kid = kmap[kb] = len(knames)
        knames.append(short_kernel_name(_dec(kb)))
    return kid


def _number_by_order(numbers: array[int], fix: array[int], prev: int) -> None:
    """Rows of a piece without a usable EnqueueCounter get the previous row's number + 1
    (``prev``: the number of the row before the piece, -1 if none)."""
    nums = np.frombuffer(numbers, dtype=np.int64)
    rows = np.frombuffer(fix, dtype=np.int64)
    good = np.ones(len(nums), dtype=bool)
    good[rows] = False
    last = np.where(good, np.arange(len(nums)), -1)
    np.maximum.accumulate(last, out=last)
    lg = last[rows]
    nums[rows] = np.where(lg >= 0, nums[np.maximum(lg, 0)], prev) + (rows - lg)
    del nums, rows


class _DeviceTimes:
    """Device times, attached piece by piece while the enqueue numbers so far are strictly
    increasing (the usual log: each number is one enqueue); a line naming a number not seen
    yet waits for the end.  Otherwise (several sessions) the lines are read again at the end
    and each goes to the latest enqueue with its number."""

    def __init__(self) -> None:
        self.rows = array("q")  # (q, s, d) per enqueue, -1 = none
        self.early = True
        self.last: int | None = None
        self.waiting: list[bytes] = []

    def add_rows(self, numbers: array[int]) -> None:
        nums = np.frombuffer(numbers, dtype=np.int64)
        if len(nums) == 0:
            return
        self.rows.frombytes(np.full(3 * len(nums), -1, dtype=np.int64).tobytes())
        # (equal neighbours are a duplicated line, dropped later: a device time goes to the
        # last of them, as the searches below pick it)
        if self.early and (
            (self.last is not None and int(nums[0]) < self.last)
            or (len(nums) > 1 and not bool(np.all(nums[1:] >= nums[:-1])))
        ):
            self.early = False
            self.waiting.clear()
        self.last = int(nums[-1])
        del nums

    def add_quads(self, numbers: array[int], raw: bytes) -> None:
        if not self.early:
            return
        if not numbers:
            self.waiting.append(raw)
            return
        q = np.frombuffer(raw, dtype=np.int64).reshape(-1, 4)
        nums = np.frombuffer(numbers, dtype=np.int64)
        j = np.searchsorted(nums, q[:, 0], side="right") - 1
        ok = (j >= 0) & (nums[np.maximum(j, 0)] == q[:, 0])
        table = np.frombuffer(self.rows, dtype=np.int64).reshape(-1, 3)
        table[j[ok]] = q[ok, 1:]
        if not ok.all():
            self.waiting.append(q[~ok].tobytes())
        del nums, table

    def table(self) -> npt.NDArray[np.int64]:
        if not self.rows:
            return np.zeros((0, 3), dtype=np.int64)
        return np.frombuffer(self.rows, dtype=np.int64).reshape(-1, 3)

    def finish(self, idx: LogIndex, mm: mmap.mmap | None, size: int) -> None:
        if self.early:
            # numbers are unique: a waiting line goes to its enqueue unless a later line did
            if self.waiting:
                q = np.frombuffer(b"".join(self.waiting), dtype=np.int64).reshape(-1, 4)
                nums = idx.numbers
                j = np.searchsorted(nums, q[:, 0], side="right") - 1
                ok = (j >= 0) & (nums[np.maximum(j, 0)] == q[:, 0])
                free = ok.copy()
                free[ok] = idx.device_times[j[ok], 0] < 0
                idx.device_times[j[free]] = q[free, 1:]
                _lost_device_times(idx, int((~ok).sum()))
            return
        idx.device_times[:] = -1
        if mm is None:
            return
        blocks: list[bytes] = []
        for pos, end in _line_aligned_cuts(idx.path, size, CHUNK):
            _, dev_at = _line_candidates(mm, pos, end)
            raw = _device_quads(mm, pos, end, mm.find(b"\x00", pos, end), dev_at)
            if raw:
                blocks.append(raw)
        _attach_device_times(idx, blocks)


def _lost_device_times(idx: LogIndex, lost: int) -> None:
    if lost:
        idx.problems.append(
            Problem(
                f"{lost} Device Time lines name enqueues that have no entry line", idx.path.name
            )
        )


def _creation(
    mm: mmap.mmap,
    at: int,
    rare: list[tuple[int, int, str, str, int]],
    memo: dict[bytes, tuple[int, int, tuple[int, int, str, str, int] | None]],
    first_text: int = 0,
) -> int:
    """A ``returned`` exit line of a creator: record it and its entry line.

    ``memo`` holds, per creator, the last exit line start searched from, the entry found
    then and its record: the backward search for the entry only reads what lies between
    two exit lines of one creator (a million exit lines without entries are not a million
    1 MB searches).  Returns the offset of the end of the exit line (-1 at the end of the
    file).
    """
    ls = mm.rfind(b"\n", at - 4096 if at > 4096 else 0, at) + 1
    le = mm.find(b"\n", at)
    stop = le if le >= 0 else len(mm)
    if ls == 0:  # the line starts at offset 0 or further back than 4096: no copy from 0
        m = _EXIT_LINE_RE.match(mm, min(first_text, stop), stop)
    else:
        m = _EXIT_LINE_RE.match(mm[ls:stop].lstrip(b"\x00"))
    if m is None or not m.group(1).startswith(_CREATORS):
        return le
    fnb = m.group(1)
    # the entry: the closest preceding ">>>> ... <fn>: " line (single-thread pairing)
    lo = ls - (1 << 20) if ls > (1 << 20) else 0
    needle = b" " + fnb + b": "
    prev = memo.get(fnb)
    if prev is not None and prev[0] <= ls:
        # only what the last search of this creator did not cover: [its start, ls)
        e = mm.rfind(needle, max(lo, prev[0] - len(needle) + 1), ls)
        if e < 0 and prev[1] >= lo:
            e = prev[1]
    else:
        e = mm.rfind(needle, lo, ls)
    if e < 0:
        memo[fnb] = (ls, -1, None)
        return le
    rec: tuple[int, int, str, str, int] | None
    if prev is not None and e == prev[1]:
        rec = prev[2]  # the same entry line as last time: decoded once
    else:
        es = mm.rfind(b"\n", e - 512 if e > 512 else 0, e) + 1
        ee = mm.find(b"\n", e)
        entry = mm[es : ee if ee >= 0 else len(mm)]
        rec = None
        if entry.lstrip(b" \x00").startswith(b">>>> "):
            rest = _dec(entry[e - es + len(fnb) + 1 :])
            _, c = strip_counter(rest)
            rec = (es, 0, _dec(fnb), rest, _UNKNOWN if c is None else c)
    memo[fnb] = (ls, e, rec)
    if rec is None:
        return le
    rare.append(rec)
    rare.append((ls, 1, rec[2], _dec(m.group(2)), 0))
    return le


def _inside(spans: list[tuple[int, int]], off: int) -> bool:
    i = bisect.bisect_right(spans, (off, 1 << 62)) - 1
    return i >= 0 and spans[i][0] <= off < spans[i][1]


def _empty(dt: Any) -> npt.NDArray[Any]:
    return np.zeros(0, dtype=dt)


def _arr(a: array[Any], dt: Any) -> npt.NDArray[Any]:
    """A numpy view of an ``array.array`` (no copy: the array stays alive under the view)."""
    return np.frombuffer(a, dtype=dt)


def _attach_device_times(idx: LogIndex, dts: list[bytes]) -> None:
    """Device-time quadruples (in file order, one block per piece) onto their enqueues."""
    nums = idx.numbers
    n = len(nums)
    lost = 0
    sorted_ok = bool(np.all(nums[1:] > nums[:-1])) if n > 1 else True
    order = None if sorted_ok else np.argsort(nums, kind="stable")
    sorted_nums = nums if order is None else nums[order]
    dts.reverse()
    while dts:
        q = np.frombuffer(dts.pop(), dtype=np.int64).reshape(-1, 4)  # freed block by block
        # with several sessions numbers repeat: a device-time line belongs to the latest
        # enqueue with that number (searchsorted side=right - 1 picks the last duplicate)
        j = np.searchsorted(sorted_nums, q[:, 0], side="right") - 1
        ok = (j >= 0) & (sorted_nums[np.maximum(j, 0)] == q[:, 0])
        pos = j[ok] if order is None else order[j[ok]]
        idx.device_times[pos] = q[ok, 1:]
        lost += int((~ok).sum())
    _lost_device_times(idx, lost)


def _check_structure(idx: LogIndex, mm: mmap.mmap | None, size: int, nul: int) -> None:
    name = idx.path.name
    if mm is None or size == 0:
        idx.problems.append(Problem("the call log is empty", name))
        return
    head = mm[: min(size, 4096)]
    stripped = head.lstrip(b"\x00 \n")
    if not stripped.startswith(b"-=-=-=-="):
        idx.leading_fragment = True
        idx.problems.append(
            Problem(
                "the log does not start with a CLIntercept banner (start of the log lost)", name
            )
        )
    if nul >= 0:
        idx.problems.append(
            Problem(
                f"the log contains NUL bytes (first at byte {nul}): a child process "
                "probably truncated it; NULs are ignored",
                name,
            )
        )
    if len(idx.sessions) > 1:
        idx.problems.append(
            Problem(
                f"the log holds {len(idx.sessions)} sessions (banners); enqueue numbers may repeat",
                name,
            )
        )
    if idx.shutdowns < max(1, len(idx.sessions)):
        idx.problems.append(
            Problem(
                "the log has no 'shutting down' footer: the application did not exit "
                "normally or the log is truncated",
                name,
            )
        )
    if not idx.controls and not idx.leading_fragment:
        idx.problems.append(Problem("the log header lists no controls", name))
