"""cltui.progress: the one progress event and the one cancellation token."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

from cltui.errors import Cancelled
from cltui.progress import CancelToken, ProgressEvent, fraction_of, no_progress, wait_until_set


def test_fraction_of_clamps_and_handles_nothing_to_do() -> None:
    assert fraction_of(0, 0) == 0.0
    assert fraction_of(5, 10) == 0.5
    assert fraction_of(12, 10) == 1.0
    assert fraction_of(-1, 10) == 0.0


def test_progress_event_is_a_value() -> None:
    assert ProgressEvent(0.5, "a") == ProgressEvent(0.5, "a")
    no_progress(ProgressEvent(1.0))


def test_cancel_runs_each_hook_once_in_order_and_late_hooks_at_once() -> None:
    token = CancelToken()
    seen: list[str] = []
    token.on_cancel(lambda: seen.append("a"))
    token.on_cancel(lambda: seen.append("b"))
    assert not token.is_set()
    token.raise_if_set()  # not cancelled: nothing raised
    token.cancel("esc")
    token.cancel("again")
    assert seen == ["a", "b"]
    assert token.is_set() and token.reason == "esc"
    token.on_cancel(lambda: seen.append("late"))
    assert seen == ["a", "b", "late"]
    with pytest.raises(Cancelled, match="esc"):
        token.raise_if_set()


def test_a_failing_hook_does_not_stop_the_others() -> None:
    token = CancelToken()
    seen: list[int] = []

    def bad() -> None:
        raise RuntimeError("boom")

    token.on_cancel(bad)
    token.on_cancel(lambda: seen.append(1))
    token.cancel()
    assert seen == [1]


def test_wait_wakes_when_another_thread_cancels() -> None:
    token = CancelToken()
    assert token.wait(0.01) is False
    threading.Timer(0.05, token.cancel).start()
    assert token.wait(10) is True


def test_a_worker_token_follows_its_worker_and_the_screens_token() -> None:
    from typing import Any, cast

    from cltui.tui.workers import worker_token

    class Worker:
        is_cancelled = False

    screen = CancelToken()
    worker = Worker()
    token = worker_token(cast(Any, worker), screen)
    assert not token.is_set() and token.wait(0.02) is False
    screen.cancel()
    assert token.is_set()
    worker2 = Worker()
    token2 = worker_token(cast(Any, worker2))
    threading.Timer(0.05, lambda: setattr(worker2, "is_cancelled", True)).start()
    assert token2.wait(10) is True


Loop = Callable[[threading.Event, Callable[[], None]], None]


def _wait_with_wait_until_set(done: threading.Event, interrupted: Callable[[], None]) -> None:
    """The fleet's main thread: wait; ctrl-c cancels the work, then wait on for it."""
    while not done.is_set():
        try:
            wait_until_set(done, poll=0.001)
        except KeyboardInterrupt:
            interrupted()


def _wait_with_event_wait(done: threading.Event, interrupted: Callable[[], None]) -> None:
    """The loop it replaced (``done.wait`` in short steps)."""
    while not done.is_set():
        try:
            done.wait(0.2)
        except KeyboardInterrupt:
            interrupted()


def _interrupt_after(loop: Loop, k: int, bound: float = 30) -> str:
    """Run ``loop`` with a KeyboardInterrupt raised as the ``k``-th C call inside it returns
    (a signal handler runs at that point: the eval loop's check after a call), the work
    ending once it was interrupted: "ended", "stuck" (after ``bound`` s: a hang detector,
    generous; 5 s passed once in a fast tier on a loaded machine) or what it raised."""
    done = threading.Event()
    raised: list[BaseException] = []

    def body() -> None:
        count = 0

        def profile(frame: FrameType, event: str, arg: object) -> None:
            nonlocal count
            if event == "c_return":
                count += 1
                if count == k:
                    raise KeyboardInterrupt  # (the profile hook is dropped with it)

        sys.setprofile(profile)
        try:
            loop(done, lambda: threading.Thread(target=done.set, daemon=True).start())
        except BaseException as exc:
            raised.append(exc)
        finally:
            sys.setprofile(None)

    th = threading.Thread(target=body, daemon=True)
    th.start()
    th.join(bound)
    if th.is_alive():  # stuck: free it (the lock left held, then the work's set)
        cond: Any = done._cond  # type: ignore[attr-defined]
        cond.acquire(blocking=False)  # taken now if nobody held it (it was only slow)
        cond.release()
        th.join(5)
        return "stuck"
    return repr(raised[0]) if raised else "ended"


def test_an_interrupt_anywhere_in_the_wait_leaves_it_waiting_and_ending() -> None:
    """ctrl-c while the fleet's main thread waits for its work: wherever the
    KeyboardInterrupt comes out, the next wait still ends when the work does.  The loop on
    ``Event.wait`` it replaced fails this, which shows the test can tell: the interrupt
    right after its Condition's lock was taken leaves the lock held (the fleet never
    ended), and one right after the lock was let go makes the ``with`` release it again
    (a RuntimeError instead of the interrupt)."""
    assert [_interrupt_after(_wait_with_wait_until_set, k) for k in range(1, 13)] == [
        "ended"] * 12
    old = [_interrupt_after(_wait_with_event_wait, k, bound=2) for k in range(1, 9)]
    assert "stuck" in old and any("release unlocked lock" in o for o in old), old
