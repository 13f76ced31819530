"""Faults, kills and interrupts: what ran is kept, nothing is left behind, the right words.

Issue 11 item 5 (``check`` goes on after an Oclgrind crash, ``#line`` directives) and
issue 12 items 6, 8, 9 (temp folders after ctrl-c and kills, results kept on a fault, a
child killed from outside, exit 130, one-line messages). The device tests run on the
real PoCL and Oclgrind; the signal tests run the CLI as a subprocess and signal it while
a kernel that never ends runs (so the moment is ours, not a timer's).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from cltui.analysis.attribute import line_map
from cltui.analysis.check import run_check
from cltui.analysis.oclgrind import OUT_OF_BOUNDS, UNINITIALIZED
from cltui.capture import open_capture
from cltui.capture.ranges import parse_range
from cltui.cli import main
from cltui.process import lifecycle
from tests.analysis_synth import (
    BUGGY_SOURCE,
    CRASH_OOB_LINE,
    Arg,
    Launch,
    SynthCapture,
    buggy_capture,
    crash_capture,
    write_capture,
)
from tests.test_replay_runner import _devices, _fill, _plan, _step

REPO = Path(__file__).resolve().parents[1]

HANG_SOURCE = """\
__kernel void spin(__global volatile int *flag)
{
    while (flag[0] == 0) { }
}
"""


def _hang_capture(root: Path) -> Path:
    spec = SynthCapture(HANG_SOURCE, {"F": np.zeros(1, dtype=np.int32)},
                        [Launch("spin", [Arg("buf", "F")], 1, 1)])
    return write_capture(spec, root)


def _dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def _children(pid: int, module: str) -> list[int]:
    """Processes whose parent is ``pid`` running ``python -m module``."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ppid = int(stat.rsplit(") ", 1)[1].split()[1])
        if ppid == pid and module.encode() in cmd:
            out.append(int(entry.name))
    return out


def _wait_for(what: Callable[[], Any], seconds: float = 120.0) -> Any:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        got = what()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError("timed out waiting")


def _cli(args: list[str], tmpdir: Path, stdout: Any = subprocess.PIPE) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env["TMPDIR"] = str(tmpdir)  # the temp folders of this run, and only its, land here
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                     else "")
    return subprocess.Popen([sys.executable, "-m", "cltui", *args], env=env,
                            stdout=stdout, stderr=subprocess.PIPE)


# --------------------------------------------------------------------------- check


@pytest.mark.child
@pytest.mark.device
def test_check_goes_on_after_an_oclgrind_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real Oclgrind 21.10 crash: its uninitialised-value checker segfaults on enqueue 1;
    it is retried alone, then without that checker; enqueue 2's out-of-bounds write after
    it is still found."""
    _devices("oclgrind")
    monkeypatch.setenv("CLTUI_CACHE_DIR", str(tmp_path / "cache"))
    root = write_capture(crash_capture(), tmp_path / "crash")
    rep = run_check(open_capture(root), parse_range("0-3"))
    assert [c.enqueue for c in rep.crashes] == [1]
    crash = rep.crashes[0]
    assert crash.kernel == "shuffle_uninit" and crash.signal == "SIGSEGV"
    assert crash.checker == "uninitialized" and crash.checked
    # Oclgrind writes nothing; the child's fault handler names where the driver crashed
    assert "Segmentation fault" in crash.stderr and "in run" in crash.stderr
    assert [r["without"] for r in crash.retries] == [[], ["uninitialized"]]
    assert [r["outcome"] for r in crash.retries] == ["crash", "ok"]
    assert rep.unchecked == []
    oob = [f for f in rep.findings if f.kind == OUT_OF_BOUNDS]
    assert [(f.enqueue, f.line, f.lines[0].matches) for f in oob] == [(2, CRASH_OOB_LINE, True)]
    assert rep.status == "findings"
    # the CLI: JSON carries the crash, its checker, its stderr; the text names them
    runner = CliRunner()
    res = runner.invoke(main, ["check", str(root), "0-3", "--json"])
    assert res.exit_code == 1, res.output
    data = json.loads(res.output)
    assert data["crashes"][0]["checker"] == "uninitialized"
    assert data["crashes"][0]["enqueue"] == 1 and "stderr" in data["crashes"][0]
    assert "stderr" in data and data["unchecked"] == []
    res = runner.invoke(main, ["check", str(root), "1"])
    # nothing found, but enqueue 1 ran without its uninitialised-value checker: incomplete
    assert res.exit_code == 3, res.output
    assert "CRASH: enqueue 1 (shuffle_uninit) crashed Oclgrind (SIGSEGV)" in res.output
    assert "uninitialized checker crashes on it" in res.output
    # the child's Python stack is not shown: a line names the log that holds it
    assert "Fatal Python error" not in res.output and 'File "' not in res.output, res.output
    logs = [ln.split(": ", 1)[1] for ln in res.output.splitlines()
            if ln.startswith("  the check process's output: ")]  # fmt: skip
    assert logs and all(Path(x).parent == tmp_path / "cache" / "logs" for x in logs), res.output
    assert "Segmentation fault" in Path(logs[0]).read_text()
    assert data["crashes"][0]["stderr_log"] is not None


def test_line_map_follows_line_directives() -> None:
    text = [
        "#define N 4",  # 1
        '#line 100 "kernels/oob.cl"',  # 2
        "__kernel void k(__global int *o)",  # 3 -> oob.cl:100
        "{",  # 4 -> 101
        "# 7 \"other.cl\" 1",  # 5 (a preprocessor line marker)
        "  o[N] = 1;",  # 6 -> other.cl:7
        "#line 20",  # 7
        "}",  # 8 -> other.cl:20
    ]
    lm = line_map(text)
    assert lm is not None
    assert lm.find("kernels/oob.cl", 100) == 3 and lm.find("kernels/oob.cl", 101) == 4
    assert lm.find("oob.cl", 101) == 4  # the name without its folder
    assert lm.find("other.cl", 7) == 6 and lm.find("other.cl", 20) == 8
    assert lm.find("input.cl", 1) == 1  # before the first directive
    assert lm.find("other.cl", 8) is None
    assert line_map(["__kernel void k() {}"]) is None
    # linear in the input: a million directives
    assert line_map(["#line 5 \"a.cl\""] * 100_000 + ["x"]) is not None


@pytest.mark.child
@pytest.mark.device
def test_check_maps_findings_through_line_directives(tmp_path: Path) -> None:
    """A program source with ``#line`` directives (as generated sources carry): findings
    point at the capture's source file and line, and match its text."""
    _devices("oclgrind")
    spec = buggy_capture()
    spec.source = '#line 1000 "gen/buggy.cl"\n' + BUGGY_SOURCE
    root = write_capture(spec, tmp_path / "lines")
    rep = run_check(open_capture(root), parse_range("1"))
    oob = [f for f in rep.findings if f.kind == OUT_OF_BOUNDS]
    assert len(oob) == 1
    sl = oob[0].lines[0]
    assert sl.file.endswith("buggy.cl") and sl.reported == 1003
    assert sl.source is not None and sl.matches is True
    src = (root / sl.source).read_text().splitlines()
    assert sl.line == 5 and src[sl.line - 1].strip() == "out[i + 1] = (float)i;"
    d = oob[0].to_dict()["lines"][0]
    assert (d["line"], d["reported_line"], d["matches"]) == (5, 1003, True)


@pytest.mark.child
@pytest.mark.device
def test_check_numbers_lines_as_the_compiler_does(tmp_path: Path) -> None:
    """A form feed in a comment (as C sources carry between sections) ends no line for the
    compiler: the finding's line and its text are the file's own (``str.splitlines`` counted
    one line more after it: line 4's text was shown as line 5)."""
    _devices("oclgrind")
    spec = buggy_capture()
    spec.source = '#line 1000 "gen/buggy.cl"\n/* a page break \f in a comment */\n' + BUGGY_SOURCE
    root = write_capture(spec, tmp_path / "ff")
    rep = run_check(open_capture(root), parse_range("1"))
    (oob,) = [f for f in rep.findings if f.kind == OUT_OF_BOUNDS]
    sl = oob.lines[0]
    assert sl.source is not None and sl.reported == 1004
    src = (root / sl.source).read_bytes().split(b"\n")
    assert sl.line == 6 and src[sl.line - 1].strip() == b"out[i + 1] = (float)i;"
    assert sl.code.strip() == "out[i + 1] = (float)i;" and sl.matches is True


# --------------------------------------------------------------------------- replay faults


@pytest.mark.child
@pytest.mark.device
def test_a_crash_keeps_the_steps_that_finished(tmp_path: Path) -> None:
    from cltui.replay import runner

    dev = _devices("pocl")
    (tmp_path / "one.bin").write_bytes(np.full(64, 1, np.int32).tobytes())
    plan = _plan(
        tmp_path,
        [_fill(40, 1, "one.bin"), _step(41, "wild", [{"index": 0, "kind": "buffer", "mem": "m0"}])],
        {"m0": {"kind": "buffer", "size": 256}},
    )
    res = runner.run(plan, dev, save_dir=tmp_path / "out", timeout=60)["devices"][0]
    assert res["status"] == "crash" and res["failed_enqueue"] == 41, res
    assert "enqueue 41 crashed the driver (SIGSEGV" in res["error"] or "SIGBUS" in res["error"]
    assert res["partial"] is True
    assert [(s["enqueue"], s["status"]) for s in res["steps"]] == [(40, "pass")]
    assert res["steps"][0]["checks"][0]["status"] == "equal"


@pytest.mark.child
@pytest.mark.device
def test_a_hang_keeps_the_steps_that_finished(tmp_path: Path) -> None:
    from cltui.replay import runner

    dev = _devices("pocl")
    (tmp_path / "two.bin").write_bytes(np.full(64, 3, np.int32).tobytes())
    spin = _step(8, "spin", [{"index": 0, "kind": "buffer", "mem": "m1"},
                             {"index": 1, "kind": "buffer", "mem": "m0"}])
    plan = _plan(tmp_path, [_fill(7, 2, "two.bin"), spin],
                 {"m0": {"kind": "buffer", "size": 256}, "m1": {"kind": "buffer", "size": 256}})
    res = runner.run(plan, dev, save_dir=tmp_path / "out", timeout=3)["devices"][0]
    assert res["status"] == "hang" and res["failed_enqueue"] == 8
    # the fill wrote 2 where 3 was captured: its verdict survives the hang
    assert [(s["enqueue"], s["status"]) for s in res["steps"]] == [(7, "fail")]
    assert res["steps"][0]["checks"][0]["status"] == "different"


@pytest.mark.child
@pytest.mark.device
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_child_killed_from_outside_is_not_a_driver_crash(
    tmp_path: Path, sig: signal.Signals
) -> None:
    from cltui.replay import runner

    dev = _devices("pocl")
    spin = _step(8, "spin", [{"index": 0, "kind": "buffer", "mem": "m1"},
                             {"index": 1, "kind": "buffer", "mem": "m0"}])
    plan = _plan(tmp_path, [_fill(7, 2), spin],
                 {"m0": {"kind": "buffer", "size": 256}, "m1": {"kind": "buffer", "size": 256}})
    job = runner.start(plan, dev, save_dir=tmp_path / "out", timeout=120)
    for ev in job.events():
        if ev["type"] == "step" and ev["enqueue"] == 8:
            pid = job.child_pid
            assert pid is not None
            os.kill(pid, sig)  # a user's kill, the OOM killer
    assert job.report is not None
    res = job.report["devices"][0]
    assert res["status"] == "killed", res
    assert res["error"] == (
        f"the replay process was killed ({sig.name}) from outside while enqueue 8 ran"
    )
    assert "crashed" not in res["error"]
    assert res["failed_enqueue"] == 8 and [s["enqueue"] for s in res["steps"]] == [7]


@pytest.mark.child
@pytest.mark.device
def test_a_check_child_killed_from_outside(tmp_path: Path) -> None:
    _devices("oclgrind")
    root = _hang_capture(tmp_path / "hang")

    def kill_it(ev: dict[str, Any]) -> None:
        if ev.get("type") == "step":
            for pid in _children(os.getpid(), "cltui.analysis.check"):
                os.kill(pid, signal.SIGKILL)

    rep = run_check(open_capture(root), parse_range("0"), timeout=120, progress=kill_it)
    assert rep.status == "killed" and rep.failed_enqueue == 0
    assert rep.error == "the check process was killed (SIGKILL) from outside while enqueue 0 ran"
    assert rep.crashes == [] and rep.unchecked == [0]


# --------------------------------------------------------------------------- signals


def _folders(tmpdir: Path, kind: str) -> list[Path]:
    return sorted(tmpdir.glob(f"cltui-{kind}-p*"))


@pytest.mark.child
@pytest.mark.device
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_replay_leaves_nothing_and_exits_130(
    tmp_path: Path, sig: signal.Signals
) -> None:
    _devices("pocl")
    root = _hang_capture(tmp_path / "hang")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    proc = _cli(["replay", str(root), "0", "-d", "pocl", "--timeout", "600"], tmpdir)
    try:
        child = _wait_for(lambda: _children(proc.pid, "cltui.replay.runner"))[0]
        # the job's folder (beside it, the one of the child started ahead of its job)
        folder = _wait_for(lambda: [f for f in _folders(tmpdir, "replay")
                                    if list(f.glob("job_*.json"))])[0]  # fmt: skip
        assert folder.name.startswith(f"cltui-replay-p{proc.pid}-")
        time.sleep(1.0)  # the kernel is spinning
        proc.send_signal(sig)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert err.decode().strip().splitlines()[-1] == "cltui: interrupted"
    assert _folders(tmpdir, "replay") == []
    _wait_for(lambda: not _alive(child), 10)


@pytest.mark.child
@pytest.mark.device
@pytest.mark.parametrize(
    ("command", "kind", "module", "sig"),
    [
        (["check", "{root}", "0", "--timeout", "600"], "check", "cltui.analysis.check",
         signal.SIGINT),
        (["shrink", "{root}", "0", "-d", "pocl", "--timeout", "600"], "shrink",
         "cltui.replay.runner", signal.SIGTERM),
    ],
)
def test_interrupted_check_and_shrink_leave_nothing(
    tmp_path: Path, command: list[str], kind: str, module: str, sig: signal.Signals
) -> None:
    _devices("oclgrind" if kind == "check" else "pocl")
    root = _hang_capture(tmp_path / "hang")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    proc = _cli([a.format(root=root) for a in command], tmpdir)
    try:
        child = _wait_for(lambda: _children(proc.pid, module))[0]
        folder = _wait_for(lambda: _folders(tmpdir, kind))[0]
        assert folder.name.startswith(f"cltui-{kind}-p{proc.pid}-")
        time.sleep(1.0)
        proc.send_signal(sig)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert err.decode().strip().splitlines()[-1] == "cltui: interrupted"
    assert list(tmpdir.iterdir()) == []
    _wait_for(lambda: not _alive(child), 10)


@pytest.mark.child
def test_interrupted_tar_export_leaves_nothing(pyocl_pocl: Path, tmp_path: Path) -> None:
    """``export --tar -`` blocks on a pipe nobody reads: SIGTERM at that moment."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    proc = _cli(["export", str(pyocl_pocl), "0-20", "--tar", "-"], tmpdir)
    try:
        _wait_for(lambda: _folders(tmpdir, "export"))
        time.sleep(1.0)  # the archive fills the pipe: the writer waits
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert err.decode().strip().splitlines()[-1] == "cltui: interrupted"
    assert list(tmpdir.iterdir()) == []


@pytest.mark.child
@pytest.mark.device
def test_a_killed_check_takes_oclgrind_along_and_its_folder_is_swept(tmp_path: Path) -> None:
    _devices("oclgrind")
    root = _hang_capture(tmp_path / "hang")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    proc = _cli(["check", str(root), "0", "--timeout", "600"], tmpdir)
    try:
        child = _wait_for(lambda: _children(proc.pid, "cltui.analysis.check"))[0]
        folder = _wait_for(lambda: _folders(tmpdir, "check"))[0]
        time.sleep(1.0)
        proc.kill()  # SIGKILL: nothing of cltui runs
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    # the Oclgrind check dies with its parent (PR_SET_PDEATHSIG), the folder is stranded
    _wait_for(lambda: not _alive(child), 10)
    assert folder.exists()
    # ... until the next cltui starts (any command)
    nxt = _cli(["info", str(root)], tmpdir)
    nxt.communicate(timeout=120)
    assert nxt.returncode == 0
    assert not folder.exists()


@pytest.mark.child
@pytest.mark.device
def test_the_sweep_spares_a_live_cltui_s_folder(tmp_path: Path) -> None:
    _devices("pocl")
    root = _hang_capture(tmp_path / "hang")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    proc = _cli(["replay", str(root), "0", "-d", "pocl", "--timeout", "600"], tmpdir)
    try:
        child = _wait_for(lambda: _children(proc.pid, "cltui.replay.runner"))[0]
        folder = _wait_for(lambda: _folders(tmpdir, "replay"))[0]
        nxt = _cli(["info", str(root)], tmpdir)
        nxt.communicate(timeout=120)
        assert nxt.returncode == 0 and folder.exists()
    finally:
        proc.kill()
        proc.wait()
    # the spinning replay child dies with its parent; the next start sweeps the folder
    _wait_for(lambda: not _alive(child), 10)
    nxt = _cli(["info", str(root)], tmpdir)
    nxt.communicate(timeout=120)
    assert not folder.exists()


@pytest.mark.child
def test_sweep_rules(tmp_path: Path) -> None:
    dead, me = _dead_pid(), os.getpid()
    stale = tmp_path / f"cltui-replay-p{dead}-abc"
    live = tmp_path / f"cltui-check-p{me}-abc"
    other = tmp_path / f"cltui-notes-p{dead}-abc"  # not a name cltui makes
    for d in (stale, live, other):
        d.mkdir()
        (d / "f.bin").write_bytes(b"x")
    link = tmp_path / f"cltui-shrink-p{dead}-lnk"
    link.symlink_to(other)
    locked = tmp_path / f"cltui-export-p{dead}-abc"  # owner in another pid namespace
    locked.mkdir()
    fd = os.open(locked, os.O_RDONLY)
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        assert lifecycle.sweep(tmp_path) == [stale]
    finally:
        os.close(fd)
    assert live.exists() and other.exists() and link.is_symlink() and locked.exists()
    assert lifecycle.sweep(tmp_path) == [locked]  # its lock is free now
    # a folder made by temp_dir is locked while it lives, removed at remove()
    mine = lifecycle.temp_dir("replay", parent=tmp_path)
    assert mine.name.startswith(f"cltui-replay-p{me}-")
    fd = os.open(mine, os.O_RDONLY)
    try:
        with pytest.raises(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)
    lifecycle.remove(mine)
    assert not mine.exists()


def test_exit_causes() -> None:
    assert lifecycle.exit_cause(-signal.SIGSEGV) == ("fault", "SIGSEGV")
    assert lifecycle.exit_cause(-signal.SIGABRT) == ("fault", "SIGABRT")
    assert lifecycle.exit_cause(-signal.SIGKILL) == ("killed", "SIGKILL")
    assert lifecycle.exit_cause(-signal.SIGTERM) == ("killed", "SIGTERM")
    assert lifecycle.exit_cause(1) == ("exit", "exit code 1")
    assert lifecycle.exit_cause(0) == ("", "")


@pytest.mark.child
def test_a_killed_export_s_staging_folder_is_swept_by_the_next(tmp_path: Path) -> None:
    """SIGKILL during ``export`` strands ``.OUT.tmp-p<pid>-*`` beside OUT (and, while
    --force replaced a bundle, ``.OUT.old-p<pid>-*``): the next export of OUT removes the
    first and puts the old bundle back when OUT is missing; a live owner's are kept."""
    from cltui.export.bundle import BundleWriter

    out = tmp_path / "bundle"
    dead = _dead_pid()
    stale = tmp_path / f".bundle.tmp-p{dead}-x1"
    stale.mkdir()
    (stale / "data.bin").write_bytes(b"partial")
    old = tmp_path / f".bundle.old-p{dead}-x2"
    old.mkdir()
    (old / "manifest.json").write_text("{}")
    live = tmp_path / f".bundle.tmp-p{os.getpid()}-x3"
    live.mkdir()
    other = tmp_path / f".other.tmp-p{dead}-x4"  # another target's: not this export's
    other.mkdir()
    with BundleWriter(out) as w:
        assert w.root.name.startswith(f".bundle.tmp-p{os.getpid()}-")
        assert not stale.exists() and not old.exists()
        assert (out / "manifest.json").read_text() == "{}"  # the old bundle, put back
        assert live.exists() and other.exists()
    assert not w.root.exists()  # left without commit: removed


@pytest.mark.child
def test_a_sigkilled_export_is_swept_by_any_next_start(
    pyocl_pocl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An export killed while it writes: its hidden staging folder beside the target is
    noted in cltui's cache folder, so the next cltui start (any command) removes it."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("CLTUI_CACHE_DIR", str(cache))
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)
    out = tmp_path / "dest" / "bundle"
    code = (
        "import sys, time\n"
        "from cltui.export.bundle import BundleWriter\n"
        f"w = BundleWriter({str(out)!r})\n"
        "w.write_bytes('data/x.bin', b'x' * 4096)\n"
        "print(w.root, flush=True)\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        staging = Path(proc.stdout.readline().decode().strip())
        assert staging.name.startswith(f".bundle.tmp-p{proc.pid}-") and staging.is_dir()
        # while its owner lives, a start leaves it alone
        assert staging not in lifecycle.sweep()
    finally:
        proc.kill()
        proc.wait()
    assert staging.exists()  # stranded by the SIGKILL
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    nxt = _cli(["info", str(pyocl_pocl)], tmpdir)
    nxt.communicate(timeout=120)
    assert nxt.returncode == 0
    assert not staging.exists() and not out.exists()
    assert (cache / "staging.txt").read_text() == ""


# --------------------------------------------------------------------------- messages


def test_show_with_a_negative_number_is_one_line(pyocl_pocl: Path) -> None:
    res = CliRunner().invoke(main, ["show", str(pyocl_pocl), "-1"])
    assert res.exit_code == 2
    assert res.output.strip().splitlines() == [
        "cltui: '-1' is not an enqueue number (a whole number from 0, as `cltui ls` lists)"
    ]
    res = CliRunner().invoke(main, ["show", str(pyocl_pocl)])
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1
    assert "Missing argument 'NUMBER'" in res.output
    res = CliRunner().invoke(main, ["show", str(pyocl_pocl), "3", "--json"])
    assert res.exit_code == 0 and json.loads(res.output)["number"] == 3


def test_export_does_not_follow_a_symlinked_source_out(
    pyocl_pocl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.conftest import copy_capture

    cap = copy_capture(pyocl_pocl, tmp_path).rename(tmp_path / "links")
    outside = tmp_path / "outside.cl"
    outside.write_text("__kernel void axpb() {}\n")
    src = next(cap.glob("CLI_0001_*_source.cl"))
    src.unlink()
    src.symlink_to(outside)
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["export", "links", "3", "-o", "out"])
    # the link is not followed (a warning naming it); nothing of the host file is exported
    assert res.exit_code == 0, res.output
    assert f"{src.name}: a link that leads outside the capture" in res.stderr
    for f in (tmp_path / "out").rglob("*"):
        assert not f.is_symlink()
        assert not (f.is_file() and b"__kernel void axpb() {}" in f.read_bytes())
    assert not list(tmp_path.glob(".out.tmp-*"))


@pytest.mark.child
@pytest.mark.parametrize("reader", ["closes-early", "dev-full"])
def test_export_tar_to_a_failing_stdout_is_one_line(
    pyocl_pocl: Path, tmp_path: Path, reader: str
) -> None:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    if reader == "dev-full":
        if not Path("/dev/full").exists():
            pytest.skip("no /dev/full")
        with open("/dev/full", "wb") as full:
            proc = _cli(["export", str(pyocl_pocl), "0-3", "--tar", "-"], tmpdir, stdout=full)
            _out, err = proc.communicate(timeout=120)
        want = "cltui: cannot write the archive to stdout: No space left on device"
    else:
        proc = _cli(["export", str(pyocl_pocl), "0-3", "--tar", "-"], tmpdir)
        assert proc.stdout is not None
        proc.stdout.read(100)
        proc.stdout.close()  # the reader goes away early (as `| head -c 100`)
        err = proc.stderr.read() if proc.stderr is not None else b""
        proc.wait(timeout=120)
        want = "cltui: the archive was not complete: the reader of stdout closed the pipe early"
    assert proc.returncode == 2
    assert err.decode().strip().splitlines() == [want]
    assert _folders(tmpdir, "export") == []


@pytest.mark.child
@pytest.mark.device
def test_uninitialized_checker_is_the_one_switched_off(tmp_path: Path) -> None:
    """The retry switches off only the checker that crashes: the others still report
    (the crashing kernel's uninitialised lane is not reported, its other checks run)."""
    _devices("oclgrind")
    root = write_capture(crash_capture(), tmp_path / "crash")
    rep = run_check(open_capture(root), parse_range("1"))
    assert rep.crashes and rep.crashes[0].unchecked_by == ["uninitialized"]
    assert not [f for f in rep.findings if f.kind == UNINITIALIZED]
    assert rep.status == "incomplete"
