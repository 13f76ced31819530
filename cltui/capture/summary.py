"""The summary of a capture that ``cltui info`` prints (and its ``--json``): enqueue kinds,
kernels and their device times, devices, programs, dumps, recovery and problems."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from cltui.capture.model import EnqueueKind

if TYPE_CHECKING:
    from cltui.capture.capture import Capture


def capture_info(cap: Capture) -> dict[str, Any]:
    """JSON-able summary used by ``cltui info``."""
    n = len(cap)
    kinds = {
        EnqueueKind(int(k)).label: int(c)
        for k, c in zip(*np.unique(cap.kinds, return_counts=True), strict=True)
    }
    per_kernel: dict[str, dict[str, Any]] = {}
    if n:
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
    d = cap.dumps
    pre = getattr(d, "pre", {}) or {}
    post = getattr(d, "post", {}) or {}
    ska = getattr(d, "setkernelarg", {}) or {}
    named = {q.device for lst in (cap.log.queues.values() if cap.log else []) for q in lst}
    if not named or cap.recovery is not None:
        # the queues' lines were lost (or never written): the report and recovery name it
        for t in getattr(cap.report, "devices", None) or []:
            named.add(t.device_name)
        if cap.recovery is not None:
            named.add(cap.recovery.device)
    devices = sorted(d for d in named if d)
    report: dict[str, Any] | None = None
    if cap.report is not None:
        rep = cap.report
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
        "path": str(cap.path),
        "log": str(cap.log_path) if cap.log_path else None,
        "enqueues": n,
        "first": int(cap.numbers[0]) if n else None,
        "last": int(cap.numbers[-1]) if n else None,
        "kinds": kinds,
        "kernels": per_kernel,
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
        "devices": devices,
        "controls": dict(cap.controls),
        "data": {
            "pre_dumps": sum(len(v) for v in pre.values()),
            "post_dumps": sum(len(v) for v in post.values()),
            "pre_enqueues": len(pre),
            "post_enqueues": len(post),
            "replay_folders": len(getattr(d, "replay", {}) or {}),
            "setkernelarg_dumps": sum(len(v) for v in ska.values()),
            "hashes_only": bool(
                cap.hashes_only.any()
                or getattr(d, "buffer_hashes", False)
                or getattr(d, "image_hashes", False)
            ),
        },
        "report": report,
        "sessions": len(cap.log.sessions) if cap.log else 0,
        "recovered": int(cap.recovered.sum()),
        "recovery": cap.recovery.to_json() if cap.recovery is not None else None,
        "problems": len(cap.problems),
    }
