"""The one supervisor of cltui's child processes (replay per device, Oclgrind checks).

A child is ``python -m MODULE JOB_FILE FD``: it reads its job from ``JOB_FILE``, writes JSON
events, one a line, to the pipe ``FD`` and everything else (a driver's messages, Oclgrind's
findings, a crash's stack) to a file the parent reads afterwards.  The parent:

* starts it in its own session (ctrl-c in a terminal reaches cltui, which decides) with cltui's
  sources on ``PYTHONPATH`` and ``CLTUI_PARENT_PID`` set; the child calls :func:`connect`,
  which arms :func:`cltui.process.lifecycle.die_with_parent`, so no child outlives a killed
  cltui (a hung kernel, a running Oclgrind);
* reads events while they come (:meth:`Child.events`); no event for ``timeout`` seconds is a
  hang, a set ``cancel`` event a cancel: either kills the child, and so does leaving the
  ``with`` block or dropping the iterator;
* waits for it and reads how it ended (:meth:`Child.finish`, :func:`lifecycle.exit_cause`).

A child can also be started *ahead* of its job (:func:`start_ahead`, ``JOB_FILE`` ``-``):
while the parent opens the capture and makes the plan, it imports the engine and pyopencl
and lists the devices (one ``devices`` event: the parent chooses from that list, so the
devices are listed once, in the process that needs pyopencl anyway, and the parent
imports no pyopencl), then reads its job file's path from its stdin
(:meth:`Child.give_job`; end of input: it exits, nothing asked).

A child started with ``more`` waits, once its job is done, for one more on its stdin
(:func:`next_job`): a sweep's child confirms the sweep's best points in the process, and with
the context and programs, the sweep already has (:meth:`Child.release`: no more comes).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, NoReturn, TextIO

from cltui.process import lifecycle
from cltui.progress import CancelToken

__all__ = [
    "AHEAD", "Child", "Running", "connect", "exit_now", "next_job", "read_job", "sender",
    "start_ahead", "tail", "use_ahead",
]  # fmt: skip

Event = dict[str, Any]

AHEAD = "-"  # the JOB_FILE argument of a child started ahead of its job

_SRC_ROOT = str(Path(__file__).resolve().parents[2])


class Child:
    """One running child process; use as a context manager (it is killed on the way out).

    ``env`` adds variables to the child's environment (a value of None removes one).
    ``job_path`` None: started ahead of its job (:func:`start_ahead`).  ``more``: its stdin
    stays open for another job (:meth:`give_job`, :func:`next_job`).
    Raises ``OSError`` when the process cannot start.
    """

    def __init__(
        self,
        module: str,
        job_path: Path | None,
        err_path: Path,
        *,
        env: Mapping[str, str | None] | None = None,
        more: bool = False,
    ) -> None:
        self.module = module
        self.err_path = err_path
        self.scratch: Path | None = None  # a folder of its own (its stderr), removed with it
        self.status = ""  # "" | "hang" | "cancelled", once events() has ended
        self.reported = False  # finish(reported=True) left it to end on its own
        environ = dict(os.environ)
        for key, value in (env or {}).items():
            if value is None:
                environ.pop(key, None)
            else:
                environ[key] = value
        environ["PYTHONUNBUFFERED"] = "1"
        environ["CLTUI_PARENT_PID"] = str(os.getpid())
        old = environ.get("PYTHONPATH")
        environ["PYTHONPATH"] = _SRC_ROOT + (os.pathsep + old if old else "")
        read_fd, write_fd = os.pipe()
        try:
            with open(err_path, "wb") as err:
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", module, str(job_path or AHEAD), str(write_fd)],
                    stdin=subprocess.DEVNULL if job_path and not more else subprocess.PIPE,
                    stdout=err,
                    stderr=err,
                    pass_fds=(write_fd,),
                    env=environ,
                    start_new_session=True,
                )
        except OSError:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(
            target=_pump, args=(read_fd, self._lines), name=f"{module}-events", daemon=True
        )
        self._reader.start()

    def __enter__(self) -> Child:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.kill()

    def kill(self) -> None:
        """Kill the child and its process group now if it still runs (from any thread); a
        child that has reported is left to end by itself (its driver's teardown)."""
        if not self.reported:
            lifecycle.kill_group(self.proc)
        self._close_stdin()

    def _close_stdin(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()

    def listed_devices(self, timeout: float) -> list[dict[str, Any]] | None:
        """A child started ahead: the devices it listed (its first event); None when it
        could not list them (no pyopencl, ...), sent nothing within ``timeout`` seconds or
        ended (the caller lists them itself then, with the usual errors, and kills it)."""
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                return None
            if line is None:
                self._lines.put(None)  # the end stays visible to events()
                return None
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("type") == "devices":
                listed = event.get("devices")
                return listed if isinstance(listed, list) and not event.get("error") else None
        return None

    def give_job(self, job_path: Path, more: bool = False) -> bool:
        """A child started ahead, or waiting for one more job: its job (the file's path on
        its stdin, closed then unless ``more``); False when it is gone (the caller starts
        another)."""
        if self.proc.stdin is None or self.proc.poll() is not None:
            return False
        try:
            self.proc.stdin.write(f"{job_path}\n".encode())
            self.proc.stdin.flush()
        except (OSError, ValueError):  # it died; or a kill() from another thread closed it
            self._close_stdin()
            return False
        if not more:
            self._close_stdin()
        return True

    def release(self) -> None:
        """A child waiting for one more job that will not come: its stdin closed, it ends on
        its own (reaped on a thread); its folder removed."""
        self._close_stdin()
        self.finish(reported=True)
        self.forget_files()

    def forget_files(self) -> None:
        """Remove the folder of its own (:attr:`scratch`), its stderr read or not needed."""
        if self.scratch is not None:
            lifecycle.remove(self.scratch)
            self.scratch = None

    def events(self, timeout: float, cancel: CancelToken | None = None) -> Iterator[Event]:
        """The child's events until it closes its pipe (it ended or crashed), it sends
        nothing for ``timeout`` seconds (``status`` "hang") or ``cancel`` is set
        ("cancelled"); the child is killed in the last two cases.  Lines that are no JSON
        object are skipped."""
        last = time.monotonic()
        while True:
            try:
                line = self._lines.get(timeout=0.1)
            except queue.Empty:
                if cancel is not None and cancel.is_set():
                    self.status = "cancelled"
                    break
                if time.monotonic() - last > timeout:
                    self.status = "hang"
                    break
                continue
            if line is None:
                return
            last = time.monotonic()
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("type") != "devices":
                yield event
        self.kill()

    def finish(self, reported: bool = False) -> int | None:
        """Wait for the child to end (killed after 10 s more) and return its return code.
        ``reported``: it sent all the caller needs (its result): a child still ending (its
        driver's teardown: 10-20 ms of PoCL's) is not waited for, it is reaped on a thread
        of its own and None is returned (its exit status tells nothing more)."""
        if reported and self.proc.poll() is None:
            self.reported = True  # not killed on the way out: it ends on its own
            threading.Thread(target=self.proc.wait, name=f"{self.module}-reap",
                             daemon=True).start()  # fmt: skip
            self._reader.join(timeout=1)
            return None
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            rc = self.proc.wait()
        self._reader.join(timeout=1)
        return rc

    def stderr_tail(self, limit: int = 2000) -> str:
        """The last ``limit`` bytes the child wrote outside its event pipe."""
        return tail(self.err_path, limit)


class Running:
    """The child a job runs now (none between children): held while it runs, read and
    killed from other threads (a job's ``cancel``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._child: Child | None = None

    @contextlib.contextmanager
    def holding(self, child: Child) -> Iterator[Child]:
        with self._lock:
            self._child = child
        try:
            yield child
        finally:
            with self._lock:
                self._child = None

    @property
    def child(self) -> Child | None:
        with self._lock:
            return self._child

    def kill(self) -> None:
        if (child := self.child) is not None:
            child.kill()


def start_ahead(module: str, err_path: Path) -> Child | None:
    """``python -m module`` started now, before its job is known (see the module doc);
    None when it cannot start (the job then starts a child the usual way)."""
    try:
        return Child(module, None, err_path)
    except OSError:
        return None


def use_ahead(ahead: Child | None, job_path: Path, more: bool = False) -> Child | None:
    """``ahead`` (a child started ahead or waiting for one more job, or None) given its job
    ``job_path`` (``more``: and then another); None when there is none or it is gone
    (killed: the caller starts one the usual way)."""
    if ahead is not None and not ahead.give_job(job_path, more):
        ahead.kill()
        ahead.forget_files()
        return None
    return ahead


def read_job(
    arg: str,
    send: Callable[[Event], None],
    ahead: Callable[[Callable[[Event], None]], None] | None = None,
) -> Any:
    """In the child: its job (JSON), from the file ``arg``; ``arg`` :data:`AHEAD`: first
    ``ahead(send)`` (what a child does while its parent prepares the job: the replay's
    lists the devices, :mod:`cltui.replay.ahead`), then the file named on stdin; None when
    the parent closed stdin without naming one (it did not need this child)."""
    if arg != AHEAD:
        return json.loads(Path(arg).read_text())
    import gc

    gc.disable()  # imports only, no garbage worth the 10-20 ms of collections they trigger
    if ahead is not None:
        ahead(send)
    gc.freeze()  # what start-up made stays: later collections leave it out
    gc.enable()
    line = sys.stdin.readline().strip()
    return json.loads(Path(line).read_text()) if line else None


def next_job() -> Any:
    """In a child started with ``more``, its job done: the next job (JSON, from the file
    named on stdin); None when the parent closed stdin (:meth:`Child.release`)."""
    line = sys.stdin.readline().strip()
    return json.loads(Path(line).read_text()) if line else None


def connect(fd: int) -> TextIO:
    """In the child: die with cltui (and show a crash's stack on stderr), then the event pipe
    ``fd`` as a line-buffered text stream (one JSON object a line)."""
    lifecycle.die_with_parent()
    return os.fdopen(fd, "w", encoding="utf-8", buffering=1)


def sender(out: TextIO, lock: threading.Lock | None = None) -> Callable[[Event], None]:
    """In the child: ``send(event)``, one JSON line on the event pipe ``out``, flushed (under
    ``lock`` when threads of the child send too)."""

    def send(ev: Event) -> None:
        line = json.dumps(ev) + "\n"
        if lock is None:
            out.write(line)
            out.flush()
            return
        with lock:
            out.write(line)
            out.flush()

    return send


def exit_now(code: int) -> NoReturn:
    """In the child, its result sent and its files closed: end now, past the interpreter's and
    the driver's teardown (0.1-0.2 s on PoCL), which the parent would wait for."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def tail(path: Path, limit: int = 2000) -> str:
    """The last ``limit`` bytes of a file as text ("" when it cannot be read)."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(max(0, size - limit))
            data = f.read()
    except OSError:
        return ""
    return data.decode("utf-8", "replace").strip()


LOG_LIMIT = 4 << 20  # the last bytes of a child's stderr a log keeps
LOGS_KEPT = 50  # the newest logs kept in the logs folder
_LOGS = itertools.count(1)  # two logs of one process in one second have two names


def keep_log(err_path: Path, what: str) -> Path | None:
    """A copy of a child's stderr (the Python stack of a crash, the driver's messages) in
    ``logs/`` of :func:`~cltui.process.lifecycle.cache_dir`, for the one line that names it
    (the stack itself never reaches the screen); the oldest beyond :data:`LOGS_KEPT` go.
    None when it cannot be written."""
    folder = lifecycle.cache_dir() / "logs"
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", what)[:60]
    name = f"{time.strftime('%Y%m%d-%H%M%S')}-p{os.getpid()}-{next(_LOGS)}-{safe}.txt"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(err_path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - LOG_LIMIT))
            data = f.read()
        path = folder / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                     0o600)  # fmt: skip
        with os.fdopen(fd, "wb") as out:
            out.write(data)
    except OSError:
        return None
    _prune_logs(folder)
    return path


def _prune_logs(folder: Path) -> None:
    """The oldest logs beyond :data:`LOGS_KEPT` removed.  Another cltui may prune the same
    folder at once: a log gone meanwhile is passed over (it failed the new log before)."""
    dated = []
    for log in folder.glob("*-p*-*.txt"):
        with contextlib.suppress(OSError):
            dated.append((log.stat().st_mtime, log))
    for _mtime, old in sorted(dated)[:-LOGS_KEPT]:
        with contextlib.suppress(OSError):
            old.unlink()


def _pump(fd: int, out: queue.Queue[str | None]) -> None:
    with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as f:
        for line in f:
            out.put(line)
    out.put(None)
