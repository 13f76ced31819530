"""``cltui diverge``: the shared PoCL/Oclgrind pair and synthetic captures."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from cltui.analysis.diverge import diverge
from cltui.analysis.diverge_report import (
    DIVERGENT,
    IDENTICAL,
    INPUTS_DIFFERENT,
    INPUTS_IDENTICAL,
    NODATA,
    SEQUENCE,
    WITHIN_TOL,
    DivergeReport,
)
from cltui.capture import open_capture
from cltui.cli import main
from cltui.replay.engine.compare import Tolerance
from tests.analysis_synth import Arg, Launch, chain_capture, write_capture

_NAME = re.compile(r"Enqueue_(\d+)_Kernel_(.+)_Arg_(\d+)_Buffer_(\d+)\.bin$")


def _raw_posts(root: Path) -> dict[int, dict[int, bytes]]:
    """enqueue -> arg -> bytes, read straight from memDumpPostEnqueue/."""
    out: dict[int, dict[int, bytes]] = defaultdict(dict)
    for p in (root / "memDumpPostEnqueue").iterdir():
        m = _NAME.match(p.name)
        assert m, p.name
        out[int(m.group(1))][int(m.group(3))] = p.read_bytes()
    return out


@pytest.fixture(scope="module")
def pair_report(pyocl_pocl: Path, pyocl_oclgrind: Path) -> DivergeReport:
    return diverge(open_capture(pyocl_pocl), open_capture(pyocl_oclgrind))


def test_pair_matches_an_independent_comparison_of_the_raw_dumps(
    pair_report: DivergeReport, pyocl_pocl: Path, pyocl_oclgrind: Path
) -> None:
    ra, rb = _raw_posts(pyocl_pocl), _raw_posts(pyocl_oclgrind)
    assert set(ra) == set(rb)
    same = {e for e in ra if ra[e] == rb[e]}
    differ = set(ra) - same
    assert same and differ
    assert max(same & set(range(22))) == 21 and all(e in same for e in ra if e < 22)
    assert min(differ) == 22
    got_same = {e.number for e in pair_report.enqueues if e.status == IDENTICAL}
    got_diff = {e.number for e in pair_report.enqueues if e.status == DIVERGENT}
    assert got_same == same
    assert got_diff == differ
    # an enqueue with no dumps (a ReadBuffer, a kernel outside the dump window) is no data
    assert pair_report.status_of(13) == NODATA
    assert pair_report.status_of(60) == NODATA
    assert pair_report.sequence_identical and pair_report.aligned == 123


def test_pair_first_divergence_is_sin_kernel_arg0_element0(
    pair_report: DivergeReport, pyocl_pocl: Path, pyocl_oclgrind: Path
) -> None:
    first = pair_report.first_divergent
    assert first is not None and first.number == 22 and first.kernel == "sin_kernel"
    fa = first.first_arg
    assert fa is not None and fa.index == 0 and fa.result is not None
    # independent: the float32 post dumps of arg 0, ULP distance from the bit patterns
    a = np.frombuffer(_raw_posts(pyocl_pocl)[22][0], dtype=np.float32)
    b = np.frombuffer(_raw_posts(pyocl_oclgrind)[22][0], dtype=np.float32)
    diff = np.flatnonzero(a.view(np.int32) != b.view(np.int32))
    assert diff.size == 1331 == fa.result.n_diff
    ulp = np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32).astype(np.int64))
    assert int(ulp.max()) == 1 == fa.result.max_ulp
    assert fa.result.first is not None and fa.result.first.index == int(diff[0]) == 0
    assert fa.result.first.expected == pytest.approx(float(a[0]))
    assert fa.result.first.actual == pytest.approx(float(b[0]))
    assert first.inputs == INPUTS_IDENTICAL and first.starts_here
    # 26 multiply combines two divergent results: it inherits the divergence
    e26 = pair_report.get(26)
    assert e26 is not None and e26.status == DIVERGENT and e26.inputs == INPUTS_DIFFERENT
    assert e26.inputs_differ == [2, 4]  # its two inputs, made by 22 sin and 25 exp
    # reductions: 2 vs 8 partial sums, reported with the reason
    e35 = pair_report.get(35)
    assert e35 is not None and e35.status == DIVERGENT
    fa35 = e35.first_arg
    assert fa35 is not None and fa35.result is not None
    assert "size differs: expected 8 bytes, got 32" in fa35.result.note
    assert any("launch geometry differs" in n for n in e35.notes)


def test_pair_with_a_ulp_tolerance_sin_is_within(pocl_oclgrind_paths: tuple[Path, Path]) -> None:
    a, b = pocl_oclgrind_paths
    rep = diverge(open_capture(a), open_capture(b), Tolerance(ulp=1), last=25)
    assert rep.status_of(22) == WITHIN_TOL and rep.status_of(25) == WITHIN_TOL
    assert rep.first_divergent is None


@pytest.fixture(scope="module")
def pocl_oclgrind_paths(pyocl_pocl: Path, pyocl_oclgrind: Path) -> tuple[Path, Path]:
    return pyocl_pocl, pyocl_oclgrind


def test_capture_against_itself_is_identical(pyocl_pocl: Path) -> None:
    rep = diverge(open_capture(pyocl_pocl), open_capture(pyocl_pocl))
    assert rep.first_divergent is None
    assert rep.counts()[IDENTICAL] == 35


def test_planted_difference_is_found(tmp_path: Path) -> None:
    good = write_capture(chain_capture(), tmp_path / "good")
    bad = write_capture(chain_capture(plant_at=2), tmp_path / "bad")
    rep = diverge(open_capture(good), open_capture(bad))
    assert [rep.status_of(n) for n in range(6)] == [
        IDENTICAL, IDENTICAL, DIVERGENT, DIVERGENT, DIVERGENT, DIVERGENT]
    first = rep.first_divergent
    assert first is not None and first.number == 2 and first.starts_here
    fa = first.first_arg
    assert fa is not None and fa.index == 0 and fa.name == "c" and fa.result is not None
    assert fa.result.first is not None and fa.result.first.index == 3
    assert fa.result.first.actual == 12345 and fa.result.n_diff == 1
    e3 = rep.get(3)
    assert e3 is not None and not e3.starts_here


def test_hash_only_captures_compare_by_hash(tmp_path: Path) -> None:
    spec_a = chain_capture()
    spec_a.hashes, spec_a.replay = True, False
    spec_b = chain_capture(plant_at=4)
    spec_b.replay = False
    a = write_capture(spec_a, tmp_path / "a")
    b = write_capture(spec_b, tmp_path / "b")
    cap_a = open_capture(a)
    assert cap_a.hashes_only.all()
    rep = diverge(cap_a, open_capture(b))
    assert [rep.status_of(n) for n in range(6)] == [IDENTICAL] * 4 + [DIVERGENT] * 2
    fa = rep.get(4).first_arg  # type: ignore[union-attr]
    assert fa is not None and fa.hashed and fa.result is None


def test_sequences_that_differ_are_reported(tmp_path: Path) -> None:
    spec_b = chain_capture()
    extra = Launch("fill_iota", [Arg("buf", "A"), Arg("int", 7)], 16, 8)
    spec_b.launches.insert(3, extra)
    a = write_capture(chain_capture(), tmp_path / "a")
    b = write_capture(spec_b, tmp_path / "b")
    rep = diverge(open_capture(a), open_capture(b))
    assert not rep.sequence_identical
    seq = rep.sequence_diffs
    assert len(seq) == 1 and seq[0].number_b == 3 and seq[0].only_b
    assert "only capture B" in seq[0].notes[0]
    assert seq[0].status == SEQUENCE and rep.first_divergent is seq[0]
    # the enqueues after the insertion are still aligned with their counterparts
    e3, e4 = rep.get(3), rep.get(4)
    assert e3 is not None and e3.number_b == 4 and e3.kernel == "square"
    assert e4 is not None and e4.number_b == 5 and e4.kernel == "scale"


@pytest.mark.slow  # CPU seconds on a real capture: the full tier's (./dev test --fast leaves it)
def test_cli_text_json_and_exit_codes(tmp_path: Path, pyocl_pocl: Path,
                                      pyocl_oclgrind: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(main, ["diverge", str(pyocl_pocl), str(pyocl_oclgrind), "--range", "0-25"])
    assert res.exit_code == 1, res.output
    assert "first divergent enqueue: 22 sin_kernel" in res.output
    assert "1331/8192 differ" in res.output
    res = runner.invoke(main, ["diverge", str(pyocl_pocl), str(pyocl_oclgrind), "--json"])
    assert res.exit_code == 1
    data = json.loads(res.output)
    assert data["first"]["enqueue"] == 22 and data["first"]["arg"] == 0
    assert data["first"]["element"]["index"] == 0 and data["first"]["element"]["max_ulp"] == 1
    assert data["counts"]["identical"] == 22
    res = runner.invoke(main, ["diverge", str(pyocl_pocl), str(pyocl_pocl)])
    assert res.exit_code == 0 and "no aligned enqueue differs" in res.output
    res = runner.invoke(main, ["diverge", str(pyocl_pocl), str(tmp_path / "nope")])
    assert res.exit_code == 2 and "Traceback" not in res.output
    res = runner.invoke(main, ["diverge", str(pyocl_pocl), str(pyocl_pocl), "--range", "9-3"])
    assert res.exit_code == 2 and "bad range" in res.output
    res = runner.invoke(main, ["diverge", str(pyocl_pocl), str(pyocl_pocl), "--ulp", "-1"])
    assert res.exit_code == 2
