"""The fleet report as JUnit XML, for CI (the one writer, :mod:`cltui.replay.junit`): one
``testsuite`` per column (host:device, its ``time`` the column's wall time), one ``testcase``
per enqueue of the range on it (its ``time`` the kernel's device time, its ``system-out``
each output's cell).

As JUnit means them, each with a ``type``: a ``failure`` is a result that changed between
the runs of ``--retry-flaky`` (``flaky``), a check that came out ``different`` and that no
baseline knows, an enqueue that hung (``hang``) or crashed the device (``device-crash``): the
kernel's fault until shown otherwise, or a baseline's known divergence that no longer diverges
(``fixed``); an ``error`` is an enqueue that could not run there (``cannot-run``, the
pre-flight), or whose result was lost to the fleet's infrastructure (``connection-lost``,
``runner-crash``, ``cancelled``, ``error``: :mod:`cltui.fleet.faults`); ``skipped`` is an
enqueue not reached after the fault, an output downstream of an enqueue that could not run,
or one that could not be checked.  A host that did not run at all (unreachable,
authentication, a missing dependency...) is one suite with one ``host`` test case whose error
says why (not one per enqueue).  With ``--explain``, the failure of a column's first
divergent enqueue ends with its explanation in one line (or why it has none).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from cltui.fleet.faults import FAULTS, host_fault, junit_kind
from cltui.replay.junit import Case, Outcome, Suite, junit_document

__all__ = ["junit_xml"]


def _cases(report: Mapping[str, Any]) -> list[tuple[int, str, list[dict[str, Any]]]]:
    """Each enqueue: (number, kernel, its rows)."""
    out: dict[int, tuple[str, list[dict[str, Any]]]] = {}
    for row in report["rows"]:
        out.setdefault(int(row["enqueue"]), (str(row["kernel"]), []))[1].append(row)
    return [(n, k, rows) for n, (k, rows) in out.items()]


def _outcome(cells: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> tuple[str, str, str]:
    """``(element, type, message)`` of one testcase from its cells: element '' passes."""
    flaky = [lab for lab, c in zip(labels, cells, strict=True) if c.get("flaky")]
    if flaky:
        return "failure", "flaky", "results changed between runs: " + ", ".join(flaky)
    diff = [f"{lab}: {c['summary'] or 'different'}"
            + (f" (max {c['max_ulp']:g} ULP)" if c.get("max_ulp") is not None else "")
            for lab, c in zip(labels, cells, strict=True)
            if c["status"] == "different" and c.get("baseline") != "known"]  # fmt: skip
    if diff:
        return "failure", "different", "; ".join(diff)
    faults = [c for c in cells if c["status"] in FAULTS]
    if faults:
        kind, typ = junit_kind(str(faults[0]["status"]))
        return kind, typ, f"{typ}: {faults[0]['summary']}"
    for status in ("not-reached", "downstream"):
        hit = [c for c in cells if c["status"] == status]
        if hit:
            return "skipped", status, str(hit[0]["summary"])
    if cells and all(c["status"] == "unchecked" for c in cells):
        return "skipped", "unchecked", "no output could be checked: " + cells[0]["summary"]
    fixed = [lab for lab, c in zip(labels, cells, strict=True) if c.get("baseline") == "fixed"]
    if fixed:
        return "failure", "fixed", ("known divergence no longer diverges (update the "
                                    "baseline): " + ", ".join(fixed))  # fmt: skip
    return "", "", ""


def _out(cells: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> str:
    """A testcase's ``system-out``: each output's cell, one line each."""
    lines = []
    for lab, c in zip(labels, cells, strict=True):
        tag = f" [{c['baseline']}]" if c.get("baseline") else ""
        ulp = f", max {c['max_ulp']:g} ULP" if c.get("max_ulp") else ""
        said = f": {c['summary']}" if c.get("summary") else ""
        lines.append(f"{lab}: {c['status']}{tag}{ulp}{said}")
    return "\n".join(lines)


def _seconds(step: Mapping[str, Any] | None) -> float:
    """A step's kernel time on the device (its median), else its host enqueue time; 0."""
    timing: Mapping[str, Any] = (step or {}).get("timing") or {}
    for stage in ("start_to_end", "host_enqueue"):
        st = timing.get(stage)
        if isinstance(st, Mapping) and isinstance(st.get("median"), int | float):
            return float(st["median"]) / 1e9
    return 0.0


def _column(i: int, col: Mapping[str, Any], result: Mapping[str, Any],
            cases: list[tuple[int, str, list[dict[str, Any]]]],
            explained: Mapping[str, Any] | None = None) -> Suite:  # fmt: skip
    dev = col["device"]
    steps = {int(st["enqueue"]): st for st in result.get("steps") or []}
    suite = Suite(str(col["id"]), time=float(col.get("seconds") or 0.0), properties=[
        ("host", str(col["host"])), ("device", str(dev["name"])),
        ("platform", str(dev["platform"])), ("driver", str(dev["driver"])),
        ("runner", str(col["runner"])), ("verdict", str(col["verdict"]["line"])),
    ])  # fmt: skip
    for n, kernel, rows in cases:
        cells, labels = [r["cells"][i] for r in rows], [r["label"] for r in rows]
        kind, typ, msg = _outcome(cells, labels)
        if explained is not None and int(explained["enqueue"]) == n and kind == "failure":
            msg += f"; explain: {explained['line']}"
        suite.cases.append(Case(f"enqueue {n} {kernel}".strip(), f"fleet.{col['id']}",
                                cast(Outcome, kind), msg, _seconds(steps.get(n)), typ,
                                _out(cells, labels)))  # fmt: skip
    log = [str(col["verdict"]["line"]), *[str(x) for x in result.get("notes") or []]]
    if result.get("stderr"):
        log.append(str(result["stderr"]))
    suite.system_out = "\n".join(log)
    return suite


def junit_xml(report: Mapping[str, Any]) -> str:
    """The XML document (UTF-8 text)."""
    cases = _cases(report)
    devices = report.get("devices") or []
    explained = {str(e["column"]): e for e in report.get("explain") or []}
    suites = [_column(i, col, devices[i] if i < len(devices) else {}, cases,
                      explained.get(str(col["id"])))
              for i, col in enumerate(report["columns"])]  # fmt: skip
    for host in report["hosts"]:
        if host["status"] == "ok":
            continue
        _kind, typ = junit_kind(host.get("fault") or host_fault(str(host["status"])))
        suites.append(Suite(str(host["name"]), [
            Case("host", f"fleet.{host['name']}", "error", f"{typ}: {host['reason']}", type=typ)
        ]))  # fmt: skip
    return junit_document("cltui fleet", suites)
