"""One enqueue whose kernel cannot be set up is that enqueue's error: the other steps of the
range still run and are counted, in both runners (cltui/replay/engine/core.py, launch.py;
cltui/runners/cpp/cpp/setup.hpp, steps.hpp, replayer.hpp, replay.cpp)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cltui.capture import open_capture
from cltui.export import export_range
from tests.conftest import copy_capture
from tests.test_export_device import _need, cpp_replay, run_cpp, run_py

__all__ = ["cpp_replay"]  # the fixture, shared with test_export_device

pytestmark = [pytest.mark.device, pytest.mark.slow, pytest.mark.child]


def _bundle_with_a_bad_argument(pyocl_pocl: Path, tmp_path: Path) -> Path:
    """pyopencl_lib_pocl 0-21 as a bundle whose enqueue 12 (get_size_and_offsets, one
    argument) is given an argument 4 as well, as a reused kernel handle used to give it."""
    cap = copy_capture(pyocl_pocl, tmp_path / "cap")
    bundle = tmp_path / "bundle"
    export_range(open_capture(cap), "0-21", bundle)
    path = bundle / "manifest.json"
    manifest: dict[str, Any] = json.loads(path.read_text())
    (step,) = [s for s in manifest["steps"] if s["enqueue"] == 12]
    step["args"].append({**step["args"][0], "index": 4})
    path.write_text(json.dumps(manifest))
    return bundle


def test_both_runners_run_the_rest_of_the_range(
    pyocl_pocl: Path, tmp_path: Path, cpp_replay: Path
) -> None:
    _need("pocl")
    bundle = _bundle_with_a_bad_argument(pyocl_pocl, tmp_path)
    results = []
    for proc in (
        run_py(bundle, "--validate", "--json", "--device", "pocl"),
        run_cpp(cpp_replay, bundle, "--validate", "--json", "--device", "pocl"),
    ):
        assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
        (res,) = json.loads(proc.stdout)
        results.append(res)
    py, cpp = results
    for res in results:
        verdict = res["verdict"]
        assert verdict["status"] == "error"
        assert verdict["line"].startswith("ERROR: enqueue 12: cannot set argument 4 (buffer): ")
        # was: 0/17 kernel enqueues replayed, every output unchecked
        assert verdict["line"].endswith(
            "; 16/17 kernel enqueues replayed, 33/34 outputs checked (33 equal, 1 unchecked), "
            "3/3 host transfers replayed"
        ), verdict["line"]
        assert res["failed_enqueue"] == 12
        assert 12 not in [s["enqueue"] for s in res["steps"]]
    assert py["verdict"]["counts"] == cpp["verdict"]["counts"]


def test_a_kernel_that_cannot_be_made_is_its_enqueue_error_too(
    pyocl_pocl: Path, tmp_path: Path, cpp_replay: Path
) -> None:
    _need("pocl")
    bundle = _bundle_with_a_bad_argument(pyocl_pocl, tmp_path)
    path = bundle / "manifest.json"
    manifest: dict[str, Any] = json.loads(path.read_text())
    (step,) = [s for s in manifest["steps"] if s["enqueue"] == 16]
    step["kernel"] = "no_such_kernel"
    path.write_text(json.dumps(manifest))
    counts = []
    for proc in (
        run_py(bundle, "--validate", "--json", "--device", "pocl"),
        run_cpp(cpp_replay, bundle, "--validate", "--json", "--device", "pocl"),
    ):
        assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
        (res,) = json.loads(proc.stdout)
        line = res["verdict"]["line"]
        assert line.startswith("ERROR: enqueue 12: cannot set argument 4 (buffer): "), line
        assert "(and 1 more enqueue not set up); 15/17 kernel enqueues replayed" in line, line
        assert [s["enqueue"] for s in res["steps"] if s["enqueue"] in (12, 16)] == []
        counts.append(res["verdict"]["counts"])
    assert counts[0] == counts[1]
    assert counts[0]["after_cannot_run"] > 0  # 18-21 read what arange (16) did not write
