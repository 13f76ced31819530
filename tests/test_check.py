"""``cltui check``: Oclgrind findings mapped to enqueue, kernel and source line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from cltui.analysis.attribute import StepSpan, attribute
from cltui.analysis.check import CheckError, run_check
from cltui.analysis.check_report import CheckReport
from cltui.analysis.oclgrind import (
    API,
    BARRIER_DIVERGENCE,
    DATA_RACE,
    FATAL,
    OUT_OF_BOUNDS,
    UNINITIALIZED,
    parse_oclgrind,
)
from cltui.capture import open_capture
from cltui.capture.ranges import parse_range
from cltui.cli import main
from tests.analysis_synth import (
    BARRIER_LINE,
    OOB_LINE,
    RACE_LINES,
    Arg,
    Launch,
    SynthCapture,
    buggy_capture,
    write_capture,
)

# Real Oclgrind 21.10 output (OCLGRIND_CHECK_API/DATA_RACES/UNINITIALIZED=1), trimmed.
SAMPLE = """\

Oclgrind - OpenCL runtime error detected
\tFunction: clGetDeviceInfo
\tError:    CL_INVALID_VALUE
\tFor argument 'param_name'


Invalid write of size 4 at global memory address 0x2000000000020
\tKernel: oob_write
\tEntity: Global(7,0,0) Local(7,0,0) Group(0,0,0)
\t  store float %conv1, float addrspace(1)* %arrayidx, align 4, !dbg !54, !tbaa !55
\tAt line 5 (column 16) of input.cl:
\t  out[i + 1] = (float)i;
\t

Read-write data race at local memory address 0x1000000000004
\tKernel: local_race
\t
\tFirst entity:  Global(1,0,0) Local(1,0,0) Group(0,0,0)
\t  store i32 %0, i32 addrspace(3)* %arrayidx2, align 4, !dbg !50, !tbaa !45
\tAt line 12 (column 12) of input.cl:
\t  tmp[l] = in[get_global_id(0)];
\t
\tSecond entity: Global(0,0,0) Local(0,0,0) Group(0,0,0)
\t  %1 = load i32, i32 addrspace(3)* %arrayidx4, align 4, !dbg !53, !tbaa !45
\tAt line 13 (column 29) of input.cl:
\t  out[get_global_id(0)] = tmp[(l + 1) % 8];
\t

Work-group divergence detected (barrier)
\tKernel:     bdiv
\tWork-group: (0,0,0)
\tOnly 2 out of 8 work-items executed barrier
\t  tail call spir_func void @_Z7barrierj(i32 noundef 1) #8, !dbg !50
\tAt line 24 (column 16) of input.cl:
\t  if (l < 2) barrier(CLK_LOCAL_MEM_FENCE);
\t
/some/python/warning.py:1: UserWarning: not an Oclgrind block
  warnings.warn(x)

Oclgrind - OpenCL runtime error detected
\tFunction: clEnqueueNDRangeKernel
\tError:    CL_INVALID_WORK_GROUP_SIZE
\tlocal_work_size[0]=3 does not divide global_work_size[0]=8
"""


def test_parse_real_oclgrind_output() -> None:
    raw = parse_oclgrind(SAMPLE)
    assert [r.kind for r in raw] == [API, OUT_OF_BOUNDS, DATA_RACE, BARRIER_DIVERGENCE, API]
    oob = raw[1]
    assert oob.kernel == "oob_write" and oob.entities == ["Global(7,0,0) Local(7,0,0) Group(0,0,0)"]
    assert [(s.line, s.column, s.code) for s in oob.lines] == [(5, 16, "out[i + 1] = (float)i;")]
    assert SAMPLE.encode()[oob.offset:].startswith(b"Invalid write of size 4")
    race = raw[2]
    assert [s.line for s in race.lines] == [12, 13] and len(race.entities) == 2
    bar = raw[3]
    assert bar.kernel == "bdiv" and bar.work_group == "(0,0,0)"
    assert bar.details == ["Only 2 out of 8 work-items executed barrier"]
    assert raw[4].function == "clEnqueueNDRangeKernel"
    assert raw[4].error == "CL_INVALID_WORK_GROUP_SIZE"


def test_attribute_by_offset_drops_info_queries_and_merges_repeats() -> None:
    raw = parse_oclgrind(SAMPLE + SAMPLE[SAMPLE.index("Invalid write"):SAMPLE.index("Read-")])
    data = SAMPLE.encode()
    cut = data.index(b"Read-write")
    steps = [StepSpan(7, "oob_write", "p0", 0, cut), StepSpan(8, "local_race", "p0", cut, None)]
    src = ["x"] * 30
    src[4] = "    out[i + 1] = (float)i;"
    found = attribute(raw, steps, {"p0": ("CLI_0000_X_source.cl", src)})
    kinds = [(f.kind, f.enqueue) for f in found]
    # the clGetDeviceInfo probe is dropped; the repeated OOB block after step 8 began is
    # attributed to step 8 (by offset), not merged with step 7's
    assert kinds == [(OUT_OF_BOUNDS, 7), (DATA_RACE, 8), (BARRIER_DIVERGENCE, 8), (API, 8),
                     (OUT_OF_BOUNDS, 8)]
    first = found[0]
    assert first.lines[0].source == "CLI_0000_X_source.cl" and first.lines[0].matches
    assert found[1].lines[0].matches is False  # the fake source has "x" there


@pytest.fixture(scope="module")
def buggy_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CheckReport]:
    root = write_capture(buggy_capture(), tmp_path_factory.mktemp("check") / "buggy")
    return root, run_check(open_capture(root), parse_range("0-4"))


@pytest.mark.device
def test_check_reports_out_of_bounds_race_and_barrier(
    buggy_report: tuple[Path, CheckReport]
) -> None:
    root, rep = buggy_report
    assert rep.status == "findings" and rep.error is None
    assert rep.device and "Oclgrind" in rep.device
    assert [e for e, _k in rep.enqueues] == [0, 1, 2, 3, 4]
    src = next(root.glob("CLI_*_source.cl")).read_text().splitlines()
    oob = [f for f in rep.findings if f.kind == OUT_OF_BOUNDS]
    assert len(oob) == 1
    assert (oob[0].enqueue, oob[0].kernel, oob[0].line) == (1, "oob_write", OOB_LINE)
    assert oob[0].lines[0].source is not None and oob[0].lines[0].matches
    assert src[OOB_LINE - 1].strip() == oob[0].lines[0].code == "out[i + 1] = (float)i;"
    assert "Invalid write of size 4" in oob[0].message
    assert oob[0].entity == "Global(7,0,0) Local(7,0,0) Group(0,0,0)"  # the last work-item
    races = [f for f in rep.findings if f.kind == DATA_RACE]
    assert races and all((f.enqueue, f.kernel) == (2, "local_race") for f in races)
    assert {s.line for f in races for s in f.lines} == set(RACE_LINES)
    assert all(s.matches for f in races for s in f.lines)
    bar = [f for f in rep.findings if f.kind == BARRIER_DIVERGENCE]
    assert [(f.enqueue, f.kernel, f.line) for f in bar] == [(4, "diverge_barrier", BARRIER_LINE)]
    # the clean kernels (0 and 3) have no finding; the race also reads uninitialised tmp[]
    assert rep.for_enqueue(0) == [] and rep.for_enqueue(3) == []
    assert {f.kind for f in rep.for_enqueue(2)} <= {DATA_RACE, UNINITIALIZED}


@pytest.mark.child
@pytest.mark.device
def test_check_cli_text_and_json(buggy_report: tuple[Path, CheckReport]) -> None:
    root, _ = buggy_report
    runner = CliRunner()
    res = runner.invoke(main, ["check", str(root), "1-2", "--json"])
    assert res.exit_code == 1, res.output
    data = json.loads(res.output)
    assert {(f["enqueue"], f["kind"], f["line"]) for f in data["findings"]} >= {
        (1, OUT_OF_BOUNDS, OOB_LINE), (2, DATA_RACE, RACE_LINES[0])}
    res = runner.invoke(main, ["check", str(root), "0"])
    assert res.exit_code == 0 and "Oclgrind found no problem" in res.output
    res = runner.invoke(main, ["check", str(root), "1"])
    assert res.exit_code == 1 and f"_source.cl:{OOB_LINE}:16: out[i + 1]" in res.output
    res = runner.invoke(main, ["check", str(root), "7-9"])
    assert res.exit_code == 2 and "no kernel enqueue" in res.output
    res = runner.invoke(main, ["check", str(root), "x-y"])
    assert res.exit_code == 2 and "bad range" in res.output


HANG_SOURCE = """\
__kernel void spin(__global volatile int *flag)
{
    while (flag[0] == 0) { }
}
"""


@pytest.mark.child
@pytest.mark.device
def test_a_hanging_kernel_is_named_and_killed(tmp_path: Path) -> None:
    spec = SynthCapture(HANG_SOURCE, {"F": np.zeros(1, dtype=np.int32)},
                        [Launch("spin", [Arg("buf", "F")], 1, 1)])
    root = write_capture(spec, tmp_path / "hang")
    rep = run_check(open_capture(root), parse_range("0"), timeout=3.0)
    assert rep.status == "hang" and rep.failed_enqueue == 0
    assert rep.error is not None and "enqueue 0" in rep.error


def test_nothing_to_replay_is_a_check_error(tmp_path: Path) -> None:
    root = write_capture(buggy_capture(), tmp_path / "b")
    with pytest.raises(CheckError, match="no kernel enqueue"):
        run_check(open_capture(root), parse_range("50-60"))


@pytest.mark.child
@pytest.mark.device
def test_real_opencv_capture_rgb2hsv_reads_past_its_buffer(opencv: Path) -> None:
    # captures README: on Oclgrind, RGB2HSV's vload4 on the last pixel of a 3-channel row
    # reads one byte past the buffer ("Invalid read of size 4")
    rep = run_check(open_capture(opencv), parse_range("4"))
    oob = [f for f in rep.findings if f.kind == OUT_OF_BOUNDS]
    assert len(oob) == 1 and (oob[0].enqueue, oob[0].kernel) == (4, "RGB2HSV")
    assert "Invalid read of size 4" in oob[0].message
    sl = oob[0].lines[0]
    assert "vload4" in sl.code and sl.matches and sl.source is not None
    src = (opencv / sl.source).read_text().splitlines()
    assert src[sl.line - 1].strip() == sl.code
    assert oob[0].entity is not None and oob[0].entity.startswith("Global(127,95,0)")


@pytest.mark.child
@pytest.mark.device
def test_real_opencv_row_filter_fails_to_build_on_oclgrind(opencv: Path) -> None:
    # captures README: Oclgrind stops with "Undefined external function: llvm.abs.i32"
    rep = run_check(open_capture(opencv), parse_range("7"))
    assert rep.status == "error" and rep.failed_enqueue == 7
    assert rep.error is not None and "row_filter_C1_D0" in rep.error
    assert "llvm.abs.i32" in rep.stderr_tail
    api = [f for f in rep.findings if f.kind == API]
    assert api and (api[0].enqueue, api[0].kernel) == (7, "row_filter_C1_D0")
    fatal = [f for f in rep.findings if f.kind == FATAL]
    assert len(fatal) == 1 and (fatal[0].enqueue, fatal[0].kernel) == (7, "row_filter_C1_D0")
    assert "Undefined external function: llvm.abs.i32" in fatal[0].details
