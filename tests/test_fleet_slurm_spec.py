"""The Slurm options of a fleet kind: from the inventory (``cltui_slurm_KEY``, refused with
``file:line``) and from ``--slurm SPEC``, and the sbatch words they make (no process)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cltui.fleet.inventory import InventoryError, read_inventory
from cltui.fleet.slurm.queue import kind_hosts
from cltui.fleet.slurm.spec import parse_spec, sbatch_options, spec_name


def test_a_group_of_kinds_from_the_inventory(tmp_path: Path) -> None:
    inv = tmp_path / "inv.ini"
    inv.write_text("[cluster]\na100 cltui_slurm_gres=gpu:a100:1\n"
                   "mi250 cltui_slurm_constraint=mi250\n"
                   "[cluster:vars]\ncltui_slurm_partition=gpu\ncltui_slurm_time=15\n"
                   "[ssh]\nssh2\n")
    hosts = {h.name: h for h in read_inventory(inv)}
    assert hosts["a100"].slurm == (("gres", "gpu:a100:1"), ("partition", "gpu"), ("time", "15"))
    assert sbatch_options(dict(hosts["mi250"].slurm)) == [
        "--constraint=mi250", "--partition=gpu", "--time=15"]
    assert hosts["ssh2"].slurm == ()


@pytest.mark.parametrize(("line", "why"), [
    ("cltui_slurm_partiton=gpu", "is not a Slurm option of cltui"),
    ("cltui_slurm_partition=-wgpu", "starts with '-'"),
    ("cltui_slurm_time=soon", "is not a number of minutes"),
    ("cltui_slurm_args='--exclusive \"x'", "cannot be split into words"),
])  # fmt: skip
def test_a_bad_slurm_variable_is_refused_where_it_stands(tmp_path: Path, line: str,
                                                         why: str) -> None:
    inv = tmp_path / "inv.ini"
    inv.write_text(f"[cluster]\ngpu {line}\n")
    with pytest.raises(InventoryError, match=f"inv.ini:2: cltui_slurm_.*{why}"):
        read_inventory(inv)


def test_slurm_specs_on_the_command_line() -> None:
    assert parse_spec("pocl") == (("partition", "pocl"),)
    pairs = parse_spec("gres=gpu:a100:1;constraint=a,b")
    assert pairs == (("gres", "gpu:a100:1"), ("constraint", "a,b"))
    assert spec_name(pairs) == "gres=gpu:a100:1,constraint=a,b"
    assert sbatch_options({"partition": "p", "args": "--exclusive --mem=0"}) == [
        "--partition=p", "--time=60", "--exclusive", "--mem=0"]
    (host,) = kind_hosts(["partition=gpu,gres=gpu:1"])
    assert host.name == "partition=gpu,gres=gpu:1" and host.slurm == (
        ("partition", "gpu"), ("gres", "gpu:1"))
    with pytest.raises(ValueError, match="bad --slurm 'gpu=x': gpu='x' is not a Slurm option"):
        kind_hosts(["gpu=x"])
    with pytest.raises(ValueError, match="'oops' is not KEY=VALUE"):
        parse_spec("partition=p,oops")
