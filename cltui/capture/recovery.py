"""Rebuilding the enqueues that a damaged or missing call log lost, from the files that survived.

Besides the call log the layer writes files that name enqueues by their EnqueueCounter:

* memDump Pre/Post dumps ``Enqueue_<E>_Kernel_<k>_Arg_...`` (kernel enqueues, capture-format §3.1);
* Replay folders ``Replay/Enqueue_<E>_<k>`` (kernel enqueues with arguments, work sizes, program);
* map/unmap dumps ``Map_/Unmap_..._Enqueue_<E>`` (the map or unmap enqueue itself, §3.5);
* SetKernelArg dumps ``SetKernelArg_<E>_Kernel_<k>_Arg_<i>`` (§4): ``<E>`` is the counter when
  the argument was set, i.e. the number of the *next* enqueue, which is the kernel launch unless
  the program enqueued something else in between;
* ``Device Time for <name> (enqueue <E>)`` lines, which the layer prints when an event completes,
  so they often survive after the part of the log that a child process overwrote with NULs;
* the report: ``Total Enqueues`` and the calls per function, the device name.

:func:`recover` compares the numbers the log holds with those the capture made (the report's
total, else the highest number any file names) and rebuilds every lost number that a file
names.  What no file names stays lost; the report's counts per function say what those were
when they add up.  Pure: stdlib and numpy only, time linear in the number of files and in the
log's size (one pass over the log, only when it printed Device Time lines for lost enqueues).
"""

from __future__ import annotations

import bisect
import mmap
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from cltui.capture.model import DeviceTime, EnqueueKind, Problem
from cltui.capture.replayfolder import read_worksizes

__all__ = [
    "SOURCE_TEXT",
    "RecoveredEnqueue",
    "Recovery",
    "range_text",
    "ranges_of",
    "recover",
    "sources_text",
]

KERNEL_FUNCTION = "clEnqueueNDRangeKernel"

# where a recovered enqueue's facts come from (JSON keys), and how to say it
SOURCE_TEXT: dict[str, str] = {
    "memdump": "memDump Pre/Post dumps",
    "replay": "a Replay/ folder",
    "setkernelarg": "SetKernelArg dumps",
    "device_time": "a Device Time line of the log",
    "mapunmap": "a map/unmap dump",
}

_DEVTIME_NAMED_RE = re.compile(
    rb"Device Time for ([^\n]{1,4096}?) \(enqueue (\d{1,18})\) = (\d{1,18}) ns \(queued -> "
    rb"submit\), (\d{1,18}) ns \(submit -> start\), (\d{1,18}) ns \(start -> end\)"
)
_NUL_RUN_RE = re.compile(rb"\x00+")
_LOST_DEVICE_TIMES = "Device Time lines name enqueues"  # the log index's problem about such lines


@dataclass(frozen=True, slots=True)
class RecoveredEnqueue:
    """One enqueue the log lost, rebuilt from the files that name it."""

    number: int
    kind: EnqueueKind
    function: str  # "clEnqueueNDRangeKernel", "clEnqueueReadBuffer", ...
    kernel: str | None  # short kernel name (kernels only)
    sources: tuple[str, ...]  # keys of SOURCE_TEXT, most reliable first
    global_size: tuple[int, ...] | None = None  # Replay/worksizes.txt
    local_size: tuple[int, ...] | None = None
    global_offset: tuple[int, ...] | None = None
    device_time: DeviceTime | None = None
    replayable: bool = False  # a Replay folder with work sizes and a program to build

    @property
    def sources_text(self) -> str:
        return sources_text(self.sources)


def sources_text(sources: Sequence[str]) -> str:
    """``("memdump", "setkernelarg")`` -> ``memDump Pre/Post dumps and SetKernelArg dumps``."""
    words = [SOURCE_TEXT.get(s, s) for s in sources]
    if len(words) <= 1:
        return "".join(words) or "dump files"
    return ", ".join(words[:-1]) + " and " + words[-1]


def _in_runs(runs: Sequence[tuple[int, int]], number: int) -> bool:
    i = bisect.bisect_right(runs, (number, 1 << 62)) - 1
    return i >= 0 and runs[i][0] <= number <= runs[i][1]


def _minus(runs: Sequence[tuple[int, int]], taken: Iterable[int]) -> list[tuple[int, int]]:
    """``runs`` without the numbers ``taken`` (all of which lie inside ``runs``)."""
    out: list[tuple[int, int]] = []
    cuts = sorted(set(taken))
    j = 0
    for a, b in runs:
        start = a
        while j < len(cuts) and cuts[j] <= b:
            c = cuts[j]
            if c >= start:
                if c > start:
                    out.append((start, c - 1))
                start = c + 1
            j += 1
        if start <= b:
            out.append((start, b))
    return out


def ranges_of(numbers: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted numbers as inclusive (first, last) runs."""
    out: list[tuple[int, int]] = []
    for n in sorted(set(numbers)):
        if out and n == out[-1][1] + 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out


def range_text(ranges: Sequence[tuple[int, int]], limit: int = 12) -> str:
    """``[(0, 1), (3, 3), (5, 9)]`` -> ``0-1,3,5-9`` (the first ``limit`` runs, then ``,...``)."""
    parts = [str(a) if a == b else f"{a}-{b}" for a, b in ranges[:limit]]
    if len(ranges) > limit:
        parts.append("...")
    return ",".join(parts)


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


@dataclass
class Recovery:
    """What the log lost and what the other files gave back."""

    state: str  # the log: "damaged" | "missing" | "no enqueues" | "intact" (stale files?)
    why: str  # one clause: how the log lost them
    expected: int  # enqueues the capture made: the report's total, else highest number + 1
    report_total: int | None
    lost: list[tuple[int, int]]  # numbers not in the log, as runs
    enqueues: dict[int, RecoveredEnqueue]  # the recovered ones, by number
    unknown: list[tuple[int, int]]  # lost numbers that no file names, as runs
    unknown_by_report: dict[str, int] | None  # function -> count, when the report's counts add up
    device: str | None  # the one device the report (or the log) names
    problems: list[Problem] = field(default_factory=list)

    @property
    def lost_count(self) -> int:
        return sum(b - a + 1 for a, b in self.lost)

    @property
    def unknown_count(self) -> int:
        return sum(b - a + 1 for a, b in self.unknown)

    def is_lost(self, number: int) -> bool:
        return _in_runs(self.lost, number)

    def is_unknown(self, number: int) -> bool:
        """Lost, and no file names it."""
        return _in_runs(self.unknown, number)

    def unknown_runs(self, first: int, last: int) -> list[tuple[int, int]]:
        """The runs of lost numbers no file names, clipped to ``first..last``."""
        out: list[tuple[int, int]] = []
        i = max(0, bisect.bisect_right(self.unknown, (first, 1 << 62)) - 1)
        while i < len(self.unknown) and self.unknown[i][0] <= last:
            a, b = max(self.unknown[i][0], first), min(self.unknown[i][1], last)
            if a <= b:
                out.append((a, b))
            i += 1
        return out

    def unknown_between(self, first: int, last: int, limit: int = 1000) -> list[int]:
        """The lost numbers no file names in ``first..last`` (at most ``limit`` of them)."""
        out: list[int] = []
        i = max(0, bisect.bisect_right(self.unknown, (first, 1 << 62)) - 1)
        while i < len(self.unknown) and len(out) < limit:
            a, b = self.unknown[i]
            if a > last:
                break
            n = max(a, first)
            while n <= min(b, last) and len(out) < limit:
                out.append(n)
                n += 1
            i += 1
        return out

    @property
    def replayable(self) -> list[int]:
        return sorted(n for n, r in self.enqueues.items() if r.replayable)

    def with_source(self, source: str) -> list[int]:
        return sorted(n for n, r in self.enqueues.items() if source in r.sources)

    def kinds(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.enqueues.values():
            out[r.kind.label] = out.get(r.kind.label, 0) + 1
        return dict(sorted(out.items()))

    def line(self) -> str:
        """One line: what is lost, what was recovered and from what, what stays lost."""
        lost = range_text(self.lost)
        word = "enqueue" if self.lost_count == 1 else "enqueues"
        parts = [f"{word} {lost} lost with the log ({self.why})"]
        kernels = sorted(n for n, r in self.enqueues.items() if r.kind is EnqueueKind.KERNEL)
        others = sorted(n for n, r in self.enqueues.items() if r.kind is not EnqueueKind.KERNEL)
        if self.enqueues:
            what: list[str] = []
            if kernels:
                detail: list[str] = []
                dumped = [n for n in kernels if "memdump" in self.enqueues[n].sources]
                if dumped:
                    detail.append(f"{len(dumped)} with Pre/Post dumps, {dumped[0]}-{dumped[-1]}")
                replayable = self.replayable
                if replayable:
                    detail.append(
                        f"{len(replayable)} replayable from Replay/ folders, "
                        f"{range_text(ranges_of(replayable), 6)}"
                    )
                rest = len(kernels) - len(set(dumped) | set(replayable))
                if rest and (dumped or replayable):
                    detail.append(f"{rest} named only by SetKernelArg dumps or Device Time lines")
                more = f" ({'; '.join(detail)})" if detail else ""
                what.append(_count(len(kernels), "kernel") + more)
            if others:
                by_fn: dict[str, int] = {}
                for n in others:
                    fn = self.enqueues[n].function.removeprefix("clEnqueue")
                    by_fn[fn] = by_fn.get(fn, 0) + 1
                what.append(", ".join(f"{c} {fn}" for fn, c in sorted(by_fn.items())))
            parts.append("recovered from the files that survived: " + ", ".join(what))
        if self.unknown:
            unknown = range_text(self.unknown, 10)
            text = f"{self.unknown_count} named by no file ({unknown}"
            if self.unknown_by_report:
                counts = ", ".join(
                    f"{c} {fn.removeprefix('clEnqueue')}"
                    for fn, c in sorted(self.unknown_by_report.items(), key=lambda t: (-t[1], t[0]))
                )
                text += f"; by the report's counts: {counts}"
            parts.append(text + ")")
        if self.report_total is not None:
            parts.append(f"the report counts {self.report_total}")
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """The ``recovery`` object of ``cltui info --json`` (docs/cli-json.md)."""
        rec = self.enqueues
        return {
            "line": self.line(),
            "log": self.state,
            "why": self.why,
            "lost": [list(r) for r in self.lost],
            "lost_count": self.lost_count,
            "recovered": len(rec),
            "recovered_ranges": [list(r) for r in ranges_of(rec)],
            "recovered_kinds": self.kinds(),
            "from": {s: len(self.with_source(s)) for s in SOURCE_TEXT},
            "with_dumps": [list(r) for r in ranges_of(self.with_source("memdump"))],
            "replayable": [list(r) for r in ranges_of(self.replayable)],
            "replayable_count": len(self.replayable),
            "not_recovered": [list(r) for r in self.unknown],
            "not_recovered_count": self.unknown_count,
            "not_recovered_by_report": self.unknown_by_report,
            "report_total": self.report_total,
            "device": self.device,
        }


# ---------------------------------------------------------------------------------------------


def _report_devices(report: Any) -> list[str]:
    return [t.device_name for t in getattr(report, "devices", None) or [] if t.device_name]


def _report_calls(report: Any) -> dict[str, int]:
    """function -> calls from the report's host table (``clEnqueueNDRangeKernel( k )`` summed)."""
    host = getattr(report, "host", None)
    out: dict[str, int] = {}
    for r in getattr(host, "rows", None) or []:
        name = r.name.split("(", 1)[0].strip()
        if name.startswith("clEnqueue"):
            out[name] = out.get(name, 0) + r.calls
    return out


def _replayable(folder: Path, ws: Any) -> bool:
    if ws is None or not ws[0] or min(ws[0]) <= 0:
        return False
    try:
        with os.scandir(folder) as it:
            for entry in it:
                name = entry.name
                if name == "kernel.cl":
                    if entry.stat().st_size > 1:  # a lone NUL: a program from binaries
                        return True
                elif name == "kernel.spv" or (
                    name.startswith("DeviceBinary") and name.endswith(".bin")
                ):
                    return True
    except OSError:
        return False
    return False


def _log_damage(path: Path, log: Any) -> tuple[str, str]:
    """(state, why) of a log that lost enqueues: NUL runs, a lost start, a lost end."""
    runs = 0
    first = -1
    longest = 0
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            at = mm.find(b"\x00")
            while at >= 0:
                m = _NUL_RUN_RE.match(mm, at)
                end = m.end() if m is not None else at + 1
                runs += 1
                if first < 0:
                    first = at
                longest = max(longest, end - at)
                at = mm.find(b"\x00", end)
    except (OSError, ValueError):
        pass
    clauses: list[str] = []
    if runs:
        what = "a NUL run" if runs == 1 else f"{runs} NUL runs (the longest"
        clauses.append(
            f"{what} of {longest:,} bytes at byte {first:,}"
            + (")" if runs > 1 else "")
            + " overwrote it: a child process, such as PoCL's linker, probably truncated it"
        )
    if getattr(log, "leading_fragment", False) and not runs:
        clauses.append("its start is missing")
    sessions = getattr(log, "sessions", []) or []
    if getattr(log, "shutdowns", 1) < max(1, len(sessions)):
        clauses.append("it ends early, with no 'shutting down' footer")
    if not clauses:
        return "damaged", "files name enqueues past the end of the log or between its enqueues"
    return "damaged", "; ".join(clauses)


def _named_device_times(
    path: Path, lost: Callable[[int], bool]
) -> dict[int, tuple[str, DeviceTime]]:
    """``Device Time for <name> (enqueue N)`` lines of the log whose N was lost (last wins)."""
    out: dict[int, tuple[str, DeviceTime]] = {}
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            for m in _DEVTIME_NAMED_RE.finditer(mm):
                if max(len(x) for x in m.group(2, 3, 4, 5)) > 19:  # past int64: not a line
                    continue
                n = int(m.group(2))
                if lost(n):
                    name = m.group(1).replace(b"\x00", b"").decode("utf-8", "replace").strip()
                    q, s, e = (int(x) for x in m.group(3, 4, 5))
                    out[n] = (name, DeviceTime(q, s, e))
    except (OSError, ValueError):
        return {}
    return out


def _kind_of(function: str) -> EnqueueKind:
    from cltui.capture.log import kind_of  # local: the log index is large; recovery is rare

    return kind_of(function)


def recover(
    log: Any,
    dumps: Any,
    report: Any,
    numbers: npt.NDArray[np.int64],
    kinds: npt.NDArray[np.uint8],
    kernel_ids: npt.NDArray[np.int32],
    kernel_names: Sequence[str],
    function_ids: npt.NDArray[np.uint16],
    functions: Sequence[str],
    *,
    log_missing: bool,
) -> Recovery | None:
    """What the log lost and what the dump files give back; None when it lost nothing.

    ``numbers`` ... ``functions`` are the log's index arrays (empty without a log)."""
    pre: Mapping[int, Any] = getattr(dumps, "pre", None) or {}
    post: Mapping[int, Any] = getattr(dumps, "post", None) or {}
    replay: Mapping[int, Path] = getattr(dumps, "replay", None) or {}
    replay_kernels: Mapping[int, str] = getattr(dumps, "replay_kernels", None) or {}
    ska: Mapping[int, Mapping[tuple[str, int], Path]] = getattr(dumps, "setkernelarg", None) or {}
    mapunmap: Sequence[Any] = getattr(dumps, "mapunmap", None) or []
    total = getattr(report, "total_enqueues", None) if report is not None else None
    logged = np.unique(numbers) if len(numbers) else np.zeros(0, dtype=np.int64)
    named_max = max(
        [max(t) for t in (pre, post, replay, ska) if len(t)]
        + [m.enqueue for m in mapunmap[-1:]]
        + [-1]
    )
    top = max(int(logged[-1]) + 1 if len(logged) else 0, named_max + 1, total or 0)
    if top <= 0:
        return None
    # the gaps between the numbers the log holds, as runs (never one entry per number: a
    # report or a file name may claim any count)
    held = logged[(logged >= 0) & (logged < top)]
    bounds = np.concatenate([np.array([-1], dtype=np.int64), held, np.array([top], np.int64)])
    gaps = np.flatnonzero(np.diff(bounds) > 1)
    lost = [(int(bounds[i]) + 1, int(bounds[i + 1]) - 1) for i in gaps.tolist()]
    if not lost:
        return None

    def is_lost(n: int) -> bool:
        return _in_runs(lost, n)
    problems: list[Problem] = []

    # the log's own facts, for the SetKernelArg attribution below (last session wins)
    known: dict[int, tuple[EnqueueKind, str | None]] = {}
    # certain facts about lost numbers: (kind, function, kernel, sources)
    found: dict[int, tuple[EnqueueKind, str, str | None, list[str]]] = {}

    def name_kernel(n: int, kname: str, source: str) -> None:
        if not is_lost(n):
            return
        cur = found.get(n)
        if cur is None:
            found[n] = (EnqueueKind.KERNEL, KERNEL_FUNCTION, kname, [source])
        elif cur[0] is EnqueueKind.KERNEL and cur[2] == kname:
            if source not in cur[3]:
                cur[3].append(source)
        else:
            was = cur[2] or cur[1]
            problems.append(
                Problem(
                    f"{SOURCE_TEXT[source]} name kernel {kname!r}, {', '.join(cur[3])} "
                    f"named {was!r}; kept {was!r}",
                    enqueue=n,
                )
            )

    for table in (pre, post):
        kernel_of = getattr(table, "kernel", None)
        for n in table:
            if is_lost(n):
                k = kernel_of(n) if kernel_of is not None else table[n][0].kernel
                if k is not None:
                    name_kernel(int(n), k, "memdump")
    for n in replay:
        if is_lost(n):
            name_kernel(int(n), replay_kernels.get(n, ""), "replay")
    for m in mapunmap:
        n = int(m.enqueue)
        if is_lost(n) and m.kind in ("map", "unmap") and n not in found:
            fn = "clEnqueueMapBuffer" if m.kind == "map" else "clEnqueueUnmapMemObject"
            found[n] = (_kind_of(fn), fn, None, ["mapunmap"])
    dtimes: dict[int, tuple[str, DeviceTime]] = {}
    log_path = getattr(log, "path", None)
    if (
        log is not None
        and log_path is not None
        and any(_LOST_DEVICE_TIMES in p.message for p in getattr(log, "problems", []))
    ):
        dtimes = _named_device_times(Path(log_path), is_lost)
    for n, (text, _dt) in sorted(dtimes.items()):
        # "clEnqueueUnmapMemObject( RW )", "clEnqueueReadBuffer( blocking )": the function
        name = text.split("(", 1)[0].strip() if text.startswith("clEnqueue") else text
        if name.startswith("clEnqueue"):
            if n not in found:
                found[n] = (_kind_of(name), name, None, ["device_time"])
            elif found[n][1] != name:
                problems.append(
                    Problem(
                        f"a Device Time line names {name}, {', '.join(found[n][3])} "
                        f"named {found[n][2] or found[n][1]!r}; kept the latter",
                        enqueue=n,
                    )
                )
        else:
            name_kernel(n, name, "device_time")

    # SetKernelArg groups: the counter at set time is the launch's number unless the next
    # event (a known enqueue or another group) is the same kernel's launch completing them
    for i, n in enumerate(numbers.tolist()):
        k = int(kernel_ids[i])
        known[int(n)] = (EnqueueKind(int(kinds[i])), kernel_names[k] if k >= 0 else None)
    for n, (kd, _fn, kn, _src) in found.items():
        known[n] = (kd, kn)
    events = sorted(set(known) | {int(x) for x in ska})
    for n in sorted(int(x) for x in ska):
        if not is_lost(n):
            continue
        group = ska[n]
        names = sorted({k for k, _ in group})
        if n in found:
            if found[n][0] is EnqueueKind.KERNEL and found[n][2] in names:
                name_kernel(n, found[n][2] or "", "setkernelarg")
            continue  # set before another enqueue: they belong to a later launch
        j = bisect.bisect_right(events, n)
        nxt = events[j] if j < len(events) else None
        for kname in names:
            mine = {i for k, i in group if k == kname}
            merged = False
            if nxt is not None:
                later = ska.get(nxt)
                theirs = {i for k, i in later if k == kname} if later else set()
                if theirs:
                    merged = not theirs <= mine  # the later call sets what this one lacked
                elif known.get(nxt) == (EnqueueKind.KERNEL, kname):
                    merged = True  # launched later without setting its arguments again
            if not merged and n not in found:
                name_kernel(n, kname, "setkernelarg")

    devices = _report_devices(report)
    device = devices[0] if len(set(devices)) == 1 else None
    if device is None and log is not None:
        qdevs = {
            q.device for lst in (getattr(log, "queues", {}) or {}).values() for q in lst if q.device
        }
        if len(qdevs) == 1:
            device = next(iter(qdevs))

    out: dict[int, RecoveredEnqueue] = {}
    for n in sorted(found):
        kd, fn, kn, src = found[n]
        gsz = lsz = off = None
        replayable = False
        folder = replay.get(n)
        if folder is not None and kd is EnqueueKind.KERNEL:
            ws = read_worksizes(folder)
            if ws is not None:
                gsz, lsz, off = ws[0], ws[1], (ws[2] if any(ws[2]) else None)
            replayable = _replayable(Path(folder), ws)
        order = [s for s in SOURCE_TEXT if s in src]
        out[n] = RecoveredEnqueue(
            number=n,
            kind=kd,
            function=fn,
            kernel=kn,
            sources=tuple(order),
            global_size=gsz or None,
            local_size=lsz,
            global_offset=off,
            device_time=dtimes[n][1] if n in dtimes else None,
            replayable=replayable,
        )
    unknown = _minus(lost, out)
    unknown_count = sum(b - a + 1 for a, b in unknown)
    unknown_by_report: dict[str, int] | None = None
    calls = _report_calls(report)
    if unknown and calls:
        seen: dict[str, int] = {}
        if len(function_ids):
            ids, counts = np.unique(function_ids, return_counts=True)
            for f, c in zip(ids.tolist(), counts.tolist(), strict=True):
                seen[functions[f]] = seen.get(functions[f], 0) + int(c)
        for r in out.values():
            seen[r.function] = seen.get(r.function, 0) + 1
        diff = {f: c - seen.get(f, 0) for f, c in calls.items() if c > seen.get(f, 0)}
        if sum(diff.values()) == unknown_count:
            unknown_by_report = dict(sorted(diff.items()))
    if log_missing:
        state, why = "missing", "there is no clintercept_log.txt"
    elif log is None or not len(numbers):
        state, why = "no enqueues", "it holds no enqueue lines"
    else:
        state, why = _log_damage(Path(log_path), log) if log_path is not None else ("damaged", "")
        if why.startswith("files name enqueues past the end"):
            state = "intact"
            why = (
                "files name enqueues past the end of the log: the log is truncated or the "
                "dumps are stale files of an earlier run"
            )
        elif lost[0][0] > int(logged[-1]):
            why += "; files name enqueues past the end of the log"
    return Recovery(
        state=state,
        why=why,
        expected=top,
        report_total=total,
        lost=lost,
        enqueues=out,
        unknown=unknown,
        unknown_by_report=unknown_by_report,
        device=device,
        problems=problems,
    )
