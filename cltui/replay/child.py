"""The one supervisor of cltui's child processes (replay per device, Oclgrind checks).

A child is ``python -m MODULE JOB_FILE FD``: it reads its job from ``JOB_FILE``, writes JSON
events, one a line, to the pipe ``FD`` and everything else (a driver's messages, Oclgrind's
findings, a crash's stack) to a file the parent reads afterwards.  The parent:

* starts it in its own session (ctrl-c in a terminal reaches cltui, which decides) with cltui's
  sources on ``PYTHONPATH`` and ``CLTUI_PARENT_PID`` set; the child calls :func:`connect`,
  which arms :func:`cltui.replay.lifecycle.die_with_parent`, so no child outlives a killed
  cltui (a hung kernel, a running Oclgrind);
* reads events while they come (:meth:`Child.events`); no event for ``timeout`` seconds is a
  hang, a set ``cancel`` event a cancel: either kills the child, and so does leaving the
  ``with`` block or dropping the iterator;
* waits for it and reads how it ended (:meth:`Child.finish`, :func:`lifecycle.exit_cause`).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from cltui.progress import CancelToken
from cltui.replay import lifecycle

__all__ = ["Child", "connect", "tail"]

Event = dict[str, Any]

_SRC_ROOT = str(Path(__file__).resolve().parents[2])


class Child:
    """One running child process; use as a context manager (it is killed on the way out).

    ``env`` adds variables to the child's environment (a value of None removes one).
    Raises ``OSError`` when the process cannot start.
    """

    def __init__(
        self,
        module: str,
        job_path: Path,
        err_path: Path,
        *,
        env: Mapping[str, str | None] | None = None,
    ) -> None:
        self.module = module
        self.err_path = err_path
        self.status = ""  # "" | "hang" | "cancelled", once events() has ended
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
                    [sys.executable, "-m", module, str(job_path), str(write_fd)],
                    stdin=subprocess.DEVNULL,
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
        """Kill the child and its process group now if it still runs (from any thread)."""
        lifecycle.kill_group(self.proc)

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
            if isinstance(event, dict):
                yield event
        self.kill()

    def finish(self) -> int:
        """Wait for the child to end (killed after 10 s more) and return its return code."""
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


def connect(fd: int) -> TextIO:
    """In the child: die with cltui (and show a crash's stack on stderr), then the event pipe
    ``fd`` as a line-buffered text stream (one JSON object a line)."""
    lifecycle.die_with_parent()
    return os.fdopen(fd, "w", encoding="utf-8", buffering=1)


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


def _pump(fd: int, out: queue.Queue[str | None]) -> None:
    with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as f:
        for line in f:
            out.put(line)
    out.put(None)
