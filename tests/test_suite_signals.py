"""The suite's own set-up (tests/tiers.py): what its children inherit, and what a killed run
left running."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.tiers import SNAPSHOT_NOTE, _start_time, hear_ctrl_c, sweep_killed_runs

pytestmark = pytest.mark.child  # it starts a process (tests/tiers.py)

_SAYS = ("import signal; h = signal.getsignal(signal.SIGINT); "
         "print('default' if h is signal.default_int_handler else h)")


def _child_hears() -> str:
    return subprocess.run([sys.executable, "-c", _SAYS], capture_output=True, text=True,
                          timeout=60).stdout.strip()


def test_a_child_hears_ctrl_c_even_when_the_suite_was_started_ignoring_it() -> None:
    """The suite started as a script's background job (SIGINT ignored, inherited by every
    child): hear_ctrl_c gives the children their ctrl-c back.  Without it the child has
    the ignore, which the first half shows."""
    before = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        assert _child_hears() == str(int(signal.SIG_IGN))  # what such a suite's children inherit
        hear_ctrl_c()
        assert _child_hears() == "default"
    finally:
        signal.signal(signal.SIGINT, before)


def test_a_killed_run_s_processes_end_when_the_next_run_starts(tmp_path: Path) -> None:
    """Four runs' folders, each with a process whose environment names it (a session below
    a test's sshd: its HOME): the run whose owners are all gone loses it, and the daemon it
    noted; this run's own, one whose owner lives (a suite side by side) and an unclaimed one
    keep theirs, and so does a process that only names the dead run on its command line (a
    user's ``less``) or has the pid of a noted daemon with another start."""
    root = tmp_path / "pytest-of-me"
    runs = {name: root / f"pytest-{k}" for k, name in enumerate(
        ("dead", "beside", "unclaimed", "mine"))}  # fmt: skip
    for run in runs.values():
        (run / "sshd0" / "home").mkdir(parents=True)
    ended = subprocess.Popen(["true"])
    ended.wait()
    (runs["dead"] / f"owner-{ended.pid}-0").touch()
    (runs["beside"] / f"owner-{os.getpid()}-{_start_time(os.getpid())}").touch()
    (runs["mine"] / f"owner-{os.getpid()}-{_start_time(os.getpid())}").touch()
    procs = {name: subprocess.Popen(["sleep", "300"], env={
        **os.environ, "HOME": str(run / "sshd0" / "home")}) for name, run in runs.items()}
    reader = subprocess.Popen(["sh", "-c", "sleep 300", str(runs["dead"] / "log")])
    # a daemon a fixture handed over (tiers.hand_over), noted in its run's folder: an sshd
    # writes its title over its environment
    daemons = {name: subprocess.Popen(["sleep", "301"]) for name in ("dead", "beside")}
    for name, d in daemons.items():
        (runs[name] / f"daemon-{d.pid}-{_start_time(d.pid)}").touch()
    (runs["dead"] / f"daemon-{reader.pid}-0").touch()  # that pid, another process
    try:
        killed = sweep_killed_runs(root, runs["mine"])
        assert procs["dead"].wait(timeout=60) == -signal.SIGKILL
        assert daemons["dead"].wait(timeout=60) == -signal.SIGKILL
        assert sorted(int(k.split()[0]) for k in killed) == sorted(
            [procs["dead"].pid, daemons["dead"].pid]), killed
        assert all(p.poll() is None for n, p in procs.items() if n != "dead")
        assert reader.poll() is None and daemons["beside"].poll() is None
    finally:
        for p in [*procs.values(), *daemons.values(), reader]:
            p.kill()
            p.wait()


def test_a_killed_run_s_snapshot_folder_is_removed_by_the_next_run(tmp_path: Path) -> None:
    """The snapshot plugin's folder in the temp folder, noted in the run's folder: a dead
    run's is removed; a run beside's kept; a note that names a folder outside the temp
    folder, or a link, removes nothing."""
    root = tmp_path / "pytest-of-me"
    runs = {name: root / f"pytest-{k}" for k, name in enumerate(
        ("dead", "beside", "outside", "link", "mine"))}  # fmt: skip
    ended = subprocess.Popen(["true"])
    ended.wait()
    tmp = Path(tempfile.gettempdir())
    folders = {name: Path(tempfile.mkdtemp(dir=tmp)) for name in ("dead", "beside", "target")}
    outside = tmp_path / "tmpkeep"
    outside.mkdir()
    link = tmp / f"tmplink-{os.getpid()}"
    link.symlink_to(folders["target"])
    notes = {"dead": folders["dead"], "beside": folders["beside"], "outside": outside,
             "link": link}  # fmt: skip
    try:
        for name, run in runs.items():
            run.mkdir(parents=True)
            alive = name in ("beside", "mine")
            pid = os.getpid() if alive else ended.pid
            (run / f"owner-{pid}-{_start_time(pid) if alive else 0}").touch()
            if name in notes:
                (run / SNAPSHOT_NOTE).write_text(str(notes[name]))
        sweep_killed_runs(root, runs["mine"])
        assert not folders["dead"].exists()
        assert not (runs["dead"] / SNAPSHOT_NOTE).exists()
        assert folders["beside"].is_dir() and (runs["beside"] / SNAPSHOT_NOTE).exists()
        assert outside.is_dir() and folders["target"].is_dir() and link.is_symlink()
    finally:
        link.unlink()
        for folder in folders.values():
            shutil.rmtree(folder, ignore_errors=True)


def test_this_run_is_claimed_and_named_to_its_children() -> None:
    run = Path(os.environ["CLTUI_TEST_RUN"])
    assert run.is_dir() and list(run.glob(f"owner-{os.getpid()}-*"))
    env = subprocess.run(["env"], capture_output=True, text=True, timeout=60).stdout
    assert f"CLTUI_TEST_RUN={run}/" in env.splitlines()



def test_the_cost_log_counts_a_test_s_children_and_the_summary_adds_it_by_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``CLTUI_TEST_COSTLOG``: a test that runs a child for a CPU second has that second in
    the children's column, not its own; scripts/suite_cost.py adds the log up by file."""
    from scripts.suite_cost import main
    from tests.tiers import pytest_runtest_protocol

    log = tmp_path / "cost.tsv"
    monkeypatch.setenv("CLTUI_TEST_COSTLOG", str(log))
    spin = ("import time; t = time.process_time()\n"
            "while time.process_time() - t < 1.0: pass")

    def run(nodeid: str, body: Callable[[], object]) -> None:
        item = SimpleNamespace(nodeid=nodeid)
        hook = pytest_runtest_protocol(item, None)  # type: ignore[arg-type]
        next(hook)
        body()
        with pytest.raises(StopIteration):
            next(hook)

    run("tests/test_a.py::test_child",
        lambda: subprocess.run([sys.executable, "-c", spin], check=True, timeout=60))
    run("tests/test_b.py::test_alone", lambda: None)
    rows = {r.split("\t")[0]: [float(v) for v in r.split("\t")[1:]]
            for r in log.read_text().splitlines()}
    wall, own, kids = rows["tests/test_a.py::test_child"]
    assert kids >= 0.9 and own < kids and wall >= 0.9 * kids, rows
    assert rows["tests/test_b.py::test_alone"][2] < 0.1, rows
    assert main([str(log), "5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("2 tests: "), lines
    assert lines[2].endswith("tests/test_a.py") and lines[3].endswith("tests/test_b.py"), lines
