"""Running commands on a host through the user's own transport: OpenSSH by default.

``ssh`` runs as a subprocess, so ``~/.ssh/config``, ProxyJump, agents, certificates and
known_hosts work as they do for the user; cltui adds ``BatchMode=yes`` (it never asks for a
password) and one multiplexed connection per host (``ControlMaster=auto``,
``ControlPersist``, ``ControlPath`` in a private 0700 folder), opened by :meth:`connect` and
closed by :meth:`close`.  A site may give another command template (``srun -w {host}``,
``docker exec {host}``, ``kubectl exec {host} --``, or any local command): the remote
command is then appended as ``sh -c SCRIPT`` (or put where the template says ``{cmd}``).
Placeholders are filled by :func:`cltui.fleet.names.fill` (quoted wherever they land; ssh
gets ``--`` before the destination).

No TUI, no device: a :class:`~cltui.progress.CancelToken` stops a command (its process group
is killed), and a command that shows no progress (no output line) within ``timeout`` seconds
is killed and reported as timed out.  Every byte written to the transport is counted.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import shlex
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from cltui.fleet.inventory import Host
from cltui.fleet.names import fill
from cltui.progress import CancelToken

__all__ = ["CommandResult", "Transport", "classify_failure", "stop_masters"]

PERSIST_S = 120
ALIVE_S = 5
CLEANUP_S = 5.0  # seconds the clean-up may wait on a link (a dead one: not at all)
CHUNK = 1 << 16


@dataclass
class CommandResult:
    """How a command ended: exit status (``-N``: killed by signal N locally), its output."""

    rc: int
    out: bytes
    err: str
    timed_out: bool = False
    cancelled: bool = False

    def last_err(self) -> str:
        lines = [ln.strip() for ln in self.err.splitlines() if ln.strip()]
        return lines[-1] if lines else ""


_UNREACHABLE = (
    "connection refused", "no route to host", "could not resolve", "connection timed out",
    "network is unreachable", "name or service not known", "connection closed by",
    "connection reset", "operation timed out", "timed out during banner",
)  # fmt: skip
_AUTH = ("permission denied", "too many authentication failures", "no more authentication")
_HOSTKEY = ("host key verification failed", "remote host identification has changed")


def classify_failure(text: str) -> tuple[str, str]:
    """An ssh error text as ``(status, reason)``: unreachable, authentication or transport."""
    low = text.lower()
    line = " ".join(text.strip().splitlines()[-1:]) if text.strip() else "no output"
    if any(w in low for w in _HOSTKEY):
        return "authentication", f"host key not trusted: {line}"
    if any(w in low for w in _AUTH):
        return "authentication", line
    if any(w in low for w in _UNREACHABLE):
        return "unreachable", line
    return "transport", line


def _tag(name: str) -> str:
    """A short, path-safe tag of an inventory host's name (its ControlPath's prefix)."""
    return hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:12]


class Transport:
    """One host's way in: ``run`` a shell script there, bytes in, bytes and lines out."""

    def __init__(self, host: Host, control_dir: Path, connect_timeout: float = 20.0) -> None:
        self.host = host
        self.control_dir = control_dir
        self.connect_timeout = connect_timeout
        self.bytes_sent = 0
        self.bytes_received = 0
        self.dead = False  # the link stopped answering: nothing more waits on it
        self.remove_at_close: list[str] = []  # the host's scratch folders of this run (shell
        # words: a work folder under ~ is "$HOME"/...)
        self.closers: list[Callable[[], None]] = []  # run by close() (the run's keeper)
        self._lock = threading.Lock()
        template = host.transport or "ssh {host}"
        try:
            self.template = shlex.split(template)
        except ValueError as exc:
            raise ValueError(f"bad transport template {template!r}: {exc}") from None
        if not self.template:
            raise ValueError("empty transport template")
        self.is_ssh = os.path.basename(self.template[0]) == "ssh"
        self._values = {"host": host.address, "name": host.name,
                        "port": str(host.port or ""), "user": host.user or ""}
        # ssh: "--" before the destination (the first word with a placeholder), unless the
        # template has its own "--" or puts options after the destination
        self._dashdash = -1
        if self.is_ssh and "--" not in self.template:
            first = next((i for i, w in enumerate(self.template) if "{" in w), -1)
            if first > 0 and not any(w.startswith("-") for w in self.template[first + 1 :]):
                self._dashdash = first
        self.argv("true")  # a placeholder that cannot be filled: refused now, nothing runs

    # ---- the command line ----------------------------------------------------------

    def _ssh_options(self, master: str) -> list[str]:
        h = self.host
        opts = [
            "-o", "BatchMode=yes",
            "-o", f"ControlMaster={master}",
            "-o", f"ControlPersist={PERSIST_S}",
            # one master per inventory host (a run's folder, its host's name hashed: short,
            # for the 108 bytes of a socket path): %C hashes address, port and user only, and
            # two inventory hosts may share them (one machine listed twice with another
            # cltui_env): they shared one socket, and the second master outlived the run
            "-o", f"ControlPath={self.control_dir}/{_tag(h.name)}",
            "-o", f"ConnectTimeout={max(1, int(self.connect_timeout))}",
            # a frozen or vanished host ends the connection (exit 255) within ~15 s
            "-o", f"ServerAliveInterval={ALIVE_S}", "-o", "ServerAliveCountMax=3",
        ]  # fmt: skip
        if h.port is not None:
            opts += ["-p", str(h.port)]
        if h.user:
            opts += ["-l", h.user]
        if h.key:
            opts += ["-i", os.path.expanduser(h.key)]
        return opts + list(h.ssh_args)

    def argv(
        self, script: str | None, *, master: str = "no", extra: Iterable[str] = ()
    ) -> list[str]:
        """The local command line that runs ``script`` (POSIX sh) on the host."""
        out: list[str] = []
        placed = script is None
        for i, word in enumerate(self.template):
            if word == "{cmd}":
                if script is not None:
                    out.append(script)
                placed = True
                continue
            if i == self._dashdash:
                out.append("--")
            out.append(fill(word, self._values) if "{" in word or "}" in word else word)
            if i == 0 and self.is_ssh:
                out += self._ssh_options(master) + list(extra)
        if not placed:
            assert script is not None
            out += [f"sh -c {shlex.quote(script)}"] if self.is_ssh else ["sh", "-c", script]
        return out

    # ---- connection ----------------------------------------------------------------

    def connect(self, cancel: CancelToken | None = None) -> CommandResult:
        """Open the multiplexed connection (ssh) or try the template once (others)."""
        if not self.is_ssh:
            return self.run("true", timeout=self.connect_timeout, cancel=cancel)
        # ssh -f keeps the master's stderr: a file, never a pipe we would wait on
        with tempfile.TemporaryFile() as errf:
            argv = self.argv(None, master="auto", extra=["-N", "-f"])
            with _masters_lock:
                _masters.add(self)  # before it exists: an exit meanwhile stops it too
            res = self._spawn(argv, None, errf, self.connect_timeout + 5, cancel, None)
            errf.seek(0)
            res.err = errf.read().decode("utf-8", "replace")
        return res

    def close(self) -> None:
        """Remove the run's scratch folders on the host, run the closers (the run's keeper,
        see :mod:`cltui.fleet.scratch`), then stop the multiplexed connection (ssh)."""
        if self.remove_at_close and not self.dead:  # a dead link: the next run sweeps them
            folders = " ".join(self.remove_at_close)
            res = self.run(f"rm -rf -- {folders}", timeout=CLEANUP_S)
            self.dead = self.dead or res.timed_out
        self.remove_at_close = []
        while self.closers:
            with contextlib.suppress(Exception):  # one closer failing must not keep the rest
                self.closers.pop()()
        self.stop_master()

    def stop_master(self) -> None:
        """Stop the multiplexed connection (ssh; none: nothing to do)."""
        with _masters_lock:
            if self not in _masters:
                return
            _masters.discard(self)
        argv = self.argv(None, extra=["-O", "exit"])
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=CLEANUP_S, check=False)

    # ---- running -------------------------------------------------------------------

    def run(
        self,
        script: str,
        stdin: bytes | Iterable[bytes] | None = None,
        *,
        timeout: float,
        cancel: CancelToken | None = None,
        on_line: Callable[[str], None] | None = None,
        hold_stdin: bool = False,
    ) -> CommandResult:
        """Run ``script`` on the host, ``stdin`` fed to it; ``on_line`` gets each line of its
        stderr as it comes; killed after ``timeout`` seconds without output or on cancel.
        ``hold_stdin``: the command's stdin stays open (and empty) while it runs, so the
        host sees it close when cltui's end of the connection goes (see ``WATCHDOG``)."""
        argv = self.argv(script)
        self._count(len(script))
        feed: bytes | Iterable[bytes] | None = stdin
        if hold_stdin and stdin is None:
            feed = _Held()
        return self._spawn(argv, feed, None, timeout, cancel, on_line)

    def _count(self, n: int) -> None:
        with self._lock:
            self.bytes_sent += n

    def _received(self, n: int) -> None:
        with self._lock:
            self.bytes_received += n

    def _spawn(
        self,
        argv: list[str],
        stdin: bytes | Iterable[bytes] | None,
        errfile: IO[bytes] | None,
        timeout: float,
        cancel: CancelToken | None,
        on_line: Callable[[str], None] | None,
    ) -> CommandResult:
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE if errfile is None else subprocess.DEVNULL,
                stderr=errfile if errfile is not None else subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            return CommandResult(127, b"", f"cannot start {argv[0]}: {exc.strerror or exc}")
        return _Watch(proc, self, timeout, cancel, on_line).wait(stdin)


_masters: set[Transport] = set()  # ssh connections opened and not stopped yet
_masters_lock = threading.Lock()


def stop_masters() -> None:
    """Stop every multiplexed connection still open: at exit (atexit), so that none outlives
    cltui by its ``ControlPersist`` time when the app quits during a fleet job or a listing of
    the hosts' devices (the job's own ``close`` may not run then)."""
    with _masters_lock:
        left = list(_masters)
    for t in left:
        t.stop_master()


atexit.register(stop_masters)


# A command's first line on the host: when its stdin closes (cltui's ssh went: killed on a
# timeout or a cancel, or the connection dropped), its whole process group is killed.
# (An asynchronous list reads /dev/null unless told otherwise: the stdin goes by fd 3.)
WATCHDOG = (
    "exec 3<&0; (cat <&3 >/dev/null; kill -TERM -$$ 2>/dev/null; sleep 2; "
    "kill -KILL -$$ 2>/dev/null) >/dev/null 2>&1 & exec 3<&-"
)


class _Held(list[bytes]):
    """A stdin that is never written and stays open until the command ends."""


class _Watch:
    """Feeds a child, reads it, and kills its process group on timeout or cancel."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        transport: Transport,
        timeout: float,
        cancel: CancelToken | None,
        on_line: Callable[[str], None] | None,
    ) -> None:
        self.proc, self.transport, self.timeout = proc, transport, timeout
        self.cancel, self.on_line = cancel, on_line
        self.last = time.monotonic()
        self.out: list[bytes] = []
        self.err: list[str] = []

    def _feed(self, stdin: bytes | Iterable[bytes]) -> None:
        assert self.proc.stdin is not None
        if isinstance(stdin, _Held):
            return  # closed by wait() once the command has ended
        chunks = [stdin] if isinstance(stdin, bytes) else stdin
        try:
            for chunk in chunks:
                for i in range(0, len(chunk), CHUNK):
                    piece = chunk[i : i + CHUNK]
                    self.proc.stdin.write(piece)
                    self.transport._count(len(piece))
                    self.last = time.monotonic()
        except (BrokenPipeError, OSError, ValueError):
            pass
        finally:
            with contextlib.suppress(OSError, ValueError):
                self.proc.stdin.close()

    def _read_out(self) -> None:
        assert self.proc.stdout is not None
        while chunk := os.read(self.proc.stdout.fileno(), CHUNK):
            self.out.append(chunk)
            self.transport._received(len(chunk))
            self.last = time.monotonic()

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for raw in iter(self.proc.stderr.readline, b""):
            self.transport._received(len(raw))
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.err.append(line)
            self.last = time.monotonic()
            if self.on_line is not None:
                with contextlib.suppress(Exception):  # a viewer must not stop the run
                    self.on_line(line)

    def wait(self, stdin: bytes | Iterable[bytes] | None) -> CommandResult:
        threads = []
        if stdin is not None:
            threads.append(threading.Thread(target=self._feed, args=(stdin,), daemon=True))
        if self.proc.stdout is not None:
            threads.append(threading.Thread(target=self._read_out, daemon=True))
        if self.proc.stderr is not None:
            threads.append(threading.Thread(target=self._read_err, daemon=True))
        for t in threads:
            t.start()
        timed_out = cancelled = False
        while True:
            try:
                self.proc.wait(0.05)
                break
            except subprocess.TimeoutExpired:
                pass
            if self.cancel is not None and self.cancel.is_set():
                cancelled = True
            elif time.monotonic() - self.last > self.timeout:
                timed_out = True
            if timed_out or cancelled:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                break
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                self.proc.stdin.close()
        for t in threads:
            t.join(timeout=5)
        return CommandResult(
            self.proc.returncode, b"".join(self.out), "\n".join(self.err), timed_out, cancelled
        )
