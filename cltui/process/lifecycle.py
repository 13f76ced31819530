"""Temp folders that a ctrl-c or a kill cannot strand, and children that die with cltui.

Every scratch folder cltui makes (one of :data:`KINDS`: replay outputs, check and shrink
work folders, latency bundles, fleet control folders, ..., export staging folders beside the
target) is named with the owner's pid (``cltui-replay-p1234-
x8k2``, ``.OUT.tmp-p1234-x8k2``) and locked while in use (``flock`` on the folder itself,
so nothing extra lands inside a bundle). It is removed when its work ends, on ctrl-c and
SIGTERM (the CLI turns both into ``KeyboardInterrupt``: ``finally`` blocks and ``atexit``
run), and, when a SIGKILL stranded it, by :func:`sweep` on the next start: a folder is
swept only when its owner pid is dead *and* its lock can be taken, so another live cltui's
folder (even one in another pid namespace) is never touched.

Children (the replay and check processes) call :func:`die_with_parent` first thing:
``prctl(PR_SET_PDEATHSIG, SIGKILL)`` on Linux, and a thread that polls the parent pid
elsewhere; a child whose parent is already gone exits at once.  A child given up on (a
cancel, a hang, the app quitting) is killed with its whole process group (:func:`kill_group`).

:func:`exit_cause` tells a child's own fault (SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL,
SIGTRAP, SIGSYS: the driver raised it) from a kill from outside (SIGKILL, SIGTERM, ...:
sent by a user, the OOM killer, a supervisor).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Every kind of scratch folder cltui makes (:func:`temp_dir` refuses any other): the kind ->
# what it holds.  Each is ``cltui-<kind>-p<pid>-<random>`` in the temp folder, except those
# of IN_CACHE (in that folder of cltui's cache folder) and export's staging folders (beside
# their target, noted in ``staging.txt``).  The README's "What cltui may leave where" lists
# the same kinds (a test keeps them in step).
KINDS: dict[str, str] = {
    "replay": "a replay's outputs (replay, the app's replay screen)",
    "check": "check's and the findings' work folders",
    "shrink": "shrink's candidate captures",
    "explain": "explain's replays and rebuilds of one enqueue on two devices",
    "export": "export --tar's bundle before it is packed; beside a target: a bundle being written",
    "feasible": "the feasibility probe's plan and outputs",
    "experiment": "an experiment's variant runs",
    "variant": "try's and export's variant sources",
    "sweep": "sweep's variant runs",
    "edit": "the program being edited in $EDITOR (the app's E)",
    "latency": "latency's bundle and its measurements",
    "native": "latency's C++ runner build",
    "fleet": "a fleet run's ssh control sockets",
    "fleet-bundle": "a fleet run's bundle export, or its private copy of a bundle",
    "fleet-lister": "the device lister sent to fleet hosts, being written",
}
IN_CACHE = {"fleet-lister": "fleet-lister"}  # kind -> folder under the cache folder
# cltui-<kind>-p<pid>-<random>  (in the temp folder)
_TMP_RE = re.compile(
    r"^cltui-(?:" + "|".join(sorted(map(re.escape, KINDS), key=len, reverse=True))
    + r")-p(\d+)-[A-Za-z0-9_]+$")
# .<target name>.tmp-p<pid>-<random> / .<target name>.old-p<pid>-<random> (beside a bundle)
_STAGE_RE = re.compile(r"^\.(.+)\.(tmp|old)-p(\d+)-[A-Za-z0-9_]+$", re.S)

# signals a process raises itself on a fault (a driver's segfault, abort(), a bad division)
FAULT_SIGNALS = frozenset(
    {signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE, signal.SIGILL,
     signal.SIGTRAP, signal.SIGSYS}
)

_lock = threading.Lock()
_live: dict[Path, int] = {}  # folder -> fd holding its flock


def _flock(fd: int, exclusive_nb: bool = True) -> bool:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: the pid alone decides
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _register(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    _flock(fd)
    with _lock:
        _live[path] = fd


def temp_dir(kind: str, *, parent: str | Path | None = None, prefix: str | None = None) -> Path:
    """A new, locked scratch folder ``<prefix>p<pid>-<random>`` (default prefix
    ``cltui-<kind>-`` in the temp folder); removed by :func:`remove` or at exit.  ``kind``
    is one of :data:`KINDS` (the sweep knows no other)."""
    if kind not in KINDS:
        raise ValueError(f"unknown scratch folder kind {kind!r} (add it to lifecycle.KINDS)")
    pre = prefix if prefix is not None else f"cltui-{kind}-"
    path = Path(tempfile.mkdtemp(prefix=f"{pre}p{os.getpid()}-", dir=parent))
    _register(path)
    return path


def release(path: str | Path) -> None:
    """Stop owning ``path`` (kept: e.g. a bundle moved to its target)."""
    with _lock:
        fd = _live.pop(Path(path), None)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def remove(path: str | Path) -> None:
    """Remove a folder made by :func:`temp_dir` (or any folder) and forget it."""
    release(path)
    shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def scratch(kind: str) -> Iterator[Path]:
    """``with scratch("check") as folder:`` a temp folder removed when the block ends."""
    path = temp_dir(kind)
    try:
        yield path
    finally:
        remove(path)


def _remove_all() -> None:
    with _lock:
        paths = list(_live)
    for p in paths:
        remove(p)


atexit.register(_remove_all)


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    except OSError:
        return True
    return True


def _stale(path: Path, pid: int) -> bool:
    """Owner dead and the folder's lock free (the lock is held while its owner lives)."""
    if pid_alive(pid):
        return False
    try:
        st = path.lstat()
    except OSError:
        return False
    import stat

    if not stat.S_ISDIR(st.st_mode) or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
        return False  # a link, a file, or another user's: never ours to remove
    try:
        flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(path, flags)
    except OSError:
        return False
    try:
        return _flock(fd)
    finally:
        os.close(fd)


def cache_folder() -> Path:
    """cltui's cache folder: ``$XDG_CACHE_HOME/cltui``, else ``~/.cache/cltui``."""
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "cltui"


def cache_dir() -> Path:
    """cltui's own files that outlive a run (logs, the staging list): ``$CLTUI_CACHE_DIR``,
    else :func:`cache_folder`."""
    base = os.environ.get("CLTUI_CACHE_DIR")
    return Path(base) if base else cache_folder()


def _registry() -> Path:
    """Where export staging folders are noted (they live beside their targets, anywhere):
    ``staging.txt`` in :func:`cache_dir`."""
    return cache_dir() / "staging.txt"


@contextlib.contextmanager
def _registry_locked() -> Iterator[int | None]:
    path = _registry()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError:
        yield None
        return
    try:
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        except (ImportError, OSError):
            pass
        yield fd
    finally:
        os.close(fd)


def note_staging(target: str | Path, staging: str | Path) -> None:
    """Remember an export staging folder (and its target) so that the next cltui start
    finds it wherever it is, should a SIGKILL strand it (see :func:`sweep`)."""
    line = f"{Path(target).absolute()}\t{Path(staging).absolute()}\n"
    if "\n" in line[:-1]:
        return  # a name with a line break: only the export of that target sweeps it
    with _registry_locked() as fd:
        if fd is not None:
            with contextlib.suppress(OSError):
                os.lseek(fd, 0, os.SEEK_END)
                os.write(fd, line.encode("utf-8", "surrogateescape"))


def _sweep_noted() -> list[Path]:
    """The noted staging folders: stale ones handled as :func:`sweep_staging` does, gone
    ones forgotten, the rest kept in the list. A list over 1 MB is dropped (not ours)."""
    out: list[Path] = []
    with _registry_locked() as fd:
        if fd is None:
            return out
        try:
            if os.fstat(fd).st_size > (1 << 20):
                os.ftruncate(fd, 0)
                return out
            data = b""
            while chunk := os.read(fd, 1 << 16):
                data += chunk
        except OSError:
            return out
        keep: list[bytes] = []
        for raw in data.splitlines():
            target_text, _, staging_text = raw.decode("utf-8", "surrogateescape").partition("\t")
            staging = Path(staging_text)
            if not staging_text or not os.path.lexists(staging):
                continue
            if staging in _live:
                keep.append(raw)
                continue
            m = _STAGE_RE.match(staging.name)
            if m is None:
                continue
            if not _stale(staging, int(m.group(3))):
                keep.append(raw)
                continue
            target = Path(target_text)
            if m.group(2) == "old" and not os.path.lexists(target):
                with contextlib.suppress(OSError):
                    os.rename(staging, target)
            if os.path.lexists(staging):
                shutil.rmtree(staging, ignore_errors=True)
            out.append(staging)
        with contextlib.suppress(OSError):
            os.lseek(fd, 0, os.SEEK_SET)
            os.ftruncate(fd, 0)
            os.write(fd, b"".join(k + b"\n" for k in keep))
    return out


def forget_staging(staging: str | Path) -> None:
    """Drop a staging folder from the list (its export finished or cleaned up)."""
    want = str(Path(staging).absolute()).encode("utf-8", "surrogateescape")
    with _registry_locked() as fd:
        if fd is None:
            return
        with contextlib.suppress(OSError):
            data = b""
            while chunk := os.read(fd, 1 << 16):
                data += chunk
            keep = [ln for ln in data.splitlines() if ln.partition(b"\t")[2] != want]
            if len(keep) != len(data.splitlines()):
                os.lseek(fd, 0, os.SEEK_SET)
                os.ftruncate(fd, 0)
                os.write(fd, b"".join(k + b"\n" for k in keep))


def sweep(folder: str | Path | None = None) -> list[Path]:
    """Remove the scratch folders in ``folder`` (default: the temp folder) that a killed
    cltui left: ``cltui-<kind>-p<pid>-*`` (every kind of :data:`KINDS`) whose owner is dead;
    and, without ``folder``, those of :data:`IN_CACHE` and the export staging folders
    :func:`note_staging` listed. Returns what was removed."""
    if folder is not None:
        return _sweep_in(Path(folder))
    out = _sweep_noted() + _sweep_in(Path(tempfile.gettempdir()))
    for sub in sorted(set(IN_CACHE.values())):
        out += _sweep_in(cache_folder() / sub)
    return out


def _sweep_in(base: Path) -> list[Path]:
    out: list[Path] = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return out
    for ent in entries:
        m = _TMP_RE.match(ent.name)
        if m is None:
            continue
        path = base / ent.name
        if _stale(path, int(m.group(1))):
            shutil.rmtree(path, ignore_errors=True)
            out.append(path)
    return out


def sweep_staging(target: str | Path) -> list[Path]:
    """Beside an export target: remove ``.NAME.tmp-p<pid>-*`` folders a killed export left;
    a ``.NAME.old-p<pid>-*`` (the previous bundle, moved aside while ``--force`` replaced it)
    is moved back when NAME is missing, else removed."""
    target = Path(target).absolute()
    stem = target.name[:40]
    out: list[Path] = []
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return out
    for ent in entries:
        m = _STAGE_RE.match(ent.name)
        if m is None or m.group(1) != stem:
            continue
        path = target.parent / ent.name
        if not _stale(path, int(m.group(3))):
            continue
        if m.group(2) == "old" and not os.path.lexists(target):
            with contextlib.suppress(OSError):
                os.rename(path, target)
                out.append(path)
                continue
        shutil.rmtree(path, ignore_errors=True)
        out.append(path)
    return out


# --------------------------------------------------------------------------- children


def die_with_parent(parent: int | None = None) -> None:
    """In a child process: be killed when the parent dies (see the module doc). Also turns
    on :mod:`faulthandler`: a driver's segfault leaves the Python stack on stderr (which
    the parent reports), and the process still dies of the same signal."""
    import faulthandler

    with contextlib.suppress(OSError, RuntimeError, ValueError):
        faulthandler.enable()
    if parent is None:
        parent = int(os.environ.get("CLTUI_PARENT_PID", "0") or 0) or os.getppid()
    armed = False
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(1, int(signal.SIGKILL), 0, 0, 0) == 0  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(3)
    if armed:
        return

    def watch() -> None:  # pragma: no cover - only where prctl is missing
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=watch, name="cltui-parent-watch", daemon=True).start()


def kill_group(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL a child started in its own session (``start_new_session``) and everything it
    started in its process group (a build's make and compilers, a driver's helpers): none of
    them keeps running, or keeps a terminal open, once cltui gave up on the child.  Nothing
    happens once the child has been waited for (its process group id may be reused then)."""
    if proc.returncode is not None:  # reaped: its pid, so its group id, may be another's now
        return
    kill_pid_group(proc.pid)


def kill_pid_group(pid: int) -> None:
    """SIGKILL the process group ``pid`` leads (a child started in its own session, or one
    that made itself a group leader) and ``pid`` itself (in case it had not made its group
    yet).  Only for a child not yet waited for (see :func:`kill_group`)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


def exit_cause(rc: int | None) -> tuple[str, str]:
    """A child's return code -> (cause, text): cause ``fault`` (a signal it raised
    itself), ``killed`` (a signal from outside), ``exit`` (an exit code), ``""`` (0)."""
    if rc is None or rc == 0:
        return "", ""
    if rc < 0:
        try:
            sig = signal.Signals(-rc)
            name = sig.name
        except ValueError:
            return "killed", f"signal {-rc}"
        return ("fault" if sig in FAULT_SIGNALS else "killed"), name
    return "exit", f"exit code {rc}"
