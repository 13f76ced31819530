"""The default replay device: the capture's own, else the one named most like it, else a real
device before a simulator, else the first; the same cases for the engine and replay.cpp."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cltui.replay import engine
from cltui.replay.devices import default_device
from tests.test_export_device import cpp_replay  # a session fixture: the C++ replay, built once

__all__ = ["cpp_replay"]

CASES_FILE = Path(__file__).resolve().parent / "fixtures" / "device_choice_cases.json"
CASES: list[dict[str, Any]] = json.loads(CASES_FILE.read_text(encoding="utf-8"))

GRIND = {"id": "0:0", "name": "Oclgrind Simulator", "platform": "Oclgrind"}
POCL_INTEL = {"id": "1:0", "name": "pthread-skylake-avx512-Intel(R) Xeon(R) Processor"}


def _check(case: dict[str, Any], index: int | None, rule: str, why: str) -> None:
    want = case["expect"]
    assert (index, rule) == (want["index"], want["rule"]), case["case"]
    assert why and "\n" not in why and "\x1b" not in why, case["case"]
    assert want.get("why_has", "") in why, (case["case"], why)
    if index is not None:  # the line names the device it chose
        dev = case["devices"][index]
        assert f"{dev['id']} {dev['name']}" in why, (case["case"], why)


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_the_engine_follows_the_shared_device_choice_cases(case: dict[str, Any]) -> None:
    """tests/fixtures/device_choice_cases.json: the cases replay.cpp is held to as well
    (test_replay_cpp_follows_the_same_device_choice_cases)."""
    dev, choice = default_device(case["devices"], case["captured"])
    index = None if dev is None else case["devices"].index(dev)
    _check(case, index, choice["rule"], choice["why"])


@pytest.mark.child
def test_replay_cpp_follows_the_same_device_choice_cases(cpp_replay: Path) -> None:
    """replay.cpp's choose_device on the same cases: the same device, rule and words."""
    proc = subprocess.run(
        [str(cpp_replay), "--choose-device-cases", str(CASES_FILE)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert len(got) == len(CASES)
    for case, out in zip(CASES, got, strict=True):
        _check(case, out["index"], out["rule"], out["why"])
        _dev, choice = engine.choose_device(case["devices"], case["captured"])
        assert out["why"] == choice["why"], case["case"]


def test_the_cases_cover_every_rule() -> None:
    rules = {c["expect"]["rule"] for c in CASES}
    assert rules == {"captured", "most-alike", "real-before-simulator", "first"}
    assert engine.user_choice(["pocl", "1:0"]) == {
        "rule": "user",
        "why": "chosen with --device pocl --device 1:0",
    }


def test_simulators_are_known_by_platform_or_name() -> None:
    assert engine.is_simulator(GRIND)
    assert engine.is_simulator({"platform": "Oclgrind", "name": "x"})
    assert engine.is_simulator({"platform": "", "name": "oclgrind simulator"})
    assert not engine.is_simulator(POCL_INTEL)
    assert not engine.is_simulator({"platform": "Portable Computing Language", "name": None})


def test_name_likeness_counts_leading_words() -> None:
    from cltui.replay.engine import name_likeness

    assert name_likeness("pthread-skylake-avx512-AMD EPYC", POCL_INTEL["name"]) == 3
    assert name_likeness("NVIDIA H100 80GB HBM3", "NVIDIA H200") == 1
    assert name_likeness("Oclgrind Simulator", POCL_INTEL["name"]) == 0
    assert name_likeness("NVIDIA_H200", "nvidia h200") == 2  # case, '_' and ' ' alike


def test_pick_binary_prefers_the_device_then_the_most_alike() -> None:
    from cltui.replay.engine.builds import _pick_binary

    amd = {"data": "a", "device": "pthread-skylake-avx512-AMD EPYC"}
    haswell = {"data": "h", "device": "pthread-haswell-AMD EPYC"}
    h100 = {"data": "n", "device": "NVIDIA H100"}
    assert _pick_binary([haswell, amd], "pthread-skylake-avx512-AMD EPYC") == (amd, "binary")
    assert _pick_binary([haswell, amd, h100], POCL_INTEL["name"]) == (
        amd,
        "binary made on pthread-skylake-avx512-AMD EPYC",
    )
    assert _pick_binary([amd, h100], "NVIDIA H200") == (h100, "binary made on NVIDIA H100")
    assert _pick_binary([amd, h100], "Oclgrind Simulator") == (None, "")
    assert _pick_binary([], "NVIDIA H200") == (None, "")


# ----------------------------------------------------------------------- the --device grammar

SPEC_FILE = Path(__file__).resolve().parent / "fixtures" / "device_spec_cases.json"
SPECS: list[dict[str, Any]] = json.loads(SPEC_FILE.read_text(encoding="utf-8"))


def _matched(devices: list[dict[str, Any]], specs: list[str]) -> list[str] | str:
    try:
        return [d["id"] for d in engine.match_devices(devices, specs)]  # type: ignore[arg-type]
    except engine.EngineError:
        return "error"


@pytest.mark.parametrize("case", SPECS, ids=[c["case"] for c in SPECS])
def test_the_engine_follows_the_shared_device_spec_cases(case: dict[str, Any]) -> None:
    """tests/fixtures/device_spec_cases.json: the --device grammar of replay.py (and of every
    cltui command), held to the same cases as replay.cpp's."""
    assert _matched(case["devices"], case["specs"]) == case["expect"], case["case"]


@pytest.mark.child
def test_replay_cpp_follows_the_same_device_spec_cases(cpp_replay: Path) -> None:
    proc = subprocess.run(
        [str(cpp_replay), "--match-device-cases", str(SPEC_FILE)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert len(got) == len(SPECS)
    for case, out in zip(SPECS, got, strict=True):
        cpp = out.get("ids", "error")
        assert cpp == case["expect"], (case["case"], out)
        if cpp == "error":  # one line naming the spec
            assert "\n" not in out["error"] and "no device matches" in out["error"]


def test_no_device_named_is_not_a_quiet_first_device() -> None:
    """resolve_devices([]) used to return the first device: a third device rule, unused."""
    with pytest.raises(engine.EngineError, match="no --device given"):
        engine.resolve_devices([], [GRIND])  # type: ignore[list-item]


# ------------------------------------------------------------------- the capture's device


def test_the_capture_device_is_one_definition(pyocl_pocl: Path, tmp_path: Path) -> None:
    """capture_devices: the devices of the range's kernel enqueues, first kernel's first,
    with the log's platform and type; the bundle's manifest records the same first one, and
    a range without a kernel says nothing."""
    from cltui.capture.opening import open_capture
    from cltui.export.exporter import export_range
    from cltui.replay.devices import capture_devices

    cap = open_capture(pyocl_pocl)
    found = capture_devices(cap, 0, 21)
    assert [d["name"] for d in found] == ["pthread-skylake-avx512-AMD EPYC"]
    assert found[0]["platform"] == "Portable Computing Language"
    assert found[0]["type"] == "CPU"
    kernels = cap.find(None, first=0, last=21)
    no_kernel = next(
        int(cap.numbers[p]) for p in kernels if cap.row(int(p)).kernel is None
    )
    assert capture_devices(cap, no_kernel, no_kernel) == []
    export_range(cap, "0-21", tmp_path / "b")
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["bundle"]["capture"]["device"] == found[0]
