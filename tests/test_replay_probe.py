"""``cltui replay --probe``: outputs that vary across repetitions on one device."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from click.testing import CliRunner

from cltui.cli import main
from tests.analysis_synth import Arg, Launch, SynthCapture, write_capture

pytestmark = [pytest.mark.device, pytest.mark.child]

# A program-scope global survives between launches: each launch sees the counter the
# previous one left, so repetition k writes k + i (the capture holds repetition 0).
DRIFT_SOURCE = """\
global int counter = 0;

__kernel void drift(__global int *out)
{
    int i = get_global_id(0);
    out[i] = counter + i;
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (i == 0) counter++;
}

__kernel void iota(__global int *out)
{
    out[get_global_id(0)] = 7 * (int)get_global_id(0);
}
"""


def _drift(bufs: dict[str, npt.NDArray[Any]], _args: list[Any]) -> None:
    bufs["D"][:] = np.arange(bufs["D"].size, dtype=np.int32)


def _iota(bufs: dict[str, npt.NDArray[Any]], _args: list[Any]) -> None:
    bufs["E"][:] = 7 * np.arange(bufs["E"].size, dtype=np.int32)


def _capture(root: Path) -> Path:
    z = np.zeros(8, dtype=np.int32)
    spec = SynthCapture(
        DRIFT_SOURCE,
        {"D": z.copy(), "E": z.copy()},
        [
            Launch("iota", [Arg("buf", "E")], 8, 8, _iota),
            Launch("drift", [Arg("buf", "D")], 8, 8, _drift),
        ],
        options="-cl-std=CL2.0",
    )
    return write_capture(spec, root)


def test_probe_flags_the_kernel_whose_output_drifts(tmp_path: Path) -> None:
    root = _capture(tmp_path / "cap")
    res = CliRunner().invoke(
        main, ["replay", str(root), "0-1", "-d", "pocl", "--probe", "--repeat", "3", "--json"]
    )
    assert res.exit_code == 1, res.output
    report = json.loads(res.stdout)
    assert report["ok"]  # the validation run matches the capture: only the probe fails
    (probe,) = report["probe"]
    assert probe["runs"] == 3 and probe["outputs"] == 2 and not probe["deterministic"]
    (v,) = probe["varying"]
    assert (v["enqueue"], v["kernel"], v["args"]) == (1, "drift", [0])
    assert v["variants"] == 3 and v["first_run"] == 1
    assert v["compare"]["n_diff"] == 8  # every element is off by one in run 1
    assert report["devices"][0]["loop"]["probe"] is True

    text = CliRunner().invoke(main, ["replay", str(root), "0-1", "-d", "pocl", "--probe"])
    assert text.exit_code == 1
    assert "NONDETERMINISTIC (1 of 2 outputs vary over 2 runs)" in text.output
    assert "enqueue 1 drift" in text.output and "2 different results in 2 runs" in text.output


def test_probe_on_a_real_pocl_range_is_deterministic(pyocl_pocl: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = CliRunner().invoke(
        main,
        ["replay", str(pyocl_pocl), "0-6", "-d", "pocl", "--probe", "--repeat", "3",
         "--outputs", str(out)],
    )
    assert res.exit_code == 0, res.output
    assert "deterministic (" in res.output and "3 runs)" in res.output
    # identical repetitions are not saved again: only repetition 0's files exist
    assert list(out.rglob("*.r1.bin")) == [] and list(out.rglob("*.bin"))
