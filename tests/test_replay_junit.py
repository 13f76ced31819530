"""``cltui replay --format junit`` and ``cltui check --format junit``: JUnit XML for CI from
the same report as the text and the JSON (a suite per device, a case per kernel enqueue of the
range), with what the verdict does not count as checked as ``skipped``, never as a pass; and the
writer's own rules (totals, ``time``, ``system-out``, control characters escaped)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from cltui.cli import main
from cltui.replay.junit import Case, Suite, junit_document
from tests.analysis_synth import HostOp
from tests.test_verdict import SEVEN, N, _capture


def test_the_document_counts_escapes_and_times() -> None:
    doc = junit_document("run", [
        Suite("dev\x01", [Case("enqueue 1 k\x07", "c", time=0.5),
                          Case("enqueue 2", "c", "failure", "differs", type="different"),
                          Case("enqueue 3", "c", "skipped", "unchecked")],
              properties=[("verdict", "FAIL: ...")], system_out="FAIL\nnote"),
        Suite("other", [Case("enqueue 1", "c", "error", "cannot run: no fp64")]),
    ])  # fmt: skip
    root = ET.fromstring(doc.split("\n", 1)[1])
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == (
        "4", "1", "1", "1"
    )
    first = root.findall("testsuite")[0]
    assert first.get("name") == "dev\\x01" and first.get("time") == "0.500000"
    cases = first.findall("testcase")
    assert cases[0].get("name") == "enqueue 1 k\\x07" and cases[0].get("time") == "0.500000"
    fail = cases[1].find("failure")
    assert fail is not None and fail.get("type") == "different"
    assert first.findtext("system-out") == "FAIL\nnote"


@pytest.mark.child
@pytest.mark.device
def test_a_divergence_is_a_failure_per_enqueue_on_its_device(planted: Path) -> None:
    res = CliRunner().invoke(
        main, ["replay", str(planted), "3-11", "-d", "pocl", "-d", "oclgrind", "--format", "junit"]
    )
    assert res.exit_code == 1, res.output
    root = ET.fromstring(res.stdout.split("\n", 1)[1])
    suites = {s.get("name", "").split(" ", 1)[1]: s for s in root.findall("testsuite")}
    pocl = next(s for n, s in suites.items() if "pthread" in n)
    grind = suites["Oclgrind Simulator"]
    assert (pocl.get("tests"), pocl.get("failures"), pocl.get("skipped")) == ("3", "0", "0")
    assert (grind.get("tests"), grind.get("failures")) == ("3", "3")
    names = [c.get("name") for c in grind.findall("testcase")]
    assert names == ["enqueue 4 builtins", "enqueue 7 native_fns", "enqueue 10 subnormal"]
    assert all(c.get("time") is not None for c in grind.findall("testcase"))
    verdict = grind.find("properties/property[@name='verdict']")
    assert verdict is not None and verdict.get("value", "").startswith("FAIL: 3 outputs different")


@pytest.mark.child
@pytest.mark.device
def test_what_is_not_checked_is_skipped_never_a_pass(tmp_path: Path) -> None:
    """A fill the log holds no pattern of and a kernel without Post dumps: INCOMPLETE (exit
    3), and in JUnit the unchecked enqueue and the unreplayed transfer are skipped cases."""
    fill = HostOp("fill", "A", pattern=SEVEN, size=4 * N)
    cap = _capture(tmp_path, [fill], pre=False, post=False)
    res = CliRunner().invoke(main, ["replay", str(cap), "0-3", "-d", "pocl", "--format", "junit"])
    assert res.exit_code == 3, res.output
    root = ET.fromstring(res.stdout.split("\n", 1)[1])
    suite = root.findall("testsuite")[0]
    outcomes = {c.get("name"): [e.tag for e in c] for c in suite.findall("testcase")}
    assert outcomes["enqueue 3 add"] == ["skipped"]
    assert outcomes["host transfers"] == ["skipped"]
    assert int(suite.get("skipped", "0")) >= 2 and suite.get("failures") == "0"


def test_the_help_names_the_formats() -> None:
    res = CliRunner().invoke(main, ["replay", "--help"])
    assert "[text|json|junit]" in res.output


@pytest.mark.child
@pytest.mark.device
def test_check_writes_junit_with_a_failure_per_finding(pyocl_pocl: Path) -> None:
    """``cltui check --format junit``: Oclgrind's finding on enqueue 10 is that case's
    failure, typed by its kind; the enqueues it found nothing in pass; the exit code is the
    text's (1: a finding)."""
    res = CliRunner().invoke(main, ["check", str(pyocl_pocl), "10-14", "--format", "junit"])
    assert res.exit_code == 1, res.output
    root = ET.fromstring(res.stdout.split("\n", 1)[1])
    suite = root.findall("testsuite")[0]
    outcomes = {c.get("name"): [e.tag for e in c] for c in suite.findall("testcase")}
    assert outcomes["enqueue 10 scan_lev2"] == ["failure"]
    assert outcomes["enqueue 11 scan_final_update"] == []
    fail = suite.find("testcase/failure")
    assert fail is not None and fail.get("type") == "fatal"
