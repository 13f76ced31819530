"""The feasibility rule as data (tests/fixtures/feasibility_cases.json): a device's facts, a
step, a kernel's facts, a source that did not build -> what cannot run there and why; and
which checks follow an enqueue that cannot run.  Pure: no device needed."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, cast

import pytest

from cltui.replay.engine import feasible
from cltui.replay.engine.schema import Finding, Manifest
from tests.test_export_device import cpp_replay  # a session fixture: the C++ replay, built once

__all__ = ["cpp_replay"]

CASES = json.loads(
    (Path(__file__).parent / "fixtures" / "feasibility_cases.json").read_text(encoding="utf-8")
)


def findings_of(case: dict[str, Any]) -> list[Finding]:
    """The rule applied to one case, as the engine applies it."""
    dev = cast(feasible.DeviceFacts, {**CASES["device"], **case.get("device", {})})
    step = {"enqueue": 56, "kernel": "k", "program": "p", "args": [], "loads": [],
            "prechecks": [], "checks": [], "offset": None, **case["step"]}  # fmt: skip
    plan = cast(Manifest, {
        "programs": {"p": {"label": "program 0", "source": None, "options":
                           case.get("options", ""), "binaries": []}},
        "memory": case.get("memory", {}), "steps": [step],
    })  # fmt: skip
    bad = feasible.memory_findings(plan, dev)
    found = feasible.step_findings(plan, plan["steps"][0], dev, bad)
    if not found and case.get("kernel"):
        found = feasible.kernel_findings(plan["steps"][0], case["kernel"], dev)
    if not found and case.get("build_failed"):
        error = case.get("build_log", "error: use of type 'double' requires cl_khr_fp64 support")
        needs = feasible.source_needs(case["source"])
        found = feasible.build_findings(plan, "p", needs, dev, error)
    return found


@pytest.mark.parametrize("case", CASES["cases"], ids=[c["name"] for c in CASES["cases"]])
def test_feasibility_case(case: dict[str, Any]) -> None:
    found = findings_of(case)
    assert [f["kind"] for f in found] == case["kinds"], found
    for f in found:
        assert f["enqueue"] == 56 and f["kernel"] == "k"
        assert f["kind"] in feasible.KINDS
        assert "\n" not in f["reason"]
    if case.get("reason"):
        assert any(case["reason"] in f["reason"] for f in found), found


def test_every_kind_has_a_case() -> None:
    seen = {k for c in CASES["cases"] for k in c["kinds"]}
    assert seen == set(feasible.KINDS)


def test_source_needs_skip_comments_and_strings() -> None:
    assert feasible.source_needs('/* double */ // half x;\n printf("double");') == []
    assert feasible.source_needs("double2 v;") == ["fp64"]
    assert feasible.source_needs("/* unterminated double") == []
    text = "/*" * 20000 + "x"  # linear: an unterminated comment per position
    assert feasible.source_needs(text) == []


def test_cl_std() -> None:
    assert feasible.cl_std("-I x -cl-std=CL2.0 -cl-std=CL3.0") == "3.0"
    assert feasible.cl_std("-cl-fast-relaxed-math") is None


def _plan_chain() -> Manifest:
    """Three steps: 0 writes a (from input x), 1 reads a and writes b, 2 reloads b and
    writes c; 3 reads x only."""
    def step(n: int, args: list[tuple[str, str]], loads: list[str]) -> dict[str, Any]:
        return {"enqueue": n, "kernel": f"k{n}", "program": "p", "global": [4], "local": None,
                "offset": None,
                "args": [{"index": i, "kind": "buffer", "mem": m, "type": t}
                         for i, (m, t) in enumerate(args)],
                "loads": [{"mem": m, "data": m, "why": "input", "note": ""} for m in loads],
                "prechecks": [{"mem": m, "args": [0], "label": m, "dtype": None, "shape": None}
                              for m, _ in args],
                "checks": [{"mem": m, "args": [0], "label": m, "dtype": None, "shape": None}
                           for m, _ in args]}  # fmt: skip

    steps = [
        step(10, [("x", "__global const float *"), ("a", "__global float *")], ["x", "a"]),
        step(11, [("a", "__global const float *"), ("b", "__global float *")], []),
        step(12, [("b", "__global float *"), ("c", "__global float *")], ["b"]),
        step(13, [("x", "__global const float *")], []),
    ]
    return cast(Manifest, {"steps": steps, "memory": {}, "programs": {}})


def test_checks_after_an_enqueue_that_cannot_run_are_marked() -> None:
    plan = _plan_chain()
    marks = feasible.after_cannot_run(plan, {0})
    # step 1 reads a (never written): its checks and what it writes are marked with 10
    assert marks[1] == {"pre": {"a": 10}, "post": {"a": 10, "b": 10}}
    # step 2 reloads b: its pre-check of b (the state before the load) is marked, no check
    # after the load is
    assert marks[2] == {"pre": {"b": 10}, "post": {}}
    # step 3 reads x, which enqueue 10 only read: nothing
    assert 3 not in marks
    assert feasible.after_cannot_run(plan, set()) == {}
    later = copy.deepcopy(plan)
    assert feasible.after_cannot_run(later, {1}) == {2: {"pre": {"b": 11}, "post": {}}}


@pytest.mark.child
def test_replay_cpp_holds_the_same_rule(cpp_replay: Path) -> None:
    """replay.cpp's --feasibility-cases gives, case for case, the kinds and the reasons the
    Python rule gives (cpp/feasible.hpp is the same rule in C++)."""
    import subprocess

    path = Path(__file__).parent / "fixtures" / "feasibility_cases.json"
    proc = subprocess.run([str(cpp_replay), "--feasibility-cases", str(path)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert len(got) == len(CASES["cases"])
    for case, cpp in zip(CASES["cases"], got, strict=True):
        found = findings_of(case)
        assert cpp == {"kinds": [f["kind"] for f in found],
                       "reasons": [f["reason"] for f in found]}, case["name"]  # fmt: skip
