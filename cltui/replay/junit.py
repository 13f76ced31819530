"""JUnit XML for CI, one writer for every report that has a verdict (``cltui replay --format
junit``, the fleet's ``--junit``, every ``--format junit``: :mod:`cltui.commands.output`):
:class:`Case` and :class:`Suite` are what a report maps to, :func:`junit_document` the XML
(totals, ``time``, ``system-out``, control characters of the capture's text escaped away);
:func:`replay_junit` maps a replay report, :func:`feasible_junit` the pre-flight's.

As JUnit means them: a ``failure`` is an output that came out different, or an enqueue that
crashed or hung the device; an ``error`` is an enqueue that could not run (the plan could not
run there, the pre-flight found it cannot run); ``skipped`` is what the verdict does not
count as checked: a kernel enqueue not replayed or not reached, an output left unchecked,
enqueues the log lost, host transfers not replayed.  A PASS suite has none of the three."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "Case", "Suite", "device_suite", "feasible_junit", "junit_document", "replay_junit",
    "step_case",
]  # fmt: skip

Outcome = Literal["", "failure", "error", "skipped"]

_TOTAL_KEY = {"failure": "failures", "error": "errors", "skipped": "skipped"}

# XML 1.0 has no place for most control characters (a kernel name from a capture may hold one)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _text(s: object) -> str:
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", str(s))


@dataclass
class Case:
    """One testcase: ``outcome`` '' passes; ``message`` says why it did not."""

    name: str
    classname: str
    outcome: Outcome = ""
    message: str = ""
    time: float | None = None  # seconds
    type: str = ""  # the outcome's kind (``different``, ``crash``, ``cannot-run``, ...)
    system_out: str = ""  # what the case's outputs came to, one line each (the fleet's)


@dataclass
class Suite:
    """One testsuite (a device, a fleet column): its cases, properties and ``system-out``."""

    name: str
    cases: list[Case] = field(default_factory=list)
    properties: list[tuple[str, str]] = field(default_factory=list)
    system_out: str = ""
    time: float | None = None  # seconds; the cases' sum when None


def junit_document(name: str, suites: Sequence[Suite]) -> str:
    """The XML document (text, with its declaration)."""
    root = ET.Element("testsuites", name=_text(name))
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    total_time = 0.0
    for s in suites:
        suite = ET.SubElement(root, "testsuite", name=_text(s.name))
        if s.properties:
            props = ET.SubElement(suite, "properties")
            for key, value in s.properties:
                ET.SubElement(props, "property", name=_text(key), value=_text(value))
        counts = dict.fromkeys(totals, 0)
        spent = 0.0
        for c in s.cases:
            case = ET.SubElement(suite, "testcase", name=_text(c.name))
            case.set("classname", _text(c.classname))
            if c.time is not None:
                case.set("time", f"{c.time:.6f}")
                spent += c.time
            counts["tests"] += 1
            if c.outcome:
                el = ET.SubElement(case, c.outcome, message=_text(c.message))
                if c.type:
                    el.set("type", _text(c.type))
                counts[_TOTAL_KEY[c.outcome]] += 1
            if c.system_out:
                ET.SubElement(case, "system-out").text = _text(c.system_out)
        if s.system_out:
            ET.SubElement(suite, "system-out").text = _text(s.system_out)
        suite_time = s.time if s.time is not None else spent
        total_time += suite_time
        suite.set("time", f"{suite_time:.6f}")
        for key, n in counts.items():
            suite.set(key, str(n))
            totals[key] += n
    for key, n in totals.items():
        root.set(key, str(n))
    root.set("time", f"{total_time:.6f}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"


def _step_time(step: Mapping[str, Any]) -> float | None:
    """A step's device time (its median start-to-end), in seconds."""
    t = (step.get("timing") or {}).get("start_to_end") or {}
    med = t.get("median")
    return float(med) / 1e9 if isinstance(med, int | float) else None


def step_case(step: Mapping[str, Any], classname: str) -> Case:
    """A replayed kernel enqueue: its checks (``different``: a failure; an output left
    unchecked: skipped) or why it could not run (an error)."""
    case = Case(f"enqueue {step['enqueue']} {step.get('kernel', '')}".strip(), classname,
                time=_step_time(step))  # fmt: skip
    checks = list(step.get("checks") or [])
    if step.get("status") == "cannot-run":
        why = "; ".join(dict.fromkeys(f["reason"] for f in step.get("cannot_run", [])))
        case.outcome, case.type, case.message = "error", "cannot-run", f"cannot run: {why}"
        return case
    diff = [f"{c.get('label', c['mem'])}: {c.get('summary', 'different')}"
            for c in checks if c.get("status") == "different"]  # fmt: skip
    if diff:
        case.outcome, case.type, case.message = "failure", "different", "; ".join(diff)
        return case
    unchecked = [c for c in checks if c.get("status") not in ("equal", "within")]
    if unchecked or not checks:
        first = unchecked[0].get("summary", "unchecked") if unchecked else "no output to check"
        case.outcome, case.type = "skipped", "unchecked"
        case.message = f"{len(unchecked)} of {len(checks)} outputs unchecked: {first}"
    return case


def device_suite(dev: Mapping[str, Any], kind: str,
                 *more: tuple[str, str]) -> tuple[Suite, str]:  # fmt: skip
    """A suite for one device of a ``kind`` of report (``replay``, ``feasible``, ...): named
    by the device's id and name, its name and platform (then ``more``) as properties; and
    its cases' classname."""
    sid = str(dev.get("id", "?"))
    suite = Suite(f"{sid} {dev.get('name', '')}".strip(), properties=[
        ("device", str(dev.get("name", ""))), ("platform", str(dev.get("platform", ""))), *more,
    ])  # fmt: skip
    return suite, f"{kind}.{sid}"


def _device_suite(device: Mapping[str, Any], plan: Mapping[str, Any], scope: list[int]) -> Suite:
    dev = device.get("device") or {}
    suite, classname = device_suite(dev, "replay", ("driver", str(dev.get("driver", ""))),
                                    ("verdict", device["verdict"]["line"]))  # fmt: skip
    result_cases(suite, classname, device, device["verdict"], plan, scope)
    suite.system_out = "\n".join([device["verdict"]["line"], *device.get("notes", [])])
    return suite


def result_cases(suite: Suite, classname: str, device: Mapping[str, Any],
                 verdict: Mapping[str, Any], plan: Mapping[str, Any],
                 scope: list[int]) -> None:  # fmt: skip
    """A device result's cases: one per kernel enqueue of the range (``scope``): replayed,
    skipped by the plan, the one a fault or an error came at, or not reached; one for the
    enqueues lost with the log and one for host transfers not replayed when there are any
    (what the ``verdict`` counts)."""
    steps = {int(s["enqueue"]): s for s in device.get("steps") or []}
    error = device.get("error")
    failed_at = device.get("failed_enqueue")
    skipped = {int(s["enqueue"]): s for s in plan.get("skipped") or []}
    for n in scope:
        if n in steps:
            suite.cases.append(step_case(steps[n], classname))
        elif n in skipped:
            k = skipped[n]
            suite.cases.append(Case(f"enqueue {n} {k.get('kernel', '')}".strip(), classname,
                                    "skipped", f"not replayed: {k['why']}", type="not-replayed"))
        elif error and failed_at == n:
            faulted = device.get("status") in ("crash", "killed", "hang")
            suite.cases.append(Case(f"enqueue {n}", classname, "failure" if faulted else "error",
                                    str(error), type=str(device.get("status", "error"))))
        elif error:
            why = f"not reached: {error}" if failed_at is not None else str(error)
            suite.cases.append(Case(f"enqueue {n}", classname,
                                    "skipped" if failed_at is not None else "error", why,
                                    type="not-reached"))
        else:
            suite.cases.append(Case(f"enqueue {n}", classname, "skipped", "no result",
                                    type="not-reached"))
    counts = verdict["counts"]
    if counts.get("lost"):
        runs = ", ".join(f"{r['first']}-{r['last']}" if r["first"] != r["last"] else str(r["first"])
                         for r in plan.get("lost") or [])  # fmt: skip
        suite.cases.append(Case(f"lost enqueues {runs}".strip(), classname, "skipped",
                                f"{counts['lost']} enqueues lost with the log", type="lost"))
    missed = counts.get("transfers", 0) - counts.get("transfers_replayed", 0)
    if missed > 0:
        suite.cases.append(Case("host transfers", classname, "skipped",
                                f"{missed} of {counts['transfers']} host transfers not replayed",
                                type="not-replayed"))


def scope_of(manifest: Mapping[str, Any]) -> list[int]:
    """The kernel enqueues of a plan's range (its steps, for a plan written before scopes)."""
    scope_kernels = (manifest.get("scope") or {}).get("kernels")
    if scope_kernels is None:
        return [int(s["enqueue"]) for s in manifest.get("steps", [])]
    return [int(k["enqueue"]) for k in scope_kernels]


def replay_junit(report: Mapping[str, Any], manifest: Mapping[str, Any]) -> str:
    """A replay report as JUnit XML: a suite per device, a case per kernel enqueue of the
    range (replayed, skipped or not reached), and one for lost enqueues and for host
    transfers not replayed when there are any."""
    scope = scope_of(manifest)
    plan = dict(report.get("plan") or {})
    plan.setdefault("skipped", manifest.get("skipped", []))
    plan.setdefault("lost", manifest.get("lost", []))
    suites = [_device_suite(d, plan, scope) for d in report.get("devices", [])]
    return junit_document(f"cltui replay {plan.get('range', '')}".strip(), suites)


def feasible_junit(out: Mapping[str, Any], plan: Mapping[str, Any]) -> str:
    """``cltui feasible``'s result: a suite per device, a case per kernel enqueue of the
    plan; one that cannot run there is an ``error`` (``cannot-run``, typed by its kinds),
    a device that could not be checked one ``error`` case, an enqueue the plan skips or the
    log lost ``skipped``; what only the launch decides passes (said in its system-out)."""
    suites = []
    for r in out.get("devices") or []:
        suite, classname = device_suite(r.get("device") or {}, "feasible",
                                        ("verdict", str(out.get("line", ""))))  # fmt: skip
        if r.get("status") == "error":
            suite.cases.append(Case("the check", classname, "error", f"not checked: "
                                    f"{r.get('error')}", type="error"))  # fmt: skip
            suites.append(suite)
            continue
        cannot: dict[int, list[Mapping[str, Any]]] = {}
        for f in r.get("cannot_run") or []:
            cannot.setdefault(int(f["enqueue"]), []).append(f)
        later = {int(f["enqueue"]): f for f in r.get("at_launch") or []}
        for step in plan.get("steps") or []:
            n = int(step["enqueue"])
            case = Case(f"enqueue {n} {step.get('kernel') or ''}".strip(), classname)
            if n in cannot:
                case.outcome, case.type = "error", ",".join(
                    dict.fromkeys(str(f["kind"]) for f in cannot[n]))
                case.message = "cannot run: " + "; ".join(
                    dict.fromkeys(str(f["reason"]) for f in cannot[n]))
            elif n in later:
                case.system_out = f"{later[n]['reason']}: the driver decides at launch"
            suite.cases.append(case)
        for k in plan.get("skipped") or []:
            suite.cases.append(Case(f"enqueue {k['enqueue']} {k.get('kernel', '')}".strip(),
                                    classname, "skipped", f"not replayed: {k['why']}",
                                    type="not-replayed"))  # fmt: skip
        for run in plan.get("lost") or []:
            suite.cases.append(Case(f"lost enqueues {run['first']}-{run['last']}", classname,
                                    "skipped", "lost with the log", type="lost"))
        suites.append(suite)
    return junit_document("cltui feasible", suites)
