""":func:`recover`: compare the numbers the log holds with those the capture made, and rebuild
every lost number that a surviving file names (:mod:`.evidence`)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from cltui.capture.files.dumps import DumpIndex
from cltui.capture.files.report import Report
from cltui.capture.model import DeviceTime, EnqueueKind
from cltui.capture.recovery.evidence import Evidence, Finding
from cltui.capture.recovery.logfacts import LOST_DEVICE_TIMES, log_damage, named_device_times
from cltui.capture.recovery.result import SOURCE_TEXT, RecoveredEnqueue, Recovery
from cltui.capture.recovery.runs import minus, runs_total
from cltui.capture.replayfolder import read_worksizes

if TYPE_CHECKING:
    from cltui.capture.log.index import LogIndex

__all__ = ["recover"]

Worksizes = tuple[tuple[int, ...], tuple[int, ...] | None, tuple[int, ...]]


def _report_device(report: Report | None) -> str | None:
    """The one device the report's device tables name, else None."""
    devices = [t.device_name for t in report.devices if t.device_name] if report else []
    return devices[0] if len(set(devices)) == 1 else None


def _log_device(log: LogIndex | None) -> str | None:
    """The one device the log's queues name, else None."""
    if log is None:
        return None
    qdevs = {q.device for lst in log.queues.values() for q in lst if q.device}
    return next(iter(qdevs)) if len(qdevs) == 1 else None


def _report_calls(report: Report | None) -> dict[str, int]:
    """function -> calls from the report's host table (``clEnqueueNDRangeKernel( k )`` summed)."""
    out: dict[str, int] = {}
    rows = report.host.rows if report is not None and report.host is not None else []
    for r in rows:
        name = r.name.split("(", 1)[0].strip()
        if name.startswith("clEnqueue"):
            out[name] = out.get(name, 0) + r.calls
    return out


def _replayable(folder: Path, ws: Worksizes | None) -> bool:
    """A Replay folder with positive global sizes and a program to build (source or binary)."""
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


def _lost_runs(logged: npt.NDArray[np.int64], top: int) -> list[tuple[int, int]]:
    """The gaps between the numbers the log holds below ``top``, as runs (never one entry per
    number: a report or a file name may claim any count)."""
    held = logged[(logged >= 0) & (logged < top)]
    bounds = np.concatenate([np.array([-1], dtype=np.int64), held, np.array([top], np.int64)])
    gaps = np.flatnonzero(np.diff(bounds) > 1)
    return [(int(bounds[i]) + 1, int(bounds[i + 1]) - 1) for i in gaps.tolist()]


def _highest_named(dumps: DumpIndex) -> int:
    """The highest enqueue number any dump file names, -1 for none."""
    tables: Sequence[Mapping[int, object]] = (
        dumps.pre,
        dumps.post,
        dumps.replay,
        dumps.setkernelarg,
    )
    return max([max(t) for t in tables if len(t)] + [m.enqueue for m in dumps.mapunmap[-1:]] + [-1])


def _lost_device_times(
    log: LogIndex | None, evidence: Evidence
) -> dict[int, tuple[str, DeviceTime]]:
    """The log's Device Time lines for lost numbers, read only when the log index saw some."""
    if log is None or not any(LOST_DEVICE_TIMES in p.message for p in log.problems):
        return {}
    return named_device_times(Path(log.path), evidence.is_lost)


def _log_known(
    numbers: npt.NDArray[np.int64],
    kinds: npt.NDArray[np.uint8],
    kernel_ids: npt.NDArray[np.int32],
    kernel_names: Sequence[str],
) -> dict[int, tuple[EnqueueKind, str | None]]:
    """The log's own (kind, kernel) by number (last session wins)."""
    known: dict[int, tuple[EnqueueKind, str | None]] = {}
    for i, n in enumerate(numbers.tolist()):
        k = int(kernel_ids[i])
        known[int(n)] = (EnqueueKind(int(kinds[i])), kernel_names[k] if k >= 0 else None)
    return known


def _rebuild(
    n: int,
    f: Finding,
    replay: Mapping[int, Path],
    dtimes: Mapping[int, tuple[str, DeviceTime]],
) -> RecoveredEnqueue:
    """One recovered enqueue from its finding, with its Replay folder's work sizes."""
    gsz: tuple[int, ...] | None = None
    lsz: tuple[int, ...] | None = None
    off: tuple[int, ...] | None = None
    replayable = False
    folder = replay.get(n)
    if folder is not None and f.kind is EnqueueKind.KERNEL:
        ws = read_worksizes(folder)
        if ws is not None:
            gsz, lsz, off = ws[0], ws[1], (ws[2] if any(ws[2]) else None)
        replayable = _replayable(Path(folder), ws)
    return RecoveredEnqueue(
        number=n,
        kind=f.kind,
        function=f.function,
        kernel=f.kernel,
        sources=tuple(s for s in SOURCE_TEXT if s in f.sources),
        global_size=gsz or None,
        local_size=lsz,
        global_offset=off,
        device_time=dtimes[n][1] if n in dtimes else None,
        replayable=replayable,
    )


def _unknown_by_report(
    report: Report | None,
    unknown: Sequence[tuple[int, int]],
    function_ids: npt.NDArray[np.uint16],
    functions: Sequence[str],
    recovered: Mapping[int, RecoveredEnqueue],
) -> dict[str, int] | None:
    """function -> count of the numbers no file names, when the report's calls per function
    minus those the log and the files account for add up to exactly that many."""
    calls = _report_calls(report)
    if not unknown or not calls:
        return None
    seen: dict[str, int] = {}
    if len(function_ids):
        ids, counts = np.unique(function_ids, return_counts=True)
        for f, c in zip(ids.tolist(), counts.tolist(), strict=True):
            seen[functions[f]] = seen.get(functions[f], 0) + int(c)
    for r in recovered.values():
        seen[r.function] = seen.get(r.function, 0) + 1
    diff = {f: c - seen.get(f, 0) for f, c in calls.items() if c > seen.get(f, 0)}
    if sum(diff.values()) == runs_total(unknown):
        return dict(sorted(diff.items()))
    return None


def _log_state(
    log: LogIndex | None,
    logged: npt.NDArray[np.int64],
    lost: Sequence[tuple[int, int]],
    log_missing: bool,
) -> tuple[str, str]:
    """(state, why): what happened to the log."""
    if log_missing:
        return "missing", "there is no clintercept_log.txt"
    if log is None or not len(logged):
        return "no enqueues", "it holds no enqueue lines"
    state, why = log_damage(Path(log.path), log)
    if why.startswith("files name enqueues past the end"):
        return "intact", (
            "files name enqueues past the end of the log: the log is truncated or the "
            "dumps are stale files of an earlier run"
        )
    if lost[0][0] > int(logged[-1]):
        why += "; files name enqueues past the end of the log"
    return state, why


def recover(
    log: LogIndex | None,
    dumps: DumpIndex,
    report: Report | None,
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
    total = report.total_enqueues if report is not None else None
    logged = np.unique(numbers) if len(numbers) else np.zeros(0, dtype=np.int64)
    top = max(int(logged[-1]) + 1 if len(logged) else 0, _highest_named(dumps) + 1, total or 0)
    lost = _lost_runs(logged, top) if top > 0 else []
    if not lost:
        return None
    evidence = Evidence(lost)
    evidence.add_memdumps(dumps.pre, dumps.post)
    evidence.add_replay_folders(dumps.replay, dumps.replay_kernels)
    evidence.add_mapunmap(dumps.mapunmap)
    dtimes = _lost_device_times(log, evidence)
    evidence.add_device_times(dtimes)
    known = _log_known(numbers, kinds, kernel_ids, kernel_names)
    evidence.add_setkernelarg(dumps.setkernelarg, known)
    out = {n: _rebuild(n, evidence.found[n], dumps.replay, dtimes) for n in sorted(evidence.found)}
    unknown = minus(lost, out)
    state, why = _log_state(log, logged, lost, log_missing)
    return Recovery(
        state=state,
        why=why,
        expected=top,
        report_total=total,
        lost=lost,
        enqueues=out,
        unknown=unknown,
        unknown_by_report=_unknown_by_report(report, unknown, function_ids, functions, out),
        device=_report_device(report) or _log_device(log),
        problems=evidence.problems,
    )
