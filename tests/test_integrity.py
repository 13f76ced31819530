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


@pytest.mark.child
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


def _cut(path: Path, size: int) -> None:
    path.write_bytes(path.read_bytes()[:size])


@pytest.fixture()
def planted_cut_dumps(tmp_path: Path) -> Path:
    """planted_divergence_pocl with enqueue 4's Pre dump of argument 0 cut to 7 bytes and
    enqueue 7's Post dump of argument 0 emptied, in memDump and in the Replay folders."""
    cap = copy_capture(capture_path("planted_divergence_pocl"), tmp_path)
    pre = "Enqueue_0004_Kernel_builtins_Arg_0_Buffer_0005.bin"
    post = "Enqueue_0007_Kernel_native_fns_Arg_0_Buffer_0007.bin"
    for folder in (cap / "memDumpPreEnqueue", cap / "Replay/Enqueue_4_builtins/Pre"):
        _cut(folder / pre, 7)
    for folder in (cap / "memDumpPostEnqueue", cap / "Replay/Enqueue_7_native_fns/Post"):
        _cut(folder / post, 0)
    return cap


def test_info_and_show_name_the_damaged_dumps(planted_cut_dumps: Path) -> None:
    code, out = _cli("info", str(planted_cut_dumps), "--json")
    assert code == 0, out
    problems = json.loads(out)["problems"]
    for name in (
        "memDumpPreEnqueue/Enqueue_0004_Kernel_builtins_Arg_0_Buffer_0005.bin",
        "Replay/Enqueue_4_builtins/Pre/Enqueue_0004_Kernel_builtins_Arg_0_Buffer_0005.bin",
    ):
        assert f"{name}: damaged dump: 7 bytes, another dump of the object is 16384 bytes" in (
            " ".join(problems)
        ), problems
    assert any(
        p.startswith("memDumpPostEnqueue/Enqueue_0007_Kernel_native_fns_Arg_0_Buffer_0007.bin: "
                     "damaged dump: 0 bytes")
        for p in problems
    ), problems  # fmt: skip
    code, out = _cli("show", str(planted_cut_dumps), "7", "--json")
    assert code == 0, out
    assert (
        "memDumpPostEnqueue/Enqueue_0007_Kernel_native_fns_Arg_0_Buffer_0007.bin: enqueue 7: "
        "argument 0: damaged post dump: 0 bytes, the buffer is 16384 bytes (log)"
    ) in json.loads(out)["problems"]


@pytest.mark.child
@pytest.mark.device
@pytest.mark.parametrize("mode", ["chain", "isolated", "strict"])
def test_damaged_dumps_are_never_a_fail(planted_cut_dumps: Path, mode: str) -> None:
    """The cut Pre dump is not loaded (enqueue 4's input is unknown: its checks unchecked,
    with the reason) and the emptied Post dump is not compared: INCOMPLETE, never FAIL (the
    damage made 3 outputs 'different', FAIL exit 1, before)."""
    pytest.importorskip("pyopencl")
    code, out = _cli("replay", str(planted_cut_dumps), "4-7", "--mode", mode, "-d", "pocl",
                     "--json")  # fmt: skip
    report = json.loads(out)
    v = report["verdict"]
    assert (code, v["status"]) == (3, "incomplete"), v["line"]
    assert v["counts"]["different"] == 0 and v["counts"]["unchecked"] == 3, v["line"]
    checks = {(s["enqueue"], tuple(c["args"])): c for s in report["devices"][0]["steps"]
              for c in s["checks"]}  # fmt: skip
    assert checks[(7, (1,))]["status"] == "equal"
    assert checks[(7, (0,))]["summary"].startswith(
        "damaged dump: memDumpPostEnqueue/Enqueue_0007_Kernel_native_fns_Arg_0_Buffer_0007.bin:"
        " 0 bytes, the buffer is 16384 bytes (log)"
    )
    for arg in (0, 1):
        assert checks[(4, (arg,))]["status"] == "unchecked"
        assert checks[(4, (arg,))]["summary"].startswith("input unknown: damaged dump: ")


@pytest.mark.child
@pytest.mark.device
def test_a_short_pre_dump_is_no_host_change(tmp_path: Path) -> None:
    """pyopencl_lib_pocl: enqueue 4 reads what 3 wrote (buffer 0003); its Pre dump of it cut
    short is neither loaded nor taken for a host-side change (it was reloaded over the
    correct carried state: FAIL); the chain carries the state and the range passes."""
    pytest.importorskip("pyopencl")
    cap = copy_capture(capture_path("pyopencl_lib_pocl"), tmp_path)
    _cut(cap / "memDumpPreEnqueue/Enqueue_0004_Kernel_axpbyz_Arg_3_Buffer_0003.bin", 7)
    code, out = _cli("replay", str(cap), "3-5", "-d", "pocl", "--json")
    report = json.loads(out)
    assert (code, report["verdict"]["status"]) == (0, "pass"), report["verdict"]["line"]
    assert report["plan"]["changes"] == []


@pytest.mark.child
@pytest.mark.device
def test_log_cut_inside_the_range_is_no_pass(tmp_path: Path) -> None:
    """The log cut in the middle of a range (before fill 9): what follows is recovered from
    the files, and the fills and reads no file names are lost: INCOMPLETE, never PASS."""
    pytest.importorskip("pyopencl")
    cap = copy_capture(capture_path("planted_divergence_pocl"), tmp_path)
    log = cap / "clintercept_log.txt"
    data = log.read_bytes()
    m = re.search(rb"\n>>>> [^\n]*clEnqueueFillBuffer[^\n]*EnqueueCounter: 9\n", data)
    assert m is not None
    log.write_bytes(data[: m.start() + 1])
    code, out = _cli("replay", str(cap), "3-11", "-d", "pocl", "--json")
    v = json.loads(out)["verdict"]
    assert code == 3 and v["status"] == "incomplete", v["line"]
    assert v["counts"]["lost"] >= 1 and v["counts"]["different"] == 0, v["line"]
    assert " of the range lost with the log; " in v["line"]


@pytest.mark.child
@pytest.mark.device
def test_coldcache_with_an_emptied_post_dump(tmp_path: Path) -> None:
    """The real damaged capture (its log lost to a NUL run), one Post dump emptied too (and
    its Replay copy, which is used while it is intact): the dump is named in info, its check
    is unchecked (not different), INCOMPLETE."""
    pytest.importorskip("pyopencl")
    cap = copy_capture(capture_path("pyopencl_lib_coldcache"), tmp_path)
    posts = sorted((cap / "memDumpPostEnqueue").glob("Enqueue_0016_*"))
    assert posts
    _cut(posts[0], 0)
    _cut(cap / "Replay/Enqueue_16_arange/Post" / posts[0].name, 0)  # its copy there too
    code, out = _cli("info", str(cap), "--json")
    assert any(p.startswith(f"memDumpPostEnqueue/{posts[0].name}: damaged dump: 0 bytes")
               for p in json.loads(out)["problems"])  # fmt: skip
    code, out = _cli("replay", str(cap), "14-18", "-d", "pocl", "--json")
    v = json.loads(out)["verdict"]
    assert code == 3 and v["status"] == "incomplete", v["line"]
    assert v["counts"]["different"] == 0 and v["counts"]["unchecked"] >= 1, v["line"]


@pytest.mark.child
@pytest.mark.device
def test_isolated_mode_without_a_pre_dump_is_no_check(tmp_path: Path) -> None:
    """Isolated mode on a kernel whose Pre dump of an input is missing ran it on zero-filled
    input and counted its checks as made (FAIL); the input is unknown: those checks are
    unchecked with the reason, and the verdict INCOMPLETE."""
    pytest.importorskip("pyopencl")
    cap = copy_capture(capture_path("planted_divergence_pocl"), tmp_path)
    name = "Enqueue_0004_Kernel_builtins_Arg_0_Buffer_0005.bin"
    for folder in (cap / "memDumpPreEnqueue", cap / "Replay/Enqueue_4_builtins/Pre"):
        (folder / name).unlink()
    code, out = _cli("replay", str(cap), "1-4", "--mode", "isolated", "-d", "pocl", "--json")
    report = json.loads(out)
    v = report["verdict"]
    assert (code, v["status"]) == (3, "incomplete"), v["line"]
    c = v["counts"]
    assert (c["checked"], c["unchecked"], c["different"]) == (4, 2, 0), v["line"]
    step = next(s for s in report["devices"][0]["steps"] if s["enqueue"] == 4)
    assert all(
        ch["status"] == "unchecked" and ch["summary"] == "input unknown: no Pre dump of "
        "argument 0 (buffer 0005) at enqueue 4"
        for ch in step["checks"]
    ), step["checks"]
