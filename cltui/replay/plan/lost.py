"""Enqueue numbers inside a range that the log lost and no file names: the plan's ``lost``
runs and note, and the text an empty range's error adds."""

from __future__ import annotations

from cltui.capture.capture import Capture
from cltui.replay.engine.schema import LostRun

_WHY = "lost with the log; no file names it"


def lost_runs(cap: Capture, first: int, last: int) -> tuple[list[LostRun], str | None]:
    """The runs of numbers in ``first..last`` that the log lost and no file names (not
    replayed), and the plan's note about them (None when there are none)."""
    rec = cap.recovery
    if rec is None:
        return [], None
    runs = rec.unknown_runs(first, last)
    if not runs:
        return [], None
    by = rec.unknown_by_report
    kinds = (
        f"; by the report's counts the {rec.unknown_count} such enqueues of the capture are "
        "not kernels ("
        + ", ".join(f"{c} {f.removeprefix('clEnqueue')}" for f, c in sorted(by.items()))
        + ")"
        if by and "clEnqueueNDRangeKernel" not in by
        else ""
    )
    out: list[LostRun] = [{"first": a, "last": b, "count": b - a + 1, "why": _WHY} for a, b in runs]
    count = sum(r["count"] for r in out)
    note = (
        f"enqueue{'s' if count > 1 else ''} {_runs_text(runs)} lost with the log and "
        f"named by no file{kinds}: not replayed, and what they did to the range's memory "
        "objects is known only where a Pre dump shows it"
    )
    return out, note


def lost_text(cap: Capture, first: int | None, last: int | None) -> str:
    """``: enqueues 2-13 were lost with the log ...`` when the log lost numbers of the range."""
    rec = cap.recovery
    if rec is None:
        return ""
    lo = 0 if first is None else first
    hi = (1 << 62) if last is None else last
    runs = rec.unknown_runs(lo, hi)
    if not runs:
        return ""
    one = len(runs) == 1 and runs[0][0] == runs[0][1]
    word, verb = ("enqueue", "was") if one else ("enqueues", "were")
    return f" ({word} {_runs_text(runs)} {verb} lost with the log and no dump file names them)"


def _runs_text(runs: list[tuple[int, int]]) -> str:
    text = ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs[:12])
    return text + (",..." if len(runs) > 12 else "")
