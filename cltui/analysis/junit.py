"""``cltui diverge``, ``cltui explain`` and ``cltui shrink`` as JUnit XML for CI (the one
writer, :mod:`cltui.replay.junit`; ``cltui check``'s is :mod:`.check_junit`).

``diverge``: one suite, a case per aligned kernel enqueue: identical or within the
tolerance passes, outputs that differ are a ``failure`` (``different``, the first argument
and whether the divergence starts there), a place where the two sequences differ a
``failure`` (``sequence``), a kernel with nothing to compare on both sides ``skipped``.
``explain``: one suite, a case per output of the enqueue that differs between the devices
(a ``failure``, with where and why), else one case for the enqueue: it passes when the
devices agree and is an ``error`` when something could not run; the text report is the
suite's ``system-out``.  ``shrink``: one case, a ``failure`` naming the smallest failing set
where the range fails."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cltui.analysis.diverge_report import DIVERGENT, IDENTICAL, NODATA, SEQUENCE, WITHIN_TOL
from cltui.replay.junit import Case, Suite, junit_document

if TYPE_CHECKING:
    from cltui.analysis.diverge_report import DivergeReport
    from cltui.analysis.shrink import ShrinkResult

__all__ = ["diverge_junit", "explain_junit", "shrink_junit"]


def diverge_junit(report: DivergeReport, explained: Mapping[str, Any] | None = None) -> str:
    """Where two captures part (with ``--explain``'s report of the first divergent kernel
    enqueue, when there is one, in the suite's ``system-out``)."""
    suite = Suite(f"{report.path_a} ~ {report.path_b}", properties=[
        ("a", report.path_a), ("b", report.path_b),
        ("tolerance", str(report.tolerance.to_dict())),
    ])  # fmt: skip
    for e in report.enqueues:
        if e.kernel is None and e.status != SEQUENCE:
            continue  # not a kernel enqueue: nothing of its own to compare
        case = Case(f"enqueue {e.number} {e.label()}".strip(), "diverge")
        if e.status == DIVERGENT:
            fa = e.first_arg
            case.outcome, case.type = "failure", "different"
            case.message = (f"{fa.label()}: {fa.summary()}" if fa is not None else "different") \
                + (" (the divergence starts here)" if e.starts_here else "")
        elif e.status == SEQUENCE:
            case.outcome, case.type = "failure", "sequence"
            case.message = "; ".join(e.notes) or "the sequences differ here"
        elif e.status not in (IDENTICAL, WITHIN_TOL):
            case.outcome, case.type = "skipped", "unchecked" if e.status != NODATA else "no-data"
            case.message = "; ".join(e.notes) or f"nothing to compare ({e.status})"
        suite.cases.append(case)
    counts = ", ".join(f"{k}: {v}" for k, v in report.counts().items())
    suite.system_out = counts
    if explained is not None:
        suite.system_out += "\n" + _explain_text(explained)
    return junit_document("cltui diverge", [suite])


def _explain_text(report: Mapping[str, Any]) -> str:
    if "error" in report:
        return f"explain: {report['error']}"
    from cltui.analysis.explain.text import text_lines

    return "\n".join(text_lines(dict(report)))


def explain_junit(report: Mapping[str, Any]) -> str:
    """Two devices' outputs of one kernel enqueue: where they differ and why."""
    devs = report["devices"]
    name = f"enqueue {report['enqueue']} {report.get('kernel') or ''}".strip()
    suite = Suite(name, properties=[
        ("a", f"{devs['a']['id']} {devs['a']['name']}"),
        ("b", f"{devs['b']['id']} {devs['b']['name']}"),
        ("verdict", str(report["verdict"]["line"])),
    ])  # fmt: skip
    why = report.get("why") or {}
    for w in report.get("where") or []:
        m = w["map"]
        most = f", max {m['max']:g} {m['unit']}" if m.get("max") is not None else ""
        said = f"; why: {why['text']}" if why.get("text") else ""
        suite.cases.append(Case(f"{name} {w['label']}", "explain", "failure",
                                f"{m['differ']} of {m['elements']} elements differ{most}{said}",
                                type="different"))  # fmt: skip
    status = report["verdict"]["status"]
    if not suite.cases and status == "incomplete":
        suite.cases.append(Case(name, "explain", "error", str(report["verdict"]["line"]),
                                type="incomplete"))
    elif not suite.cases:
        suite.cases.append(Case(name, "explain"))
    suite.system_out = _explain_text(report)
    return junit_document(f"cltui explain {name}", [suite])


def shrink_junit(res: ShrinkResult, set_text: str) -> str:
    """The range shrunk: one case, a failure naming the smallest failing set
    (``set_text``, as the text report writes it)."""
    suite = Suite(f"shrink {res.range}", properties=[
        ("device", res.device), ("against", res.against), ("mode", res.mode),
    ])  # fmt: skip
    case = Case(f"range {res.range}", "shrink")
    if res.failed:
        case.outcome, case.type = "failure", "different"
        case.message = (f"smallest failing set: {set_text} ({len(res.result)} of "
                        f"{len(res.start)} kernel enqueues)"
                        + (f": {res.mismatch}" if res.mismatch else ""))  # fmt: skip
    suite.cases.append(case)
    suite.system_out = "\n".join(f"note: {n}" for n in res.notes)
    return junit_document(f"cltui shrink {res.range}", [suite])
