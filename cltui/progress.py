"""The one progress-event type and the one cancellation token of every long task.

Reading a capture, replaying a range, an Oclgrind check, a divergence search, shrinking and an
export all report progress the same way and are stopped the same way:

* a task calls ``progress(ProgressEvent(fraction, what))`` (``fraction`` 0..1, or ``None`` while
  it cannot tell, e.g. a build; ``what`` one line saying what is being done, may be empty) from
  whatever thread runs it; a view turns it into a
  bar and a label, the CLI into nothing or a line;
* whoever may stop a task (esc, a closed screen, ctrl-c, a dying parent) holds a
  :class:`CancelToken` and calls :meth:`CancelToken.cancel`; the task reads
  :meth:`CancelToken.is_set` between units of work (or :meth:`CancelToken.raise_if_set`, which
  raises :class:`cltui.errors.Cancelled`), blocks on :meth:`CancelToken.wait`, or registers a
  hook with :meth:`CancelToken.on_cancel` (kill a child process, close a pipe) that runs once,
  right away if the token is already cancelled.

Standard library only (the bundle's engine may import it).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from .errors import Cancelled

__all__ = [
    "CancelToken", "ProgressEvent", "ProgressFn", "fraction_of", "no_progress", "wait_until_set",
]


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    """How far a task is: ``fraction`` of the whole (0..1; ``None``: unknown) and what it is
    doing now."""

    fraction: float | None
    what: str = ""


ProgressFn = Callable[[ProgressEvent], None]


def no_progress(event: ProgressEvent) -> None:
    """A :data:`ProgressFn` that shows nothing (the CLI's default)."""


def fraction_of(done: int, total: int) -> float:
    """``done / total`` clamped to 0..1 (0 when there is nothing to do yet)."""
    if total <= 0:
        return 0.0
    return min(1.0, max(0.0, done / total))


class CancelToken:
    """Set once by whoever stops a task; read, waited on or hooked by the task.

    Thread-safe. ``cancel`` is idempotent: hooks run once, in the thread that cancels, in
    the order they were added; a hook added after the cancel runs at once. A hook that
    raises does not stop the others (its error is swallowed: cancelling must not fail).
    """

    __slots__ = ("_event", "_hooks", "_lock", "reason")

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._hooks: list[Callable[[], None]] = []
        self.reason = ""

    def cancel(self, reason: str = "") -> None:
        """Stop the task (``reason``: one line, kept for whoever reports the stop)."""
        with self._lock:
            if self._event.is_set():
                return
            self.reason = reason
            self._event.set()
            hooks, self._hooks = self._hooks, []
        for hook in hooks:
            with contextlib.suppress(Exception):  # cancelling must not fail half-way
                hook()

    def is_set(self) -> bool:
        """Whether the task was cancelled."""
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled or ``timeout`` seconds passed; whether it was cancelled."""
        return self._event.wait(timeout)

    def raise_if_set(self) -> None:
        """Raise :class:`cltui.errors.Cancelled` if the task was cancelled."""
        if self._event.is_set():
            raise Cancelled(self.reason or "cancelled")

    def on_cancel(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` once when the token is cancelled (now, if it already is)."""
        with self._lock:
            if not self._event.is_set():
                self._hooks.append(hook)
                return
        hook()


def wait_until_set(done: threading.Event, poll: float = 0.05) -> None:
    """Block until ``done`` is set, where ctrl-c may raise (the main thread): polls
    ``is_set``, which takes no lock, between sleeps, so the ``KeyboardInterrupt`` can come
    out of any point and the next call still waits.  Not ``done.wait``: it enters its
    Condition through a Python ``__enter__``, and a signal handler that raises right after
    the lock's C ``__enter__`` returned leaves the lock held (CPython issues 74174 and
    148874), so the next wait and the worker's ``set`` block forever."""
    while not done.is_set():
        time.sleep(poll)
