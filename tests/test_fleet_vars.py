"""Pure parts of the fleet's CI features: baseline files, Ansible host patterns, the
``host_vars/`` and ``group_vars/`` folders and their precedence, tolerances per device."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from cltui.fleet.baseline import BaselineError, read_baseline
from cltui.fleet.hostvars import LimitError, device_tolerance, limit_hosts
from cltui.fleet.inventory import InventoryError, read_inventory
from cltui.replay.engine.schema import Device, ToleranceSpec


def _lab(tmp_path: Path) -> Path:
    inv = tmp_path / "hosts.ini"
    inv.write_text("[gpu]\nnv1 cltui_ulp=1\nnv2\n[cpu]\nc1\n[slow]\nnv2\n"
                   "[all:vars]\ncltui_rtol=0.5\n[gpu:vars]\ncltui_atol=0.1\n")
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "gpu.yml").write_text(
        "cltui_atol: 0.2\ncltui_tolerances:\n  '*Oclgrind*': {ulp: 2}\n")
    (tmp_path / "group_vars" / "all").mkdir()
    (tmp_path / "group_vars" / "all" / "10-env.yaml").write_text("cltui_runner: cpp\n")
    (tmp_path / "host_vars").mkdir()
    (tmp_path / "host_vars" / "nv1.json").write_text('{"cltui_ulp": 3}')
    return inv


def test_var_folders_win_over_the_inventory_file_as_in_ansible(tmp_path: Path) -> None:
    hosts = {h.name: h for h in read_inventory(_lab(tmp_path))}
    assert {n: h.runner for n, h in hosts.items()} == dict.fromkeys(("nv1", "nv2", "c1"), "cpp")
    # host_vars over the host's own line; group_vars/gpu over [gpu:vars]; all the weakest
    assert dict(hosts["nv1"].tolerance) == {"ulp": 3.0, "atol": 0.2, "rtol": 0.5}
    assert dict(hosts["nv2"].tolerance) == {"atol": 0.2, "rtol": 0.5}
    assert dict(hosts["c1"].tolerance) == {"rtol": 0.5}
    grind = cast(Device, {"id": "1:0", "name": "Oclgrind Simulator", "platform": "Oclgrind"})
    pocl = cast(Device, {"id": "0:0", "name": "cpu-x", "platform": "Portable Computing Language"})
    fleet = cast(ToleranceSpec, {"ulp": 0, "atol": 0.0})
    h = hosts["nv1"]
    assert device_tolerance(fleet, h.tolerance, h.device_tolerances, grind) == {
        "ulp": 2, "atol": 0.2, "rtol": 0.5}
    assert device_tolerance(fleet, h.tolerance, h.device_tolerances, pocl)["ulp"] == 3


def test_a_bad_variable_file_names_the_file(tmp_path: Path) -> None:
    inv = _lab(tmp_path)
    bad = tmp_path / "host_vars" / "c1.yml"
    bad.write_text("cltui_tolerances: {'*': {ulps: 2}}\n")
    with pytest.raises(InventoryError, match=f"^{bad}: cltui_tolerances '\\*': unknown "
                       "tolerance 'ulps'"):
        read_inventory(inv)
    bad.write_text("- a list\n")
    with pytest.raises(InventoryError, match=f"^{bad}: want a mapping of variables$"):
        read_inventory(inv)


@pytest.mark.parametrize(("pattern", "want"), [
    ("all", ["nv1", "nv2", "c1"]),
    ("gpu", ["nv1", "nv2"]),
    ("gpu:!slow", ["nv1"]),
    ("gpu,&slow", ["nv2"]),
    ("nv*,c1", ["nv1", "nv2", "c1"]),
    ("!cpu", ["nv1", "nv2"]),
])
def test_limit_patterns_as_ansible(tmp_path: Path, pattern: str, want: list[str]) -> None:
    hosts = read_inventory(_lab(tmp_path))
    assert [h.name for h in limit_hosts(hosts, pattern)] == want


def test_a_limit_naming_nothing_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LimitError, match="names no host"):
        limit_hosts(read_inventory(_lab(tmp_path)), "tpu*")


@pytest.mark.parametrize(("text", "why"), [
    ("known: 3\n", "want a list of known divergences"),
    ("- device: x\n  enqueue: 1\n  max_ulp: 2\n  differs: true\n", "entry 1: give max_ulp"),
    ("- device: x\n  enqueue: -1\n  differs: true\n", "entry 1: enqueue must be"),
    ("- enqueue: 1\n  differs: true\n", "entry 1: device must be a pattern"),
    ("- device: x\n  enqueue: 1\n  max_ulp: two\n", "entry 1: max_ulp must be a number"),
    ("- device: x\n  enqueue: 1\n  differs: true\n  arg: 2\n", "entry 1: unknown key 'arg'"),
    ("[: x\n", "not valid YAML or JSON"),
])
def test_a_bad_baseline_is_one_line_naming_the_entry(tmp_path: Path, text: str, why: str
                                                      ) -> None:
    p = tmp_path / "b.yml"
    p.write_text(text)
    with pytest.raises(BaselineError) as err:
        read_baseline(p)
    msg = str(err.value)
    assert msg.startswith(f"{p}: ") and why in msg and "\n" not in msg


def test_baseline_entries_match_columns_and_rows() -> None:
    from cltui.fleet.baseline import Known

    k = Known(device="*oclgrind*", enqueue=2, argument=2, max_ulp=2.0, driver="2*")
    col: dict[str, Any] = {"id": "h:0:0", "host": "h",
                           "device": {"name": "Oclgrind Simulator", "platform": "Oclgrind",
                                      "driver": "21.10"}}
    assert k.matches_column(col)
    assert not k.matches_column(col | {"device": col["device"] | {"driver": "1.0"}})
    row = {"enqueue": 2, "args": [2], "label": "arg 2 (buffer 0003)", "mem": "m"}
    assert k.matches_row(row) and not k.matches_row(row | {"args": [1]})
    assert k.covers({"max_ulp": 2.0}) and not k.covers({"max_ulp": 3.0})
    assert not k.covers({"max_ulp": None})
    assert Known(device="*", enqueue=2, argument="arg 2 (buffer 0003)").matches_row(row)
