"""The fleet report as JUnit XML, for CI: one ``testsuite`` per column (host:device), one
``testcase`` per enqueue of the range on it.

As JUnit means them, each with its fault class as the element's ``type``
(:mod:`cltui.fleet.faults`): a ``failure`` is a check that came out ``different``
(type ``different``), or an enqueue that hung (``hang``) or crashed the device
(``device-crash``): the kernel's fault until shown otherwise; an ``error`` is an enqueue
that could not run there (``cannot-run``, the pre-flight), or whose result was lost to the
fleet's infrastructure (``connection-lost``, ``runner-crash``, ``cancelled``, ``error``);
``skipped`` is an enqueue not reached after the fault, an output downstream of an enqueue
that could not run, or one that could not be checked.  A host that did not run at all
(unreachable, authentication, a missing dependency...) is one suite with one ``host``
test case whose error says why (not one per enqueue).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any

from cltui.fleet.faults import FAULTS, host_fault, junit_kind

__all__ = ["junit_xml"]


def _cases(report: Mapping[str, Any]) -> list[tuple[int, str, list[dict[str, Any]]]]:
    """Each enqueue: (number, kernel, its rows)."""
    out: dict[int, tuple[str, list[dict[str, Any]]]] = {}
    for row in report["rows"]:
        out.setdefault(int(row["enqueue"]), (str(row["kernel"]), []))[1].append(row)
    return [(n, k, rows) for n, (k, rows) in out.items()]


def _outcome(cells: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> tuple[str, str, str]:
    """``(element, type, message)`` of one testcase from its cells: element '' passes."""
    diff = [f"{lab}: {c['summary'] or 'different'}"
            + (f" (max {c['max_ulp']:g} ULP)" if c.get("max_ulp") is not None else "")
            for lab, c in zip(labels, cells, strict=True) if c["status"] == "different"]
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
    return "", "", ""


def junit_xml(report: Mapping[str, Any]) -> str:
    """The XML document (UTF-8 text)."""
    root = ET.Element("testsuites", name="cltui fleet")
    cases = _cases(report)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for i, col in enumerate(report["columns"]):
        dev = col["device"]
        suite = ET.SubElement(root, "testsuite", name=col["id"])
        props = ET.SubElement(suite, "properties")
        for key, value in (("host", col["host"]), ("device", dev["name"]),
                           ("platform", dev["platform"]), ("driver", dev["driver"]),
                           ("runner", col["runner"]), ("verdict", col["verdict"]["line"])):
            ET.SubElement(props, "property", name=key, value=str(value))
        counts = dict.fromkeys(totals, 0)
        for n, kernel, rows in cases:
            case = ET.SubElement(suite, "testcase", name=f"enqueue {n} {kernel}".strip(),
                                 classname=f"fleet.{col['id']}")
            kind, typ, msg = _outcome([r["cells"][i] for r in rows], [r["label"] for r in rows])
            counts["tests"] += 1
            if kind == "skipped":
                ET.SubElement(case, kind, message=msg)
            elif kind:
                ET.SubElement(case, kind, type=typ, message=msg)
                counts[{"failure": "failures", "error": "errors", "skipped": "skipped"}[kind]] += 1
        _close(suite, counts, totals)
    for host in report["hosts"]:
        if host["status"] == "ok":
            continue
        suite = ET.SubElement(root, "testsuite", name=str(host["name"]))
        case = ET.SubElement(suite, "testcase", name="host", classname=f"fleet.{host['name']}")
        _kind, typ = junit_kind(host.get("fault") or host_fault(str(host["status"])))
        ET.SubElement(case, "error", type=typ, message=f"{typ}: {host['reason']}")
        _close(suite, {"tests": 1, "failures": 0, "errors": 1, "skipped": 0}, totals)
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _close(suite: ET.Element, counts: dict[str, int], totals: dict[str, int]) -> None:
    for key, value in counts.items():
        suite.set(key, str(value))
        totals[key] += value
