"""The fleet report as JUnit XML, for CI: one ``testsuite`` per column (host:device), one
``testcase`` per enqueue of the range on it.

As JUnit means them: a ``failure`` is a check that came out ``different`` (or the enqueue
crashed or hung the runner: the kernel's fault until shown otherwise); an ``error`` is an
enqueue that could not run there (the plan could not run, the runner failed, or the whole host
did not run: unreachable, authentication, a missing dependency); ``skipped`` is an enqueue not
reached after an earlier one ended the run, or one whose outputs could not be checked.  A host
that did not run gets one suite (``host``), each enqueue an error saying why.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["junit_xml"]


def _cases(report: Mapping[str, Any]) -> list[tuple[int, str, list[dict[str, Any]]]]:
    """Each enqueue: (number, kernel, its rows)."""
    out: dict[int, tuple[str, list[dict[str, Any]]]] = {}
    for row in report["rows"]:
        out.setdefault(int(row["enqueue"]), (str(row["kernel"]), []))[1].append(row)
    return [(n, k, rows) for n, (k, rows) in out.items()]


def _outcome(cells: Sequence[Mapping[str, Any]], labels: Sequence[str]
             ) -> tuple[str, str, str]:
    """``(kind, type, message)`` of one testcase from its cells: kind '' passes.  The type
    says what failed: ``flaky`` (results changed between runs), ``different``, ``fixed`` (a
    baseline's known divergence that no longer diverges), ``crash``, ``hang``, ``cannot-run``,
    ``error``."""
    flaky = [lab for lab, c in zip(labels, cells, strict=True) if c.get("flaky")]
    if flaky:
        return "failure", "flaky", "results changed between runs: " + ", ".join(flaky)
    diff = [f"{lab}: {c['summary'] or 'different'}"
            + (f" (max {c['max_ulp']:g} ULP)" if c.get("max_ulp") is not None else "")
            for lab, c in zip(labels, cells, strict=True)
            if c["status"] == "different" and c.get("baseline") != "known"]
    if diff:
        return "failure", "different", "; ".join(diff)
    cannot = [c["summary"] for c in cells if c["status"] == "cannot-run"]
    if cannot:
        state = cannot[0].partition(":")[0]
        if state in ("crash", "hang"):
            return "failure", state, cannot[0]
        return "error", state if state in ("killed", "cancelled") else "cannot-run", cannot[0]
    reached = [c for c in cells if c["status"] == "not-reached"]
    if reached:
        return "skipped", "not-reached", reached[0]["summary"]
    if cells and all(c["status"] == "unchecked" for c in cells):
        return "skipped", "unchecked", "no output could be checked: " + cells[0]["summary"]
    fixed = [lab for lab, c in zip(labels, cells, strict=True) if c.get("baseline") == "fixed"]
    if fixed:
        return "failure", "fixed", ("known divergence no longer diverges (update the "
                                    "baseline): " + ", ".join(fixed))
    return "", "", ""


def _out(cells: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> str:
    """A testcase's ``system-out``: each output's cell, one line each."""
    lines = []
    for lab, c in zip(labels, cells, strict=True):
        tag = f" [{c['baseline']}]" if c.get("baseline") else ""
        ulp = f", max {c['max_ulp']:g} ULP" if c.get("max_ulp") else ""
        lines.append(f"{lab}: {c['status']}{tag}{ulp}" + (f": {c['summary']}"
                                                          if c.get("summary") else ""))
    return "\n".join(lines)


def _seconds(step: Mapping[str, Any] | None) -> float:
    """A step's kernel time on the device (its median), else its host enqueue time; 0."""
    timing: Mapping[str, Any] = (step or {}).get("timing") or {}
    for stage in ("start_to_end", "host_enqueue"):
        st = timing.get(stage)
        if isinstance(st, Mapping) and isinstance(st.get("median"), (int, float)):
            return float(st["median"]) / 1e9
    return 0.0


def junit_xml(report: Mapping[str, Any]) -> str:
    """The XML document (UTF-8 text)."""
    root = ET.Element("testsuites", name="cltui fleet")
    cases = _cases(report)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    devices = report.get("devices") or []
    for i, col in enumerate(report["columns"]):
        dev = col["device"]
        result: Mapping[str, Any] = devices[i] if i < len(devices) else {}
        steps = {int(st["enqueue"]): st for st in result.get("steps") or []}
        suite = ET.SubElement(root, "testsuite", name=col["id"],
                              time=f"{float(col.get('seconds') or 0.0):.3f}")
        props = ET.SubElement(suite, "properties")
        for key, value in (("host", col["host"]), ("device", dev["name"]),
                           ("platform", dev["platform"]), ("driver", dev["driver"]),
                           ("runner", col["runner"]), ("verdict", col["verdict"]["line"])):
            ET.SubElement(props, "property", name=key, value=str(value))
        counts = dict.fromkeys(totals, 0)
        for n, kernel, rows in cases:
            case = ET.SubElement(suite, "testcase", name=f"enqueue {n} {kernel}".strip(),
                                 classname=f"fleet.{col['id']}",
                                 time=f"{_seconds(steps.get(n)):.6f}")
            cells, labels = [r["cells"][i] for r in rows], [r["label"] for r in rows]
            kind, typ, msg = _outcome(cells, labels)
            counts["tests"] += 1
            if kind:
                ET.SubElement(case, kind, message=msg, type=typ)
                counts[{"failure": "failures", "error": "errors", "skipped": "skipped"}[kind]] += 1
            ET.SubElement(case, "system-out").text = _out(cells, labels)
        log = [str(col["verdict"]["line"]), *[str(x) for x in result.get("notes") or []]]
        if result.get("stderr"):
            log.append(str(result["stderr"]))
        ET.SubElement(suite, "system-out").text = "\n".join(log)
        _close(suite, counts, totals)
    for host in report["hosts"]:
        if host["status"] == "ok":
            continue
        suite = ET.SubElement(root, "testsuite", name=str(host["name"]))
        counts = dict.fromkeys(totals, 0)
        for n, kernel, _rows in cases:
            case = ET.SubElement(suite, "testcase", name=f"enqueue {n} {kernel}".strip(),
                                 classname=f"fleet.{host['name']}")
            ET.SubElement(case, "error", message=f"{host['status']}: {host['reason']}",
                          type=str(host["status"]))
            counts["tests"] += 1
            counts["errors"] += 1
        _close(suite, counts, totals)
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _close(suite: ET.Element, counts: dict[str, int], totals: dict[str, int]) -> None:
    for key, value in counts.items():
        suite.set(key, str(value))
        totals[key] += value
