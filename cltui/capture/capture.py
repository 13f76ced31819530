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

import bisect
import contextlib
import dataclasses
import glob
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from cltui.capture import files
from cltui.capture import log as li
from cltui.capture.cltypes import CType, decode_value
from cltui.capture.confine import is_file, leaves, outside_message, read_bytes_inside
from cltui.capture.model import (
    CAPTURE_HOLDS,
    ArgKind,
    CaptureError,
    DeviceTime,
    Enqueue,
    EnqueueKind,
    EnqueueRow,
    KernelArg,
    MemObject,
    NotACapture,
    Problem,
    Program,
)
from cltui.capture.recovery import RecoveredEnqueue, Recovery, recover

ProgressFn = Callable[[float], None]  # fraction 0..1, called from the indexing thread

_LRU_SIZE = 256
_SIZES_RE = re.compile(
    r"(?:global_work_offset = < ([^>]*) >, )?global_work_size = < ([^>]*) >"
    r"(?:, local_work_size = < ([^>]*) >)?"
)
_EWL_RE = re.compile(r", event_wait_list = \( size = \d+ \)\[[^\]]*\]")
_EVENT_RE = re.compile(r" created event = (0x[0-9a-fA-F]+|\(nil\)|[0-9A-F]{8,16})")
_ERR_RE = re.compile(r" -> (\S+)\s*$")
# an attribute's parentheses are matched, not scanned for lazily: a body cannot run past a
# parenthesis, so a source of unclosed ``kernel __attribute__((`` costs linear time (a lazy
# ``.*?`` rescanned to the end from each: 440 KB took 33 s)
_ATTR = r"__attribute__\s*\(\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)\)"
_KERNEL_DEF_RE = (
    r"(?:__kernel|kernel|KERNEL)\s+(?:(?:" + _ATTR  # (no braces: safe in a format string)
    + r"|[A-Z_][A-Z0-9_]*\s*\([^(){{}};]*\))\s*)*void\s+{}\s*\("
)
# every kernel a source defines (pyopencl's "KERNEL REQD_WG_SIZE(...) void name(" too)
_ANY_KERNEL_DEF_RE = re.compile(
    r"\b(?:__kernel|kernel|KERNEL)\s+(?:(?:" + _ATTR
    + r"|[A-Z_][A-Z0-9_]*\s*\([^(){};]*\))\s*)*void\s+(\w+)\s*\("
)


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

    def __init__(
        self,
        path: Path,
        log: li.LogIndex | None,
        dumps: Any,
        programs: list[Program],
        report: Any,
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
        self._sig_cache: dict[str, dict[str, Any]] = {}
        self._replay_cache: dict[int, Any] = {}
        self._source_cache: dict[str, str] = {}
        self._defs: dict[str, list[Program]] | None = None
        self._assigned: dict[int, tuple[Program, str]] | None = None
        if log is not None:
            self.numbers = log.numbers
            self.offsets = log.offsets
            self.kinds = log.kinds
            self.kernel_ids = log.kernel_ids
            self.kernel_names = log.kernel_names
            self.device_times = log.device_times
            self.function_ids = log.function_ids
            self.functions = log.functions
        else:
            self.numbers = np.zeros(0, dtype=np.int64)
            self.offsets = np.zeros(0, dtype=np.int64)
            self.kinds = np.zeros(0, dtype=np.uint8)
            self.kernel_ids = np.zeros(0, dtype=np.int32)
            self.kernel_names = []
            self.device_times = np.zeros((0, 3), dtype=np.int64)
            self.function_ids = np.zeros(0, dtype=np.uint16)
            self.functions = []
        self.recovered = np.zeros(len(self.numbers), dtype=bool)
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
        self._ska_keys = sorted(getattr(dumps, "setkernelarg", {}) or {})

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
        self.problems.append(Problem(rec.line(), self.log.path.name if self.log else ""))
        extra = sorted(rec.enqueues)
        if not extra:
            return
        kernel_names = list(self.kernel_names)
        kmap = {k: i for i, k in enumerate(kernel_names)}
        functions = list(self.functions)
        fmap = {f: i for i, f in enumerate(functions)}
        kids: list[int] = []
        fids: list[int] = []
        kinds: list[int] = []
        times = np.full((len(extra), 3), -1, dtype=np.int64)
        for j, n in enumerate(extra):
            r = rec.enqueues[n]
            if r.kernel is not None:
                if r.kernel not in kmap:
                    kmap[r.kernel] = len(kernel_names)
                    kernel_names.append(r.kernel)
                kids.append(kmap[r.kernel])
            else:
                kids.append(-1)
            if r.function not in fmap:
                fmap[r.function] = len(functions)
                functions.append(r.function)
            fids.append(fmap[r.function])
            kinds.append(int(r.kind))
            if r.device_time is not None:
                dt = r.device_time
                times[j] = (dt.queued_to_submit, dt.submit_to_start, dt.start_to_end)
        m = len(extra)
        numbers = np.concatenate([self.numbers, np.array(extra, dtype=np.int64)])
        cols = {
            "offsets": np.concatenate([self.offsets, np.full(m, -1, dtype=np.int64)]),
            "kinds": np.concatenate([self.kinds, np.array(kinds, dtype=np.uint8)]),
            "kernel_ids": np.concatenate([self.kernel_ids, np.array(kids, dtype=np.int32)]),
            "device_times": np.concatenate([self.device_times, times]),
            "function_ids": np.concatenate([self.function_ids, np.array(fids, dtype=np.uint16)]),
            "recovered": np.concatenate([self.recovered, np.ones(m, dtype=bool)]),
        }
        n0 = len(self.numbers)
        if n0 < 2 or bool(np.all(np.diff(self.numbers) > 0)):
            # a single-session log: recovered enqueues take their place in number order
            order = np.argsort(numbers, kind="stable")
            numbers = numbers[order]
            cols = {k: v[order] for k, v in cols.items()}
        self.numbers = numbers
        self.offsets = cols["offsets"]
        self.kinds = cols["kinds"]
        self.kernel_ids = cols["kernel_ids"]
        self.device_times = cols["device_times"]
        self.function_ids = cols["function_ids"]
        self.recovered = cols["recovered"]
        self.kernel_names = kernel_names
        self.functions = functions
        self._recovered = dict(rec.enqueues)

    def recovered_enqueue(self, number: int) -> RecoveredEnqueue | None:
        """What recovery knows of enqueue ``number`` (None if the log holds it or none)."""
        return self._recovered.get(number)

    def is_lost(self, number: int) -> bool:
        """True if the log lost enqueue ``number`` (recovered from the files or not)."""
        return self.recovery is not None and self.recovery.is_lost(number)

    def _fill_flags(self) -> None:
        d = self.dumps
        if d is None:
            return
        for table, arr in (
            (getattr(d, "pre", {}), self.has_pre),
            (getattr(d, "post", {}), self.has_post),
        ):
            for e, lst in (table or {}).items():
                p = self.position_of(int(e))
                if p is None or not lst:
                    continue
                arr[p] = True
                if all(x.hashed for x in lst):
                    self.hashes_only[p] = True
        for e in getattr(d, "replay", {}) or {}:
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

    def rows(self, start: int, stop: int) -> list[EnqueueRow]:
        start = max(0, start)
        stop = min(len(self), stop)
        return [self.row(p) for p in range(start, stop)]

    # ------------------------------------------------------------------ find
    def find(
        self,
        kernel: str | None = None,
        *,
        regex: bool = False,
        kinds: Sequence[EnqueueKind] | None = None,
        first: int | None = None,
        last: int | None = None,
    ) -> npt.NDArray[np.int64]:
        """Positions of enqueues matching a kernel-name substring/regex, kinds, number range."""
        return find_positions(
            self.numbers,
            self.kinds,
            self.kernel_ids,
            self.kernel_names,
            kernel,
            regex=regex,
            kinds=kinds,
            first=first,
            last=last,
        )

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
            enq = self._decode(pos)
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

    def _replay(self, number: int) -> Any:
        if number in self._replay_cache:
            return self._replay_cache[number]
        folder = (getattr(self.dumps, "replay", {}) or {}).get(number)
        rf = None
        if folder is not None:
            rf = files.read_replay_folder(Path(folder), self.path)
        self._replay_cache[number] = rf
        return rf

    def _decode(self, pos: int) -> Enqueue:
        row = self.row(pos)
        number = row.number
        line = self._line(pos)
        problems: list[Problem] = []
        fn = row.function
        args_text = ""
        if line:
            i = line.find(fn)
            rest = line[i + len(fn) :] if i >= 0 else ""
            _, args_text = li.split_kernel_name(rest)
            args_text, _ = li.strip_counter(args_text)
        kv = li.kv_pairs(_EWL_RE.sub("", args_text))
        off = int(self.offsets[pos])
        log = self.log
        enq = Enqueue(
            row=row,
            line=line.strip(),
            queue=li.parse_ptr(kv.get("queue", "")),
            event=None,
            global_offset=None,
            problems=problems,
        )
        if log is not None and off >= 0:
            ex = log.exit_line(off, fn)
            if ex is None:
                problems.append(
                    Problem("no exit line for this call (log truncated?)", enqueue=number)
                )
            else:
                m = _EVENT_RE.search(" " + ex if ex.startswith("created") else ex)
                if m:
                    enq.event = li.parse_ptr(m.group(1))
                em = _ERR_RE.search(ex)
                if em and em.group(1) != "CL_SUCCESS":
                    problems.append(
                        Problem(f"the call failed: {em.group(1)}", enqueue=number, severity="error")
                    )
            if enq.queue:
                q = log.queue_at(enq.queue, off)
                enq.device = q.device if q else None
        rec = self._recovered.get(number) if row.recovered else None
        if rec is not None:
            enq.recovered_from = rec.sources
            enq.device = self.recovery.device if self.recovery is not None else None
        if row.kind in (EnqueueKind.KERNEL, EnqueueKind.TASK):
            go, _, _ = self._sizes(line)
            enq.global_offset = rec.global_offset if rec is not None else go
            self._decode_kernel(enq, pos, kv, off)
        elif rec is None:
            self._decode_transfer(enq, kv, off)
        problems.extend(p for p in self._dump_problems(enq))
        return enq

    def _mem(self, handle: int | None, off: int) -> MemObject | None:
        if not handle or self.log is None or off < 0:
            return None
        return self.log.mem_at(handle, off)

    def _objects_at(self, pos: int) -> int:
        """The log offset whose live objects (buffers, samplers) an enqueue's handles name:
        its own line; for a recovered enqueue past the end of the log, the end of the log;
        -1 (none) for one the log lost in its middle or start, whose objects it lost too."""
        off = int(self.offsets[pos])
        if off >= 0 or self.log is None:
            return off
        if bool(self.recovered[pos]) and int(self.numbers[pos]) > self._max_logged:
            return self.log.size
        return -1

    def _decode_transfer(self, enq: Enqueue, kv: dict[str, str], off: int) -> None:
        src = (
            kv.get("buffer")
            or kv.get("image")
            or kv.get("memobj")
            or kv.get("src_buffer")
            or kv.get("src_image")
        )
        dst = kv.get("dst_buffer") or kv.get("dst_image")
        enq.mem = self._mem(li.parse_ptr(src) if src else None, off)
        enq.dst_mem = self._mem(li.parse_ptr(dst) if dst else None, off)
        if self.log is not None and off >= 0:
            # SVM/USM transfers name raw pointers: find the allocation that holds them
            svm_src = kv.get("svm_ptr") or kv.get("src_ptr")
            svm_dst = kv.get("dst_ptr")
            if enq.mem is None and svm_src:
                p = li.parse_ptr(svm_src)
                enq.mem = self.log.svm_containing(p, off) if p else None
            if enq.dst_mem is None and svm_dst:
                p = li.parse_ptr(svm_dst)
                enq.dst_mem = self.log.svm_containing(p, off) if p else None
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

    # ---- kernels
    def _program_for(
        self, enq: Enqueue, kernel_name: str, krec: li.KernelRecord | None, replay: Any
    ) -> tuple[Program | None, str, str]:
        """(program, source text, build options) for a kernel enqueue (§5.4)."""
        log = self.log
        if krec is not None and krec.program is not None and log is not None:
            prec = log.program_at(krec.program, krec.entry_offset)
            if prec is not None and prec.number is not None:
                prog = self._programs_by_number.get(prec.number)
                if prog is not None and prog.source_path is not None:
                    return prog, self.program_source(prog), prog.options
        if replay is not None and getattr(replay, "kernel_source", None):
            src = bytes(replay.kernel_source).replace(b"\x00", b"").decode("utf-8", "replace")
            opts = getattr(replay, "build_options", "") or ""
            # the CLI_<P4>_<H8> hash of kernel.cl names its program (capture-format §5.2)
            h8 = f"{files.cli_hash64(bytes(replay.kernel_source)) & 0xFFFFFFFF:08X}"
            same = [p for p in self._programs if p.hash == h8 and self.program_source(p) == src]
            if same:
                fit = [p for p in same if p.options.strip() == opts.strip()]
                return (fit or same)[-1], src, opts
            for prog in self._programs:
                if self.program_source(prog) == src:
                    return prog, src, opts
            return None, src, opts
        if kernel_name and enq.row.recovered:
            # no log: the program built in the order the enqueues need them (see _assign)
            picked = self._assign().get(enq.number)
            if picked is not None:
                prog, how = picked
                if how:
                    enq.problems.append(Problem(how, enqueue=enq.number))
                return prog, self.program_source(prog), prog.options
        # grep the sources for the kernel definition
        if kernel_name and kernel_name.isidentifier():  # (a damaged log's name may be no C name)
            rx = re.compile(_KERNEL_DEF_RE.format(re.escape(kernel_name)), re.DOTALL)
            hits = [p for p in self._programs if rx.search(self.program_source(p))]
            if len(hits) > 1:
                # keep the programs whose signature fits the argument values the dumps hold
                fit = [p for p in hits if self._fits(enq.number, kernel_name, p)]
                hits = fit or hits
            if hits:
                if len(hits) > 1:
                    enq.problems.append(
                        Problem(
                            f"{len(hits)} programs define a kernel {kernel_name!r}; "
                            f"using program {hits[-1].number}",
                            enqueue=enq.number,
                        )
                    )
                p = hits[-1]
                return p, self.program_source(p), p.options
        return None, "", ""

    def _defining(self) -> dict[str, list[Program]]:
        """kernel name -> the programs whose source defines it (one pass over each source)."""
        with self._lock:
            if self._defs is None:
                defs: dict[str, list[Program]] = {}
                for p in self._programs:
                    for name in dict.fromkeys(_ANY_KERNEL_DEF_RE.findall(self.program_source(p))):
                        defs.setdefault(name, []).append(p)
                self._defs = defs
            return self._defs

    def _assign(self) -> dict[int, tuple[Program, str]]:
        """The program of each recovered kernel enqueue that no Replay folder names.

        Programs are numbered in creation order and programs such as pyopencl's and OpenCV's
        are built when first needed, so among the programs that define the kernel and fit its
        argument values, a launch takes the first program built after the highest one used so
        far (a new program) when one lies before the next enqueue whose kernel only one program
        defines, else the latest one already built (a program used again)."""
        with self._lock:
            if self._assigned is not None:
                return self._assigned
        defs = self._defining()
        order = np.argsort(self.numbers, kind="stable")
        rows: list[tuple[int, str, bool]] = []
        for pos in order.tolist():
            kid = int(self.kernel_ids[pos])
            if kid >= 0:
                n, rec = int(self.numbers[pos]), bool(self.recovered[pos])
                rows.append((n, self.kernel_names[kid], rec))
        anchors = [(n, defs[k][0].number) for n, k, _ in rows if len(defs.get(k, [])) == 1]
        anchor_numbers = [n for n, _ in anchors]
        out: dict[int, tuple[Program, str]] = {}
        high = -1
        for n, kname, recovered in rows:
            cands = defs.get(kname, [])
            prog: Program | None = None
            how = ""
            folder = (getattr(self.dumps, "replay", {}) or {}).get(n)
            if len(cands) == 1:
                prog = cands[0]
            elif folder is not None:
                rf = self._replay(n)
                if rf is not None and rf.kernel_source:
                    h8 = f"{files.cli_hash64(bytes(rf.kernel_source)) & 0xFFFFFFFF:08X}"
                    same = [p for p in cands if p.hash == h8]
                    prog = same[-1] if same else None
            if prog is None and recovered and len(cands) > 1:
                j = bisect.bisect_right(anchor_numbers, n)
                nxt = anchors[j][1] if j < len(anchors) else 1 << 62
                new = [p for p in cands if high < p.number <= nxt]
                old = [p for p in reversed(cands) if p.number <= high]
                # signatures are parsed lazily: the first candidate in build order that fits
                order_ = [*new, *old]
                if len(order_) == 1:
                    prog = order_[0]
                else:
                    prog = next((p for p in order_ if self._fits(n, kname, p)), None)
                    prog = prog or (order_ or cands)[0]
                how = (
                    f"{len(cands)} programs define kernel {kname!r} "
                    f"({', '.join(str(p.number) for p in cands)}) and the log that said which "
                    f"is lost: using program {prog.number}, the first in build order whose "
                    "signature fits the argument values"
                )
            if prog is not None:
                high = max(high, prog.number)
                if recovered:
                    out[n] = (prog, how)
        with self._lock:
            self._assigned = out
        return out

    def _fits(self, number: int, kname: str, prog: Program) -> bool:
        """False when the SetKernelArg/Replay values of enqueue ``number`` cannot be the
        arguments of ``kname`` in ``prog`` (another count, or a value of another size)."""
        source = self.program_source(prog)
        scratch: list[Problem] = []
        key = str(prog.source_path) + "\x00" + prog.options
        sigs = self._signature(key, source, prog.options, scratch, number)
        sig = sigs.get(kname)
        if sig is None:
            return False
        params = list(sig.params)
        known = self._ska_indexes(number, kname)
        if known and max(known) >= len(params):
            return False
        replay = self._replay(number)
        for i, param in enumerate(params):
            raw = self._ska_raw(number, kname, i, None) if i in known else None
            if raw is None and replay is not None:
                raw = replay.arguments.get(i)
            if raw is None or (param.is_pointer and param.address_space == "local"):
                continue
            if param.is_pointer or param.ctype.kind in ("image", "sampler"):
                if len(raw) not in (4, 8):
                    return False
            elif param.ctype.size and len(raw) != param.ctype.size:
                return False
        return True

    def _signature(
        self, key: str, source: str, options: str, problems: list[Problem], number: int
    ) -> dict[str, Any]:
        if key in self._sig_cache:
            return self._sig_cache[key]
        sigs: dict[str, Any] = {}
        if source:
            # imported here: the preprocessor (pcpp) is needed only once a source is parsed
            from cltui.capture.signature import parse_kernels

            try:
                sigs = dict(parse_kernels(source, options))
            except Exception as e:
                problems.append(Problem(f"could not parse the kernel source: {e}", enqueue=number))
        self._sig_cache[key] = sigs
        return sigs

    def _decode_kernel(self, enq: Enqueue, pos: int, kv: dict[str, str], off: int) -> None:
        number = enq.number
        log = self.log
        kname = enq.row.kernel or ""
        khandle = li.parse_ptr(kv.get("kernel", "")) if kv.get("kernel") else None
        enq.kernel_handle = khandle
        krec = log.kernel_at(khandle, off) if (log is not None and khandle) else None
        replay = None
        try:
            replay = self._replay(number)
        except Exception as e:
            enq.problems.append(Problem(f"unreadable replay folder: {e}", enqueue=number))
        if replay is not None:
            enq.replay_dir = Path((getattr(self.dumps, "replay", {}) or {})[number])
            enq.problems.extend(getattr(replay, "problems", []) or [])
            if not kname:
                kname = replay.kernel_name
        prog, source, options = self._program_for(enq, kname, krec, replay)
        enq.program = prog
        if not source:
            enq.problems.append(
                Problem(f"no program source found for kernel {kname!r}", enqueue=number)
            )
        key = str(prog.source_path) if prog is not None else f"replay:{number}"
        sigs = self._signature(key + "\x00" + options, source, options, enq.problems, number)
        raw_name = krec.name if krec is not None and krec.name else kname
        sig = sigs.get(raw_name) or sigs.get(kname)
        if source and sig is None and sigs:
            enq.problems.append(
                Problem(f"kernel {kname!r} not found in its program source", enqueue=number)
            )
        params = list(sig.params) if sig is not None else []
        nargs: int | None = len(params) if sig is not None else None
        if nargs is None and krec is not None and log is not None:
            nargs = log.num_args_after(krec.exit_offset)
        setargs: dict[int, li.SetArg] = {}
        if log is not None and khandle and off >= 0:
            stop = krec.entry_offset if krec is not None else 0
            setargs = log.kernel_args_at(khandle, off, stop, nargs)
        indexes = set(range(nargs or 0)) | set(setargs)
        if replay is not None:
            indexes |= set(replay.arguments) | set(replay.locals)
        dumps_pre = {d.arg: d for d in (getattr(self.dumps, "pre", {}) or {}).get(number, [])}
        dumps_post = {d.arg: d for d in (getattr(self.dumps, "post", {}) or {}).get(number, [])}
        if replay is not None:
            for i, d in (replay.pre or {}).items():
                dumps_pre.setdefault(i, d)
            for i, d in (replay.post or {}).items():
                dumps_post.setdefault(i, d)
        indexes |= set(dumps_pre) | set(dumps_post)
        if enq.row.recovered and nargs is None:
            indexes |= self._ska_indexes(number, kname)
        obj_off = self._objects_at(pos)
        memory: set[int] = set(dumps_pre) | set(dumps_post)
        if replay is not None:
            memory |= set(replay.svm_offsets) | set(replay.image_meta)
        # no log: an SVM pointer argument is the memory argument that the SetKernelArg dumps
        # lack (clSetKernelArgSVMPointer writes none) while they hold the launch's others
        ska_set = self._ska_indexes(number, kname) if enq.row.recovered else set()
        for i in sorted(indexes):
            param = params[i] if i < len(params) else None
            svm = bool(ska_set) and i not in ska_set and (
                (param is not None and param.is_pointer and param.address_space != "local")
                or (param is None and i in memory)
            )
            arg = self._make_arg(
                enq, i, param, setargs.get(i), replay, kname, obj_off, i in memory, svm
            )
            if (
                log is not None
                and off >= 0
                and i not in setargs
                and arg.raw is None
                and arg.kind is not ArgKind.LOCAL
            ):
                enq.problems.append(
                    Problem(
                        f"argument {i}: no clSetKernelArg for it in the log and no dump "
                        "holds its value",
                        enqueue=number,
                    )
                )
            arg.pre = dumps_pre.get(i)
            arg.post = dumps_post.get(i)
            enq.args.append(arg)

    def _ska_indexes(self, number: int, kname: str) -> set[int]:
        """Argument indexes the SetKernelArg dumps hold for a launch of ``kname`` at ``number``
        (its own group and the earlier groups of the same kernel that it completes)."""
        table = getattr(self.dumps, "setkernelarg", {}) or {}
        out: set[int] = set()
        j = bisect.bisect_right(self._ska_keys, number) - 1
        steps = 0
        while j >= 0 and steps < 64:
            mine = {i for k, i in table[self._ska_keys[j]] if k == kname}
            if out and not mine:
                break
            out |= mine
            if 0 in mine:
                break
            j -= 1
            steps += 1
        return out

    def _ska_raw(self, number: int, kname: str, i: int, setarg: li.SetArg | None) -> bytes | None:
        table = getattr(self.dumps, "setkernelarg", {}) or {}
        path = None
        if setarg is not None and setarg.counter is not None:
            path = table.get(setarg.counter, {}).get((kname, i))
        elif setarg is None and self._ska_keys:
            j = bisect.bisect_right(self._ska_keys, number) - 1
            while j >= 0 and path is None:
                path = table[self._ska_keys[j]].get((kname, i))
                j -= 1
        if path is None:
            return None
        try:
            return read_bytes_inside(self.path, path)
        except OSError:
            return None

    def _make_arg(
        self,
        enq: Enqueue,
        i: int,
        param: Any,
        setarg: li.SetArg | None,
        replay: Any,
        kname: str,
        off: int,
        memory_hint: bool = False,
        svm_hint: bool = False,
    ) -> KernelArg:
        number = enq.number
        arg = KernelArg(index=i, kind=ArgKind.UNKNOWN, size=setarg.size if setarg else 0)
        ctype = None
        if param is not None:
            ctype = param.ctype
            arg.name = param.name
            arg.type_name = param.type_text
            arg.address_space = param.address_space
            arg.access = param.access
        # raw bytes: SetKernelArg dump > Replay Argument file > log text
        raw = None
        if setarg is None or not setarg.is_svm:
            raw = self._ska_raw(number, kname, i, setarg)
            if raw is not None:
                arg.raw_source = "setkernelarg"
        if raw is None and replay is not None and i in replay.arguments:
            raw = replay.arguments[i]
            arg.raw_source = "replay"
        if raw is None and setarg is not None and setarg.raw is not None:
            raw = setarg.raw
            arg.raw_source = "log"
        arg.raw = raw
        if not arg.size and raw is not None:
            arg.size = len(raw)
        ckind: str | None = None
        if param is not None:
            ckind = "pointer" if param.is_pointer else param.ctype.kind
        is_local_ptr = ckind == "pointer" and (param.address_space or "") == "local"
        local = replay.locals.get(i) if replay is not None else None
        if setarg is not None and setarg.is_svm:
            arg.kind = ArgKind.SVM
            arg.handle = setarg.pointer
        elif svm_hint and raw is not None and len(raw) == 8:
            arg.kind = ArgKind.SVM  # the Replay folder's Argument holds the allocation base
            arg.handle = int.from_bytes(raw, "little")
        elif is_local_ptr or (local is not None and raw is None):
            arg.kind = ArgKind.LOCAL
            arg.local_size = local if local is not None else (setarg.size if setarg else None)
        elif (
            (setarg is not None and setarg.sampler is not None)
            or ckind == "sampler"
            or (ckind is None and replay is not None and i in getattr(replay, "samplers", {}))
        ):
            arg.kind = ArgKind.SAMPLER
            arg.sampler = setarg.sampler if setarg is not None else None
            if replay is not None and i in getattr(replay, "samplers", {}):
                arg.sampler = arg.sampler or replay.samplers[i]
            if arg.sampler is None and raw is not None and len(raw) == 8 and self.log:
                arg.handle = int.from_bytes(raw, "little")
                arg.sampler = self.log.sampler_at(arg.handle, off)
        elif ckind in ("pointer", "image") or (
            ckind is None and (memory_hint or self._is_mem(raw, off))
        ):
            h = int.from_bytes(raw[:8], "little") if raw is not None and len(raw) >= 8 else None
            arg.handle = h
            if h == 0:
                arg.kind = ArgKind.NULL
            else:
                arg.mem = self._mem(h, off)
                svm = replay.svm_offsets.get(i) if replay is not None else None
                if arg.mem is None and h is not None and self.log is not None and svm is None:
                    alloc = self.log.svm_containing(h, off)
                    if alloc is not None:
                        arg.kind = ArgKind.SVM
                        arg.mem = alloc
                        arg.svm_offset = h - alloc.handle
                if arg.kind is ArgKind.UNKNOWN:
                    if (
                        ckind == "image"
                        or (arg.mem is not None and arg.mem.kind == "image")
                        or (ckind is None and replay is not None and i in replay.image_meta)
                    ):
                        arg.kind = ArgKind.IMAGE
                    else:
                        arg.kind = ArgKind.BUFFER
        elif raw is not None or ckind is not None:
            arg.kind = ArgKind.SCALAR
        elif setarg is not None:
            # a size without a value and no type: a __local argument or an unprinted scalar
            arg.kind = ArgKind.LOCAL if setarg.size not in (1, 2, 4, 8, 16) else ArgKind.UNKNOWN
            if arg.kind is ArgKind.LOCAL:
                arg.local_size = setarg.size
        if arg.kind is ArgKind.SVM:
            if arg.mem is None and arg.handle and self.log is not None:
                alloc = self.log.svm_containing(arg.handle, off)
                if alloc is not None:
                    arg.mem = alloc
                    arg.svm_offset = arg.handle - alloc.handle
            svm = replay.svm_offsets.get(i) if replay is not None else None
            if svm is not None:
                arg.svm_offset = svm
        # dtype and value
        if ctype is not None and ckind not in ("image", "sampler"):
            arg.dtype = ctype.dtype
            pointee = ctype.element if ctype.kind == "pointer" else None
            arg.ctype = pointee if pointee is not None else ctype
        if arg.kind is ArgKind.SCALAR and raw is not None and ctype is not None:
            arg.value = decode_value(raw, ctype)
            size = ctype.size
            if size and len(raw) != size:
                enq.problems.append(
                    Problem(
                        f"argument {i}: {len(raw)} value bytes for type {arg.type_name} "
                        f"({size} bytes)",
                        enqueue=number,
                    )
                )
        elif arg.kind is ArgKind.SCALAR and raw is None and setarg is not None:
            enq.problems.append(
                Problem(
                    f"argument {i}: the log prints no value for {setarg.size}-byte values and "
                    "no SetKernelArg/Replay dump holds it",
                    enqueue=number,
                )
            )
        return arg

    def _is_mem(self, raw: bytes | None, off: int) -> bool:
        if raw is None or len(raw) != 8 or self.log is None:
            return False
        h = int.from_bytes(raw, "little")
        return h == 0 or self._mem(h, off) is not None

    def _dump_problems(self, enq: Enqueue) -> list[Problem]:
        out: list[Problem] = []
        for a in enq.args:
            for which, d in (("pre", a.pre), ("post", a.post)):
                if d is None:
                    continue
                if a.kind not in (ArgKind.BUFFER, ArgKind.IMAGE, ArgKind.SVM, ArgKind.UNKNOWN):
                    out.append(
                        Problem(
                            f"argument {a.index} ({a.type_name or a.kind.value}) is not a memory "
                            f"object, yet the layer dumped a {which} buffer for it (stale "
                            "argument state of an earlier kernel with the same handle)",
                            _rel(self.path, d.path),
                            enq.number,
                        )
                    )
                    continue
                if d.hashed:
                    continue
                size = d.size
                where = _rel(self.path, d.path)
                if d.is_image and d.image_region is not None and d.image_bpp:
                    w, h, dd = d.image_region
                    want = w * h * dd * d.image_bpp // 8
                    if size != want:
                        out.append(
                            Problem(
                                f"argument {a.index}: {which} image dump holds {size}"
                                f" bytes, its name says {want}",
                                where,
                                enq.number,
                            )
                        )
                    if a.mem is not None and a.mem.image is not None:
                        reg = li.image_region(a.mem.image)
                        if reg != d.image_region:
                            out.append(
                                Problem(
                                    f"argument {a.index}: {which} image dump region "
                                    f"{d.image_region} differs from the image {reg}",
                                    where,
                                    enq.number,
                                )
                            )
                elif (
                    a.mem is not None
                    and a.mem.size
                    and a.kind is ArgKind.BUFFER
                    and size != a.mem.size
                ):
                    out.append(
                        Problem(
                            f"argument {a.index}: {which} dump holds {size} bytes, the buffer "
                            f"has {a.mem.size}",
                            where,
                            enq.number,
                        )
                    )
                if a.dtype is not None and a.dtype.itemsize and size % a.dtype.itemsize:
                    out.append(
                        Problem(
                            f"argument {a.index}: {which} dump size {size} is not a multiple of "
                            f"{a.type_name} ({a.dtype.itemsize} bytes)",
                            where,
                            enq.number,
                        )
                    )
        return out

    # ------------------------------------------------------------------ info
    def info(self) -> dict[str, Any]:
        """JSON-able summary used by ``cltui info``."""
        n = len(self)
        kinds = {
            EnqueueKind(int(k)).label: int(c)
            for k, c in zip(*np.unique(self.kinds, return_counts=True), strict=True)
        }
        per_kernel: dict[str, dict[str, Any]] = {}
        if n:
            kid = self.kernel_ids
            valid = kid >= 0
            counts = np.bincount(kid[valid], minlength=len(self.kernel_names))
            dt = self.device_times[:, 2]
            have = valid & (dt >= 0)
            tot = np.bincount(
                kid[have], weights=dt[have].astype(np.float64), minlength=len(self.kernel_names)
            )
            timed = np.bincount(kid[have], minlength=len(self.kernel_names))
            for i, name in enumerate(self.kernel_names):
                entry = per_kernel.setdefault(name, {"count": 0, "timed": 0, "device_ns": 0})
                entry["count"] += int(counts[i])
                entry["timed"] += int(timed[i])
                entry["device_ns"] += int(tot[i])
        d = self.dumps
        pre = getattr(d, "pre", {}) or {}
        post = getattr(d, "post", {}) or {}
        ska = getattr(d, "setkernelarg", {}) or {}
        named = {q.device for lst in (self.log.queues.values() if self.log else []) for q in lst}
        if not named or self.recovery is not None:
            # the queues' lines were lost (or never written): the report and recovery name it
            for t in getattr(self.report, "devices", None) or []:
                named.add(t.device_name)
            if self.recovery is not None:
                named.add(self.recovery.device)
        devices = sorted(d for d in named if d)
        report: dict[str, Any] | None = None
        if self.report is not None:
            rep = self.report
            host = getattr(rep, "host", None)
            report = {
                "total_enqueues": getattr(rep, "total_enqueues", None),
                "host_total_ns": getattr(host, "total_time_ns", None) if host else None,
                "host_rows": len(host.rows) if host else 0,
                "devices": [
                    {
                        "device": t.device_name,
                        "total_ns": t.total_time_ns,
                        "rows": {r.name: {"calls": r.calls, "time_ns": r.time_ns} for r in t.rows},
                    }
                    for t in getattr(rep, "devices", []) or []
                ],
                "warnings": list(getattr(rep, "warnings", []) or []),
            }
        return {
            "path": str(self.path),
            "log": str(self.log_path) if self.log_path else None,
            "enqueues": n,
            "first": int(self.numbers[0]) if n else None,
            "last": int(self.numbers[-1]) if n else None,
            "kinds": kinds,
            "kernels": per_kernel,
            "device_times": int((self.device_times[:, 0] >= 0).sum()) if n else 0,
            "programs": [
                {
                    "number": p.number,
                    "hash": p.hash,
                    "options": p.options,
                    "source": str(p.source_path) if p.source_path else None,
                }
                for p in self._programs
            ],
            "devices": devices,
            "controls": dict(self.controls),
            "data": {
                "pre_dumps": sum(len(v) for v in pre.values()),
                "post_dumps": sum(len(v) for v in post.values()),
                "pre_enqueues": len(pre),
                "post_enqueues": len(post),
                "replay_folders": len(getattr(d, "replay", {}) or {}),
                "setkernelarg_dumps": sum(len(v) for v in ska.values()),
                "hashes_only": bool(
                    self.hashes_only.any()
                    or getattr(d, "buffer_hashes", False)
                    or getattr(d, "image_hashes", False)
                ),
            },
            "report": report,
            "sessions": len(self.log.sessions) if self.log else 0,
            "recovered": int(self.recovered.sum()),
            "recovery": self.recovery.to_json() if self.recovery is not None else None,
            "problems": len(self.problems),
        }

    def close(self) -> None:
        if self.log is not None:
            self.log.close()


def _rel(root: Path, p: Path) -> str:
    rs, ps = str(root), str(p)
    if len(ps) > len(rs) + 1 and ps.startswith(rs) and ps[len(rs)] == os.sep and rs != os.sep:
        return ps[len(rs) + 1 :]  # the usual case, without pathlib
    try:
        return str(Path(p).relative_to(root))
    except ValueError:
        return str(p)


def find_positions(
    numbers: npt.NDArray[np.int64],
    kinds_arr: npt.NDArray[np.uint8],
    kernel_ids: npt.NDArray[np.int32],
    kernel_names: Sequence[str],
    kernel: str | None = None,
    *,
    regex: bool = False,
    kinds: Sequence[EnqueueKind] | None = None,
    first: int | None = None,
    last: int | None = None,
) -> npt.NDArray[np.int64]:
    """Positions (into the index arrays) matching a kernel-name substring or regex, kinds
    and an enqueue-number range: one vectorised pass over the arrays."""
    mask = np.ones(len(numbers), dtype=bool)
    if kernel:
        if regex:
            try:
                rx = re.compile(kernel)
            except re.error as e:
                raise CaptureError(f"bad regular expression {kernel!r}: {e}") from None
            ids = [i for i, k in enumerate(kernel_names) if rx.search(k)]
        else:
            ids = [i for i, k in enumerate(kernel_names) if kernel in k]
        mask &= np.isin(kernel_ids, np.array(ids, dtype=np.int32))
    if kinds is not None:
        mask &= np.isin(kinds_arr, np.array([int(k) for k in kinds], dtype=np.uint8))
    if first is not None:
        mask &= numbers >= first
    if last is not None:
        mask &= numbers <= last
    return np.flatnonzero(mask).astype(np.int64)


def open_capture(
    path: str | Path,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
) -> Capture:
    """Open a dump directory; raises only :class:`CaptureError`."""
    try:
        return _open(Path(path), progress, cancel)
    except CaptureError:
        raise
    except Exception as e:
        raise CaptureError(f"{path}: cannot open capture: {type(e).__name__}: {e}") from None


def pid_folders(root: Path) -> list[tuple[Path, int | None, int]]:
    """``<root>.<pid>`` folders beside ``root`` holding a call log (the layer's ``AppendPid``:
    each process writes its own), as (folder, the report's total enqueues or None, log size),
    the process with the most enqueues first (a process that left no report ranks by its
    log's size, after those whose report counts enqueues)."""
    out: list[tuple[Path, int | None, int]] = []
    try:
        siblings = list(root.parent.glob(f"{glob.escape(root.name)}.*"))
    except OSError:
        return out
    for d in siblings:
        if not d.name[len(root.name) + 1 :].isdigit() or not d.is_dir():
            continue
        logs = li.find_logs(d)
        if not logs:
            continue
        total = None
        rp = d / "clintercept_report.txt"
        if is_file(rp)[0]:
            rep = files.parse_report(rp)
            total = getattr(rep, "total_enqueues", None) if rep is not None else None
        out.append((d, total, logs[0].stat().st_size))

    def rank(t: tuple[Path, int | None, int]) -> tuple[int, int]:
        # the report's count first; a process without a report (it did not exit normally)
        # by its log's size, before one whose report says it made no enqueue
        if t[1] is None:
            return (1, t[2])
        return (2, t[1]) if t[1] > 0 else (0, t[2])

    out.sort(key=rank, reverse=True)
    return out


def _capture_folders(root: Path, limit: int = 8) -> list[str]:
    """Names of the folders directly inside ``root`` that hold a call log."""
    try:
        subs = sorted(d for d in root.iterdir() if d.is_dir())
    except OSError:
        return []
    return [d.name for d in subs if li.find_logs(d)][:limit]


def _shown(path: Path | str) -> str:
    """``path`` for a message: control and other unprintable characters escaped."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in str(path))


def _layer_file(name: str, is_dir: bool) -> bool:
    """True for a name the Intercept Layer writes into its dump folder."""
    if is_dir:
        return name.startswith("memDump") or name in ("SetKernelArg", "Replay")
    return name.startswith(("clintercept_", "CLI_"))


def check_capture_folder(path: str | Path) -> None:
    """Raise :class:`NotACapture` unless ``path`` names a capture: a folder holding at least
    one file or folder of the layer's (however damaged the capture is), or the
    ``<path>.<pid>`` folders of the layer's AppendPid.  Reads one directory listing."""
    root = Path(path)
    shown = _shown(root)
    try:
        is_dir = root.is_dir()
        exists = is_dir or root.exists()
    except OSError as e:  # e.g. a name too long, a folder we may not enter
        raise NotACapture(f"{shown}: {e.strerror or e}") from None
    if not exists:
        if pid_folders(root):
            return
        raise NotACapture(f"{shown} does not exist (a capture folder holds {CAPTURE_HOLDS})")
    if not is_dir:
        hint = ""
        if _layer_file(root.name, False) or root.suffix.lower() in (".bin", ".raw", ".cl"):
            hint = f"; give the folder that holds it: {_shown(root.parent)}"
        raise NotACapture(
            f"{shown} is a file, not a capture folder: expected {CAPTURE_HOLDS}{hint}"
        )
    try:
        with os.scandir(root) as it:
            for entry in it:
                try:
                    entry_is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if _layer_file(entry.name, entry_is_dir):
                    return
    except OSError as e:
        raise NotACapture(f"{shown}: cannot list the folder: {e.strerror or e}") from None
    inside = _capture_folders(root)
    hint = f"; captures inside it: {', '.join(_shown(n) for n in inside)}" if inside else ""
    raise NotACapture(f"{shown} is not a capture folder: expected {CAPTURE_HOLDS}{hint}")


def _open(root: Path, progress: ProgressFn | None, cancel: threading.Event | None) -> Capture:
    problems: list[Problem] = []
    check_capture_folder(root)  # NotACapture: missing, a file, none of the layer's files
    if not root.exists():
        pids = pid_folders(root)
        if not pids:
            raise NotACapture(f"{_shown(root)} does not exist")
        # AppendPid: open the folder of the process with the most enqueues, say which
        chosen = pids[0][0]
        others = ", ".join(
            f"{d.name} ({'no report' if t is None else f'{t:,} enqueues'})"
            for d, t, _ in pids[1:]
        )
        problems.append(
            Problem(
                f"{root.name} does not exist; opened {chosen.name}, one folder per process "
                f"(AppendPid)" + (f"; the others: {others}" if others else "")
            )
        )
        root = chosen
    if not root.is_dir():
        raise NotACapture(f"{_shown(root)} is not a directory")
    logs = li.find_logs(root, problems)
    dumps = files.scan_dumps(root, None)
    problems.extend(getattr(dumps, "problems", []) or [])
    have_dumps = bool(dumps.pre or dumps.post or dumps.replay or dumps.setkernelarg)
    if not logs and not have_dumps:
        inside = _capture_folders(root)
        hint = f"; captures inside it: {', '.join(inside)}" if inside else ""
        why = "".join(f"; {p.where}: {p.message}" for p in problems if "clintercept_log" in p.where)
        raise CaptureError(
            f"{root} contains no readable clintercept_log.txt and no dump folders{why}{hint}"
        )
    log: li.LogIndex | None = None
    if logs:
        if len(logs) > 1:
            problems.append(Problem(f"{len(logs)} call logs found; using {logs[0].name}"))
        try:
            log = li.build_index(logs[0], progress, cancel)
        except li.IndexCancelled:
            raise
        except CaptureError as e:
            if not have_dumps:
                raise
            problems.append(Problem(f"{e}; using the dump files only", logs[0].name, None, "error"))
    if log is not None:
        problems.extend(log.problems)
        if len(log.numbers) == 0 and have_dumps:
            problems.append(
                Problem("the call log holds no enqueues; using the dump files", logs[0].name)
            )
            log.close()
            log = None
    if not logs:
        problems.append(Problem("no clintercept_log.txt: enqueues come from the dump files only"))
    programs, pprobs = files.scan_programs(root)
    problems.extend(pprobs)
    report = None
    rp = root / "clintercept_report.txt"
    rp_target = leaves(root, rp) if rp.is_symlink() else None
    if rp_target is not None:
        problems.append(Problem(outside_message(rp_target), rp.name))
    elif (rp_state := is_file(rp))[1] is not None:
        problems.append(Problem(f"the report: {rp_state[1]}", rp.name))
    elif rp_state[0]:
        report = files.parse_report(rp)
        if report is None:
            problems.append(Problem("the report could not be read", rp.name))
    cap = Capture(root, log, dumps, programs, report, problems, log_missing=not logs)
    if report is not None and log is not None:
        total = getattr(report, "total_enqueues", None)
        if total is not None and len(cap) and total != int(cap.numbers.max()) + 1:
            problems.append(
                Problem(
                    f"the report says {total} enqueues, the log ends at "
                    f"{int(cap.numbers.max()) + 1}",
                    rp.name,
                )
            )
    if progress is not None:
        progress(1.0)
    return cap
