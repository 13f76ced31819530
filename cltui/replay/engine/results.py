"""The device result of a run: each step's checks, loads, transfers and timing (pure: a
schedule the launches filled in, out a result)."""

from __future__ import annotations

from collections.abc import Collection

from .base import _replays, _stats
from .schedule import Schedule, profile
from .schema import Finding, LoadResult, StepResult, StepTiming, TransferResult

PASSING = ("equal", "within", "unchecked")  # check statuses that pass a step


def step_results(
    sched: Schedule,
    cannot: dict[int, list[Finding]] | None = None,
    made: Collection[str] | None = None,
) -> tuple[list[StepResult], bool]:
    """Every step's result, and whether all passed (``cannot``: the steps that were not
    launched, status ``cannot-run``, and why; ``made``: the memory objects made on the
    device, when some were not: their loads were not scheduled)."""
    cannot = cannot or {}
    results: list[StepResult] = []
    all_ok = True
    for i, st in enumerate(sched.steps):
        chk = sched.chks[i]
        ok = all(c["status"] in PASSING for c in chk)
        all_ok = all_ok and ok
        fired = iter(sched.fired[i])  # the loads of objects made here, in order
        loads: list[LoadResult] = [
            {
                "mem": ld["mem"],
                "why": ld.get("why", "input"),
                "note": ld.get("note", ""),
                "done": bool(next(fired, False)) if made is None or ld["mem"] in made else False,
            }
            for ld in st.get("loads", [])
        ]
        transfers: list[TransferResult] = [
            {
                "enqueue": t["enqueue"],
                "function": t.get("function", ""),
                "mem": t.get("mem"),
                "replayed": t.get("replayed"),
                "why": t.get("why", ""),
                "done": _replays(t),
            }
            for t in st.get("transfers", [])
        ]
        row: StepResult = {
            "enqueue": st["enqueue"],
            "kernel": st["kernel"],
            "status": "pass" if ok else "fail",
            "checks": chk,
            "prechecks": sched.pres[i],
            "loads": loads,
            "timing": step_timing(sched, i),
            "transfers": transfers,
        }
        if st.get("recovered"):
            row["recovered"] = True
        if i in cannot:
            row["status"] = "cannot-run"
            row["cannot_run"] = cannot[i]
        results.append(row)
    return results, all_ok


def step_timing(sched: Schedule, i: int) -> StepTiming:
    """Min / median / max of each stage of step ``i``'s launches."""
    prof = [profile(e) for e in sched.events[i]]
    return {
        "queued_to_submit": _stats([p[1] - p[0] for p in prof]),
        "submit_to_start": _stats([p[2] - p[1] for p in prof]),
        "start_to_end": _stats([p[3] - p[2] for p in prof]),
        "host_enqueue": _stats(sched.host_ns[i]),
        "samples": len(prof),
    }
