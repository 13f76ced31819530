"""The README's verdict table, row by row: which evidence makes PASS, FAIL, INCOMPLETE and
ERROR.  Each row is held by cases of tests/fixtures/verdict_cases.json (a plan and a device
result in, the verdict out), run through the Python engine's verdict() and replay.cpp's
(--verdict-cases), which must give what each case expects: one rule in both runners.  The
rows on real captures, damaged on purpose, are held end to end in tests/test_integrity.py
and tests/test_verdict.py."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cltui.replay.engine import verdict, verdict_exit
from tests.test_export_device import cpp_replay  # a session fixture: the C++ replay, built once

__all__ = ["cpp_replay"]

ROOT = Path(__file__).resolve().parent.parent
CASES_FILE = ROOT / "tests" / "fixtures" / "verdict_cases.json"
CASES: list[dict[str, Any]] = json.loads(CASES_FILE.read_text(encoding="utf-8"))


def _table() -> dict[str, int]:
    """The README's verdict table: row -> exit code."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (PASS|FAIL|INCOMPLETE|ERROR) \| (\d) \|", text, re.M)
    return {name: int(code) for name, code in rows}


def test_every_row_of_the_table_is_held() -> None:
    table = _table()
    assert set(table) == {"PASS", "FAIL", "INCOMPLETE", "ERROR"}
    held = {c["row"] for c in CASES}
    assert held == set(table)
    for c in CASES:
        assert c["expect"]["status"].upper() == c["row"], c["case"]
        assert verdict_exit(c["expect"]["status"]) == table[c["row"]], c["case"]


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_the_engine_gives_each_case(case: dict[str, Any]) -> None:
    v = verdict(case["plan"], case["result"])
    assert {"status": v["status"], "line": v["line"], "counts": dict(v["counts"])} == (
        case["expect"]
    )


@pytest.fixture(scope="module")
def cpp_verdicts(cpp_replay: Path) -> dict[str, dict[str, Any]]:
    proc = subprocess.run(
        [str(cpp_replay), "--verdict-cases", str(CASES_FILE)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    got: list[dict[str, Any]] = json.loads(proc.stdout)
    assert len(got) == len(CASES)
    return {c["case"]: g for c, g in zip(CASES, got, strict=True)}


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_replay_cpp_gives_each_case_alike(
    case: dict[str, Any], cpp_verdicts: dict[str, dict[str, Any]]
) -> None:
    got = dict(cpp_verdicts[case["case"]])
    assert got.pop("exit") == verdict_exit(case["expect"]["status"]), case["case"]
    assert got == case["expect"], case["case"]
