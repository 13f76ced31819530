"""Large logs are scanned in pieces by forked workers (one per CPU), whose compact results come
back over pipes and are merged in file order; the parent stays responsive to a cancel."""

from __future__ import annotations

import contextlib
import mmap
import os
import pickle
import select
import signal
from collections.abc import Iterator
from pathlib import Path

from cltui.capture.log.objects import (
    IndexCancelled,
)
from cltui.capture.log.scan import (
    _heads,
    _line_aligned_cuts,
    _Piece,
    _scan_piece,
)
from cltui.capture.model import (
    CaptureError,
)
from cltui.capture.safeopen import open_regular
from cltui.progress import CancelToken, ProgressEvent, ProgressFn

CHUNK = 16 * 1024 * 1024


# ---- the scan -------------------------------------------------------------------------------
#
# A log is cut into line-aligned pieces; each piece is scanned by :func:`_scan_piece` into a
# compact :class:`_Piece` (arrays with piece-local function / kernel-name ids) and the pieces
# are merged in file order.  Logs over ``PARALLEL_MIN`` bytes are scanned by forked worker
# processes (one per CPU), each mapping the file itself; smaller ones in this process.

PARALLEL_MIN = 64 * 1024 * 1024
MIN_PIECE = 1024 * 1024  # the smallest piece a worker gets


def _workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _pieces(
    path: Path,
    mm: mmap.mmap,
    size: int,
    progress: ProgressFn | None,
    cancel: CancelToken | None,
) -> Iterator[_Piece]:
    """The scanned pieces in file order (in worker processes when the log is large)."""
    parallel = size >= PARALLEL_MIN and hasattr(os, "fork") and hasattr(select, "poll")
    nproc = _workers() if parallel else 1
    heads = _heads(mm, size)
    if nproc < 2:
        for pos, end in _line_aligned_cuts(path, size, CHUNK):
            if cancel is not None and cancel.is_set():
                raise IndexCancelled()
            yield _scan_piece(mm, pos, end, size, heads)
            if progress is not None:
                progress(ProgressEvent(end / size, "reading the log"))
        return
    if cancel is not None and cancel.is_set():
        raise IndexCancelled()
    step = min(CHUNK, max(MIN_PIECE, size // (4 * nproc)))
    step = max(step, size // 16000 + 1)  # the job list must fit in a pipe's buffer
    cuts = _line_aligned_cuts(path, size, step)
    nproc = min(nproc, len(cuts))
    workers: list[tuple[int, int]] = []
    reaped: set[int] = set()
    # the jobs (piece numbers) wait in a pipe: a worker takes the next one when it is free
    jr, jw = os.pipe()
    try:
        os.write(jw, b"".join(i.to_bytes(4, "little") for i in range(len(cuts))))
    finally:
        os.close(jw)
    try:
        for _ in range(nproc):
            workers.append(_fork_worker(path, size, cuts, jr, heads))
        os.close(jr)
        jr = -1
        inbox = _Inbox(path, workers, len(cuts), reaped)
        for i, (_, end) in enumerate(cuts):
            while i not in inbox.pieces:
                if cancel is not None and cancel.is_set():
                    raise IndexCancelled()
                inbox.receive(50)
            if cancel is not None and cancel.is_set():
                raise IndexCancelled()
            yield inbox.pieces.pop(i)
            if progress is not None:
                progress(ProgressEvent(end / size, "reading the log"))
    finally:
        if jr >= 0:
            os.close(jr)
        for pid, fd in workers:
            os.close(fd)
            if pid not in reaped:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                with contextlib.suppress(OSError):
                    os.waitpid(pid, 0)


class _Inbox:
    """Pickled pieces arriving on the workers' pipes, each message prefixed by its length
    and its piece number (-1: a one-line failure message)."""

    def __init__(
        self, path: Path, workers: list[tuple[int, int]], total: int, reaped: set[int]
    ) -> None:
        self.path = path
        self.reaped = reaped  # workers that have exited (and been waited for)
        self.workers = {fd: pid for pid, fd in workers}
        self.bufs = {fd: bytearray() for _, fd in workers}
        self.pieces: dict[int, _Piece] = {}
        self.missing = total  # pieces not received yet
        self.poller = select.poll()  # (select.select fails on descriptors past FD_SETSIZE)
        for _, fd in workers:
            self.poller.register(fd, select.POLLIN)

    def _failed(self, why: str) -> CaptureError:
        return CaptureError(f"cannot index {self.path.name}: {why}")

    def receive(self, timeout_ms: int) -> None:
        events = self.poller.poll(timeout_ms)
        for fd, _ in events:
            chunk = os.read(fd, 1 << 20)
            if not chunk:  # the worker has exited: all right if it had no more jobs
                self.poller.unregister(fd)
                _, status = os.waitpid(self.workers[fd], 0)
                self.reaped.add(self.workers[fd])
                self.workers[fd] = -1
                if status != 0:
                    raise self._failed("a worker process died (out of memory?)")
                continue
            buf = self.bufs[fd]
            buf += chunk
            while len(buf) >= 16:
                n = int.from_bytes(buf[:8], "little")
                if len(buf) < 16 + n:
                    break
                i = int.from_bytes(buf[8:16], "little", signed=True)
                obj = pickle.loads(buf[16 : 16 + n])
                del buf[: 16 + n]
                if not isinstance(obj, _Piece) or i < 0:
                    raise self._failed(str(obj))
                self.pieces[i] = obj
                self.missing -= 1
        if self.missing and all(pid < 0 for pid in self.workers.values()):
            raise self._failed("the worker processes stopped early")


def _fork_worker(
    path: Path, size: int, cuts: list[tuple[int, int]], jobs: int, heads: tuple[int, int]
) -> tuple[int, int]:
    """A child process that maps the log itself, takes piece numbers from the ``jobs`` pipe
    and sends each piece back, pickled (a failure as a one-line message)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.close(r)
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is the parent's business
            try:
                with open_regular(path, follow=True) as f:
                    wm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                while len(job := os.read(jobs, 4)) == 4:
                    i = int.from_bytes(job, "little")
                    pos, end = cuts[i]
                    piece = _scan_piece(wm, pos, end, size, heads)
                    _send(w, i, pickle.dumps(piece, protocol=5))
            except (OSError, ValueError, MemoryError) as e:
                _send(w, -1, pickle.dumps(f"{type(e).__name__}: {e}"))
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    return pid, r


def _send(fd: int, piece: int, blob: bytes) -> None:
    head = len(blob).to_bytes(8, "little") + piece.to_bytes(8, "little", signed=True)
    data = memoryview(head + blob)
    while data:
        data = data[os.write(fd, data) :]
