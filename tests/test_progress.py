"""cltui.progress: the one progress event and the one cancellation token."""

from __future__ import annotations

import threading

import pytest

from cltui.errors import Cancelled
from cltui.progress import CancelToken, ProgressEvent, fraction_of, no_progress


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
