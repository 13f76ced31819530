"""The resource history of a memory object (cltui.capture.history) on the real captures,
held against a brute-force walk over every decoded enqueue."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from cltui.capture.capture import Capture
from cltui.capture.history import HistoryUnavailable, history_of
from cltui.capture.model import ArgKind
from cltui.capture.opening import open_capture


def _offset(cap: Capture, number: int) -> int:
    pos = cap.position_of(number)
    assert pos is not None
    return int(cap.offsets[pos])


def _brute_force(cap: Capture, handle: int, created: int) -> dict[int, set[int]]:
    """enqueue number -> argument indexes that hold the object (every enqueue decoded)."""
    out: dict[int, set[int]] = {}
    for pos in range(len(cap)):
        enq = cap.enqueue(int(cap.numbers[pos]))
        for a in enq.args:
            if a.mem is not None and a.mem.handle == handle and a.mem.line_offset == created:
                out.setdefault(enq.number, set()).add(a.index)
    return out


def test_history_of_a_buffer_matches_every_decoded_launch(pyocl_pocl: Path) -> None:
    cap = open_capture(pyocl_pocl)
    enq = cap.enqueue(22)
    arg = next(a for a in enq.args if a.index == 2)
    assert arg.mem is not None
    history = history_of(cap, (22, 2))
    launches = {e.number for e in history.events if e.number is not None}
    assert launches == set(_brute_force(cap, arg.mem.handle, arg.mem.line_offset))
    assert history.events[0].access == "create" and history.events[0].number is None
    # launch 5 takes it twice (arguments 0 and 3): one event
    five = [e for e in history.events if e.number == 5]
    assert len(five) == 1 and "arg 0" in five[0].what and "arg 3" in five[0].what
    writer = history.last_writer(_offset(cap, 22))
    reader = history.next_reader(_offset(cap, 22))
    # the dumps say 6 and 14 left it unchanged: they read it; 5 changed it
    assert writer is not None and writer.number == 5
    assert reader is not None and reader.number == 23
    assert history.counts()["read"] >= 4
    # it crosses the reader's pipe whole
    again = pickle.loads(pickle.dumps(history))
    assert again.events == history.events


def test_history_of_transfers_and_images(images_svm: Path) -> None:
    cap = open_capture(images_svm)
    read = cap.enqueue(9)  # clEnqueueReadBuffer of volume_sum's output
    assert read.mem is not None
    history = history_of(cap, (9, None))
    kinds = [(e.number, e.access) for e in history.events]
    assert kinds[0] == (None, "create")
    assert (9, "read") in kinds
    writer = history.last_writer(_offset(cap, 9))
    assert writer is not None and writer.number == 3 and "volume_sum" in writer.what
    # an image created with the host's data: its creation is the last writer
    image = history_of(cap, (3, 0))
    first = image.last_writer(_offset(cap, 3))
    assert first is not None and first.number is None and "COPY_HOST_PTR" in first.what
    svm = history_of(cap, (6, 0))
    assert [e.access for e in svm.events] == ["create", "map", "unmap", "readwrite"]
    assert svm.notes  # only the base pointer is followed


def test_history_refuses_what_is_no_memory_object(pyocl_pocl: Path) -> None:
    cap = open_capture(pyocl_pocl)
    enq = cap.enqueue(22)
    assert next(a for a in enq.args if a.index == 1).kind is ArgKind.SCALAR
    with pytest.raises(HistoryUnavailable, match="argument 1 is a scalar"):
        history_of(cap, (22, 1))
    with pytest.raises(HistoryUnavailable, match="no argument 9"):
        history_of(cap, (22, 9))
    with pytest.raises(HistoryUnavailable, match="names no memory object"):
        history_of(cap, (22, None))


def test_history_on_the_large_capture(heat2d: Path) -> None:
    cap = open_capture(heat2d)
    history = history_of(cap, (122400, 0))
    assert len(history) > 150_000
    off = _offset(cap, 122400)
    writer, reader = history.last_writer(off), history.next_reader(off)
    assert writer is not None and writer.number is not None and writer.number < 122400
    assert reader is not None and reader.number is not None and reader.number > 122400
    # the neighbours hold the object: their decoded arguments name it
    for event in (writer, reader):
        assert event.number is not None
        handles = {a.mem.handle for a in cap.enqueue(event.number).args if a.mem is not None}
        assert history.handle in handles
