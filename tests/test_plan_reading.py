"""The plan reader, one rule in both runners: what the Python engine reads in a manifest
(cltui/replay/engine/reading.py) and what replay.cpp's reader makes of it (cpp/plan.hpp,
printed by ``--plan-cases``) agree, value for value and default for default, over the
hand-written edge cases of tests/fixtures/plan_cases.json and plans built from real captures
(buffers, images, samplers, SVM, fills and copies inside a range, skipped and recovered
enqueues)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cltui.capture import open_capture
from cltui.capture.ranges import parse_range
from cltui.replay.engine.reading import plan_reading
from cltui.replay.plan import build_plan
from tests.test_export_device import cpp_replay  # a session fixture: the C++ replay, built once

__all__ = ["cpp_replay"]

CASES_FILE = Path(__file__).resolve().parent / "fixtures" / "plan_cases.json"
CASES: list[dict[str, Any]] = json.loads(CASES_FILE.read_text(encoding="utf-8"))


def _cpp_readings(cpp_replay: Path, cases_file: Path) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [str(cpp_replay), "--plan-cases", str(cases_file)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    got: list[dict[str, Any]] = json.loads(proc.stdout)
    return got


def _same(py: dict[str, Any], cpp: dict[str, Any], case: str) -> None:
    """Equal readings (floats as values: the two print them differently)."""
    assert json.loads(json.dumps(py)) == cpp, case


def test_the_fixture_cases_cover_every_part_of_a_plan() -> None:
    readings = [plan_reading(c["manifest"]) for c in CASES]
    kinds = {a["kind"] for r in readings for s in r["steps"] for a in s["args"]}
    assert kinds == {"buffer", "image", "svm", "local", "scalar", "sampler", "null"}
    ops = {t["op"] for r in readings for s in r["steps"] for t in s["transfers"]}
    assert {"fill", "copy_rect", ""} <= ops
    assert any(r["counts"]["kernels"] is None for r in readings)
    assert any(r["counts"]["lost"] and r["counts"]["recovered"] for r in readings)


@pytest.mark.cmake
def test_replay_cpp_reads_each_fixture_case_alike(cpp_replay: Path) -> None:
    got = _cpp_readings(cpp_replay, CASES_FILE)
    assert len(got) == len(CASES)
    for case, cpp in zip(CASES, got, strict=True):
        _same(plan_reading(case["manifest"]), cpp, case["case"])


@pytest.mark.cmake
def test_replay_cpp_reads_real_plans_alike(
    cpp_replay: Path, images_svm: Path, pyocl_pocl: Path, tmp_path: Path
) -> None:
    plans = [
        (images_svm, "0-40", "chain"),  # images, samplers, SVM
        (pyocl_pocl, "0-60", "chain"),  # buffers, scalars, transfers inside the range
        (pyocl_pocl, "10-30", "isolated"),
    ]
    manifests = [
        build_plan(open_capture(cap), parse_range(rng), mode).to_manifest()
        for cap, rng, mode in plans
    ]
    cases_file = tmp_path / "cases.json"
    cases_file.write_text(json.dumps([{"case": str(p), "manifest": m}
                                      for p, m in zip(plans, manifests, strict=True)]))  # fmt: skip
    got = _cpp_readings(cpp_replay, cases_file)
    for plan, m, cpp in zip(plans, manifests, got, strict=True):
        py = plan_reading(m)
        assert py["steps"], plan
        _same(py, cpp, str(plan))
