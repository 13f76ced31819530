"""``cltui shrink``: ddmin, and shrinking failing ranges of synthetic captures on PoCL."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from cltui.analysis.shrink import ShrinkError, ddmin, is_kernel_range, plan_for, shrink
from cltui.capture import open_capture
from cltui.capture.ranges import parse_range
from cltui.cli import main
from tests.analysis_synth import chain_capture, write_capture


def test_ddmin_finds_the_one_culprit_and_the_needed_pair() -> None:
    calls: list[list[int]] = []

    def needs_7(s: list[int]) -> bool:
        calls.append(s)
        return 7 in s

    assert ddmin(list(range(20)), needs_7) == [7]
    assert len(calls) == len({tuple(c) for c in calls})  # never the same set twice
    assert ddmin(list(range(20)), lambda s: {3, 11} <= set(s)) == [3, 11]


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 40), st.sets(st.integers(0, 39), min_size=1, max_size=4))
def test_ddmin_result_is_one_minimal(n: int, need: set[int]) -> None:
    need = {x % n for x in need}
    items = list(range(n))
    res = ddmin(items, lambda s: need <= set(s))
    assert set(res) == need and res == sorted(res)


def test_ddmin_uses_known_outcomes() -> None:
    seen: list[list[int]] = []

    def t(s: list[int]) -> bool:
        seen.append(s)
        return {1, 2} <= set(s)

    known: dict[tuple[int, ...], bool] = {(i,): False for i in range(4)}
    assert ddmin([0, 1, 2, 3], t, known=known) == [1, 2]
    assert all(len(s) > 1 for s in seen)


@pytest.fixture(scope="module")
def pocl() -> dict[str, object]:
    from cltui.replay.devices import select_devices

    return select_devices(["pocl"])[0]


@pytest.mark.child
@pytest.mark.device
def test_one_planted_kernel_is_returned_alone(tmp_path: Path, pocl: dict[str, object]) -> None:
    root = write_capture(chain_capture(plant_at=2), tmp_path / "plant")
    res = shrink(open_capture(root), parse_range("0-5"), pocl)
    assert res.start == [0, 1, 2, 3, 4, 5]
    assert res.result == [2] and res.method == "isolated"
    assert "enqueue 2 add" in res.mismatch and "expected 12345" in res.mismatch


@pytest.mark.child
@pytest.mark.device
def test_a_failure_that_needs_two_kernels_is_shrunk_by_ddmin(
    tmp_path: Path, pocl: dict[str, object]
) -> None:
    # C changes behind the log's back before enqueue 3: chain mode reloads it and passes;
    # strict mode carries 2's output into 3 and fails, but only when 2 writes C first
    root = write_capture(chain_capture(host_write_at=3), tmp_path / "hw")
    cap = open_capture(root)
    assert not shrink(cap, parse_range("0-5"), pocl).failed
    res = shrink(cap, parse_range("0-5"), pocl, mode="strict")
    assert res.method == "ddmin"
    assert res.result in ([2, 3], [2, 4], [2, 5])
    tried = {tuple(t.enqueues): t.failed for t in res.trials if t.mode == "strict"}
    assert tried[tuple(res.result)] is True
    # 1-minimal: each single enqueue of the result alone passes (the isolated run)
    iso = [t for t in res.trials if t.mode == "isolated"]
    assert len(iso) == 1 and not iso[0].failed


def test_plan_for_a_set_with_holes_reloads_what_the_removed_kernels_made(
    tmp_path: Path,
) -> None:
    root = write_capture(chain_capture(), tmp_path / "c")
    cap = open_capture(root)
    plan = plan_for(cap, [1, 4])
    assert [s["enqueue"] for s in plan["steps"]] == [1, 4]
    # 4 reads C (made by the removed 2 and 3): loaded from its own Pre dump
    loads4 = plan["steps"][1]["loads"]
    assert any("Enqueue_0004" in ld["data"] and ld["why"] == "input" for ld in loads4)
    # 4 writes B that 1 wrote: B changed in between? no (nothing else writes B): no reload
    assert not any(ld["why"] == "reload" for ld in loads4)
    assert is_kernel_range(cap, [2, 3]) and not is_kernel_range(cap, [1, 4])
    with pytest.raises(ShrinkError):
        plan_for(cap, [])


@pytest.mark.child
@pytest.mark.device
def test_cli_prints_and_exports_a_bundle_that_reproduces(tmp_path: Path) -> None:
    root = write_capture(chain_capture(plant_at=2), tmp_path / "plant")
    out = tmp_path / "bundle"
    runner = CliRunner()
    res = runner.invoke(main, ["shrink", str(root), "0-5", "--device", "pocl",
                               "--export", str(out), "--json"])
    assert res.exit_code == 1, res.output
    data = json.loads(res.output[res.output.index("{"):])
    assert data["result"] == [2] and data["export"]["enqueues"] == [2]
    # the bundle replays the one kernel and shows the same mismatch, without cltui
    proc = subprocess.run([sys.executable, "replay.py", "--validate", "--device", "pocl"],
                          cwd=out, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "expected 12345" in proc.stdout
    res = runner.invoke(main, ["shrink", str(root), "0-1", "--device", "pocl"])
    assert res.exit_code == 0 and "no mismatch" in res.output
    res = runner.invoke(main, ["shrink", str(root), "0-5", "--device", "nosuchdevice"])
    assert res.exit_code == 2 and "no device matches" in res.output
    res = runner.invoke(main, ["shrink", str(root), "40-50", "--device", "pocl"])
    assert res.exit_code == 2 and "no kernel enqueue" in res.output


@pytest.mark.child
@pytest.mark.device
def test_against_a_second_device_sin_is_the_culprit(pyocl_pocl: Path,
                                                    pocl: dict[str, object]) -> None:
    from cltui.replay.devices import select_devices

    oclgrind = select_devices(["oclgrind"])[0]
    # 22 sin_kernel differs by 1 ULP between PoCL and Oclgrind; 23 axpb and 24 multiply
    # compute -z*z from inputs that do not involve sin: bit-identical on both
    res = shrink(open_capture(pyocl_pocl), parse_range("22-24"), pocl, against=oclgrind)
    assert res.result == [22] and res.method == "isolated"
    assert "1331/8192 differ" in res.mismatch and "max 1 ULP" in res.mismatch


@pytest.mark.child
@pytest.mark.device
@pytest.mark.parametrize(
    ("renamed", "rule"), [(None, "captured"), ("Mystery GPU 9000", "real-before-simulator")]
)
def test_without_device_shrink_follows_the_replay_device_rule(
    pyocl_pocl: Path, pocl: dict[str, object], tmp_path: Path, renamed: str | None, rule: str
) -> None:
    """No --device: the capture's device (PoCL, bit-exact: nothing to shrink), or with that
    device unknown the first real one, not Oclgrind; stderr and the JSON say which and why."""
    from tests.conftest import made_on
    from tests.schemas import validate

    cap = made_on(pyocl_pocl, tmp_path, renamed)  # None: this machine's PoCL device
    res = CliRunner().invoke(main, ["shrink", str(cap), "22-23", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    validate(data, "cli.schema.json", "shrink")
    assert data["device"] == pocl["name"] and data["result"] == []
    assert data["device_choice"]["rule"] == rule
    assert f"{pocl['id']} {pocl['name']}" in data["device_choice"]["why"]
    assert f"device: {data['device_choice']['why']} (choose with --device)" in res.stderr
