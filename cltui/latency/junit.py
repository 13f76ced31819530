"""``cltui latency --format junit``: the measurement as JUnit XML for CI (the one writer,
:mod:`cltui.replay.junit`): a suite per device, a case per runner measured there (its
``time`` the runner's host time per launch, its ``system-out`` the ratio to the floor); a
device that could not be measured one ``error`` case; each launch the pre-flight says
cannot run there, and what of the range the plan skips or the log lost, ``skipped`` (not in
the figures, as the exit code 3 says).  A timing is a figure, not a verdict: no runner's
case fails for being slow."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cltui.replay.junit import Case, device_suite, junit_document

__all__ = ["latency_junit"]


def latency_junit(rep: Mapping[str, Any]) -> str:
    """The latency report as a JUnit document."""
    suites = []
    for d in rep.get("devices") or []:
        suite, classname = device_suite(d.get("device") or {}, "latency",
                                        ("range", str(rep.get("range", ""))))
        if d.get("error"):
            suite.cases.append(Case("the measurement", classname, "error", str(d["error"]),
                                    type="error"))  # fmt: skip
        for r in d.get("runners") or []:
            per = r.get("host_ns_per_launch")
            ratio = r.get("ratio_to_floor")
            suite.cases.append(Case(
                str(r["runner"]), classname, time=float(per) / 1e9 if per else None,
                system_out=f"{r.get('what', '')}: " + (f"{per:.0f} ns per launch" if per
                                                       else "not measured")
                + (f", {ratio:.2f} x the floor" if ratio else ""),
            ))  # fmt: skip
        for f in d.get("cannot_run") or []:
            suite.cases.append(Case(f"enqueue {f['enqueue']} {f.get('kernel', '')}".strip(),
                                    classname, "skipped", f"not launched: {f['reason']}",
                                    type="cannot-run"))  # fmt: skip
        if rep.get("not_measured"):
            suite.cases.append(Case("not measured", classname, "skipped",
                                    str(rep["not_measured"]), type="not-replayed"))
        sens = d.get("sensitivity") or {}
        suite.system_out = "\n".join([*([str(sens["line"])] if sens.get("line") else []),
                                      *map(str, d.get("notes") or []),
                                      *map(str, d.get("warnings") or [])])  # fmt: skip
        suites.append(suite)
    return junit_document(f"cltui latency {rep.get('range', '')}".strip(), suites)
