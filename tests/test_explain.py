"""cltui explain: the rewrites and the divergence map (pure), and the command on PoCL vs
Oclgrind with the planted_divergence_pocl capture, whose README gives each enqueue's cause."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from cltui.analysis.explain.divergence import divergence_map, pattern
from cltui.analysis.explain.rewrite import (
    builtins_called,
    full_precision,
    reference_builtins,
    without_contraction,
)
from cltui.cli import main
from tests.explain_cli import explain_json
from tests.schemas import validate


def test_contraction_rewrite_unfuses_nested_calls_and_leaves_comments() -> None:
    src = "float f = mad(m, b[i], fma(c[i], g(x, y), 1.0f)); // mad(a, b, c)\n"
    out, n = without_contraction(src)
    assert n == 2
    assert out.startswith("#pragma OPENCL FP_CONTRACT OFF\n")
    assert "((m) * (b[i]) + (((c[i]) * (g(x, y)) + (1.0f))))" in out
    assert out.endswith("// mad(a, b, c)\n")  # a comment is not code


def test_full_precision_rewrites_calls_only() -> None:
    src = 'kernel void native_fns() { x = native_exp(v) + half_divide(a, b) + native_recip(q); }'
    out, names = full_precision(src)
    assert "kernel void native_fns()" in out  # a kernel named native_... is not a call
    assert "exp(v) + ((a) / (b)) + (1.0f / (q))" in out
    assert names == ["native_exp", "half_divide", "native_recip"]


def test_builtins_and_their_double_precision_reference() -> None:
    src = "x = exp(sin(a)) + pown(b, 3); /* cos(x) */ y = my.sin(z);"
    assert builtins_called(src) == ["exp", "sin", "pown"]
    ref, _ = reference_builtins(src)
    assert "((float)exp((double)(((float)sin((double)(a)))))) + " in ref
    assert "((float)pown((double)(b), 3))" in ref  # pown's int argument stays an int
    assert ref.startswith("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n")
    bumped, _ = reference_builtins(src, bump=True)
    assert "cltui_bump_ulps(((float)pown((double)(b), 3)), 16)" in bumped


def _f32(values: list[float]) -> bytes:
    return np.array(values, dtype=np.float32).tobytes()


def test_divergence_map_counts_ulps_and_lists_the_worst() -> None:
    a = np.ones(16, dtype=np.float32)
    b = a.copy()
    b[3] = np.nextafter(np.float32(1), np.float32(2))  # 1 ULP
    b[7] = np.float32(1.5)  # 4,194,304 ULP
    b[9] = np.float32("nan")
    m = divergence_map(a.tobytes(), b.tobytes(), "<f4", None, a.tobytes())
    assert (m["elements"], m["differ"], m["unit"]) == (16, 3, "ULP")
    assert m["histogram"]["1"] == 1 and m["histogram"][">256"] == 1
    assert m["histogram"]["not finite"] == 1
    assert m["max"] == 4194304.0
    assert [e["index"] for e in m["worst"]] == [9, 7, 3]  # not finite first
    assert m["worst"][0]["b"] == "nan" and m["worst"][0]["distance"] is None
    assert m["worst"][1]["capture"] == 1.0 and m["worst"][1]["b"] == 1.5


def test_patterns_are_claimed_only_when_every_element_shows_them() -> None:
    def kind(idx: list[int], n: int, lanes: int = 1, shape: list[int] | None = None) -> str:
        return pattern(np.array(idx, dtype=np.int64), n, lanes, shape)["kind"]

    assert kind(list(range(8)), 8) == "all"
    assert kind([3, 7, 11, 19], 32) == "stride"  # all ≡ 3 mod 4
    assert kind([3, 7, 12], 32) == "scattered"
    assert kind([3, 11, 19, 27], 32) == "stride"  # 4 of the 4 positions ≡ 3 mod 8
    assert kind([3, 131, 259, 387], 2048) == "scattered"  # ≡ 3 mod 128: 4 of 16 positions
    assert kind([4, 5, 6], 32) == "one-block"
    assert kind([4, 5, 7], 16, 1, [4, 4, 1]) == "one-row"  # x + 4y: row 1
    assert kind([0, 3, 4, 12, 15], 16, 1, [4, 4, 1]) == "edges"
    assert kind([0, 5, 15], 16, 1, [4, 4, 1]) == "scattered"  # (1, 1) is inside
    text = pattern(np.array([1, 5, 9, 13], dtype=np.int64), 16, 4)["text"]
    assert text.startswith("lane 1 of each item")


# enqueue -> (the cause's rebuild, within the specification, words of the cause)
PLANTED = {
    1: ("contraction", True, "fused multiply-add"),
    4: ("accuracy", True, "built-in accuracy"),
    7: ("accuracy", True, "native_ accuracy"),
    10: ("denormals", True, "-cl-denorms-are-zero"),
    13: ("relaxed-math", True, "-cl-fast-relaxed-math"),
}


@pytest.mark.child
@pytest.mark.device
@pytest.mark.parametrize("enqueue", sorted(PLANTED))
def test_explain_names_the_planted_cause(planted: Path, enqueue: int) -> None:
    cause, within, words = PLANTED[enqueue]
    code, rep = explain_json(planted, enqueue)
    assert code == 1 and rep["verdict"]["status"] == "diverges", rep["verdict"]
    assert rep["why"]["cause"] == cause, rep["why"]
    assert rep["why"]["within_spec"] is within
    assert words in rep["why"]["text"]
    assert "within the OpenCL specification" in rep["verdict"]["line"]
    (where,) = rep["where"]
    assert where["map"]["elements"] == 4096 and where["map"]["differ"] > 0
    assert where["map"]["worst"][0]["a"] != where["map"]["worst"][0]["b"]
    assert rep["why"]["order"] == {"a": False, "b": False}


@pytest.mark.child
@pytest.mark.device
def test_explain_reports_every_subnormal_flushed(planted: Path) -> None:
    _, rep = explain_json(planted, 10)
    m = rep["where"][0]["map"]
    assert m["differ"] == 4096 and m["pattern"]["kind"] == "all"
    assert {e["a"] for e in m["worst"]} == {0.0}  # PoCL flushed them; Oclgrind did not
    assert rep["where"][0]["capture"]["a"] == "bit-exact"


@pytest.mark.child
@pytest.mark.device
def test_explain_control_and_markdown(planted: Path, tmp_path: Path) -> None:
    md = tmp_path / "report.md"
    code, rep = explain_json(planted, 16, "--markdown", str(md))
    assert code == 0 and rep["verdict"]["line"].startswith("NO DIVERGENCE")
    assert rep["where"] == [] and "## Why" not in md.read_text()
    code, _ = explain_json(planted, 1, "--markdown", str(md))
    text = md.read_text()
    assert code == 1 and "## Where: arg 3" in text and "| element | A | B | capture |" in text
    assert "Cause: contraction" in text


@pytest.mark.child
@pytest.mark.device
def test_explain_on_one_device_says_whether_its_runs_agree(planted: Path) -> None:
    res = CliRunner().invoke(main, ["explain", str(planted), "16", "-d", "pocl", "--json"])
    rep = json.loads(res.stdout)
    validate(rep, "cli.schema.json", "explain")
    assert res.exit_code == 0 and list(rep["devices"]) == ["a"] and rep["where"] == []
    assert rep["verdict"]["line"].startswith("NO DIVERGENCE between runs: enqueue 16 (control)")
    assert rep["why"] == {"order": {"a": False}, "order_runs": {"a": None}}
    assert "line" not in rep  # nothing differs: nothing to trace or watch


def test_bad_input_is_one_line_and_exit_2(planted: Path) -> None:
    res = CliRunner().invoke(main, ["explain", str(planted), "1", "-d", "pocl", "-d", "a",
                                    "-d", "b"])  # fmt: skip
    assert res.exit_code == 2 and "give -d twice or once (got 3)" in res.output
    res = CliRunner().invoke(main, ["explain", str(planted), "1", "-d", "pocl", "-d", "pocl"])
    assert res.exit_code == 2 and "the same device" in res.output
    res = CliRunner().invoke(main, ["explain", str(planted), "0", "-d", "pocl",
                                    "-d", "oclgrind"])  # fmt: skip
    assert res.exit_code == 2 and "not a kernel enqueue" in res.output


def test_outputs_that_differ_between_runs_on_one_device_are_named_first() -> None:
    from cltui.analysis.explain.analyse import explain_report
    from cltui.analysis.explain.run import AGAIN, Outputs, Runs
    from cltui.replay.experiment.worker import BASE_ID

    def out(values: list[float]) -> Outputs:
        return Outputs({"m": np.frombuffer(_f32(values), dtype=np.uint8)})

    devices: Any = [{"id": "0:0", "name": "Alpha"}, {"id": "1:0", "name": "Beta"}]
    check = {"mem": "m", "label": "arg 0", "dtype": "<f4", "shape": None}
    plan: Any = {"data": {}}
    runs = Runs(plan, ".", "reduce", "p0", "", None, devices, [], {}, [check], {
        BASE_ID: {"0:0": out([1, 2, 3, 4]), "1:0": out([1, 2, 3, 5])},
        AGAIN: {"0:0": out([1, 2, 3, 4]), "1:0": out([1, 2, 3, 6])},  # Beta: another sum
    })  # fmt: skip
    rep = explain_report(runs, "cap", 3)
    # any order's result is allowed: neither device is wrong
    assert rep["why"]["cause"] == "order dependence" and rep["why"]["within_spec"] is True
    assert rep["why"]["order"] == {"a": False, "b": True}
    assert rep["why"]["order_runs"] == {"a": None, "b": "a second run"}
    assert "differ between runs on the same device (Beta, with a second run)" in rep["why"][
        "text"]
    assert "a data race" in rep["why"]["text"]  # the source calls no atomic
    validate(rep, "cli.schema.json", "explain")


def test_a_device_that_could_not_run_makes_it_incomplete() -> None:
    from cltui.analysis.explain.analyse import explain_report
    from cltui.analysis.explain.run import AGAIN, Outputs, Runs
    from cltui.replay.experiment.worker import BASE_ID

    ok = Outputs({"m": np.frombuffer(_f32([1, 2]), dtype=np.uint8)})
    crashed = Outputs(error="crash: the process died (SIGSEGV)")
    devices: Any = [{"id": "0:0", "name": "Alpha"}, {"id": "1:0", "name": "Beta"}]
    check = {"mem": "m", "label": "arg 0", "dtype": "<f4", "shape": None}
    plan: Any = {"data": {}}
    runs = Runs(plan, ".", "k", "p0", "", None, devices, [], {}, [check],
                {BASE_ID: {"0:0": ok, "1:0": crashed}, AGAIN: {"0:0": ok}})  # fmt: skip
    rep = explain_report(runs, "cap", 3)
    assert rep["verdict"]["status"] == "incomplete" and rep["why"] is None
    assert rep["verdict"]["line"].startswith("INCOMPLETE: enqueue 3 (k)")
    assert "Beta: crash: the process died (SIGSEGV)" in rep["verdict"]["line"]
    validate(rep, "cli.schema.json", "explain")


def test_a_device_that_crashed_runs_once_more(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A device process that crashed (Oclgrind now and then dies of a SIGSEGV) runs once
    more: a clean second run stands; a second crash is reported as such; a device that ran
    is not run again."""
    from cltui.analysis.explain import run as er

    calls: list[list[str]] = []

    def collect(plan: Any, points: Any, devices: Any, root: Any, timeout: Any,
                runs: Any, cancel: Any, report: Any) -> bool:  # fmt: skip
        calls.append([d["id"] for d in devices])
        second = len(calls) > 1
        for pid in runs:
            for d in devices:
                crash = d["id"] == "1:0" and (not second or pid == "again")
                runs[pid][d["id"]] = (er.Outputs(error="crash: the process died (SIGSEGV)")
                                      if crash else er.Outputs(data={"m": np.zeros(4, np.uint8)}))
        return False

    monkeypatch.setattr(er, "rebuilds", lambda *a: [])  # the capture's configuration alone
    plan: Any = {"steps": [{"enqueue": 1, "checks": []}], "programs": {}, "data": {}}
    devs: Any = [{"id": "0:0", "name": "a"}, {"id": "1:0", "name": "b"}]
    got = er._run(plan, str(tmp_path), "k", "p", "", None, devs, tmp_path, 10.0, None,
                  lambda e: None, collect)  # fmt: skip
    assert calls == [["0:0", "1:0"], ["1:0"]]  # only the device that crashed, once more
    base = got.runs[er.BASE_ID]
    assert base["1:0"].error is None and base["0:0"].error is None
    again = got.runs[er.AGAIN]["1:0"].error or ""
    assert again.startswith("crash") and again.endswith("(and again on a second try)")
