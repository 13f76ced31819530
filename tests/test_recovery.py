"""Recovery of the enqueues a damaged or missing call log lost (cltui/capture/recovery/).

The real damaged capture (pyopencl_lib_coldcache: its log lost everything before enqueue 101 to
a 929 KB NUL run) is checked against its intact twin pyopencl_lib_pocl (same program, same
controls, another CPU), and every shared capture is damaged here in the ways a log gets
damaged (NUL runs at its head, middle and tail, several of them, a truncation, no log at all):
no traceback, everything a file names is recovered, and what is recovered is what the intact
capture says.
"""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from cltui.capture import ArgKind, EnqueueKind, open_capture
from cltui.capture.capture import Capture
from cltui.capture.recovery import range_text, ranges_of
from cltui.cli import main
from cltui.replay.plan import build_plan
from tests.conftest import capture_path, copy_capture


@functools.cache
def _intact(name: str) -> Capture:
    """One intact capture per test session: its decoded enqueues are cached inside."""
    return open_capture(capture_path(name))


@pytest.fixture(scope="module")
def coldcache() -> Path:
    return capture_path("pyopencl_lib_coldcache")


def _ambiguous(cap: Capture, number: int) -> bool:
    """The capture says it had to guess the program (several fit, the log that said is lost)."""
    return any("programs define kernel" in p.message for p in cap.enqueue(number).problems)


def assert_matches_intact(cap: Capture, intact: Capture) -> int:
    """Every recovered enqueue of ``cap`` agrees with the same enqueue of ``intact``: kind,
    function, kernel, work sizes (where recovered), program (unless it says it guessed
    among several that fit), arguments (kinds, types, scalar values, __local sizes, SVM
    offsets, which dumps exist).  Returns the number of recovered enqueues."""
    count = 0
    for pos in range(len(cap)):
        row = cap.row(pos)
        if not row.recovered:
            continue
        count += 1
        n = row.number
        tpos = intact.position_of(n)
        assert tpos is not None, n
        want = intact.row(tpos)
        assert (row.kind, row.function, row.kernel) == (want.kind, want.function, want.kernel), n
        if row.global_size is not None:
            assert (row.global_size, row.local_size) == (want.global_size, want.local_size), n
        if row.kind is not EnqueueKind.KERNEL:
            continue
        got, exp = cap.enqueue(n), intact.enqueue(n)
        assert got.recovered and got.recovered_from and not exp.recovered
        assert got.device, n
        assert exp.program is not None and got.program is not None, n
        if got.program.hash != exp.program.hash:
            assert _ambiguous(cap, n), (n, got.program.number, exp.program.number)
        a_got = {a.index: a for a in got.args}
        a_exp = {a.index: a for a in exp.args}
        assert set(a_got) == set(a_exp), n
        for i, b in a_exp.items():
            a = a_got[i]
            assert (a.kind, a.type_name) == (b.kind, b.type_name), (n, i)
            if b.kind is ArgKind.SCALAR:
                assert a.raw == b.raw, (n, i)
            if b.kind is ArgKind.LOCAL:
                assert a.local_size == b.local_size, (n, i)
            if b.kind is ArgKind.SVM:
                assert a.svm_offset == b.svm_offset, (n, i)
            assert (a.pre is None, a.post is None) == (b.pre is None, b.post is None), (n, i)
    return count


# ------------------------------------------------------------------- the real damaged capture


@pytest.mark.slow  # CPU seconds on a real capture: the full tier's (./dev test --fast leaves it)
def test_coldcache_what_is_lost_and_recovered(coldcache: Path, pyocl_pocl: Path) -> None:
    cap = open_capture(coldcache)
    rec = cap.recovery
    assert rec is not None and rec.state == "damaged"
    assert rec.lost == [(0, 100)] and rec.report_total == 123
    assert "NUL run of 929,407 bytes" in rec.why
    assert len(rec.enqueues) == 92
    assert all(r.kind is EnqueueKind.KERNEL for r in rec.enqueues.values())
    assert range_text(ranges_of(rec.replayable)) == "14,16,18-38"
    assert range_text(ranges_of(rec.with_source("memdump"))) == "0-1,3-7,9-12,14,16,18-39"
    assert range_text(rec.unknown) == "2,8,13,15,17,45,52,59,68" and rec.unknown_count == 9
    # the report's calls per function say what the 9 were (none is a kernel)
    assert rec.unknown_by_report == {
        "clEnqueueCopyBuffer": 3,
        "clEnqueueMarkerWithWaitList": 1,
        "clEnqueueReadBuffer": 3,
        "clEnqueueWriteBuffer": 2,
    }
    assert rec.device == "pthread-skylake-avx512-Intel(R) Xeon(R) Processor"
    # 69-100 keep the Device Time lines the log printed after the NUL run
    for n in range(69, 101):
        assert cap.row(cap.position_of(n) or 0).device_time is not None
    assert cap.numbers.tolist() == sorted(cap.numbers.tolist())
    assert len(cap) == 114 and int(cap.recovered.sum()) == 92
    line = rec.line()
    assert line.startswith("enqueues 0-100 lost with the log")
    assert "23 replayable from Replay/ folders, 14,16,18-38" in line
    assert line.endswith("the report counts 123")
    assert any(str(p).endswith(line) for p in cap.problems)
    intact = open_capture(pyocl_pocl)
    assert assert_matches_intact(cap, intact) == 92


def test_coldcache_cli(coldcache: Path) -> None:
    r = CliRunner()
    res = r.invoke(main, ["info", str(coldcache), "--json"])
    assert res.exit_code == 0, res.output
    info = json.loads(res.stdout)
    assert info["devices"] == ["pthread-skylake-avx512-Intel(R) Xeon(R) Processor"]
    rec = info["recovery"]
    assert rec["lost"] == [[0, 100]] and rec["lost_count"] == 101
    assert rec["recovered"] == 92 and rec["recovered_kinds"] == {"kernel": 92}
    assert rec["replayable"] == [[14, 14], [16, 16], [18, 38]] and rec["replayable_count"] == 23
    assert rec["not_recovered_count"] == 9 and rec["report_total"] == 123
    assert rec["from"]["memdump"] == 35 and rec["from"]["replay"] == 23
    assert info["recovered"] == 92
    text = r.invoke(main, ["info", str(coldcache)])
    assert text.exit_code == 0
    assert text.stdout.startswith("lost: enqueues 0-100 lost with the log")
    assert "  replayable: 14,16,18-38\n" in text.stdout
    assert "devices:\n  - pthread-skylake-avx512-Intel(R) Xeon(R) Processor" in text.stdout
    rows = json.loads(r.invoke(main, ["ls", str(coldcache), "--json"]).stdout)
    by_number = {x["number"]: x for x in rows}
    assert by_number[14]["recovered"] is True and by_number[101]["recovered"] is False
    assert by_number[14]["global_size"] == [8192] and by_number[40]["global_size"] is None
    ls_text = r.invoke(main, ["ls", str(coldcache), "-r", "14-16"]).stdout
    assert "recovered" in ls_text.splitlines()[1]
    show = json.loads(r.invoke(main, ["show", str(coldcache), "14", "--json"]).stdout)
    assert show["recovered"] is True
    assert show["recovered_from"] == ["memdump", "replay", "setkernelarg"]
    assert show["device"] == "pthread-skylake-avx512-Intel(R) Xeon(R) Processor"
    assert show["program"]["number"] == 10 and len(show["args"]) == 8
    human = r.invoke(main, ["show", str(coldcache), "40"]).stdout
    assert "recovered: the log lost this enqueue; rebuilt from SetKernelArg dumps" in human
    assert "global:   unknown (lost with the log" in human
    lost = r.invoke(main, ["show", str(coldcache), "15"])
    assert lost.exit_code == 2
    assert "enqueue 15 was lost with the log (a NUL run" in lost.output
    assert "not in this capture" not in lost.output
    assert "Traceback" not in lost.output


@pytest.mark.slow  # CPU seconds on a real capture: the full tier's (./dev test --fast leaves it)
def test_coldcache_plan_skips_what_it_cannot_replay(coldcache: Path) -> None:
    from cltui.capture.ranges import parse_range

    cap = open_capture(coldcache)
    plan = build_plan(cap, parse_range("10-40"))
    assert plan.enqueues == [14, 16, *range(18, 39)]
    assert all(s["recovered"] is True for s in plan.steps)
    skipped = {s["enqueue"]: s for s in plan.skipped}
    assert sorted(skipped) == [10, 11, 12, 39, 40]
    assert skipped[40]["kernel"] == "reduce_kernel_stage2" and skipped[40]["recovered"]
    assert "without its work sizes" in skipped[40]["why"]
    assert "SetKernelArg dumps" in skipped[40]["why"]
    assert plan.manifest["skipped"] == plan.skipped
    assert [(x["first"], x["last"], x["count"]) for x in plan.lost] == [
        (13, 13, 1),
        (15, 15, 1),
        (17, 17, 1),
    ]
    assert any(n.startswith("enqueues 13,15,17 lost with the log") for n in plan.notes)
    # a range of lost enqueues only, or one lost number: a clear error
    from cltui.replay.plan import PlanError

    with pytest.raises(PlanError, match="enqueue 15 was lost with the log"):
        build_plan(cap, [15])
    with pytest.raises(PlanError, match=r"enqueues 2,8 were lost with the log"):
        build_plan(cap, parse_range("2-8/nosuchkernel"))


@pytest.mark.child
@pytest.mark.device
def test_coldcache_replays_14_38_on_pocl(coldcache: Path) -> None:
    pytest.importorskip("pyopencl")
    res = CliRunner().invoke(
        main, ["replay", str(coldcache), "14-38", "-d", "pocl", "--json"]
    )
    assert res.exit_code == 3, res.output  # incomplete: 15 and 17 were lost
    report = json.loads(res.stdout)
    verdict = report["verdict"]
    assert verdict["status"] == "incomplete"
    assert verdict["line"] == (
        "INCOMPLETE: 2 enqueues of the range lost with the log; 23/23 kernel enqueues replayed "
        "(23 recovered), 53/53 outputs checked (53 equal)"
    )
    assert verdict["counts"]["lost"] == 2 and verdict["counts"]["recovered"] == 23
    assert report["plan"]["steps"] == 23
    assert [x["first"] for x in report["plan"]["lost"]] == [15, 17]
    (dev,) = report["devices"]
    assert dev["status"] == "ok", dev.get("error")
    assert [s["enqueue"] for s in dev["steps"]] == [14, 16, *range(18, 39)]
    checks = [c for s in dev["steps"] for c in s["checks"]]
    assert len(checks) >= 46 and all(c["status"] == "equal" for c in checks)


def _line_on_pocl(coldcache: Path, command: str, *args: str, code: int) -> str:
    """``cltui COMMAND COLDCACHE 14-24 ARGS -d pocl --json``'s verdict line (exit ``code``)."""
    pytest.importorskip("pyopencl")
    res = CliRunner().invoke(main, [command, str(coldcache), "14-24", *args, "-d", "pocl",
                                    "--json"])  # fmt: skip
    assert res.exit_code == code, res.output
    return str(json.loads(res.stdout)["verdict"]["line"])


@pytest.mark.child
@pytest.mark.device
def test_a_sweep_of_a_recovered_range_says_so_in_its_line(coldcache: Path) -> None:
    """The sweep's verdict line leads with its finding, then what the log lost of the range:
    the kernel enqueues recovered from the files, and the enqueues lost (no point can then
    be fully checked)."""
    line = _line_on_pocl(coldcache, "sweep", "--local", "64", "--repeat", "2", code=1)
    assert line == (
        "NO CORRECT VARIANT: 2 runs (1 fail, 1 incomplete); 9 of the range's 9 kernel enqueues "
        "recovered (the log lost them: replayed from the files that survived); 2 enqueues of "
        "the range lost with the log: no point can be fully checked (each is incomplete at "
        "best)"), line


@pytest.mark.child
@pytest.mark.device
def test_a_try_of_a_range_with_lost_enqueues_is_incomplete_not_failed(coldcache: Path) -> None:
    """A variant whose every check is equal on a range the log lost part of: INCOMPLETE (exit
    3), said as such; and A's note says why it does not pass."""
    line = _line_on_pocl(coldcache, "try", "--options=-cl-mad-enable", "--repeat", "3", code=3)
    assert line == (
        "INCOMPLETE: 2 enqueues of the range lost with the log; 9/9 kernel enqueues replayed "
        "(9 recovered), 19/19 outputs checked (19 equal) | the variant is not fully checked "
        "(its timing is not a result) | note: the capture's own configuration does not pass "
        "on 1:0 (incomplete)"), line


# ------------------------------------------------------------------- damaged copies


def _damage(log: Path, how: str) -> None:
    data = log.read_bytes()
    n = len(data)
    if how == "missing":
        log.unlink()
    elif how == "nul-head":  # as a cold PoCL cache leaves it: the header, a NUL run, the end
        log.write_bytes(data[:2400] + b"\0" * (n // 2 - 2400) + data[n // 2 :])
    elif how == "nul-middle":
        log.write_bytes(data[: n // 3] + b"\0" * 4096 + data[2 * n // 3 :])
    elif how == "nul-tail":
        log.write_bytes(data[: n // 2] + b"\0" * 3000)
    elif how == "nul-runs":  # several short runs, each over an enqueue line
        step = n // 7
        out = bytearray(data)
        for k in range(1, 7):
            at = data.find(b"clEnqueue", k * step)
            if at >= 0:
                out[at - 100 : at + 1900] = b"\0" * 2000
        log.write_bytes(bytes(out))
    elif how == "truncated":
        log.write_bytes(data[: n * 2 // 5])
    else:
        raise AssertionError(how)


DAMAGES = ["missing", "nul-head", "nul-middle", "nul-tail", "nul-runs", "truncated"]
CAPTURES = ["images_svm_pocl", "opencv_tapi_pocl", "pyopencl_lib_pocl", "pyopencl_lib_oclgrind"]


@pytest.mark.slow  # seconds each: the full tier's (./dev test --fast leaves it)
@pytest.mark.parametrize("how", DAMAGES)
@pytest.mark.parametrize("name", CAPTURES)
def test_damaged_logs_recover_what_the_files_name(name: str, how: str, tmp_path: Path) -> None:
    src = capture_path(name)
    root = copy_capture(src, tmp_path)
    _damage(root / "clintercept_log.txt", how)
    cap = open_capture(root)
    intact = _intact(name)
    rec = cap.recovery
    assert rec is not None and rec.lost
    assert rec.state == ("missing" if how == "missing" else "damaged")
    logged = {int(n) for n, r in zip(cap.numbers, cap.recovered, strict=True) if not r}
    total = len(intact)
    # every number is in the log, recovered, or counted as lost and named by no file
    assert rec.lost_count == total - len(logged)
    assert set(rec.enqueues) | {n for a, b in rec.unknown for n in range(a, b + 1)} == {
        n for a, b in rec.lost for n in range(a, b + 1)
    }
    # every lost enqueue that a dump, Replay folder or map/unmap dump names is recovered
    named = set(cap.dumps.pre) | set(cap.dumps.post) | set(cap.dumps.replay)
    for n in named:
        assert cap.position_of(n) is not None, n
    assert assert_matches_intact(cap, intact) == len(rec.enqueues)
    # the CLI gives a clear picture, never a traceback
    r = CliRunner()
    info = r.invoke(main, ["info", str(root), "--json"])
    assert info.exit_code == 0, info.output
    assert json.loads(info.stdout)["recovery"]["lost_count"] == rec.lost_count
    assert json.loads(info.stdout)["devices"]
    for n in [a for a, _ in rec.unknown[:1]] + sorted(rec.enqueues)[:2]:
        res = r.invoke(main, ["show", str(root), str(n), "--json"])
        assert "Traceback" not in res.output
        if rec.is_unknown(n):
            assert res.exit_code == 2 and "lost with the log" in res.output
        else:
            assert res.exit_code == 0 and json.loads(res.stdout)["recovered"] is True


def test_replay_folders_of_a_missing_log_still_replay(pyocl_pocl: Path, tmp_path: Path) -> None:
    """Without any log, the Replay window of pyopencl_lib_pocl plans like the intact one."""
    from cltui.capture.ranges import parse_range

    root = copy_capture(pyocl_pocl, tmp_path)
    (root / "clintercept_log.txt").unlink()
    cap = open_capture(root)
    plan = build_plan(cap, parse_range("14-38"))
    want = build_plan(open_capture(pyocl_pocl), parse_range("14-38"))
    assert plan.enqueues == want.enqueues
    for got, exp in zip(plan.steps, want.steps, strict=True):
        assert got["recovered"] is True and "recovered" not in exp
        assert (got["kernel"], got["global"], got["local"]) == (
            exp["kernel"],
            exp["global"],
            exp["local"],
        )
        assert [a.get("kind") for a in got["args"]] == [a.get("kind") for a in exp["args"]]
        assert [a.get("hex") for a in got["args"]] == [a.get("hex") for a in exp["args"]]
        assert len(got["checks"]) == len(exp["checks"])


@pytest.mark.child
def test_heat2d_log_tail_only(heat2d: Path, tmp_path: Path) -> None:
    """Only the last 4 MB of heat2d's 444 MB log: the dump window 122380-122419 is rebuilt."""
    root = tmp_path / "heat2d_tail"
    root.mkdir()
    for p in heat2d.iterdir():
        if p.name == "clintercept_log.txt":
            continue
        if p.is_dir():
            shutil.copytree(p, root / p.name)
        else:
            shutil.copy(p, root / p.name)
    with open(heat2d / "clintercept_log.txt", "rb") as f:
        f.seek(-4_000_000, 2)
        (root / "clintercept_log.txt").write_bytes(f.read())
    cap = open_capture(root)
    rec = cap.recovery
    assert rec is not None and rec.report_total == 204011 and rec.lost[0][0] == 0
    window = [n for n in range(122380, 122420) if n in rec.enqueues]
    assert len(window) == 37  # the kernels of the dump window; 122405-122407 are transfers
    assert rec.replayable == [*range(122396, 122405), *range(122408, 122412)]
    assert all(rec.is_unknown(n) for n in (122405, 122406, 122407))
    assert rec.unknown_count == rec.lost_count - len(rec.enqueues)
    intact = open_capture(heat2d)
    for n in (122380, 122396, 122404, 122411, 122419):
        got, want = cap.row(cap.position_of(n) or 0), intact.row(intact.position_of(n) or 0)
        assert got.kernel == want.kernel and got.recovered
        if got.global_size is not None:
            assert (got.global_size, got.local_size) == (want.global_size, want.local_size)
    e = cap.enqueue(122396)
    w = intact.enqueue(122396)
    assert [(a.kind, a.raw) for a in e.args if a.kind is ArgKind.SCALAR] == [
        (a.kind, a.raw) for a in w.args if a.kind is ArgKind.SCALAR
    ]


@pytest.mark.child
def test_app_marks_recovered_enqueues(coldcache: Path) -> None:
    """The app lists the recovered enqueues with a ~ after the number and says what is lost."""
    import asyncio

    from cltui.tui.app import make_app
    from cltui.tui.widgets.detail_panes import enqueue_summary
    from tests.test_tui_app import SIZE, settle, wait_loaded

    async def run() -> None:
        async with make_app(coldcache).run_test(size=SIZE) as pilot:
            screen = await wait_loaded(pilot)
            cap = screen.capture
            assert cap is not None and cap.recovery is not None
            lst = screen.enqueue_list
            first = lst.render_line(1).text  # enqueue 0, recovered
            assert "0~kernel" in first.replace(" ", "") and "rng_gen_philox4x32" in first
            await pilot.press("end")  # the last enqueue, 122, is in the log
            await settle(pilot)
            assert screen.state()["cursor"] == 122
            # the rendered row of 122 (dim "lost" rows sit among the others on screen)
            shown = [lst.render_line(y).text for y in range(lst.size.height)]
            last = next((t for t in shown if t.split()[:1] == ["122"]), "")
            assert "122 read" in last and "~" not in last, shown
            await pilot.press("home")
            await settle(pilot)
            assert "recovered (log lost) from" in enqueue_summary(cap.enqueue(14))
            assert screen.jump_to(14) and screen.state()["cursor"] == 14
            assert not screen.jump_to(15)  # lost, named by no file: the notice says so
            await settle(pilot)
            assert screen.state()["cursor"] == 14

    asyncio.run(run())


def test_intact_captures_lose_nothing() -> None:
    for name in CAPTURES:
        assert open_capture(capture_path(name)).recovery is None, name


def test_absurd_counts_are_runs_not_lists(images_svm: Path, tmp_path: Path) -> None:
    """A report or a file name may claim any enqueue number: what is lost is kept as runs."""
    root = copy_capture(images_svm, tmp_path)
    rp = root / "clintercept_report.txt"
    rp.write_text(rp.read_text().replace("Total Enqueues: 11", "Total Enqueues: 10" + "0" * 14))
    ska = root / "SetKernelArg"
    (ska / "SetKernelArg_9999999999_Kernel_gather_rgba_Arg_0.bin").write_bytes(b"\0" * 8)
    cap = open_capture(root)
    rec = cap.recovery
    assert rec is not None and rec.report_total == 10**15
    assert rec.lost == [(11, 10**15 - 1)]
    assert 9999999999 in rec.enqueues and rec.enqueues[9999999999].kernel == "gather_rgba"
    assert rec.unknown_count == rec.lost_count - len(rec.enqueues)
    assert "the report counts 1000000000000000" in rec.line()
    res = CliRunner().invoke(main, ["show", str(root), "123456789"])
    assert res.exit_code == 2 and "was lost with the log" in res.output
