"""Reading a capture in a child process, so that whoever waits for it never blocks.

:class:`CaptureReader` forks a child process that opens the capture (:func:`open_capture`: the
log's index with its own worker processes, the dump and program scans, the report) and sends
the opened :class:`Capture` back, pickled (the log's memory map is mapped again on arrival).
The child then stays, holding its own copy, and runs calls on it one at a time
(:meth:`CaptureReader.call`: decoding an enqueue preprocesses its program's source with pcpp,
reads and hashes dumps).  The waiting side only polls a pipe, with the GIL released, and
checks its cancel event every few milliseconds: a thread of the app that waits here never
starves the app's event loop, however long (or pathological) the reading is.  Cancelling or
closing kills the child's whole process group (the index's workers included) at once.

Where ``fork`` is missing, :func:`reader_available` is False; callers read in-process.
"""

from __future__ import annotations

import atexit
import contextlib
import math
import os
import pickle
import select
import signal
import struct
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn, TypeVar

from cltui.capture import log as li
from cltui.capture.capture import Capture
from cltui.capture.model import CaptureError, Enqueue, NotACapture, Problem
from cltui.capture.opening import open_capture
from cltui.capture.pickling import dumps
from cltui.errors import Cancelled
from cltui.process.lifecycle import kill_pid_group
from cltui.progress import CancelToken, ProgressEvent, ProgressFn

__all__ = [
    "CallCancelled",
    "CaptureReader",
    "ReaderGone",
    "close_all",
    "decode_enqueue",
    "open_in_child",
    "reader_available",
    "reader_of",
]

T = TypeVar("T")
Opener = Callable[[Path, ProgressFn | None, CancelToken | None], Capture]

_RES = struct.Struct("<QiI")  # child -> parent: payload length, request id, kind
_REQ = struct.Struct("<Qi")  # parent -> child: payload length, request id
_RESULT, _ERROR, _PROGRESS = 0, 1, 2
_POLL_MS = 10  # how often a waiting thread looks at its cancel event
_OPEN_ID = 0  # the request id of the open itself
_NICE = 10  # the reader (and the index's workers) yield the CPU to the app


class ReaderGone(CaptureError):
    """The reader process is gone (killed, crashed) or could not send a result."""


class _TransferFailed(ReaderGone):
    """The child opened the capture but could not pickle it."""


class CallCancelled(Cancelled, CaptureError):
    """A :meth:`CaptureReader.call` was given up (its cancel event was set)."""

    def __init__(self) -> None:
        super().__init__("cancelled")


def reader_available() -> bool:
    """True where a capture can be read in a child process (``fork`` and ``poll`` exist)."""
    return hasattr(os, "fork") and hasattr(select, "poll")


def decode_enqueue(cap: Capture, number: int) -> Enqueue:
    """:meth:`Capture.enqueue` (a :meth:`CaptureReader.call` target)."""
    return cap.enqueue(number)


# ---- the parent's side -----------------------------------------------------------------------

_live: weakref.WeakSet[CaptureReader] = weakref.WeakSet()
_live_lock = threading.Lock()
_readers: weakref.WeakKeyDictionary[Capture, CaptureReader] = weakref.WeakKeyDictionary()


def reader_of(cap: object) -> CaptureReader | None:
    """The reader process that opened ``cap`` (None: opened in this process)."""
    if not isinstance(cap, Capture):
        return None
    with _live_lock:
        return _readers.get(cap)


def open_in_child(
    path: str | Path,
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
    *,
    opener: Opener = open_capture,
) -> Capture:
    """``opener(path, progress, cancel)`` (default :func:`open_capture`) run by a
    :class:`CaptureReader`, which stays for :func:`reader_of`'s calls; in this process where
    there is no fork, or where the opened capture could not be sent back (then a problem
    says so)."""
    if not reader_available():
        return opener(Path(path), progress, cancel)
    reader = CaptureReader(path, opener)
    try:
        return reader.open(progress, cancel)
    except _TransferFailed as e:
        cap = opener(Path(path), progress, cancel)
        cap.problems.append(Problem(f"read in the app's process ({e})"))
        return cap


def close_all() -> None:
    """Kill every reader process still running (the app calls it on exit; so does atexit)."""
    with _live_lock:
        readers = list(_live)
    for r in readers:
        r.close()


atexit.register(close_all)


class CaptureReader:
    """One capture read by a child process: :meth:`open`, then :meth:`call` any number of
    times, from any threads (one call at a time reaches the child), then :meth:`close`."""

    def __init__(self, path: str | Path, opener: Opener = open_capture) -> None:
        self.path = Path(path)
        self.opener = opener
        self.pid = -1
        self._req = -1  # parent -> child
        self._res = -1  # child -> parent
        self._buf = bytearray()
        self._lock = threading.RLock()  # one round trip at a time; close() may re-enter
        self._next_id = _OPEN_ID + 1
        self._dead: str | None = None

    @property
    def alive(self) -> bool:
        return self.pid > 0 and self._dead is None

    # ---- open
    def open(
        self, progress: ProgressFn | None = None, cancel: CancelToken | None = None
    ) -> Capture:
        """The opened capture.  Raises what :func:`open_capture` raises (NotACapture, other
        CaptureErrors), :class:`~cltui.capture.log.IndexCancelled` when ``cancel`` is set
        (the child is killed at once) and :class:`ReaderGone` when the child dies or cannot
        send the capture back."""
        import cltui.capture.signature  # noqa: F401 - imported here, not in the child (below)

        with self._lock:
            self._start()
            try:
                blob = self._wait(_OPEN_ID, progress, cancel)
                cap = pickle.loads(blob)
            except BaseException:
                self.close()
                raise
            del blob
            if not isinstance(cap, Capture):
                self.close()
                raise ReaderGone(f"{self.path}: the reader sent a {type(cap).__name__}")
            with _live_lock:
                _readers[cap] = self
            return cap

    def _start(self) -> None:
        req_r, req_w = os.pipe()
        res_r, res_w = os.pipe()
        with warnings.catch_warnings():  # "fork() in a multi-threaded process": see _child
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            _child(self.path, self.opener, req_r, res_w, (req_w, res_r))  # never returns
        os.close(req_r)
        os.close(res_w)
        with contextlib.suppress(OSError):  # also done by the child: whichever comes first
            os.setpgid(pid, pid)
        self.pid, self._req, self._res = pid, req_w, res_r
        with _live_lock:
            _live.add(self)

    # ---- calls
    def call(
        self, fn: Callable[..., T], *args: object, cancel: CancelToken | None = None
    ) -> T:
        """``fn(capture, *args)`` run by the child on its copy of the capture; ``fn`` must be
        importable by name (a module-level function).  Raises :class:`ReaderGone` when the
        child is gone, :class:`CallCancelled` when ``cancel`` is set first (the child
        finishes the call; its answer is dropped), CaptureError with the child's one-line
        reason when ``fn`` raised."""
        with self._lock:
            if not self.alive:
                raise ReaderGone(f"{self.path}: the reader process has stopped ({self._dead})")
            rid = self._next_id
            self._next_id += 1
            blob = dumps((fn, args))
            try:
                _write_all(self._req, _REQ.pack(len(blob), rid) + blob)
                answer = self._wait(rid, None, cancel)
            except OSError as e:
                self.close()
                raise ReaderGone(f"{self.path}: the reader process has stopped ({e})") from None
            except ReaderGone:
                self.close()
                raise
            result = pickle.loads(answer)
            return result  # type: ignore[no-any-return]

    def _wait(self, rid: int, progress: ProgressFn | None, cancel: CancelToken | None) -> bytes:
        poller = select.poll()
        poller.register(self._res, select.POLLIN)
        while True:
            if self._dead is not None:  # closed by another thread (the app exits)
                raise ReaderGone(f"{self.path}: the reader process has stopped ({self._dead})")
            frame = self._frame()
            if frame is not None:
                fid, kind, payload = frame
                if fid != rid:
                    continue  # the answer to a call that was given up
                if kind == _PROGRESS:
                    if progress is not None:
                        (fraction,) = struct.unpack("<d", payload)
                        progress(ProgressEvent(fraction, "reading the log"))
                    continue
                if kind == _ERROR:
                    what, message = pickle.loads(payload)
                    if what == "not-a-capture":
                        raise NotACapture(message)
                    if what == "transfer":
                        raise _TransferFailed(message)
                    raise CaptureError(message)
                return payload
            if cancel is not None and cancel.is_set():
                if rid == _OPEN_ID:
                    self.close()
                    raise li.IndexCancelled()
                raise CallCancelled()
            if not poller.poll(_POLL_MS):
                continue
            try:
                chunk = os.read(self._res, 1 << 20)
            except OSError as e:
                chunk = b""
                self._gone(e.strerror or str(e))
            if not chunk:
                self._gone("it exited")
                self.close()
                raise ReaderGone(f"{self.path}: the reader process stopped (out of memory?)")
            self._buf += chunk

    def _frame(self) -> tuple[int, int, bytes] | None:
        buf = self._buf
        if len(buf) < _RES.size:
            return None
        n, rid, kind = _RES.unpack_from(buf)
        if len(buf) < _RES.size + n:
            return None
        payload = bytes(buf[_RES.size : _RES.size + n])
        del buf[: _RES.size + n]
        return rid, kind, payload

    def _gone(self, why: str) -> None:
        if self._dead is None:
            self._dead = why

    # ---- close
    def close(self) -> None:
        """Kill the child and its process group (the index's workers) and reap it.  Never
        waits on a reading: SIGKILL, then a non-blocking reap (a reaper thread if needed)."""
        pid, self.pid = self.pid, -1
        self._gone("closed")
        with _live_lock:
            _live.discard(self)
        if pid > 0:
            kill_pid_group(pid)  # the child and the index's workers
            _reap(pid)
        # the pipes: now, unless a thread is waiting on them (it closes them when it sees
        # that the reader is gone, within one poll); closing under it could hand it the
        # number of a file opened meanwhile
        if self._lock.acquire(blocking=False):
            try:
                for fd in (self._req, self._res):
                    if fd >= 0:
                        with contextlib.suppress(OSError):
                            os.close(fd)
                self._req = self._res = -1
            finally:
                self._lock.release()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


def _reap(pid: int) -> None:
    """Collect the killed child: at once when it is already gone, else in a daemon thread."""
    with contextlib.suppress(ChildProcessError, OSError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return
        threading.Thread(target=_reap_blocking, args=(pid,), daemon=True).start()


def _reap_blocking(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, 0)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


# ---- the child's side ------------------------------------------------------------------------


def _child(path: Path, opener: Opener, req: int, res: int, parent_fds: tuple[int, int]) -> NoReturn:
    """The child: open, send the capture, then answer calls until the parent closes the pipe.

    It was forked from a process that may run other threads (the app's event loop, its
    input thread): it never returns into the parent's code, touches no terminal (its
    standard streams go to /dev/null), and leaves the parent's signal handling alone."""
    code = 0
    try:
        for fd in parent_fds:
            os.close(fd)
        # no lock here: one held by another thread at the fork would never be released
        others = [fd for r in list(_live) for fd in (r._req, r._res) if fd >= 0]
        for fd in others:  # the other readers' pipes: their children must see the app's EOF
            with contextlib.suppress(OSError):
                os.close(fd)
        _detach()
        try:
            cap = _open_in_child(path, opener, res)
        except BaseException as e:  # anything, as one line, then exit
            _send_error(res, _OPEN_ID, e)
            os._exit(0)
        try:
            blob = dumps(cap)
        except Exception as e:
            _send(res, _OPEN_ID, _ERROR, pickle.dumps(("transfer", _line(e, "cannot send"))))
            os._exit(0)
        _send(res, _OPEN_ID, _RESULT, blob)
        del blob
        _serve(cap, req, res)
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _detach() -> None:
    os.setpgid(0, 0)  # its own process group: one killpg stops it and the index's workers
    with contextlib.suppress(OSError):
        os.nice(_NICE)  # the app's keys before the reading, on a machine with few cores
    with contextlib.suppress(ValueError, OSError):
        signal.set_wakeup_fd(-1)  # signals here must not wake the parent's event loop
    for name in ("SIGWINCH", "SIGTSTP", "SIGCONT", "SIGCHLD", "SIGTERM", "SIGHUP", "SIGUSR1"):
        sig = getattr(signal, name, None)
        if sig is not None:
            with contextlib.suppress(ValueError, OSError):
                signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # ctrl+c is the app's business
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    sys.stdin = sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115


def _open_in_child(path: Path, opener: Opener, res: int) -> Capture:
    last = [-1.0, 0.0]
    parent = os.getppid()

    def progress(event: ProgressEvent) -> None:
        if os.getppid() != parent:
            os._exit(0)  # the app died without killing us
        now = time.monotonic()
        fraction = event.fraction or 0.0
        if fraction >= 1.0 or (fraction - last[0] >= 0.005 and now - last[1] >= 0.02):
            last[0], last[1] = fraction, now
            value = fraction if math.isfinite(fraction) else 0.0
            _send(res, _OPEN_ID, _PROGRESS, struct.pack("<d", value))

    return opener(path, progress, None)


def _serve(cap: Capture, req: int, res: int) -> None:
    buf = bytearray()
    parent = os.getppid()
    poller = select.poll()
    poller.register(req, select.POLLIN)
    while True:
        while len(buf) < _REQ.size or len(buf) < _REQ.size + _REQ.unpack_from(buf)[0]:
            if not poller.poll(1000):
                if os.getppid() != parent:
                    return  # the app died without closing the pipe (a copy lives elsewhere)
                continue
            chunk = os.read(req, 1 << 20)
            if not chunk:
                return  # the parent closed the pipe (or exited)
            buf += chunk
        n, rid = _REQ.unpack_from(buf)
        payload = bytes(buf[_REQ.size : _REQ.size + n])
        del buf[: _REQ.size + n]
        try:
            fn, args = pickle.loads(payload)
            out = dumps(fn(cap, *args))
        except Exception as e:
            _send_error(res, rid, e)
            continue
        _send(res, rid, _RESULT, out)


def _line(e: BaseException, what: str) -> str:
    text = str(e).splitlines()[0] if str(e) else ""
    return f"{what}: {type(e).__name__}: {text}" if text else f"{what}: {type(e).__name__}"


def _send_error(res: int, rid: int, e: BaseException) -> None:
    if isinstance(e, NotACapture):
        what, message = "not-a-capture", str(e)
    elif isinstance(e, CaptureError):
        what, message = "capture", str(e)
    else:
        what, message = "bug", _line(e, "cannot read the capture")
    _send(res, rid, _ERROR, pickle.dumps((what, message)))


def _send(fd: int, rid: int, kind: int, payload: bytes) -> None:
    _write_all(fd, _RES.pack(len(payload), rid, kind) + payload)
