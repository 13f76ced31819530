"""The test tiers and the process guard (a pytest plugin, loaded by conftest.py).

- **Tiers.** ``./dev test --fast`` runs the fast tier: every test not marked ``child`` (it
  starts a process: a replay child, the app's reader, Oclgrind, a CLI run in a subprocess),
  ``cmake`` (it uses the C++ runner), ``sshd``, ``browser``, ``device`` (it needs a real
  OpenCL device) or ``slow``.  The full tier (CI, ``./dev test``) runs everything.  A test
  that uses a fixture which starts processes for a whole scope (:data:`FIXTURE_MARKS`) gets
  that fixture's mark.  A test that takes CPU seconds on a whole real capture is ``slow``.
- **The guard.** Each process a test starts (``fork``, ``subprocess``, ``multiprocessing``) is
  recorded.  In the fast tier a test that starts one fails: it lacks its ``child`` mark.
  Every process started while a test runs must be gone once its teardown ends (a grace of a
  few seconds for children that are being reaped): one that is left is killed and the
  test fails, naming it.
- **Groups.** A test that uses a module-scoped fixture (not an autouse one) gets the
  ``xdist_group`` of its module: with ``--dist loadgroup`` (``./dev test``) one worker runs
  them and sets the fixture up once; every other test goes to whichever worker is free.
- **ctrl-c.** A suite started with SIGINT ignored handles it again (:func:`hear_ctrl_c`): the
  ignore would reach every child, and the tests that interrupt one would hang.
- **Killed runs.** A run that is killed never tears its fixtures down: its sshd hosts, munged
  and Slurm daemons and their sessions go on.  Each pytest process marks its run's folder as
  its own (:func:`claim_run`); a run's start ends what a run whose every owner is gone left
  running (:func:`sweep_killed_runs`), a run side by side with it untouched, and removes
  the snapshot plugin's folder in ``/tmp`` that it noted (:func:`note_snapshot_folder`).
- ``CLTUI_TEST_SPAWNLOG=FILE`` appends ``nodeid<TAB>processes`` for every test that started
  one (to find the tests a mark is missing on).
- ``CLTUI_TEST_COSTLOG=FILE`` appends ``nodeid<TAB>wall<TAB>cpu<TAB>children's cpu`` (seconds,
  setup to teardown) for every test: the worker's own CPU time (its threads included) and
  that of the children it reaped meanwhile (replay children, CLI runs, CMake; not what sshd
  or Slurm daemons run for it; a module fixture's daemons count for the test whose teardown
  ends them).  ``scripts/suite_cost.py FILE`` adds it up by file.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

FULL_ONLY = ("child", "cmake", "sshd", "browser", "device", "slow")
MARKS = {
    "child": "starts a process (a replay or check child, the app's reader, a CLI subprocess)",
    "cmake": "builds the C++ runner with CMake",
    "sshd": "starts sshd daemons (remote hosts)",
    "browser": "drives chromium through Playwright",
}
GRACE_S = 5.0  # a hang detector's margin, not a timing claim

_spawned: list[tuple[int, str]] = []  # (pid, how) since the current test's setup began
_recording = False
_claimed: Path | None = None  # this run's folder (claim_run)


def fast_tier() -> bool:
    return os.environ.get("CLTUI_TEST_TIER") == "fast"


# helpers multiprocessing starts once and keeps for the interpreter's life (not a test's)
_INTERPRETER_HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")


def _note(pid: int, how: str) -> None:
    if _recording and pid > 0 and not any(h in how for h in _INTERPRETER_HELPERS):
        _spawned.append((pid, how))


def hand_over(pid: int) -> None:
    """A process a test started for a fixture of a wider scope (a test module's sshd hosts,
    which the ``ssh_hosts`` fixture stops at the module's end): not the test's to end.  It
    is noted in the run's folder (``daemon-PID-START``): a run killed before the fixture
    stopped it leaves it to the next run's sweep (:func:`sweep_killed_runs`; an sshd writes
    its title over its environment, where ``CLTUI_TEST_RUN`` would be)."""
    _spawned[:] = [(p, how) for p, how in _spawned if p != pid]
    if _claimed is not None:
        with contextlib.suppress(OSError):
            (_claimed / f"daemon-{pid}-{_start_time(pid)}").touch()


def _wrap(owner: Any, name: str, how: str) -> None:
    real = getattr(owner, name, None)
    if real is None or getattr(real, "_cltui_guard", False):
        return

    def guarded(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        if os.getpid() == _guard_pid:  # the parent's side (a forked child records nothing)
            pid = int(out)
            what = how
            if args and isinstance(args[0], (list, tuple)) and how != "posix_spawn":
                what += ": " + " ".join(os.fsdecode(a) for a in args[0][:4])[:200]
            elif args and how == "posix_spawn":
                what += ": " + os.fsdecode(args[0])
            _note(pid, what)
        return out

    guarded._cltui_guard = True  # type: ignore[attr-defined]
    setattr(owner, name, guarded)


_guard_pid = os.getpid()


def install() -> None:
    """Record the processes this pytest process starts (in every worker)."""
    global _guard_pid
    import _posixsubprocess  # subprocess, and multiprocessing's spawn and forkserver

    _guard_pid = os.getpid()
    _wrap(os, "fork", "fork")
    _wrap(os, "posix_spawn", "posix_spawn")
    _wrap(os, "posix_spawnp", "posix_spawn")
    _wrap(_posixsubprocess, "fork_exec", "exec")
    import subprocess

    if hasattr(subprocess, "_fork_exec"):  # bound at import time (3.11+)
        _wrap(subprocess, "_fork_exec", "subprocess")


def _alive(pid: int) -> bool:
    try:
        done, _status = os.waitpid(pid, os.WNOHANG)  # our own child: reap it if it ended
        if done == pid:
            return False
    except ChildProcessError:
        pass  # not our child (a grandchild's pid cannot be here) or reaped already
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError), open(f"/proc/{pid}/stat", "rb") as f:
        if f.read().rsplit(b")", 1)[-1].split()[0] == b"Z":  # a zombie: gone for us
            return False
    return True


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read(300).replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def pytest_configure(config: pytest.Config) -> None:
    for name, what in MARKS.items():
        config.addinivalue_line("markers", f"{name}: {what}")
    install()
    hear_ctrl_c()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    log = os.environ.get("CLTUI_TEST_COSTLOG")
    if not log:
        yield
        return
    wall, cpu, kids = time.monotonic(), time.process_time(), _children_cpu()
    yield
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"{item.nodeid}\t{time.monotonic() - wall:.3f}\t"
                f"{time.process_time() - cpu:.3f}\t{_children_cpu() - kids:.3f}\n")


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def hear_ctrl_c() -> None:
    """SIGINT handled again in this process, so that the children the tests start hear it:
    a suite started with SIGINT ignored (``cmd &`` in a script or a subshell, without job
    control) hands the ignore down to every child, and the tests that press ctrl-c on a
    fleet saw it not end (its SigIgn in /proc had SIGINT: two side-by-side rounds failed 7
    tests each so).  A handler (not SIG_DFL, where Python raises no KeyboardInterrupt) is
    reset to the default in each child at exec, and Python installs its own there."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


# fixtures that start processes for every test of a scope (so no test records them): a test
# that uses one is marked for it
FIXTURE_MARKS = {
    "cpp_replay": "cmake",  # the C++ runner, built once per session
    "ssh_hosts": "sshd",  # real sshd daemons
    "browser": "browser",  # chromium through Playwright
    "server": "child", "served": "child",  # a cltui serve process
    "heat2d": "slow",  # the 204,011-enqueue capture, unpacked with zstd once per session
}  # fmt: skip


def _module_fixture_user(item: pytest.Item) -> bool:
    """True when the test uses a module-scoped fixture that is not autouse (a farm of sshd
    hosts, a Slurm cluster, a server, an exported bundle, a diverge or check report)."""
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info else ()):
        if defs and defs[-1].scope == "module" and not getattr(defs[-1], "_autouse", False):
            return True
    return False


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's, which reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for fixture in set(getattr(item, "fixturenames", ())) & FIXTURE_MARKS.keys():
            item.add_marker(FIXTURE_MARKS[fixture])
        if _module_fixture_user(item):  # one worker sets the fixture up (--dist loadgroup)
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
    if not fast_tier():
        return
    keep, drop = [], []
    for item in items:
        (drop if any(item.get_closest_marker(m) for m in FULL_ONLY) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(autouse=True)
def _process_guard(request: pytest.FixtureRequest) -> Iterator[None]:
    """Record what the test starts (session fixtures started before it are not its own);
    after its teardown: the fast tier's rule, then nothing left running."""
    global _recording
    _spawned.clear()
    _recording = True
    try:
        yield
    finally:
        _recording = False
    started = list(_spawned)
    _spawned.clear()
    log = os.environ.get("CLTUI_TEST_SPAWNLOG")
    if log and started:
        with open(log, "a", encoding="utf-8") as f:
            first = " ".join(started[0][1].split())  # one line (a -c script has several)
            f.write(f"{request.node.nodeid}\t{len(started)}\t{first}\n")
    problems: list[str] = []
    if fast_tier() and started:
        problems.append(
            f"started {len(started)} process(es) (the first: {started[0][1]}) in the fast "
            "tier: mark the test @pytest.mark.child (or cmake, sshd, browser)"
        )
    deadline = time.monotonic() + GRACE_S
    left = [(p, how) for p, how in started if _alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [(p, how) for p, how in left if _alive(p)]
    for pid, how in left:
        problems.append(f"left process {pid} running ({how}; now {_cmdline(pid)!r}): killed it")
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.waitpid(pid, 0)
    if problems:
        pytest.fail("; ".join(problems), pytrace=False)


def _start_time(pid: int) -> str | None:
    """When a process started (clock ticks since boot, /proc/PID/stat), None when it is gone
    (a pid used again belongs to a process with another start)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[19].decode()
    except (OSError, IndexError):
        return None


def claim_run(run: Path) -> None:
    """Mark ``run`` (a run's base folder) as this pytest process's (``owner-PID-START``), and
    name it in ``CLTUI_TEST_RUN`` for every process the tests start."""
    global _claimed
    pid = os.getpid()
    (run / f"owner-{pid}-{_start_time(pid)}").touch()
    os.environ["CLTUI_TEST_RUN"] = f"{run}/"
    _claimed = run


SNAPSHOT_NOTE = "snapshot-folder"  # in a run's folder: the snapshot plugin's folder in /tmp


def note_snapshot_folder(run: Path) -> None:
    """Note in ``run`` the folder pytest-textual-snapshot made for this run's snapshots
    (``mkdtemp`` in the temp folder, named in ``TEXTUAL_SNAPSHOT_TEMPDIR``; the plugin removes
    it at the run's end): a run killed before that leaves it to the next run's sweep."""
    folder = os.environ.get("TEXTUAL_SNAPSHOT_TEMPDIR")
    if folder and _claimed is not None:
        with contextlib.suppress(OSError):
            (run / SNAPSHOT_NOTE).write_text(folder)


def _remove_snapshot_folder(run: Path) -> None:
    """A dead run's snapshot folder, removed: only a ``tmp*`` folder right in the temp
    folder (what ``mkdtemp`` makes), not a link, whatever the note says."""
    import tempfile

    try:
        folder = Path((run / SNAPSHOT_NOTE).read_text()[:4096])
    except (OSError, UnicodeDecodeError):
        return
    tmp = Path(tempfile.gettempdir())
    if (folder.parent == tmp and folder.name.startswith("tmp") and not folder.is_symlink()
            and folder.is_dir()):  # fmt: skip
        shutil.rmtree(folder, ignore_errors=True)
    with contextlib.suppress(OSError):
        (run / SNAPSHOT_NOTE).unlink()


def _started_by(pid: int, folders: list[bytes]) -> bool:
    """Whether a process's environment names one of ``folders``: ``CLTUI_TEST_RUN``, or a
    session below a test's sshd (its HOME is the host's).  Not its command line or working
    folder: a user's ``less`` of a test's log is not the test's."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read(1 << 20)
    except OSError:
        return False
    return any(f in env for f in folders)


def _noted(run: Path, what: str) -> list[tuple[int, str]]:
    """The processes noted in ``run`` as ``WHAT-PID-START``: (pid, start)."""
    found = (re.fullmatch(rf"{what}-(\d+)-(\w+)", f.name) for f in run.glob(f"{what}-*"))
    return [(int(m[1]), m[2]) for m in found if m]


def sweep_killed_runs(root: Path, mine: Path) -> list[str]:
    """Kill what the runs under ``root`` (pytest's ``pytest-of-USER``) left running once every
    process that claimed them is gone; ``mine`` and unclaimed runs are left alone.  What
    was killed (pid and command line)."""
    dead: list[bytes] = []
    daemons: set[int] = set()
    for run in root.glob("pytest-*"):
        if run.is_symlink() or run == mine or not run.is_dir():
            continue
        owners = _noted(run, "owner")
        if owners and all(_start_time(pid) != start for pid, start in owners):
            dead.append(os.fsencode(run) + b"/")
            daemons |= {pid for pid, start in _noted(run, "daemon") if _start_time(pid) == start}
    killed: list[str] = []
    for run in dead:
        _remove_snapshot_folder(Path(os.fsdecode(run)))
    if not dead:
        return killed
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        if int(entry) not in daemons and not _started_by(int(entry), dead):
            continue
        what = _cmdline(int(entry))
        with contextlib.suppress(OSError):
            os.kill(int(entry), signal.SIGKILL)
            killed.append(f"{entry} {what}")
    return killed


@pytest.fixture(scope="session", autouse=True)
def _killed_runs_swept(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> None:
    """This run claimed; what killed runs left running, ended (see the module doc)."""
    run = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        run = run.parent  # the workers' folders are in the run's
    claim_run(run)
    note_snapshot_folder(run)
    sweep_killed_runs(run.parent, run)
