"""``cltui check --format junit``: the Oclgrind check as JUnit XML for CI (the one writer,
:mod:`cltui.replay.junit`): one suite, a case per kernel enqueue of the range; a finding
(out of bounds, a race, an uninitialised read, ...) is a ``failure`` typed by its kind, a
crash of Oclgrind a ``failure`` typed ``crash`` (``skipped`` once a retry checked it with a
checker off: the report names the checker), an enqueue no run got to ``skipped``."""

from __future__ import annotations

from cltui.analysis.check_report import CheckReport
from cltui.replay.junit import Case, Suite, junit_document

__all__ = ["check_junit"]


def check_junit(report: CheckReport) -> str:
    """The report as a JUnit document."""
    classname = "check.oclgrind"
    suite = Suite(f"oclgrind {report.range}", properties=[
        ("device", report.device or "Oclgrind"), ("mode", report.mode),
        ("status", report.status),
    ])  # fmt: skip
    crashes = {c.enqueue: c for c in report.crashes}
    for number, kernel in report.enqueues:
        case = Case(f"enqueue {number} {kernel}".strip(), classname)
        found = report.for_enqueue(number)
        crash = crashes.get(number)
        if found:
            kinds = sorted({f.kind for f in found})
            case.outcome, case.type = "failure", ",".join(kinds)
            case.message = "; ".join(
                f"{f.kind}: {f.message}" + (f" (line {f.line})" if f.line else "") for f in found
            )
        elif crash is not None and not crash.checked:
            case.outcome, case.type, case.message = "failure", "crash", crash.line()
        elif crash is not None and crash.unchecked_by:
            case.outcome, case.type, case.message = "skipped", "unchecked", crash.line()
        elif number in report.unchecked:
            case.outcome, case.type = "skipped", "unchecked"
            case.message = "no check run got to it"
        elif report.error and report.failed_enqueue == number:
            case.outcome, case.type, case.message = "failure", report.status, report.error
        suite.cases.append(case)
    if report.error and report.failed_enqueue is None:
        suite.cases.append(Case("the check", classname, "error", report.error, type=report.status))
    suite.system_out = "\n".join([*report.notes, report.stderr_tail]).strip()
    return junit_document(f"cltui check {report.range}", [suite])
