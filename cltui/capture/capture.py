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
from cltui.capture.cltypes import CType
from cltui.capture.confine import is_file, leaves, outside_message
from cltui.capture.decode import decode_enqueue
from cltui.capture.model import (
    CAPTURE_HOLDS,
    CaptureError,
    DeviceTime,
    Enqueue,
    EnqueueKind,
    EnqueueRow,
    NotACapture,
    Problem,
    Program,
)
from cltui.capture.recovery import RecoveredEnqueue, Recovery, recover
from cltui.capture.replayfolder import read_replay_folder
from cltui.capture.summary import capture_info

ProgressFn = Callable[[float], None]  # fraction 0..1, called from the indexing thread

_LRU_SIZE = 256
_SIZES_RE = re.compile(
    r"(?:global_work_offset = < ([^>]*) >, )?global_work_size = < ([^>]*) >"
    r"(?:, local_work_size = < ([^>]*) >)?"
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

    def _replay(self, number: int) -> Any:
        if number in self._replay_cache:
            return self._replay_cache[number]
        folder = (getattr(self.dumps, "replay", {}) or {}).get(number)
        rf = None
        if folder is not None:
            rf = read_replay_folder(Path(folder), self.path)
        self._replay_cache[number] = rf
        return rf


    # ------------------------------------------------------------------ info
    def info(self) -> dict[str, Any]:
        """Everything ``cltui info`` shows (:func:`cltui.capture.summary.capture_info`)."""
        return capture_info(self)

    def close(self) -> None:
        if self.log is not None:
            self.log.close()


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
