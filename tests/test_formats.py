"""One ``--format`` for every command that has a verdict (:mod:`cltui.commands.output`):
JUnit XML for CI from ``try``, ``sweep``, ``feasible``, ``diverge``, ``explain``, ``shrink``
and ``latency`` as from ``replay`` and ``check`` (the same report as the text and the JSON,
the exit code the text's), CSV from ``sweep`` (its ``--csv FILE`` the same text), the trace
from ``latency`` (its ``--trace FILE`` the same); ``--json`` stays ``--format json``."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from cltui.cli import main
from tests.analysis_synth import chain_capture, write_capture
from tests.test_experiment_try import BROKEN, LINE
from tests.test_feasible_device import big_local  # noqa: F401  (a fixture)

VERDICT_COMMANDS = ["replay", "check", "try", "sweep", "feasible", "diverge", "explain",
                    "shrink", "fleet", "latency"]  # fmt: skip


def _junit(stdout: str) -> ET.Element:
    """The document parsed: its declaration first, then testsuites whose totals are the sum
    of their suites' (as JUnit readers check them)."""
    head, body = stdout.split("\n", 1)
    assert head == '<?xml version="1.0" encoding="UTF-8"?>'
    root = ET.fromstring(body)
    assert root.tag == "testsuites"
    for key in ("tests", "failures", "errors", "skipped"):
        assert int(root.get(key, "-1")) == sum(int(s.get(key, "0"))
                                               for s in root.findall("testsuite")), key
    return root


def _outcomes(suite: ET.Element) -> dict[str, list[str]]:
    return {str(c.get("name")): [e.tag for e in c if e.tag != "system-out"]
            for c in suite.findall("testcase")}  # fmt: skip


@pytest.mark.parametrize("command", VERDICT_COMMANDS)
def test_every_command_with_a_verdict_writes_junit(command: str) -> None:
    res = CliRunner().invoke(main, [command, "--help"])
    assert res.exit_code == 0
    assert "--format [text|json|junit" in res.output and "--json" in res.output


def test_sweep_writes_csv_and_latency_a_trace() -> None:
    assert "--format [text|json|junit|csv]" in CliRunner().invoke(main, ["sweep", "--help"]).output
    latency = CliRunner().invoke(main, ["latency", "--help"]).output
    assert "--format [text|json|junit|trace]" in latency


def test_a_format_a_command_has_not_is_bad_input() -> None:
    res = CliRunner().invoke(main, ["diverge", "a", "b", "--format", "csv"])
    assert res.exit_code == 2 and "'csv' is not one of" in res.output
    res = CliRunner().invoke(main, ["diverge", "a", "b", "--json", "--format", "junit"])
    assert res.exit_code == 2 and "does not go with --format junit" in res.output
    res = CliRunner().invoke(main, ["fleet", "--list-hosts", "inv.yml", "--format", "junit"])
    assert res.exit_code == 2 and "it has no verdict" in res.output


def test_diverge_junit_a_failure_where_the_captures_part(pyocl_pocl: Path,
                                                         pyocl_oclgrind: Path) -> None:  # fmt: skip
    """The pyopencl pair first diverges at enqueue 22 (sin_kernel, 1 ULP): that case fails,
    typed ``different``; identical kernel enqueues pass; exit 1 as the text's."""
    args = ["diverge", str(pyocl_pocl), str(pyocl_oclgrind), "--range", "0-25"]
    res = CliRunner().invoke(main, [*args, "--format", "junit"])
    assert res.exit_code == 1, res.output
    (suite,) = _junit(res.stdout).findall("testsuite")
    outcomes = _outcomes(suite)
    assert outcomes["enqueue 22 sin_kernel"] == ["failure"]
    fail = suite.find("testcase[@name='enqueue 22 sin_kernel']/failure")
    assert fail is not None and fail.get("type") == "different"
    assert [] in outcomes.values()  # what is identical passes
    data = json.loads(CliRunner().invoke(main, [*args, "--json"]).stdout)
    failures = {f"enqueue {e['enqueue']} {e['kernel']}" for e in data["enqueues"]
                if e["status"] == "different"}  # fmt: skip
    assert failures == {n for n, o in outcomes.items() if o == ["failure"]}


@pytest.mark.child
@pytest.mark.device
def test_try_junit_a_broken_variant_fails_its_enqueue(pyocl_pocl: Path, tmp_path: Path) -> None:
    patch = tmp_path / "broken.patch"
    patch.write_text(BROKEN)
    res = CliRunner().invoke(main, ["try", str(pyocl_pocl), "23", "--patch", f"p17={patch}",
                                    "-d", "pocl", "--repeat", "3", "--format", "junit"])
    assert res.exit_code == 1, res.output
    (suite,) = _junit(res.stdout).findall("testsuite")
    outcomes = _outcomes(suite)
    (step,) = [n for n in outcomes if n.startswith("enqueue 23 ")]
    assert outcomes == {step: ["failure"], "timing": []}, outcomes
    fail = suite.find("testcase/failure")
    assert fail is not None and fail.get("type") == "different"
    assert "arg 0 (buffer 0015)" in fail.get("message", "")
    verdict = suite.find("properties/property[@name='verdict']")
    assert verdict is not None and verdict.get("value", "").startswith("FAIL")


@pytest.mark.child
@pytest.mark.device
def test_try_junit_a_crash_fails_its_enqueue_and_the_rest_is_not_reached(
    pyocl_pocl: Path, tmp_path: Path
) -> None:
    """B's kernel at 23 of 22-24 writes far outside its buffer (SIGSEGV): as a replay's
    JUnit, 22 passes, 23 is a failure typed ``crash``, 24 is skipped, not reached (it was
    left out, and the crash was an error case of its own)."""
    src = (pyocl_pocl / "CLI_0017_9C70697D_source.cl").read_text()
    wild = tmp_path / "wild.cl"
    wild.write_text(src.replace(LINE, "            z[i + (1L << 40)] = a*x[i] + b;\n"))
    res = CliRunner().invoke(main, ["try", str(pyocl_pocl), "22-24", "--source", f"p17={wild}",
                                    "-d", "pocl", "--repeat", "3", "--format", "junit"])
    assert res.exit_code == 1, res.output
    (suite,) = _junit(res.stdout).findall("testsuite")
    assert _outcomes(suite) == {"enqueue 22 sin_kernel": [], "enqueue 23": ["failure"],
                                "enqueue 24": ["skipped"], "timing": []}, _outcomes(suite)
    fail = suite.find("testcase[@name='enqueue 23']/failure")
    assert fail is not None and fail.get("type") == "crash"
    assert fail.get("message") == "enqueue 23 crashed the driver (SIGSEGV)"
    timing = suite.find("testcase[@name='timing']/system-out")
    assert timing is not None and (timing.text or "").startswith(
        "B against A: no timing: the variant is FAIL")


@pytest.mark.child
@pytest.mark.device
def test_sweep_junit_then_csv_from_its_results(pyocl_pocl: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A case per point run (the capture's own and each local size) on the device; the
    second run resumes from --results and writes CSV on stdout, byte for byte what --csv
    FILE gets."""
    monkeypatch.setenv("CLTUI_DATA_DIR", str(tmp_path / "data"))
    results = tmp_path / "rows.jsonl"
    args = ["sweep", str(pyocl_pocl), "23", "--local", "32,64", "-d", "pocl", "--repeat", "3",
            "--results", str(results), "--save", ""]
    res = CliRunner().invoke(main, [*args, "--format", "junit"])
    assert res.exit_code in (0, 1), res.output
    (suite,) = _junit(res.stdout).findall("testsuite")
    outcomes = _outcomes(suite)
    assert len(outcomes) == 3 and all(o == [] for o in outcomes.values()), outcomes
    assert any(n.startswith("capture") for n in outcomes)
    assert all(c.get("time") is not None for c in suite.findall("testcase"))
    table = tmp_path / "rows.csv"
    res = CliRunner().invoke(main, [*args, "--format", "csv", "--csv", str(table)])
    assert res.exit_code in (0, 1), res.output
    assert res.stdout == table.read_text()
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert len(rows) == 3 and {r["status"] for r in rows} == {"pass"}
    assert {r["point"] for r in rows} >= {"capture"}


@pytest.mark.child
def test_feasible_junit_an_enqueue_that_cannot_run_is_an_error(big_local: Path) -> None:  # noqa: F811
    res = CliRunner().invoke(main, ["feasible", str(big_local), "6-8", "-d", "oclgrind",
                                    "--format", "junit"])
    assert res.exit_code == 3, res.output
    (suite,) = _junit(res.stdout).findall("testsuite")
    outcomes = _outcomes(suite)
    assert len(outcomes) == 3
    (six,) = [n for n in outcomes if n.startswith("enqueue 6 ")]
    assert outcomes[six] == ["error"]
    err = suite.find(f"testcase[@name='{six}']/error")
    assert err is not None and "work-group-size" in err.get("type", "")
    assert "CL_DEVICE_MAX_WORK_GROUP_SIZE" in err.get("message", "")
    assert all(o == [] for n, o in outcomes.items() if n != six)


@pytest.mark.child
@pytest.mark.device
def test_shrink_junit_names_the_smallest_failing_set(tmp_path: Path) -> None:
    root = write_capture(chain_capture(plant_at=2), tmp_path / "plant")
    res = CliRunner().invoke(main, ["shrink", str(root), "0-5", "--device", "pocl",
                                    "--format", "junit"])
    assert res.exit_code == 1, res.output
    (suite,) = _junit(res.stdout).findall("testsuite")
    fail = suite.find("testcase/failure")
    assert fail is not None and fail.get("type") == "different"
    assert fail.get("message", "").startswith("smallest failing set: 2 (1 of 6")
    res = CliRunner().invoke(main, ["shrink", str(root), "0-1", "--device", "pocl",
                                    "--format", "junit"])
    assert res.exit_code == 0, res.output
    assert _junit(res.stdout).get("failures") == "0"


@pytest.mark.child
@pytest.mark.device
def test_explain_junit_a_failure_per_output_that_differs(planted: Path) -> None:
    """Planted enqueue 4 (a built-in's accuracy): its output differs between PoCL and
    Oclgrind: one failure, with where and why; the text report is the suite's output."""
    res = CliRunner().invoke(main, ["explain", str(planted), "4", "-d", "pocl", "-d",
                                    "oclgrind", "--format", "junit"])
    assert res.exit_code == 1, res.output
    (suite,) = _junit(res.stdout).findall("testsuite")
    fails = suite.findall("testcase/failure")
    assert len(fails) == 1 and fails[0].get("type") == "different"
    assert "elements differ" in fails[0].get("message", "")
    assert "why: " in fails[0].get("message", "")
    assert (suite.findtext("system-out") or "").startswith("DIVERGES")


@pytest.mark.child
@pytest.mark.device
def test_latency_junit_and_the_trace(tmp_path: Path) -> None:
    """A case per runner measured (its time the host time per launch); the trace on stdout
    is what --trace FILE gets, a Chrome trace-event document."""
    root = write_capture(chain_capture(), tmp_path / "chain")
    args = ["latency", str(root), "0-5", "-d", "pocl", "--repeat", "3", "--no-native",
            "--delays", "0"]
    res = CliRunner().invoke(main, [*args, "--format", "junit"])
    assert res.exit_code == 0, res.output
    (suite,) = _junit(res.stdout).findall("testsuite")
    outcomes = _outcomes(suite)
    assert "Python engine" in outcomes and all(o == [] for o in outcomes.values()), outcomes
    case = suite.find("testcase[@name='Python engine']")
    assert case is not None and float(case.get("time", "0")) > 0
    trace = tmp_path / "t.json"
    res = CliRunner().invoke(main, [*args, "--format", "trace", "--trace", str(trace)])
    assert res.exit_code == 0, res.output
    assert res.stdout == trace.read_text()
    doc = json.loads(res.stdout)
    procs = [e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"]
    assert procs[0] == "capture 0-5" and len(procs) == 2
