"""The verdict of a replay: pass, fail, incomplete or error, one line, with counts.

One rule for cltui, replay.py and replay.cpp (which holds the same rules in C++).
PASS: no enqueue of the range was lost with the log (a lost one, whatever file names it, is
counted at the head of an INCOMPLETE line), every kernel enqueue of the range was replayed,
every output it should check was checked and none differs, every host-side transfer inside
the range was replayed (as an operation or from captured data), no replayed state departed
from the capture unreloaded and no check follows an unreplayed host write that touched what
it depends on.  FAIL: a check differs (one that follows an unreplayed host write only makes
the verdict incomplete; a damaged captured side is unchecked, never different), or a crash or
hang.  ERROR: the plan could not run.  Otherwise INCOMPLETE.  Exit codes: 0, 1, 1, 3.

Pure (a plan and a device result in, a verdict out).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from ...errors import EXIT_INCOMPLETE, EXIT_MISMATCH, EXIT_OK
from .schema import DeviceResult, Manifest, Verdict, VerdictCounts, VerdictStatus

__all__ = [
    "VERDICT_COUNTS", "VERDICT_EXIT", "combine_verdicts", "scope_counts", "verdict", "verdict_exit",
]  # fmt: skip


# one table (cltui/errors.py's codes), held to replay.cpp's verdict_exit by the shared cases
VERDICT_EXIT = {
    "pass": EXIT_OK, "fail": EXIT_MISMATCH, "error": EXIT_MISMATCH, "incomplete": EXIT_INCOMPLETE,
}  # fmt: skip


VERDICT_COUNTS = (
    "kernels", "replayed", "skipped", "outputs", "checked", "unchecked", "equal", "within",
    "different", "departed", "recovered", "lost", "after_unreplayed", "transfers",
    "transfers_replayed", "cannot_run", "after_cannot_run",
)  # fmt: skip


def scope_counts(plan: Manifest | Mapping[str, object]) -> dict[str, int | None]:
    """What the plan itself says of its range (pure): its kernel enqueues (None: a plan
    written before scopes), those skipped and recovered, the numbers the log lost, the host
    transfers inside it and those replayed.  replay.cpp's ``read_scope`` is its twin (the
    shared ``tests/fixtures/plan_cases.json``)."""
    scope = cast(Mapping[str, object], plan.get("scope") or {})
    kernels = cast("Sequence[Mapping[str, object]] | None", scope.get("kernels"))
    transfers = cast("Sequence[Mapping[str, object]]", scope.get("transfers") or [])
    lost = cast("Sequence[Mapping[str, object]]", plan.get("lost") or [])
    return {
        "kernels": None if kernels is None else len(kernels),
        "skipped": sum(1 for k in kernels or [] if k.get("replayed") is not True),
        "recovered": sum(1 for k in kernels or [] if k.get("recovered") is True),
        "lost": sum(int(cast(int, x.get("count", 0))) for x in lost),
        "transfers": len(transfers),
        "transfers_replayed": sum(1 for t in transfers if t.get("replayed")),
    }


def verdict(plan: Manifest, result: DeviceResult) -> Verdict:
    """The verdict of one device result of ``plan``: ``{status, line, counts}`` (pure)."""
    steps = plan.get("steps", [])
    ran = result.get("steps") or []
    c: dict[str, int] = dict.fromkeys(VERDICT_COUNTS, 0)
    scope = scope_counts(plan)
    c.update({k: v for k, v in scope.items() if v is not None})
    if scope["kernels"] is None:  # a plan written before scopes: its steps are its kernels
        c["kernels"] = len(steps)
    c["cannot_run"] = sum(1 for st in ran if st.get("status") == "cannot-run")
    c["replayed"] = len(ran) - c["cannot_run"]
    c["outputs"] = sum(len(s.get("checks", [])) for s in steps)
    stop = _stopped_at(steps, result)  # a partial result: transfers after it did not run
    if stop is not None:
        transfers = cast("Sequence[Mapping[str, object]]",
                         (plan.get("scope") or {}).get("transfers") or [])  # fmt: skip
        c["transfers_replayed"] = sum(
            1 for t in transfers if t.get("replayed") and int(str(t.get("enqueue", 0))) < stop
        )
    tainted_different = 0
    for st in ran:
        for chk in st.get("checks", []):
            outcome = chk.get("status")
            if outcome in ("equal", "within", "different"):
                c[outcome] += 1
                c["checked"] += 1
            made = outcome in ("equal", "within", "different")  # a check never made is
            if made and chk.get("after_unreplayed") is not None:  # counted as unchecked
                c["after_unreplayed"] += 1
            if chk.get("after_cannot_run") is not None:
                c["after_cannot_run"] += 1
            if chk.get("after_unreplayed") is not None or chk.get("after_cannot_run") is not None:
                tainted_different += outcome == "different"
        reloaded = {ld.get("mem") for ld in st.get("loads", []) if ld.get("done")}
        for pre in st.get("prechecks", []):
            if (pre.get("status") == "different" and pre.get("mem") not in reloaded
                    and pre.get("after_cannot_run") is None):  # fmt: skip
                c["departed"] += 1
    c["outputs"] = max(c["outputs"], c["checked"])  # a result richer than its plan
    c["unchecked"] = c["outputs"] - c["checked"]
    err = result.get("error")
    state = str(result.get("status") or "")
    lost = c["lost"]
    lost_head = f"{lost} enqueue{'s' if lost != 1 else ''} of the range lost with the log"
    status: VerdictStatus
    if err and state in ("crash", "hang"):
        status, head = "fail", f"{state}: {err}"
    elif state == "killed":  # from outside (SIGKILL, the OOM killer): not a failure found
        status, head = "incomplete", f"killed: {err}" if err else "killed"
    elif state == "cancelled":  # the user stopped it: what finished is kept and counted
        status, head = "incomplete", str(err or "cancelled")
    elif err or state == "error":
        status, head = "error", str(err or state)
    elif c["different"] > tainted_different:
        bad = c["different"] - tainted_different
        status, head = "fail", f"{bad} output{'s' if bad != 1 else ''} different"
    elif (
        c["skipped"] or c["lost"] or c["unchecked"] or c["departed"] or c["after_unreplayed"]
        or c["transfers_replayed"] < c["transfers"] or c["replayed"] < len(steps)
        or c["cannot_run"] or c["after_cannot_run"]
    ):  # fmt: skip
        heads = [lost_head if lost else "", _cannot_run_head(result)]
        status, head = "incomplete", "; ".join(h for h in heads if h)
        lost = 0  # it leads the line already
    else:
        status, head = "pass", ""
    if lost:  # a finding, a fault or an error first, then what the log lost of the range
        head = f"{head}; {lost_head}"
    counts = cast(VerdictCounts, c)  # every key of VERDICT_COUNTS
    return {"status": status, "line": _verdict_line(status, head, c), "counts": counts}


def _stopped_at(steps: Sequence[Mapping[str, Any]], result: Mapping[str, Any]) -> int | None:
    """Where a partial result (a crash, a hang, a lost connection) stopped: the enqueue it
    failed at, else the first step without a result; None for a whole result."""
    if not result.get("partial"):
        return None
    if result.get("failed_enqueue") is not None:
        return int(result["failed_enqueue"])
    ran = {int(st["enqueue"]) for st in result.get("steps") or []}
    return next((int(s["enqueue"]) for s in steps if int(s["enqueue"]) not in ran), None)


def _cannot_run_head(result: Mapping[str, object]) -> str:
    """``enqueue 56 (reduce) cannot run here: REASON`` (and how many more), or ""."""
    found = result.get("cannot_run")
    if not isinstance(found, list) or not found:
        return ""
    first = found[0]
    more = len({f.get("enqueue") for f in found}) - 1
    head = f"enqueue {first.get('enqueue')} ({first.get('kernel')}) cannot run here: "
    head += str(first.get("reason"))
    return head + (f" (and {more} more enqueue{'s' if more != 1 else ''})" if more else "")


def _verdict_line(status: str, head: str, c: dict[str, int]) -> str:
    """``INCOMPLETE: 24/25 kernel enqueues replayed (1 skipped), 40/52 outputs checked (12
    unchecked)``: what was done, and what was not, with counts."""
    k = f"{c['replayed']}/{c['kernels']} kernel enqueues replayed"
    about = [f"{c[w]} {w}" for w in ("skipped", "recovered") if c[w]]
    if c.get("cannot_run"):
        about.append(f"{c['cannot_run']} cannot run on this device")
    if about:
        k += f" ({', '.join(about)})"
    o = f"{c['checked']}/{c['outputs']} outputs checked"
    how = [f"{c[w]} {w}" for w in ("equal", "within", "different") if c[w]]
    if c["unchecked"]:
        how.append(f"{c['unchecked']} unchecked")
    if how:
        o += f" ({', '.join(how)})"
    parts = [k, o]
    if c["transfers"]:
        t = f"{c['transfers_replayed']}/{c['transfers']} host transfers replayed"
        missed = c["transfers"] - c["transfers_replayed"]
        parts.append(t + (f" ({missed} not)" if missed else ""))
    if c["after_unreplayed"]:
        parts.append(f"{c['after_unreplayed']} checks after an unreplayed host write")
    if c.get("after_cannot_run"):
        parts.append(f"{c['after_cannot_run']} checks after an enqueue that cannot run")
    if c["departed"]:
        parts.append(f"{c['departed']} departed from the capture (not reloaded)")
    body = ", ".join(parts)
    return f"{status.upper()}: " + (f"{head}; {body}" if head else body)


def combine_verdicts(verdicts: Sequence[Verdict], names: Sequence[str] | None = None) -> Verdict:
    """The verdict of several devices: the worst status (fail, error, incomplete, pass),
    counts summed, one line (each device's, after its name, when there are several), led by
    how many devices have that status (``FAIL on 1 of 2 devices: ...``)."""
    if not verdicts:
        zero = cast(VerdictCounts, dict.fromkeys(VERDICT_COUNTS, 0))
        return {"status": "error", "line": "ERROR: no device ran", "counts": zero}
    order = ("fail", "error", "incomplete", "pass")
    status = min((v["status"] for v in verdicts), key=order.index)
    summed = {
        k: sum(int(cast(dict[str, int], v["counts"]).get(k, 0)) for v in verdicts)
        for k in VERDICT_COUNTS
    }
    counts = cast(VerdictCounts, summed)
    if len(verdicts) == 1:
        return {"status": status, "line": verdicts[0]["line"], "counts": counts}
    tags = list(names or [str(i) for i in range(len(verdicts))])
    worst = sum(v["status"] == status for v in verdicts)  # the devices the status is of
    on = f"{worst} of {len(verdicts)}" if worst < len(verdicts) else f"{len(verdicts)}"
    line = f"{status.upper()} on {on} devices: " + "; ".join(
        f"{tag}: {v['line']}" for tag, v in zip(tags, verdicts, strict=False)
    )
    return {"status": status, "line": line, "counts": counts}


def verdict_exit(status: str) -> int:
    """The exit code of a verdict status (0 pass, 1 fail or error, 3 incomplete)."""
    return VERDICT_EXIT.get(status, EXIT_MISMATCH)
