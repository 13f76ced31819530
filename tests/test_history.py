"""The resource history of a memory object (cltui.capture.history) on the real captures,
held against a brute-force walk over every decoded enqueue."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from click.testing import CliRunner

from cltui.capture.capture import Capture
from cltui.capture.history import (
    MEMORY_ARGS,
    HistoryUnavailable,
    ResourceHistory,
    _cache,
    _object_of,
    history_of,
    neighbours_of,
)
from cltui.capture.history_scan import WHOLE, ObjectScan
from cltui.capture.model import ArgKind
from cltui.capture.opening import open_capture
from cltui.cli import main


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


@pytest.mark.slow  # CPU seconds on a real capture: the full tier's (./dev test --fast leaves it)
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


@pytest.mark.child
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


# ------------------------------------------------------------------ the neighbours alone
def _memory_targets(cap: Capture) -> list[tuple[int, int | None]]:
    """(enqueue, argument) of every memory argument of every logged enqueue (None: the
    object a transfer names)."""
    out: list[tuple[int, int | None]] = []
    for n in (int(x) for x in cap.numbers):
        pos = cap.position_of(n)
        if pos is None or int(cap.offsets[pos]) < 0:
            continue
        enq = cap.enqueue(n)
        out += [(n, a.index) for a in enq.args if a.kind in MEMORY_ARGS and a.mem is not None]
        if enq.mem is not None and not enq.args:
            out.append((n, None))
    return out


@pytest.mark.slow  # CPU seconds on a real capture: the full tier's (./dev test --fast leaves it)
@pytest.mark.parametrize("which", ["pyocl_pocl", "images_svm", "opencv"])
def test_neighbours_found_window_by_window_are_the_whole_historys(
    which: str, request: pytest.FixtureRequest
) -> None:
    """Windows of 256 bytes: most neighbours lie windows away, and most launches take the
    object through a clSetKernelArg before their window (opencv reuses a kernel handle for
    another kernel: its arguments are the new kernel's)."""
    cap = open_capture(request.getfixturevalue(which))
    checked = 0
    for where in _memory_targets(cap):
        try:
            whole = history_of(cap, where)
        except HistoryUnavailable:
            continue
        off = _offset(cap, where[0])
        scan = ObjectScan(cap, _object_of(cap, where))
        assert scan.last_writer(off, 256) == whole.last_writer(off), where
        assert scan.next_reader(off, 256) == whole.next_reader(off), where
        near = neighbours_of(cap, where)
        assert (near.last_writer, near.next_reader) == (
            whole.last_writer(off), whole.next_reader(off)
        ) and near.label == whole.label
        checked += 1
    assert checked >= 9


@pytest.mark.slow  # CPU seconds on a real capture: the full tier's (./dev test --fast leaves it)
@pytest.mark.parametrize("which", ["pyocl_pocl", "opencv"])
def test_spans_of_the_log_put_together_are_the_whole_history(
    which: str, request: pytest.FixtureRequest
) -> None:
    cap = open_capture(request.getfixturevalue(which))
    seen: set[tuple[int, int]] = set()
    for where in _memory_targets(cap):
        mem = _object_of(cap, where)
        if (mem.handle, mem.line_offset) in seen:
            continue
        seen.add((mem.handle, mem.line_offset))
        whole = [e for e in history_of(cap, where).events if e.access != "release"]
        scan = ObjectScan(cap, mem)
        pieces, lo = [], scan.start
        while lo < scan.end:
            eol = scan.mm.find(b"\n", min(scan.end, lo + 300), scan.end)
            hi = eol + 1 if eol >= 0 else scan.end
            pieces += scan.events(lo, hi)
            lo = hi
        assert pieces == whole, where
    assert len(seen) >= 40


@pytest.mark.child
def test_neighbours_on_the_large_capture_without_the_history(heat2d: Path) -> None:
    """The windowed search (a lifetime of 444 MB) finds what the whole history says, and
    ``cltui show`` prints it."""
    cap = open_capture(heat2d)
    wholes: dict[tuple[int, int], ResourceHistory] = {}
    numbers = (0, 1, 2, 5, 122367, 122396, 122400, 122419, 150000, 203990, 204010)
    for where in _memory_targets_of(cap, numbers):
        mem = _object_of(cap, where)
        scan = ObjectScan(cap, mem)
        assert scan.end - scan.start > WHOLE  # the windowed path, not the whole history
        _cache.clear()
        near = neighbours_of(cap, where)
        key = (mem.handle, mem.line_offset)
        if key not in wholes:
            wholes[key] = history_of(cap, where)
        off = _offset(cap, where[0])
        assert near.last_writer == wholes[key].last_writer(off), where
        assert near.next_reader == wholes[key].next_reader(off), where
    assert len(wholes) == 2  # the two grids
    text = CliRunner().invoke(main, ["show", str(heat2d), "122396"]).output
    h = wholes[(0x3F4FEF40, _object_of(cap, (122396, 2)).line_offset)]
    writer, reader = h.last_writer(_offset(cap, 122396)), h.next_reader(_offset(cap, 122396))
    assert writer is not None and reader is not None
    assert f"last writer: {writer.number} ({writer.what})" in text
    assert f"next reader: {reader.number} ({reader.what})" in text


def _memory_targets_of(cap: Capture, numbers: tuple[int, ...]) -> list[tuple[int, int | None]]:
    out: list[tuple[int, int | None]] = []
    for n in numbers:
        enq = cap.enqueue(n)
        out += [(n, a.index) for a in enq.args if a.kind in MEMORY_ARGS]
        if enq.mem is not None and not enq.args:
            out.append((n, None))
    return out
