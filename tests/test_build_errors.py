"""A program that does not build says why (issue 25, item 8): 'build failed' with the build
log's first error at the line of the program's own source file, in the CLI and in both runners
of an exported bundle; the claim that the device lacks what the source uses (cl_khr_fp16)
only where the build log says so."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from cltui.capture import open_capture
from cltui.cli import main
from cltui.export import export_range
from tests.analysis_synth import Arg, Launch, SynthCapture, write_capture
from tests.test_export_device import _need, cpp_replay, run_cpp, run_py  # noqa: F401 (fixture)

pytestmark = [pytest.mark.device, pytest.mark.child]

# half only where the device has cl_khr_fp16 (PoCL here has not); a missing ';' on line 7
BROKEN = """\
__kernel void twice(__global int *a)
{
#ifdef cl_khr_fp16
    half h = 1;
#endif
    int i = get_global_id(0);
    a[i] = 2 * a[i]
}
"""


def _broken_capture(root: Path, source: str = BROKEN) -> Path:
    def sim(st: dict[str, np.ndarray], a: list[str]) -> None:
        st[a[0]][:] *= 2

    launch = Launch("twice", [Arg("buf", "A")], 8, 8, sim)
    spec = SynthCapture(source, {"A": np.arange(8, dtype=np.int32)}, [launch, launch])
    return write_capture(spec, root)


def test_the_cli_names_the_build_error_at_the_source_line(tmp_path: Path) -> None:
    _need("pocl")
    cap = _broken_capture(tmp_path / "cap")
    res = CliRunner().invoke(main, ["replay", str(cap), "0-1", "-d", "pocl", "--json"])
    report = json.loads(res.stdout)
    err = report["devices"][0]["error"]
    assert "build failed on" in err and "_source.cl:7:" in err, err
    assert "expected ';'" in err and "fp16" not in err and "kcache" not in err, err
    assert not report["devices"][0].get("cannot_run")


def test_a_failed_build_leaves_no_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    """pyopencl saves the source of a failed build as a temp file it never removes (where
    the driver has no build cache of its own: Oclgrind): the engine removes it."""
    _need("oclgrind")
    cap = _broken_capture(tmp_path / "cap")
    temp = tmp_path / "temp"  # the replay child's temp folder
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    res = CliRunner().invoke(main, ["replay", str(cap), "0-1", "-d", "oclgrind", "--json"])
    dev = json.loads(res.stdout)["devices"][0]
    assert dev.get("cannot_run"), dev  # Oclgrind has no half: the failed build says so
    assert "saved" not in json.dumps(dev)
    assert not list(temp.iterdir())


def test_both_runners_name_the_build_error_at_the_source_line(
    tmp_path: Path,
    cpp_replay: Path,  # noqa: F811 (the fixture)
) -> None:
    _need("pocl")
    cap = _broken_capture(tmp_path / "cap")
    first = tmp_path / "export" / "bundle"
    export_range(open_capture(cap), "0-1", first)
    bundle = tmp_path / "fresh" / "bundle"
    shutil.copytree(first, bundle)
    shutil.rmtree(first.parent)
    for proc in (
        run_py(bundle, "--json", "--device", "pocl"),
        run_cpp(cpp_replay, bundle, "--json", "--device", "pocl"),
    ):
        (res,) = json.loads(proc.stdout)
        err = str(res["error"])
        m = re.search(r"build failed on .*: (\S+\.cl):7:\d+: error: expected ';'", err)
        assert m is not None and (bundle / m.group(1)).is_file(), err  # the bundle's file
        assert "fp16" not in err and "kcache" not in err, err


WILD = """\
__kernel void wild(__global int *out)
{
    volatile __global int *p = (volatile __global int *)(0x10UL + (ulong)out * 0UL);
    p[get_global_id(0) * 4096] = 1;
    out[get_global_id(0)] = p[get_global_id(0) * 4096 + 1];
}
"""


def test_a_crashed_child_is_one_line_naming_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A driver crash: the text output says it in one line that names a log file holding
    the child's whole stderr (Python's faulthandler stack among it); the stack is in
    --json, never on the screen."""
    _need("pocl")
    monkeypatch.setenv("CLTUI_CACHE_DIR", str(tmp_path / "cache"))
    launch = Launch("wild", [Arg("buf", "A")], 8, 8)
    spec = SynthCapture(WILD, {"A": np.zeros(8, dtype=np.int32)}, [launch])
    cap = write_capture(spec, tmp_path / "cap")
    res = CliRunner().invoke(main, ["replay", str(cap), "0", "-d", "pocl"])
    assert res.exit_code == 1, res.output
    text = res.stdout + res.stderr
    assert "Fatal Python error" not in text and 'File "' not in text, text
    out = res.stdout.splitlines()
    (line,) = [ln for ln in out if ": crash: enqueue 0" in ln and not ln.startswith("FAIL")]
    m = re.search(r"\(the replay process's output: (\S+)\)$", line)
    assert m is not None, line
    log = Path(m.group(1))
    assert log.parent == tmp_path / "cache" / "logs"
    assert "Fatal Python error" in log.read_text()
    js = CliRunner().invoke(main, ["replay", str(cap), "0", "-d", "pocl", "--json"])
    dev = json.loads(js.stdout)["devices"][0]
    assert "Fatal Python error" in dev["stderr"] and Path(dev["stderr_log"]).is_file()


HALF = """\
__kernel void twice(__global int *a)
{
    half h = 1;
    a[get_global_id(0)] *= 2;
}
"""


def test_a_build_the_device_cannot_do_points_at_the_source_line(
    tmp_path: Path,
    cpp_replay: Path,  # noqa: F811 (the fixture)
) -> None:
    """half where PoCL has no cl_khr_fp16 (the log says half): the enqueue cannot run,
    and the reason's build error points at the program's own file, in the CLI and in both
    runners, not at PoCL's temp file."""
    _need("pocl")

    def sim(st: dict[str, np.ndarray], a: list[str]) -> None:
        st[a[0]][:] *= 2

    launch = Launch("twice", [Arg("buf", "A")], 8, 8, sim)
    spec = SynthCapture(HALF, {"A": np.arange(8, dtype=np.int32)}, [launch])
    cap = write_capture(spec, tmp_path / "cap")
    res = CliRunner().invoke(main, ["replay", str(cap), "0", "-d", "pocl", "--json"])
    (found,) = json.loads(res.stdout)["devices"][0]["cannot_run"]
    assert found["kind"] == "fp16" and "_source.cl:3:" in found["reason"], found
    assert "kcache" not in found["reason"], found
    first = tmp_path / "export" / "bundle"
    export_range(open_capture(cap), "0", first)
    bundle = tmp_path / "fresh" / "bundle"
    shutil.copytree(first, bundle)
    shutil.rmtree(first.parent)
    for proc in (
        run_py(bundle, "--json", "--device", "pocl"),
        run_cpp(cpp_replay, bundle, "--json", "--device", "pocl"),
    ):
        (dev,) = json.loads(proc.stdout)
        (got,) = dev["cannot_run"]
        assert got["kind"] == "fp16" and re.search(r"\S+\.cl:3:\d+: error: ", got["reason"]), got
        assert "kcache" not in got["reason"], got
