"""``open_capture`` and the :class:`Capture` facade.

Positions vs numbers: the index stores enqueues in log order; ``pos`` is the
0-based position in the index, ``number`` is the layer's EnqueueCounter.  In a
normal single-session log ``number == pos`` but never rely on it: use
``position_of``/``numbers``.

Opening reads the call log once (:mod:`cltui.capture.log`), lists the dump
files (:func:`cltui.capture.files.scan_dumps`), the program files and the
report.  Everything per enqueue (argument values, types, dumps, program) is
decoded lazily by :meth:`Capture.enqueue` and kept in a small LRU.
"""

from __future__ import annotations

import dataclasses
import mmap
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from cltui.capture import files
from cltui.capture import log as li
from cltui.capture.cltypes import CType
from cltui.capture.columns import IndexColumns
from cltui.capture.decode import decode_enqueue
from cltui.capture.files import DumpIndex
from cltui.capture.files.report import Report
from cltui.capture.model import (
    DeviceTime,
    Enqueue,
    EnqueueKind,
    EnqueueRow,
    Problem,
    Program,
)
from cltui.capture.query import FindFilters, find_positions
from cltui.capture.recovery import RecoveredEnqueue, Recovery, recover
from cltui.capture.replayfolder import ReplayFolder, read_replay_folder
from cltui.capture.summary import CaptureInfo, capture_info

if TYPE_CHECKING:
    from typing import Unpack

    from cltui.capture.signature import KernelSignature


_LRU_SIZE = 256
_SIZES_RE = re.compile(
    r"(?:global_work_offset = < ([^>]*) >, )?global_work_size = < ([^>]*) >"
    r"(?:, local_work_size = < ([^>]*) >)?"
)


_GLOBAL_RE = re.compile(rb"global_work_size = < ([^>\n]{0,256}) >")  # bounded: linear


def _logged_work_items(mm: bytes | mmap.mmap, offsets: npt.NDArray[np.int64],
                       logged: npt.NDArray[np.bool_], out: npt.NDArray[np.int64]) -> None:
    """``out[pos]``: the global work items of each ``logged`` position's log line, found by
    one regex pass over the whole log (C speed), each match given to the line it lies in
    (the one starting at the last enqueue offset before it, if no newline comes between)."""
    starts = np.flatnonzero(offsets >= 0)
    order = starts[np.argsort(offsets[starts], kind="stable")]
    line_at = offsets[order]
    found = [(m.start(), m.group(1)) for m in _GLOBAL_RE.finditer(mm)]
    if not found:
        return
    at = np.searchsorted(line_at, np.fromiter((a for a, _ in found), np.int64, len(found)),
                         side="right") - 1  # fmt: skip
    for (start, text), i in zip(found, at.tolist(), strict=True):
        if i < 0:
            continue
        pos = int(order[i])
        if not logged[pos] or out[pos] >= 0 or mm.find(b"\n", int(line_at[i]), start) >= 0:
            continue
        dims = _dims(text.decode("ascii", "replace"), "x")
        if dims:
            n = 1
            for d in dims:
                n *= d
            out[pos] = n


def _dims(text: str | None, sep: str) -> tuple[int, ...] | None:
    if text is None:
        return None
    t = text.strip()
    if not t or t == "NULL":
        return None
    try:
        return tuple(int(x) for x in t.split(sep))
    except ValueError:
        return None


def _read_text(path: Path, root: Path) -> str:
    return files.read_text_lenient(path, root)


class Capture:
    """A read-only view of one dump directory.  Nothing large is read until asked."""

    path: Path
    log_path: Path | None
    controls: dict[str, str]  # "Control X is set to non-default value: V" lines
    problems: list[Problem]  # specific messages about unreadable parts

    # ---- index (numpy arrays, one entry per enqueue, log order) ----
    numbers: npt.NDArray[np.int64]
    kinds: npt.NDArray[np.uint8]  # EnqueueKind values
    kernel_ids: npt.NDArray[np.int32]  # index into kernel_names, -1 for non-kernels
    kernel_names: list[str]  # distinct short kernel names
    device_times: npt.NDArray[np.int64]  # shape (n, 3): q->s, s->st, st->e ns; -1 missing
    offsets: npt.NDArray[np.int64]  # log offset of each enqueue line, -1 if recovered
    function_ids: npt.NDArray[np.uint16]  # index into functions
    functions: list[str]
    recovered: npt.NDArray[np.bool_]  # recovered from the dump files (the log lost it)

    def __init__(
        self,
        path: Path,
        log: li.LogIndex | None,
        dumps: DumpIndex,
        programs: list[Program],
        report: Report | None,
        problems: list[Problem],
        log_missing: bool | None = None,
    ) -> None:
        self.path = path
        self.log = log
        self.log_path = log.path if log is not None else None
        self.dumps = dumps
        self.report = report
        self.problems = problems
        self.controls = dict(log.controls) if log is not None else {}
        self._programs_by_number: dict[int, Program] = {}
        self._lock = threading.RLock()
        self._cache: OrderedDict[int, Enqueue] = OrderedDict()
        self._sig_cache: dict[str, dict[str, KernelSignature]] = {}
        self._replay_cache: dict[int, ReplayFolder | None] = {}
        self._source_cache: dict[str, str] = {}
        self._work_items: npt.NDArray[np.int64] | None = None  # (work_items)
        self._defs: dict[str, list[Program]] | None = None
        self._assigned: dict[int, tuple[Program, str]] | None = None
        self._set_columns(IndexColumns.of_log(log))
        self.recovery: Recovery | None = None
        self._recovered: dict[int, RecoveredEnqueue] = {}
        self._max_logged = int(self.numbers.max()) if len(self.numbers) else -1
        self._recover(log_missing if log_missing is not None else log is None)
        self._programs = self._link_programs(programs)
        n = len(self.numbers)
        self.has_pre = np.zeros(n, dtype=bool)
        self.has_post = np.zeros(n, dtype=bool)
        self.has_replay = np.zeros(n, dtype=bool)
        self.hashes_only = np.zeros(n, dtype=bool)
        self._sorted = bool(n < 2 or np.all(np.diff(self.numbers) > 0))
        self._order: npt.NDArray[np.int64] | None = None
        if not self._sorted:
            self._order = np.argsort(self.numbers, kind="stable")
        self._fill_flags()
        self._ska_keys = sorted(dumps.setkernelarg)

    # ------------------------------------------------------------------ index
    def _recover(self, log_missing: bool) -> None:
        """Add the enqueues the log lost that the other files name (:mod:`recovery`)."""
        rec = recover(
            self.log,
            self.dumps,
            self.report,
            self.numbers,
            self.kinds,
            self.kernel_ids,
            self.kernel_names,
            self.function_ids,
            self.functions,
            log_missing=log_missing,
        )
        if rec is None:
            return
        self.recovery = rec
        self.problems.extend(rec.problems)
        # an error when the log lost most of the capture (more than half of the enqueues it
        # made, recovered or not), a warning when it lost less
        severity = "error" if 2 * rec.lost_count > rec.expected else "warning"
        self.problems.append(
            Problem(rec.line(), self.log.path.name if self.log else "", severity=severity)
        )
        if not rec.enqueues:
            return
        self._set_columns(self._columns().with_recovered(rec))
        self._recovered = dict(rec.enqueues)

    def _columns(self) -> IndexColumns:
        return IndexColumns(
            numbers=self.numbers,
            offsets=self.offsets,
            kinds=self.kinds,
            kernel_ids=self.kernel_ids,
            kernel_names=self.kernel_names,
            device_times=self.device_times,
            function_ids=self.function_ids,
            functions=self.functions,
            recovered=self.recovered,
        )

    def _set_columns(self, cols: IndexColumns) -> None:
        self.numbers = cols.numbers
        self.offsets = cols.offsets
        self.kinds = cols.kinds
        self.kernel_ids = cols.kernel_ids
        self.kernel_names = cols.kernel_names
        self.device_times = cols.device_times
        self.function_ids = cols.function_ids
        self.functions = cols.functions
        self.recovered = cols.recovered

    def recovered_enqueue(self, number: int) -> RecoveredEnqueue | None:
        """What recovery knows of enqueue ``number`` (None if the log holds it or none)."""
        return self._recovered.get(number)

    def is_lost(self, number: int) -> bool:
        """True if the log lost enqueue ``number`` (recovered from the files or not)."""
        return self.recovery is not None and self.recovery.is_lost(number)

    def _fill_flags(self) -> None:
        d = self.dumps
        for table, arr in ((d.pre, self.has_pre), (d.post, self.has_post)):
            for e, lst in table.items():
                p = self.position_of(int(e))
                if p is None or not lst:
                    continue
                arr[p] = True
                if all(x.hashed for x in lst):
                    self.hashes_only[p] = True
        for e in d.replay:
            p = self.position_of(int(e))
            if p is not None:
                self.has_replay[p] = True

    def _link_programs(self, programs: list[Program]) -> list[Program]:
        out: list[Program] = []
        handles: dict[int, int] = {}
        if self.log is not None:
            for h, recs in self.log.programs.items():
                for r in recs:
                    if r.number is not None:
                        handles[r.number] = h
        for p in programs:
            if p.handle is None and p.number in handles:
                p = dataclasses.replace(p, handle=handles[p.number])
            out.append(p)
            self._programs_by_number[p.number] = p
        return out

    def __len__(self) -> int:
        return len(self.numbers)

    def position_of(self, number: int) -> int | None:
        nums = self.numbers
        if len(nums) == 0:
            return None
        if self._sorted:
            i = int(np.searchsorted(nums, number))
            return i if i < len(nums) and int(nums[i]) == number else None
        assert self._order is not None
        s = nums[self._order]
        i = int(np.searchsorted(s, number, side="right")) - 1
        if i >= 0 and int(s[i]) == number:
            return int(self._order[i])
        return None

    def _line(self, pos: int) -> str:
        if self.log is None:
            return ""
        off = int(self.offsets[pos])
        return self.log.read_line(off) if off >= 0 else ""

    def _sizes(self, line: str) -> tuple[tuple[int, ...] | None, ...]:
        m = _SIZES_RE.search(line)
        if m is None:
            return None, None, None
        return _dims(m.group(1), ","), _dims(m.group(2), "x"), _dims(m.group(3), "x")

    def row(self, pos: int) -> EnqueueRow:
        kind = EnqueueKind(int(self.kinds[pos]))
        kid = int(self.kernel_ids[pos])
        gsz = lsz = None
        recovered = bool(self.recovered[pos])
        if recovered:
            rec = self._recovered.get(int(self.numbers[pos]))
            if rec is not None:
                gsz, lsz = rec.global_size, rec.local_size
        elif kind in (EnqueueKind.KERNEL, EnqueueKind.TASK):
            _, gsz, lsz = self._sizes(self._line(pos))
        dtm = self.device_times[pos]
        dtime = DeviceTime(int(dtm[0]), int(dtm[1]), int(dtm[2])) if dtm[0] >= 0 else None
        return EnqueueRow(
            number=int(self.numbers[pos]),
            kind=kind,
            function=self.functions[int(self.function_ids[pos])],
            kernel=self.kernel_names[kid] if kid >= 0 else None,
            global_size=gsz,
            local_size=lsz,
            device_time=dtime,
            has_pre=bool(self.has_pre[pos]),
            has_post=bool(self.has_post[pos]),
            has_replay=bool(self.has_replay[pos]),
            hashes_only=bool(self.hashes_only[pos]),
            recovered=recovered,
        )

    def work_items(self) -> npt.NDArray[np.int64]:
        """Per position, a kernel enqueue's global work items (the product of its global
        size), -1 where unknown or not a kernel: one pass over the kernel enqueues' log lines
        (the list sorts by it), computed once."""
        if self._work_items is None:
            out = np.full(len(self), -1, dtype=np.int64)
            kernel = np.isin(self.kinds, [int(EnqueueKind.KERNEL), int(EnqueueKind.TASK)])
            logged = kernel & (self.offsets >= 0) & ~self.recovered
            mm = self.log.data if self.log is not None else None
            if mm is not None and logged.any():
                _logged_work_items(mm, self.offsets, logged, out)
            for pos in np.flatnonzero(kernel & ~logged).tolist():  # recovered: their own
                gsz = self.row(pos).global_size
                if gsz:
                    out[pos] = int(np.prod(np.asarray(gsz, dtype=np.int64)))
            self._work_items = out
        return self._work_items

    def rows(self, start: int, stop: int) -> list[EnqueueRow]:
        start = max(0, start)
        stop = min(len(self), stop)
        return [self.row(p) for p in range(start, stop)]

    # ------------------------------------------------------------------ find
    def find(
        self, kernel: str | None = None, **filters: Unpack[FindFilters]
    ) -> npt.NDArray[np.int64]:
        """Positions of enqueues matching a kernel-name substring/regex, kinds, number range."""
        return find_positions(self.numbers, self.kinds, self.kernel_ids, self.kernel_names,
                              kernel, **filters)  # fmt: skip

    # ------------------------------------------------------------------ programs
    @property
    def programs(self) -> list[Program]:
        return list(self._programs)

    def program_source(self, program: Program) -> str:
        if program.source_path is None:
            return ""
        key = str(program.source_path)
        if key not in self._source_cache:
            try:
                text = _read_text(program.source_path, self.path)
                self._source_cache[key] = text.replace("\x00", "")
            except OSError:
                self._source_cache[key] = ""
        return self._source_cache[key]

    def program_typedefs(self, program: Program | None) -> dict[str, CType]:
        """The typedefs (structs, enums, aliases) of a program's source, by name."""
        source = self.program_source(program) if program is not None else ""
        if not source:
            return {}
        from cltui.capture.signature import parse_program

        try:
            return parse_program(source, program.options if program else "").typedefs
        except Exception:  # an odd source has no typedefs to offer
            return {}

    def build_log(self, program: Program) -> str:
        parts = []
        for tag, p in sorted(program.build_logs.items()):
            try:
                parts.append(f"--- {tag} ---\n{_read_text(p, self.path)}")
            except OSError as e:
                parts.append(f"--- {tag} --- (unreadable: {e.strerror})")
        return "\n".join(parts)

    # ------------------------------------------------------------------ enqueue
    def enqueue(self, number: int) -> Enqueue:
        """Full decode of one enqueue (args typed by signature, dumps attached)."""
        with self._lock:
            hit = self._cache.get(number)
            if hit is not None:
                self._cache.move_to_end(number)
                return hit
        pos = self.position_of(number)
        if pos is None:
            raise KeyError(f"no enqueue {number} in this capture")
        try:
            enq = decode_enqueue(self, pos)
        except Exception as e:
            enq = Enqueue(
                row=self._safe_row(pos), line="", queue=None, event=None, global_offset=None
            )
            enq.problems.append(
                Problem(
                    f"could not decode this enqueue: {type(e).__name__}: "
                    f"{str(e).splitlines()[0] if str(e) else ''}",
                    enqueue=number,
                    severity="error",
                )
            )
        with self._lock:
            self._cache[number] = enq
            if len(self._cache) > _LRU_SIZE:
                self._cache.popitem(last=False)
        return enq

    def _safe_row(self, pos: int) -> EnqueueRow:
        try:
            return self.row(pos)
        except Exception:
            return EnqueueRow(
                int(self.numbers[pos]),
                EnqueueKind(int(self.kinds[pos])),
                "",
                None,
                None,
                None,
                None,
                False,
                False,
                False,
                False,
                bool(self.recovered[pos]),
            )

    def _replay(self, number: int) -> ReplayFolder | None:
        if number in self._replay_cache:
            return self._replay_cache[number]
        folder = self.dumps.replay.get(number)
        rf = None
        if folder is not None:
            rf = read_replay_folder(Path(folder), self.path)
        self._replay_cache[number] = rf
        return rf

    # ------------------------------------------------------------------ info
    def info(self) -> CaptureInfo:
        """Everything ``cltui info`` shows (:func:`cltui.capture.summary.capture_info`)."""
        return capture_info(self)

    def close(self) -> None:
        if self.log is not None:
            self.log.close()
