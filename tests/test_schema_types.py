"""docs/replay.schema.json and cltui.replay.engine.schema say the same thing, key for key: every
result shape's required keys and its known keys."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_type_hints

import pytest

from cltui.replay.engine import schema

DOC = json.loads((Path(__file__).resolve().parent.parent / "docs/replay.schema.json").read_text())

PAIRS = {
    "device": schema.Device,
    "deviceChoice": schema.DeviceChoice,
    "verdict": schema.Verdict,
    "compareResult": schema.CompareResult,
    "check": schema.CheckResult,
    "load": schema.LoadResult,
    "step": schema.StepResult,
    "deviceResult": schema.DeviceResult,
    "finding": schema.Finding,
    "report": schema.Report,
}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_typeddict_matches_the_json_schema(name: str) -> None:
    td: Any = PAIRS[name]
    spec = DOC["$defs"][name]
    assert set(td.__required_keys__) == set(spec.get("required", [])), name
    assert set(td.__required_keys__) | set(td.__optional_keys__) == set(spec["properties"]), name


def test_nested_shapes_match() -> None:
    counts = DOC["$defs"]["verdict"]["properties"]["counts"]["properties"]
    assert set(schema.VerdictCounts.__optional_keys__) == set(counts)
    timing = DOC["$defs"]["step"]["properties"]["timing"]
    assert set(schema.StepTiming.__required_keys__) == set(timing["required"])
    plan = DOC["$defs"]["report"]["properties"]["plan"]
    assert set(schema.ReportPlan.__required_keys__) == set(plan["required"])
    cross = DOC["$defs"]["report"]["properties"]["cross"]["items"]
    keys = set(schema.CrossCheck.__required_keys__) | set(schema.CrossCheck.__optional_keys__)
    assert keys == set(cross["properties"])
    assert set(schema.CrossCheck.__required_keys__) == set(cross["required"])


def test_enums_match() -> None:
    hints = get_type_hints(schema.DeviceResult)
    assert set(hints["status"].__args__) == set(
        DOC["$defs"]["deviceResult"]["properties"]["status"]["enum"]
    )
    assert set(get_type_hints(schema.Verdict)["status"].__args__) == set(
        DOC["$defs"]["verdict"]["properties"]["status"]["enum"]
    )


@pytest.mark.slow  # CPU seconds on a real capture: the full tier's (./dev test --fast leaves it)
def test_a_real_plan_has_the_manifest_keys(pyocl_pocl: Path) -> None:
    from cltui.capture import open_capture
    from cltui.capture.ranges import parse_range
    from cltui.replay.plan import build_plan

    plan = build_plan(open_capture(pyocl_pocl), parse_range("0-"), mode="chain").manifest
    required = set(schema.Manifest.__required_keys__)
    known = required | set(schema.Manifest.__optional_keys__)
    assert required <= set(plan) <= known
    step_keys = set(schema.StepSpec.__required_keys__)
    step_known = step_keys | set(schema.StepSpec.__optional_keys__)
    for step in plan["steps"]:
        assert step_keys <= set(step) <= step_known, set(step) ^ step_known
        for check in step["checks"] + step["prechecks"]:
            known_c = set(schema.CheckSpec.__required_keys__) | set(
                schema.CheckSpec.__optional_keys__
            )
            assert set(schema.CheckSpec.__required_keys__) <= set(check) <= known_c
        for load in step["loads"]:
            assert set(load) == set(schema.LoadSpec.__required_keys__)
