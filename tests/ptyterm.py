"""A program in a real pseudo-terminal, its screen read back through pyte (a VT100 emulator).

Reusable for any argv (``python -m cltui DIR``, ``ssh -t host cltui DIR``)::

    with PtyTerm([sys.executable, "-m", "cltui", str(capture)], size=(80, 24)) as term:
        term.wait_for("clEnqueue")
        term.send(b"/axpb\\r")  # one write: the program reads it as one burst
        term.wait_for(lambda screen: "axpb" in screen)
        print(term.text())
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType

import pyte

__all__ = ["PtyTerm", "ScreenTimeout"]


class ScreenTimeout(AssertionError):
    """The screen did not show what was waited for; the message holds the last screen."""


class PtyTerm:
    """``argv`` running in a pty of ``size`` (columns, rows), TERM=xterm-256color."""

    def __init__(
        self,
        argv: Sequence[str],
        size: tuple[int, int] = (80, 24),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> None:
        cols, rows = size
        self.size = size
        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.raw = bytearray()  # everything the program wrote
        master, slave = os.openpty()
        self.tty = os.ttyname(slave)  # the terminal's device (``/dev/pts/N``)
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        full_env = dict(os.environ if env is None else env)
        full_env.update(TERM="xterm-256color", COLUMNS=str(cols), LINES=str(rows))
        full_env.pop("TEXTUAL", None)
        self.proc = subprocess.Popen(
            list(argv), stdin=slave, stdout=slave, stderr=slave, env=full_env, cwd=cwd,
            start_new_session=True, close_fds=True,
        )
        os.close(slave)
        self.master = master

    # ------------------------------------------------------------------ input
    def send(self, data: bytes) -> None:
        """Write ``data`` in one write (a burst, as a paste or a batching ssh link sends)."""
        view = memoryview(data)
        while view:
            n = os.write(self.master, view)
            view = view[n:]

    # ----------------------------------------------------------------- output
    def pump(self, timeout: float = 0.05) -> bool:
        """Feed what the program wrote within ``timeout`` to the emulator (False: it ended)."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the program closed the terminal
            return False
        if not data:
            return False
        self.raw += data
        self.stream.feed(data)
        return True

    def lines(self) -> list[str]:
        return list(self.screen.display)

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.lines())

    def wait_for(
        self, want: str | Callable[[str], bool], timeout: float = 30.0, *, quiet: float = 0.0
    ) -> str:
        """Read until the screen contains ``want`` (or ``want(screen)`` is true), then until
        the output has been quiet for ``quiet`` seconds; the screen text."""
        check = (lambda s: want in s) if isinstance(want, str) else want
        deadline = time.monotonic() + timeout
        while True:
            alive = self.pump()
            if check(self.text()):
                break
            if not alive or time.monotonic() > deadline:
                state = "ended" if not alive else "timed out"
                raise ScreenTimeout(f"screen {state} waiting for {want!r}:\n{self.text()}")
        self.settle(quiet)
        return self.text()

    def settle(self, quiet: float = 0.3, limit: float = 10.0) -> str:
        """Read until nothing came for ``quiet`` seconds (at most ``limit``)."""
        end = time.monotonic() + limit
        last = len(self.raw)
        calm_since = time.monotonic()
        while time.monotonic() < end:
            if not self.pump(0.02):
                break
            if len(self.raw) != last:
                last, calm_since = len(self.raw), time.monotonic()
            elif time.monotonic() - calm_since >= quiet:
                break
        return self.text()

    def wait_exit(self, timeout: float) -> int:
        """Wait for the program to end by itself, reading (and showing) what it still writes
        meanwhile: a terminal that is not read fills up, and a program blocked writing to it
        (an ``ssh`` client) never gets to read its input, ``q`` included.  Its exit status;
        :class:`ScreenTimeout` when it still runs after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None:
            if time.monotonic() > deadline:
                raise ScreenTimeout(f"still running {timeout} s later; screen:\n{self.text()}")
            self.pump(0.05)
        self.settle(0.1, limit=5)  # what it wrote last, still in the terminal
        return self.proc.returncode

    def holders(self) -> list[int]:
        """The processes (pids) that still have this terminal open, the program included."""
        found = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            with contextlib.suppress(OSError):
                for fd in os.listdir(f"/proc/{pid}/fd"):
                    with contextlib.suppress(OSError):
                        if os.readlink(f"/proc/{pid}/fd/{fd}") == self.tty:
                            found.append(int(pid))
                            break
        return found

    # -------------------------------------------------------------- lifetime
    def close(self, timeout: float = 10.0) -> int | None:
        """Stop the program (SIGTERM to its session, then SIGKILL) and free the pty."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            end = time.monotonic() + timeout
            while self.proc.poll() is None and time.monotonic() < end:
                self.pump(0.05)
            if self.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
        code = self.proc.wait()
        with contextlib.suppress(OSError):
            os.close(self.master)
        return code

    def __enter__(self) -> PtyTerm:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
