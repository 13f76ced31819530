"""The summary of a capture that ``cltui info`` prints (and its ``--json``): enqueue kinds,
kernels and their device times, devices, programs, dumps, recovery and problems."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

import numpy as np

from cltui.capture.model import EnqueueKind

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.capture.files.report import Report
    from cltui.capture.recovery.result import RecoveryJSON


class KernelInfo(TypedDict):
    """Launches of one kernel: how many, how many timed, their device time in all."""

    count: int
    timed: int
    device_ns: int


class ProgramInfo(TypedDict):
    number: int
    hash: str
    options: str
    source: str | None


class DataInfo(TypedDict):
    """What the dump folders hold."""

    pre_dumps: int
    post_dumps: int
    pre_enqueues: int
    post_enqueues: int
    replay_folders: int
    setkernelarg_dumps: int
    hashes_only: bool


class ReportRowInfo(TypedDict):
    calls: int
    time_ns: int


class ReportDeviceInfo(TypedDict):
    device: str | None
    total_ns: int | None
    rows: dict[str, ReportRowInfo]


class ReportInfo(TypedDict):
    """What ``clintercept_report.txt`` says."""

    total_enqueues: int | None
    host_total_ns: int | None
    host_rows: int
    devices: list[ReportDeviceInfo]
    warnings: list[str]


class CaptureInfo(TypedDict):
    """The object of ``cltui info --json`` (docs/cli-json.md)."""

    path: str
    log: str | None
    enqueues: int
    first: int | None
    last: int | None
    kinds: dict[str, int]
    kernels: dict[str, KernelInfo]
    device_times: int
    programs: list[ProgramInfo]
    devices: list[str]
    controls: dict[str, str]
    data: DataInfo
    report: ReportInfo | None
    sessions: int
    recovered: int
    recovery: RecoveryJSON | None
    problems: int | list[str]  # a count here; ``cltui info`` puts the problems' lines


def capture_info(cap: Capture) -> CaptureInfo:
    """JSON-able summary used by ``cltui info``."""
    n = len(cap)
    kinds = {
        EnqueueKind(int(k)).label: int(c)
        for k, c in zip(*np.unique(cap.kinds, return_counts=True), strict=True)
    }
    return {
        "path": str(cap.path),
        "log": str(cap.log_path) if cap.log_path else None,
        "enqueues": n,
        "first": int(cap.numbers[0]) if n else None,
        "last": int(cap.numbers[-1]) if n else None,
        "kinds": kinds,
        "kernels": _kernels(cap),
        "device_times": int((cap.device_times[:, 0] >= 0).sum()) if n else 0,
        "programs": [
            {
                "number": p.number,
                "hash": p.hash,
                "options": p.options,
                "source": str(p.source_path) if p.source_path else None,
            }
            for p in cap._programs
        ],
        "devices": _devices(cap),
        "controls": dict(cap.controls),
        "data": _data(cap),
        "report": _report(cap.report) if cap.report is not None else None,
        "sessions": len(cap.log.sessions) if cap.log else 0,
        "recovered": int(cap.recovered.sum()),
        "recovery": cap.recovery.to_json() if cap.recovery is not None else None,
        "problems": len(cap.problems),
    }


def _kernels(cap: Capture) -> dict[str, KernelInfo]:
    """Launches, timed launches and device time per kernel name, in one vectorised pass."""
    per_kernel: dict[str, KernelInfo] = {}
    if not len(cap):
        return per_kernel
    kid = cap.kernel_ids
    valid = kid >= 0
    counts = np.bincount(kid[valid], minlength=len(cap.kernel_names))
    dt = cap.device_times[:, 2]
    have = valid & (dt >= 0)
    tot = np.bincount(
        kid[have], weights=dt[have].astype(np.float64), minlength=len(cap.kernel_names)
    )
    timed = np.bincount(kid[have], minlength=len(cap.kernel_names))
    for i, name in enumerate(cap.kernel_names):
        entry = per_kernel.setdefault(name, {"count": 0, "timed": 0, "device_ns": 0})
        entry["count"] += int(counts[i])
        entry["timed"] += int(timed[i])
        entry["device_ns"] += int(tot[i])
    return per_kernel


def _devices(cap: Capture) -> list[str]:
    """The devices the log's queues name; the report's and recovery's when the queues'
    lines were lost (or never written)."""
    named = {q.device for lst in (cap.log.queues.values() if cap.log else []) for q in lst}
    if not named or cap.recovery is not None:
        # the queues' lines were lost (or never written): the report and recovery name it
        for t in cap.report.devices if cap.report is not None else []:
            named.add(t.device_name)
        if cap.recovery is not None:
            named.add(cap.recovery.device)
    return sorted(d for d in named if d)


def _data(cap: Capture) -> DataInfo:
    d = cap.dumps
    return {
        "pre_dumps": sum(len(v) for v in d.pre.values()),
        "post_dumps": sum(len(v) for v in d.post.values()),
        "pre_enqueues": len(d.pre),
        "post_enqueues": len(d.post),
        "replay_folders": len(d.replay),
        "setkernelarg_dumps": sum(len(v) for v in d.setkernelarg.values()),
        "hashes_only": bool(cap.hashes_only.any() or d.buffer_hashes or d.image_hashes),
    }


def _report(rep: Report) -> ReportInfo:
    host = rep.host
    return {
        "total_enqueues": rep.total_enqueues,
        "host_total_ns": host.total_time_ns if host else None,
        "host_rows": len(host.rows) if host else 0,
        "devices": [
            {
                "device": t.device_name,
                "total_ns": t.total_time_ns,
                "rows": {r.name: {"calls": r.calls, "time_ns": r.time_ns} for r in t.rows},
            }
            for t in rep.devices
        ],
        "warnings": list(rep.warnings),
    }
