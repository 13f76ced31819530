"""The capture reader process (cltui.capture.background): what it sends back is the capture
opened in-process, its calls decode the same enqueues, and cancel / close / a dead child are
reported, never waited on."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from cltui.capture import NotACapture
from cltui.capture.background import (
    CallCancelled,
    CaptureReader,
    ReaderGone,
    decode_enqueue,
    open_in_child,
    reader_of,
)
from cltui.capture.capture import Capture
from cltui.capture.log import IndexCancelled
from cltui.capture.model import EnqueueKind
from cltui.capture.opening import open_capture
from cltui.progress import CancelToken
from tests.conftest import SMALL_CAPTURES, capture_path

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)


@pytest.mark.parametrize("name", SMALL_CAPTURES)
def test_the_sent_capture_is_the_capture(name: str) -> None:
    path = capture_path(name)
    here = open_capture(path)
    fractions: list[float | None] = []
    there = open_in_child(path, lambda e: fractions.append(e.fraction))
    reader = reader_of(there)
    assert reader is not None and reader.alive
    try:
        for field in ("numbers", "offsets", "kinds", "kernel_ids", "device_times"):
            assert np.array_equal(getattr(here, field), getattr(there, field)), field
        assert here.kernel_names == there.kernel_names
        assert [str(p) for p in here.problems] == [str(p) for p in there.problems]
        assert here.info() == there.info()
        assert fractions and fractions[-1] == 1.0
        kernels = [
            int(n) for n, k in zip(here.numbers, here.kinds, strict=True) if k == EnqueueKind.KERNEL
        ]
        for number in [int(here.numbers[0]), *kernels[:5]]:
            a = here.enqueue(number)
            b = reader.call(decode_enqueue, number)
            c = there.enqueue(number)  # the parent's copy decodes too (its log is mapped again)
            assert repr(a) == repr(b) == repr(c)
    finally:
        reader.close()
    assert not reader.alive
    with pytest.raises(ReaderGone):
        reader.call(decode_enqueue, 0)


def _slow(cap: Capture, seconds: float) -> int:
    time.sleep(seconds)
    return len(cap)


def _stuck_open(path: Path, progress: object, cancel: object) -> Capture:
    time.sleep(600)
    raise AssertionError("never")


def test_cancel_and_a_dead_child(images_svm: Path) -> None:
    reader = CaptureReader(images_svm)
    cap = reader.open()
    assert reader.call(_slow, 0.0) == len(cap)
    cancel = CancelToken()
    threading.Timer(0.1, cancel.cancel).start()
    with pytest.raises(CallCancelled):
        reader.call(_slow, 1.0, cancel=cancel)
    # the given-up answer is dropped: the next call gets its own
    assert reader.call(decode_enqueue, int(cap.numbers[0])).number == int(cap.numbers[0])
    os.kill(reader.pid, signal.SIGKILL)
    with pytest.raises(ReaderGone):
        reader.call(_slow, 0.0)
    assert not reader.alive


def test_cancel_kills_a_stuck_open(images_svm: Path) -> None:
    reader = CaptureReader(images_svm, _stuck_open)
    cancel = CancelToken()
    threading.Timer(0.2, cancel.cancel).start()
    with pytest.raises(IndexCancelled):
        reader.open(cancel=cancel)
    assert not reader.alive


def test_errors_come_back_as_one_line(tmp_path: Path) -> None:
    with pytest.raises(NotACapture, match="is not a capture folder"):
        open_in_child(tmp_path)
