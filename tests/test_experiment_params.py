"""Source parameters (``--param``), defines a source overrides (``--define`` refused), and a
sweep's ``--local NAME`` and ``--restrict``: the scan (pure) and ``try`` / ``sweep`` end to end
on real PoCL with pyopencl's reduction, whose source says ``#define PCL_GROUP_SIZE 1024``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cltui.cli import main
from cltui.replay.experiment.params import (
    check_restriction,
    define_sites,
    overriding_site,
    set_param,
    validate_restriction,
)

SOURCE = """\
#define WGS 128   // the tuner's value
#ifndef VW
  #define VW 2
#endif
#if !defined(WPT)
#define WPT 1
#else
#define WPT 4
#endif
/* #define GONE 1
   #define GONE 2 */
#define LONG \\
    (WGS * VW)
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1))) void k(__global float* x) {}
"""


def test_the_scan_tells_guarded_defaults_from_overriding_defines() -> None:
    assert [(s.line, s.guarded) for s in define_sites(SOURCE, "WGS")] == [(1, False)]
    assert [(s.line, s.guarded) for s in define_sites(SOURCE, "VW")] == [(3, True)]
    # an #else branch of #if !defined(WPT) runs when WPT IS defined: not a guard
    assert [(s.line, s.guarded) for s in define_sites(SOURCE, "WPT")] == [(6, True), (8, False)]
    assert define_sites(SOURCE, "GONE") == []  # inside a comment
    assert overriding_site(SOURCE, "VW") is None  # -D VW=4 applies
    site = overriding_site(SOURCE, "WGS")
    assert site is not None and site.line == 1 and site.text.startswith("#define WGS 128")
    assert overriding_site("#undef WGS\n", "WGS") is not None  # an #undef undoes -D too
    assert overriding_site("#define WGSX 1\n", "WGS") is None


def test_set_param_rewrites_the_lines_that_define_it() -> None:
    out = set_param(SOURCE, "WGS", "64")
    assert out is not None
    lines = out.split("\n")
    assert lines[0] == "#define WGS 64"
    assert lines[1:] == SOURCE.split("\n")[1:]  # nothing else moves: line numbers hold
    long = set_param(SOURCE, "LONG", "7")
    assert long is not None and long.split("\n")[11:13] == ["#define LONG 7", ""]
    assert set_param(SOURCE, "VW", "4") is None  # only a default: -D VW=4 is the way
    assert set_param(SOURCE, "NOPE", "1") is None


def test_the_scan_is_linear_in_a_megabyte_of_one_byte() -> None:
    for text in ("#" * 1_000_000, "/" * 1_000_000, "\\\n" * 500_000, "/*" * 500_000):
        assert define_sites(text, "X") == []


def test_restrictions_are_arithmetic_over_the_parameters_only() -> None:
    validate_restriction("WGS % VW == 0 and WGS * VW <= 1024", {"WGS", "VW"})
    assert check_restriction("WGS % VW == 0", {"WGS": 64, "VW": 4})
    assert not check_restriction("WGS % VW == 0", {"WGS": 64, "VW": 3})
    assert not check_restriction("WGS // VW > 1", {"WGS": 64, "VW": 0})  # / 0: pruned
    assert check_restriction("16 <= WGS < 256 or not VW", {"WGS": 64, "VW": 1})
    for bad, why in (("__import__('os')", "not allowed"), ("WGS ** 99999", "not allowed"),
                     ("NOPE > 1", "not a --param"), ("WGS >", "not an expression"),
                     ("'a' < WGS", "only numbers")):  # fmt: skip
        with pytest.raises(ValueError, match=why):
            validate_restriction(bad, {"WGS", "VW"})


# ------------------------------------------------------------------------ end to end (PoCL)


@pytest.fixture
def _pocl(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cl = pytest.importorskip("pyopencl")
    if not any("Portable" in p.name for p in cl.get_platforms()):
        pytest.skip("PoCL is not installed")
    monkeypatch.setenv("CLTUI_DATA_DIR", str(tmp_path / "data"))


@pytest.mark.child
@pytest.mark.device
@pytest.mark.usefixtures("_pocl")
def test_try_refuses_a_define_the_source_overrides(pyocl_pocl: Path) -> None:
    res = CliRunner().invoke(main, ["try", str(pyocl_pocl), "35", "-d", "pocl", "--repeat", "3",
                                    "--define", "PCL_GROUP_SIZE=512"])  # fmt: skip
    assert res.exit_code == 2, res.output
    assert "--define PCL_GROUP_SIZE would do nothing" in res.output
    assert "line 2 (#define PCL_GROUP_SIZE 1024)" in res.output
    assert "--param PCL_GROUP_SIZE=VALUE" in res.output
    assert "Traceback" not in res.output


@pytest.mark.child
@pytest.mark.device
@pytest.mark.usefixtures("_pocl")
def test_try_param_really_rebuilds_the_kernel(pyocl_pocl: Path) -> None:
    """PCL_GROUP_SIZE=2048 with the captured local size 1024: each group now reads every
    other block of the input, so the sum differs from the capture (a -D would have been
    overridden, and the B side would have passed)."""
    res = CliRunner().invoke(main, ["try", str(pyocl_pocl), "35", "-d", "pocl", "--repeat", "3",
                                    "--param", "PCL_GROUP_SIZE=2048", "--json"])  # fmt: skip
    assert res.exit_code == 1, res.output
    report = json.loads(res.stdout)
    dev = report["devices"][0]
    assert dev["a"]["verdict"]["status"] == "pass"
    assert dev["b"]["verdict"]["status"] == "fail"
    assert report["variant"]["lines"] == [
        "parameter PCL_GROUP_SIZE = 2048 (the source's #define PCL_GROUP_SIZE)"
    ]


@pytest.mark.child
@pytest.mark.device
@pytest.mark.usefixtures("_pocl")
def test_sweep_params_follow_the_local_size_and_restrictions_prune(pyocl_pocl: Path) -> None:
    res = CliRunner().invoke(main, [
        "sweep", str(pyocl_pocl), "35", "-d", "pocl", "--repeat", "3", "--json",
        "--param", "PCL_GROUP_SIZE=256,512,1024,2048", "--local", "PCL_GROUP_SIZE",
        "--restrict", "PCL_GROUP_SIZE % 512 == 0 and PCL_GROUP_SIZE < 2048",
    ])  # fmt: skip
    assert res.exit_code in (0, 1), res.output
    summary = json.loads(res.stdout)
    labels = {r["label"] for r in summary["rows"]}
    # 256 and 2048 pruned; 1024 with local 1024 is the capture's own (not run again)
    assert labels == {"capture", "PCL_GROUP_SIZE=512, local 512"}, labels
    assert "the capture's own configuration already" in res.stderr


@pytest.mark.child
def test_sweep_refuses_what_it_cannot_apply() -> None:
    for args, why in (
        (["--param", "WGS=64,x", "--local", "WGS"], "positive whole number"),
        (["--param", "WGS=64", "--restrict", "VW > 1"], "VW is not a --param"),
        (["--param", "WGS", ], "is not NAME=VALUE"),
    ):
        res = CliRunner().invoke(main, ["sweep", "/nonexistent", "1", *args])
        assert res.exit_code == 2, res.output
        assert why in res.output, res.output


# ------------------------------------------------------------------ naming a BEST (pure)


def _row(pid: str, label: str, times: list[int]) -> dict[str, object]:
    med = sorted(times)[len(times) // 2]
    return {"id": pid, "device": "1:0", "status": "pass", "why": "", "label": label,
            "lines": [label], "changes": {}, "times": times,
            "time": {"median": float(med), "lo": float(med), "hi": float(med), "n": len(times)}}


def test_best_only_when_measurably_faster_and_rows_of_another_grid_are_left_out(
    tmp_path: Path,
) -> None:
    """A results file reused with another grid used to end in StopIteration (its best row
    was no point of this sweep); a point within noise of the capture is no BEST."""
    from cltui.replay.experiment.runs import summarize
    from cltui.replay.experiment.stats import paired
    from cltui.replay.experiment.sweep import SweepSpec, point_id, points

    spec = SweepSpec("23", local=((32,), (64,)))
    pts = points(spec)
    ids = [point_id(v) for v in pts]
    noisy = [1000, 1010, 990, 1005, 995, 1002, 998, 1001, 999, 1003]
    rows = [_row("capture", "capture", noisy),
            _row(ids[1], "local 32", [t - 1 for t in noisy]),  # within noise
            _row("pforeign0000", "local 16", [t // 2 for t in noisy])]  # another grid's
    out = summarize(spec, tmp_path, pts, rows, ["1:0"], None, 0, None, None, False)  # type: ignore[arg-type]
    assert out["best_id"] is None
    assert out["verdict"]["line"].startswith("NO BETTER VARIANT: 1 correct configuration")
    assert "1 row of the results file belong to points outside this grid" in (
        out["verdict"]["line"])
    assert {r["id"] for r in out["rows"]} == {"capture", ids[1]}
    rows.append(_row(ids[2], "local 64", [t // 2 for t in noisy]))  # clearly faster
    # apart it looks faster, but BEST waits for the side-by-side (paired) re-measure
    out = summarize(spec, tmp_path, pts, rows, ["1:0"], None, 0, None, None, False)  # type: ignore[arg-type]
    assert out["best_id"] is None
    assert "(none re-measured side by side)" in out["verdict"]["line"]
    dev = {"id": "1:0", "name": "d", "platform": "p", "version": "v", "driver": "1"}
    same = {"status": "pass", "why": "", "diff": paired(noisy, noisy), "device": dev}
    half = {"status": "pass", "why": "", "diff": paired(noisy, [t // 2 for t in noisy]),
            "device": dev}
    out = summarize(spec, tmp_path, pts, rows, ["1:0"], None, 0, None, None, False,
                    {f"1:0/{ids[1]}": same, f"1:0/{ids[2]}": same})  # type: ignore[arg-type]
    assert out["best_id"] is None  # the side-by-side run found no difference
    assert "when the fastest 2 ran again side by side" in out["verdict"]["line"]
    out = summarize(spec, tmp_path, pts, rows, ["1:0"], None, 0, None, None, False,
                    {f"1:0/{ids[1]}": same, f"1:0/{ids[2]}": half})  # type: ignore[arg-type]
    assert out["best_id"] == ids[2]
    assert out["verdict"]["line"].startswith("BEST: local 64 on 1:0, -50.")
    assert ("re-measured side by side: 500 ns against 1 µs over 10 paired runs, 2 points "
            "re-measured)") in out["verdict"]["line"], out["verdict"]["line"]
    assert out["best_record"]["device"]["driver"] == "1"
    assert out["best_record"]["vs_capture"]["reading"] == "faster"
