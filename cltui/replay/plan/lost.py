"""Enqueue numbers inside a range that the log lost: those no file names, and host-side
changes (fills, writes, copies, maps) that a surviving file names (a ``Device Time`` line)
but whose object and data went with the log.  Both are the plan's ``lost`` runs (the verdict
counts them: INCOMPLETE), the changes are also host transfers of its scope (not replayed);
and the text an empty range's error adds."""

from __future__ import annotations

from cltui.capture.capture import Capture
from cltui.capture.model import EnqueueKind
from cltui.replay.engine.schema import LostRun, ScopeTransfer

_WHY = "lost with the log; no file names it"
_WHY_CHANGE = "lost with the log; only a surviving file names it (its object and data are lost)"
# what a lost enqueue may have changed in device memory (reads, unmaps, markers, barriers
# and migrations do not change an object's contents; a kernel is replayed or skipped)
_CHANGES = (EnqueueKind.WRITE, EnqueueKind.COPY, EnqueueKind.FILL, EnqueueKind.MAP,
            EnqueueKind.SVM, EnqueueKind.USM, EnqueueKind.OTHER)  # fmt: skip


def lost_changes(cap: Capture, first: int, last: int) -> list[ScopeTransfer]:
    """The host-side changes in ``first..last`` that the log lost but a surviving file names
    (their object and data went with the log): not replayed, a host transfer of the scope."""
    rec = cap.recovery
    if rec is None:
        return []
    out: list[ScopeTransfer] = []
    for n in sorted(k for k in rec.enqueues if first <= k <= last):
        r = rec.enqueues[n]
        if r.kind not in _CHANGES:
            continue
        why = f"lost with the log, named only by {r.sources_text}: what it changed is not known"
        out.append({
            "enqueue": n, "function": r.function, "mem": "", "label": "an object the log lost",
            "replayed": None, "why": why,
        })  # fmt: skip
    return out


def lost_runs(cap: Capture, first: int, last: int) -> tuple[list[LostRun], str | None]:
    """The runs of numbers in ``first..last`` that the log lost and no file names, and the
    host-side changes it lost that a surviving file names (:func:`lost_changes`), none of
    them replayed; and the plan's note about them (None when there are none)."""
    rec = cap.recovery
    if rec is None:
        return [], None
    runs = rec.unknown_runs(first, last)
    changes = lost_changes(cap, first, last)
    out: list[LostRun] = [{"first": a, "last": b, "count": b - a + 1, "why": _WHY} for a, b in runs]
    out += [
        {"first": t["enqueue"], "last": t["enqueue"], "count": 1, "why": _WHY_CHANGE}
        for t in changes
    ]
    out.sort(key=lambda r: r["first"])
    notes: list[str] = []
    if runs:
        by = rec.unknown_by_report
        kinds = (
            f"; by the report's counts the {rec.unknown_count} such enqueues of the capture are "
            "not kernels ("
            + ", ".join(f"{c} {f.removeprefix('clEnqueue')}" for f, c in sorted(by.items()))
            + ")"
            if by and "clEnqueueNDRangeKernel" not in by
            else ""
        )
        count = sum(b - a + 1 for a, b in runs)
        notes.append(
            f"enqueue{'s' if count > 1 else ''} {_runs_text(runs)} lost with the log and "
            f"named by no file{kinds}: not replayed, and what they did to the range's memory "
            "objects is known only where a Pre dump shows it"
        )
    if changes:
        named = ", ".join(
            f"{t['enqueue']} ({t['function'].removeprefix('clEnqueue')})" for t in changes[:12]
        )
        more = f" and {len(changes) - 12} more" if len(changes) > 12 else ""
        word = "enqueue" if len(changes) == 1 else "enqueues"
        notes.append(
            f"{word} {named}{more} lost with the log, named only by a surviving file (a Device "
            "Time line): not replayed; the object changed and the data are not known (only "
            "where a Pre dump shows it)"
        )
    return out, "; ".join(notes) if notes else None


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
