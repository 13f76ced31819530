"""Fuzzing the log parser: damaged logs open (or give CaptureError) and never break enqueue()."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cltui.capture import CaptureError, open_capture
from cltui.capture.log import build_index

from . import hang
from .conftest import capture_path

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def base() -> Iterator[tuple[Path, bytes]]:
    root = capture_path("images_svm_pocl")
    yield root, (root / "clintercept_log.txt").read_bytes()


def _capture_with_log(root: Path, log: bytes, work: Path) -> Path:
    """A fresh directory: the damaged log plus links to the real capture's other entries."""
    d = Path(tempfile.mkdtemp(dir=work))
    for entry in os.listdir(root):
        if entry != "clintercept_log.txt":
            os.symlink(root / entry, d / entry)
    (d / "clintercept_log.txt").write_bytes(log)
    return d


def _exercise(path: Path) -> None:
    try:
        cap = open_capture(path)
    except CaptureError as e:
        assert str(e) and "\n" not in str(e)
        return
    try:
        rows = cap.rows(0, len(cap))
        assert len(rows) == len(cap)
        for n in cap.numbers.tolist():
            enq = cap.enqueue(int(n))
            bad = [p for p in enq.problems if "could not decode this enqueue" in p.message]
            assert not bad, bad
            for p in enq.problems:
                assert "\n" not in p.message
        json.dumps(cap.info())
        cap.find("sample", regex=False)
    finally:
        cap.close()


@SETTINGS
@given(data=st.data())
def test_truncated_logs(base: tuple[Path, bytes], tmp_path: Path, data: st.DataObject) -> None:
    root, log = base
    cut = data.draw(st.integers(0, len(log)))
    _exercise(_capture_with_log(root, log[:cut], tmp_path))


@SETTINGS
@given(data=st.data())
def test_nul_runs_and_random_bytes(
    base: tuple[Path, bytes], tmp_path: Path, data: st.DataObject
) -> None:
    root, log = base
    damaged = bytearray(log)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(damaged)))
        how = data.draw(st.sampled_from(["nul", "bytes", "cut", "dup"]))
        if how == "nul":
            damaged[at:at] = b"\x00" * data.draw(st.integers(1, 6000))
        elif how == "bytes":
            damaged[at:at] = data.draw(st.binary(min_size=1, max_size=64))
        elif how == "cut":
            damaged[at : at + data.draw(st.integers(1, 400))] = b""
        else:
            # a chunk of the log repeated elsewhere: handles and counters out of order
            src = data.draw(st.integers(0, len(log)))
            damaged[at:at] = log[src : src + data.draw(st.integers(1, 2000))]
    _exercise(_capture_with_log(root, bytes(damaged), tmp_path))


LOGLIKE = st.lists(
    st.sampled_from(
        [
            b">>>> Time: 1 clEnqueueNDRangeKernel( k ): queue = 0x1, kernel = 0x2, "
            b"global_work_size = < 4 x 2 >, local_work_size = < NULL >; EnqueueCounter: 3\n",
            b">>>> clEnqueueReadBuffer: queue = 0x1, buffer = 0x5, blocking, offset = 0, "
            b"cb = 4, ptr = 0x9; EnqueueCounter: 1\n",
            b"<<<< clCreateBuffer: returned 0x5 -> CL_SUCCESS\n",
            b">>>> clCreateBuffer: context = 0x1, flags =  (0), size = 4, host_ptr = (nil)\n",
            b">>>> clSetKernelArg( k ): kernel = 0x2, index = 0, size = 8, value = 0x5\n",
            b">>>> clSetKernelArg( k ): kernel = 0x2, index = 1, size = 8, value = CL_SAMPLER\n",
            b"; EnqueueCounter: 9\n",
            b"<<<< clCreateKernel: returned 0x2 -> CL_SUCCESS\n",
            b">>>> clCreateKernel: program = 0x7, kernel_name = k; EnqueueCounter: 0\n",
            b"Device Time for k (enqueue 3) = 1 ns (queued -> submit), 2 ns (submit -> start), "
            b"3 ns (start -> end)\n",
            b"-------> Start of Build Log:\n",
            b"<------- End of Build Log\n",
            b"Build Info for program 0x7 (0000_ABCDEF01_0000_12345678) for 1 device(s):\n",
            b"-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=\n",
            b"\x00\x00\x00\x00",
            b"\xff\xfe garbage \x80\n",
            b"<<<< clEnqueueNDRangeKernel created event = 0x3 -> CL_SUCCESS\n",
            b"Control DumpDir is set to non-default value: /x\n",
        ]
    ),
    max_size=40,
)


@SETTINGS
@given(parts=LOGLIKE, tail=st.binary(max_size=80))
def test_loglike_garbage_index(parts: list[bytes], tail: bytes, tmp_path: Path) -> None:
    p = Path(tempfile.mkdtemp(dir=tmp_path)) / "clintercept_log.txt"
    p.write_bytes(b"".join(parts) + tail)
    idx = build_index(p)
    try:
        assert len(idx.numbers) == len(idx.offsets) == len(idx.kinds) == len(idx.kernel_ids)
        assert idx.device_times.shape == (len(idx.numbers), 3)
        for off in idx.offsets.tolist():
            assert ">>>> " in idx.read_line(int(off))
    finally:
        idx.close()
    _exercise(p.parent)


# ---- pathological inputs: every kind of benchmarks/pathological.py, bounded in time ----


def _patho_template() -> tuple[bytes, bytes, bytes]:
    return hang.pathological().split_template(
        capture_path("pyopencl_lib_pocl") / "clintercept_log.txt"
    )


def _exercise_bounded(root: Path, log: bytes, work: Path, desc: str) -> None:
    """Open the damaged capture, decode its first and last enqueues, all in a child with
    a deadline (a hang fails loudly, naming the input)."""
    d = _capture_with_log(root, log, work)

    def run() -> None:
        idx = build_index(d / "clintercept_log.txt")
        idx.close()
        try:
            cap = open_capture(d)
        except CaptureError as e:
            assert str(e) and "\n" not in str(e)
            return
        try:
            nums = cap.numbers.tolist()
            for n in nums[:10] + nums[-10:]:
                cap.enqueue(int(n))
            json.dumps(cap.info())
        finally:
            cap.close()

    hang.bounded(desc, run)


_PATHO_KINDS = ["nul_head", "nul_middle", "nul_tail", "nul_runs", "huge_line", "one_line",
                "repeated_tags", "orphan_tags", "garbage", "one_byte", "all_nul"]  # fmt: skip


@pytest.mark.child
@pytest.mark.parametrize("kind", _PATHO_KINDS)
def test_pathological_logs_are_read_in_bounded_time(kind: str, tmp_path: Path) -> None:
    mod = hang.pathological()
    log = mod.make(kind, 2 * 1024 * 1024, _patho_template())
    root = capture_path("pyopencl_lib_pocl")
    _exercise_bounded(root, log, tmp_path, f"a 2 MB log: {kind}")


def _pathological_piece(data: st.DataObject) -> bytes:
    """One piece of damage: a NUL run, a megabyte line, a tag repeated, garbage."""
    tags = hang.pathological().TAGS
    how = data.draw(st.sampled_from(["nul", "line", "tags", "garbage"]))
    n = data.draw(st.integers(1, 400_000))
    if how == "nul":
        return b"\x00" * n
    if how == "line":
        return data.draw(st.sampled_from([b"x", b" ", b"9", b"("])) * n
    if how == "tags":
        t = data.draw(st.sampled_from(tags))
        sep = data.draw(st.sampled_from([b"", b"\n", b" "]))
        return (t + sep) * max(1, n // (len(t) + len(sep)))
    return os.urandom(min(n, 100_000))


@pytest.mark.child
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_pathological_damage_anywhere(
    base: tuple[Path, bytes], tmp_path: Path, data: st.DataObject
) -> None:
    root, log = base
    damaged = bytearray(log)
    what = []
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(damaged)))
        piece = _pathological_piece(data)
        damaged[at:at] = piece
        what.append(f"{len(piece)} bytes {piece[:12]!r} at {at}")
    if data.draw(st.booleans()):
        damaged = bytearray(damaged.replace(b"\n", b" "))  # one line
        what.append("one line")
    _exercise_bounded(root, bytes(damaged), tmp_path, "; ".join(what))
