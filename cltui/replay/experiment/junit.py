"""``cltui try`` and ``cltui sweep`` as JUnit XML for CI (the one writer,
:mod:`cltui.replay.junit`).

``try``: a suite per device for the variant (B): a case per kernel enqueue of the range,
mapped as a replay's (an output ``different`` from the capture's is a ``failure``, and so
is the enqueue a crash or a hang came at; an enqueue that could not run an ``error``, an
output left unchecked, an enqueue not reached and the enqueues lost with the log
``skipped``), one ``error`` case where the device refused the variant's work sizes, and a
``timing`` case that passes and says in its ``system-out`` what B's time came to against
A's (a timing reading is not a verdict).

``sweep``: a suite per device, a case per point: a correct one passes (its time the range's
median device time); one whose outputs differ, or that crashed or hung the device, is a
``failure``; one the device refused (work-group limits), cut short or left unchecked
``skipped``; one that could not run an ``error``.  A sweep passes when a
correct variant is found: the points that came out wrong are failures of their own cases
all the same (CI sees which configurations break)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cltui.replay.junit import (
    Case,
    Outcome,
    Suite,
    device_suite,
    junit_document,
    result_cases,
    scope_of,
)

__all__ = ["ab_junit", "sweep_junit"]


def ab_junit(report: Mapping[str, Any], plan: Mapping[str, Any]) -> str:
    """The A/B report of ``cltui try`` (``plan``: B's): per device the variant's cases as a
    replay's (each kernel enqueue of the range: replayed, the one a crash or a hang came at,
    not reached; the lost ones), why it did not run, and its timing against A."""
    from cltui.replay.experiment.report import diff_text, noise_text

    suites = []
    for dev in report.get("devices") or []:
        a, b = dev["a"], dev["b"]
        suite, classname = device_suite(dev["device"], "try",
                                        ("verdict", str(b["verdict"]["line"])),
                                        ("capture's own", str(a["verdict"]["line"])))
        res = b.get("result") or {}
        if b.get("refused"):
            suite.cases.append(Case("the variant", classname, "error", str(b["refused"]),
                                    type="cannot-run"))  # fmt: skip
        else:
            result_cases(suite, classname, res, b["verdict"], plan, scope_of(plan))
        reading = diff_text(dev["timing"])
        if b["verdict"]["status"] != "pass":
            reading = (f"no timing: the variant is {str(b['verdict']['status']).upper()} "
                       "(a timing is a result only for a PASS)")
        timing = Case("timing", classname, system_out=f"B against A: {reading}"
                      f"\n{noise_text(dev)}")  # fmt: skip
        suite.cases.append(timing)
        suite.system_out = "\n".join([str(report["verdict"]["line"]),
                                      *(f"change: {x}" for x in
                                        (report.get("variant") or {}).get("lines", []))])
        suites.append(suite)
    return junit_document(f"cltui try {report.get('range', '')}".strip(), suites)


# a point's status other than pass: (JUnit outcome, type); crash and hang are the device's
# fault as in a replay; anything else is an error typed by its status
_FAILED: dict[str, tuple[Outcome, str]] = {
    "fail": ("failure", "different"), "crash": ("failure", "crash"), "hang": ("failure", "hang"),
    "refused": ("skipped", "refused"), "incomplete": ("skipped", "unchecked"),
    "cancelled": ("skipped", "cancelled"),
}


def sweep_junit(summary: Mapping[str, Any]) -> str:
    """A sweep's summary: a suite per device, a case per point run there."""
    suites: dict[str, Suite] = {}
    for dev in summary.get("devices") or []:
        suites[str(dev)] = Suite(str(dev), properties=[
            ("verdict", str(summary["verdict"]["line"]))])
    best = summary.get("best_id")
    for row in summary.get("rows") or []:
        dev = str(row["device"])
        suite = suites.setdefault(dev, Suite(dev))
        t = row.get("time") or {}
        median = t.get("median")
        case = Case(f"{row['id']} {row['label']}".strip(), f"sweep.{dev}",
                    time=float(median) / 1e9 if isinstance(median, int | float) else None)
        status = str(row["status"])
        if status != "pass":
            outcome, kind = _FAILED.get(status, ("error", status))
            case.outcome, case.type = outcome, kind
            case.message = str(row.get("why") or status)
        elif row["id"] == best:
            case.system_out = "the best variant"
        suite.cases.append(case)
    return junit_document(f"cltui sweep {summary.get('range', '')}".strip(),
                          list(suites.values()))
