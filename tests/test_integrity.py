"""Damage is never a device verdict (issue 25): copies of the shared captures damaged the way
real captures get damaged (a NUL run over the part of the log that holds enqueues of a range,
a log cut in the middle of a range, Pre/Post dumps cut short or emptied).  No PASS when an
enqueue of the range was lost, whatever file names it; no FAIL that the damage caused; the
damaged dump is named in ``info`` and ``show``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from cltui.cli import main
from tests.conftest import capture_path, copy_capture


def nul_over_enqueues(log: Path, first: int, upto: str) -> tuple[int, int]:
    """NULs (as PoCL's linker child leaves them) from the line of enqueue ``first``'s call to
    the first later line that starts with ``upto``: the bytes overwritten."""
    data = bytearray(log.read_bytes())
    m = re.search(rb"\n>>>> [^\n]*clEnqueue[^\n]*EnqueueCounter: %d\n" % first, data)
    assert m is not None, first
    start = m.start() + 1
    end = data.index(b"\n" + upto.encode(), start) + 1
    data[start:end] = bytes(end - start)
    log.write_bytes(bytes(data))
    return start, end


def _cli(*args: str) -> tuple[int, str]:
    """Exit code and stdout (``--json`` output; stderr holds the device line)."""
    res = CliRunner().invoke(main, list(args))
    return res.exit_code, res.stdout


@pytest.fixture()
def planted_fill_lost(tmp_path: Path) -> Path:
    """planted_divergence_pocl (fill, kernel, read per kernel) whose log lost fill 6, kernel 7
    and read 8 to a NUL run: 6 and 8 are named only by their Device Time lines."""
    cap = copy_capture(capture_path("planted_divergence_pocl"), tmp_path)
    nul_over_enqueues(cap / "clintercept_log.txt", 6, "Device Time for")
    return cap


def test_info_names_the_lost_fill(planted_fill_lost: Path) -> None:
    code, out = _cli("info", str(planted_fill_lost), "--json")
    assert code == 0, out
    rec = json.loads(out)["recovery"]
    assert rec["recovered_ranges"] == [[6, 8]] and rec["recovered_kinds"]["fill"] == 1


@pytest.mark.device
def test_a_lost_fill_inside_the_range_is_no_pass(planted_fill_lost: Path) -> None:
    """Replayed bit-exact, yet the fill the log lost is neither replayed nor known: INCOMPLETE
    (exit 3), the lost enqueue counted first, and still a host transfer of the range (the
    intact capture counts 2: fills 6 and 9)."""
    pytest.importorskip("pyopencl")
    code, out = _cli("replay", str(planted_fill_lost), "3-11", "-d", "pocl", "--json")
    assert code == 3, out
    report = json.loads(out)
    v = report["verdict"]
    assert v["status"] == "incomplete"
    assert v["line"].startswith("INCOMPLETE: 1 enqueue of the range lost with the log; "), v
    assert "1/2 host transfers replayed (1 not)" in v["line"], v
    assert v["counts"]["lost"] == 1 and v["counts"]["different"] == 0
    assert [x["first"] for x in report["plan"]["lost"]] == [6]
