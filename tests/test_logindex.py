"""The one-pass log index, checked against facts computed here from the raw log files."""

from __future__ import annotations

import mmap
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import cltui.capture.log.devtimes as li_devtimes
import cltui.capture.log.parallel as li
import cltui.capture.log.scan as li_scan
from cltui.capture.log import (
    IndexCancelled,
    LogIndex,
    build_index,
    find_logs,
    parse_ptr,
    split_kernel_name,
)
from cltui.capture.model import CaptureError, EnqueueKind
from cltui.progress import CancelToken, ProgressEvent

from .conftest import SMALL_CAPTURES, capture_path

ENTRY_RE = re.compile(
    rb"^>>>> (?:Time: \d+ )?(clEnqueue\w+)(?:\( (.*?) \))?(?:: .*?)?; EnqueueCounter: (\d+)$",
    re.MULTILINE,
)
DEVTIME_RE = re.compile(rb"^Device Time for .* \(enqueue (\d+)\) = (\d+) ns", re.MULTILINE)


def raw_facts(log: Path) -> tuple[list[int], list[str], list[str | None], dict[int, int]]:
    data = log.read_bytes()
    nums, fns, names = [], [], []
    for m in ENTRY_RE.finditer(data):
        fns.append(m.group(1).decode())
        names.append(m.group(2).decode() if m.group(2) is not None else None)
        nums.append(int(m.group(3)))
    dts = {int(m.group(1)): int(m.group(2)) for m in DEVTIME_RE.finditer(data)}
    return nums, fns, names, dts


@pytest.mark.parametrize("name", SMALL_CAPTURES)
def test_small_capture_index_matches_raw_log(name: str) -> None:
    log = capture_path(name) / "clintercept_log.txt"
    nums, fns, names, dts = raw_facts(log)
    idx = build_index(log)
    try:
        assert idx.numbers.tolist() == nums
        assert [idx.functions[i] for i in idx.function_ids] == fns
        got = [idx.kernel_names[k] if k >= 0 else None for k in idx.kernel_ids]
        assert got == names
        kernel_pos = [i for i, f in enumerate(fns) if f == "clEnqueueNDRangeKernel"]
        assert all(idx.kinds[i] == EnqueueKind.KERNEL for i in kernel_pos)
        assert int((idx.device_times[:, 0] >= 0).sum()) == len(dts)
        for pos, num in enumerate(nums):
            if num in dts:
                assert idx.device_times[pos, 0] == dts[num]
        assert idx.controls["CallLoggingEnqueueCounter"] == "true"
        assert idx.sessions == [0]
        assert idx.problems == []
        # every offset points at the entry line of that enqueue
        for pos in (0, len(nums) // 2, len(nums) - 1):
            line = idx.read_line(int(idx.offsets[pos]))
            assert line.startswith(">>>> ") and line.endswith(f"EnqueueCounter: {nums[pos]}")
    finally:
        idx.close()


def test_images_svm_objects_and_sampler_quirk(images_svm: Path) -> None:
    log = images_svm / "clintercept_log.txt"
    text = log.read_text()
    idx = build_index(log)
    try:
        buffers = [
            (m.start(), int(m.group(1), 16))
            for m in re.finditer(r"clCreateBuffer: returned (0x[0-9a-f]+)", text)
        ]
        images = re.findall(r"clCreateImage: returned (0x[0-9a-f]+)", text)
        kinds = {o.kind for lst in idx.mem.values() for _, _, o in lst}
        assert kinds == {"buffer", "image", "svm"}
        assert buffers
        for off, h in buffers:
            obj = idx.mem_at(h, len(text[:off].encode()) + 40)
            assert obj is not None and obj.kind == "buffer" and obj.handle == h
        first_img = idx.mem_at(int(images[0], 16), int(idx.offsets[0]))
        assert first_img is not None and first_img.image is not None
        assert (first_img.image.width, first_img.image.height) == (64, 48)
        assert first_img.size == 64 * 48 * 16  # RGBA float
        # sample_linear (enqueue 2): the sampler argument's counter is on its own line
        pos = int(np.flatnonzero(idx.numbers == 2)[0])
        line = idx.read_line(int(idx.offsets[pos]))
        khandle = int(re.search(r"kernel = (0x[0-9a-f]+)", line).group(1), 16)  # type: ignore[union-attr]
        krec = idx.kernel_at(khandle, int(idx.offsets[pos]))
        assert krec is not None and krec.name == "sample_linear"
        args = idx.kernel_args_at(khandle, int(idx.offsets[pos]), krec.entry_offset, 4)
        assert sorted(args) == [0, 1, 2, 3]
        assert args[1].sampler is not None and args[1].sampler.filter_mode == "CL_FILTER_LINEAR"
        assert args[1].sampler.normalized_coords and args[1].counter == 2
        assert args[3].raw == bytes.fromhex("cdcccc3c") and args[3].counter == 2
        # svm_scale (enqueue 7): an SVM pointer with an offset into a 4096-byte allocation
        pos = int(np.flatnonzero(idx.numbers == 7)[0])
        line = idx.read_line(int(idx.offsets[pos]))
        khandle = int(re.search(r"kernel = (0x[0-9a-f]+)", line).group(1), 16)  # type: ignore[union-attr]
        args = idx.kernel_args_at(khandle, int(idx.offsets[pos]), 0, 3)
        assert args[0].is_svm and args[0].pointer is not None
        alloc = idx.svm_containing(args[0].pointer, int(idx.offsets[pos]))
        assert alloc is not None and alloc.size == 4096
        assert args[0].pointer - alloc.handle == 1024
        # a __local argument: size only
        assert args[2].raw is None and args[2].size == 256
        # queue -> device
        q = re.search(r"queue = (0x[0-9a-f]+)", line).group(1)  # type: ignore[union-attr]
        rec = idx.queue_at(int(q, 16), int(idx.offsets[pos]))
        assert rec is not None and rec.device == "pthread-skylake-avx512-AMD EPYC"
    finally:
        idx.close()


def test_programs_and_build_options(pyocl_pocl: Path) -> None:
    idx = build_index(pyocl_pocl / "clintercept_log.txt")
    try:
        recs = [r for lst in idx.programs.values() for r in lst]
        numbers = sorted(r.number for r in recs if r.number is not None)
        files = sorted(int(p.name[4:8]) for p in pyocl_pocl.glob("CLI_*_source.cl"))
        assert numbers == files
        assert all(r.options_path and r.options_path.endswith("_options.txt") for r in recs)
        assert all(r.build_tag and r.build_tag.startswith(f"{r.number:04d}_") for r in recs)
        kernels = [k for lst in idx.kernels.values() for k in lst]
        text = idx.path.read_text()
        assert len(kernels) == len(re.findall(r"clCreateKernel: returned 0x", text))
        assert {k.name for k in kernels} >= {"clip_by_rank", "axpb", "run"}
    finally:
        idx.close()


def test_pyopencl_nil_and_struct_values(pyocl_pocl: Path) -> None:
    idx = build_index(pyocl_pocl / "clintercept_log.txt")
    try:
        pos = int(np.flatnonzero(idx.numbers == 14)[0])
        off = int(idx.offsets[pos])
        line = idx.read_line(off)
        kh = int(re.search(r"kernel = (0x[0-9a-f]+)", line).group(1), 16)  # type: ignore[union-attr]
        args = idx.kernel_args_at(kh, off, 0, 8)
        assert args[1].text == "(nil)" and args[1].raw == bytes(8)  # a zero 64-bit offset
        assert args[6].size == 16 and args[6].raw is not None and len(args[6].raw) == 16
    finally:
        idx.close()


@pytest.mark.child
def test_heat2d_counts_and_progress(heat2d: Path) -> None:
    # (speed is measured by benchmarks/bench_index.py, never by a timed test)
    log = heat2d / "clintercept_log.txt"
    with open(log, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        n = 0
        i = mm.find(b"EnqueueCounter")
        while i >= 0:
            n += 1
            i = mm.find(b"EnqueueCounter", i + 1)
    assert n > 204011
    seen: list[float] = []
    idx = build_index(log, progress=lambda e: seen.append(e.fraction or 0.0))
    try:
        assert len(idx.numbers) == 204011
        assert idx.numbers.tolist() == list(range(204011))
        assert int((idx.device_times[:, 0] >= 0).sum()) == 204011
        counts = np.bincount(idx.kinds, minlength=14)
        assert counts[EnqueueKind.KERNEL] == 202000
        names = [idx.kernel_names[k] for k in idx.kernel_ids[idx.kernel_ids >= 0]]
        assert names.count("heat_stencil") == 100000
        assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) > 1
        # every offset is the start of a ">>>> " line naming a clEnqueue function
        for pos in (0, 1, 102005, 204010):
            line = idx.read_line(int(idx.offsets[pos]))
            assert line.startswith(">>>> ") and f"EnqueueCounter: {pos}" in line
            assert idx.functions[idx.function_ids[pos]] in line
        # argument states of 400 launches (in reverse order, then forward): every
        # argument is set within the 64 KiB before its launch here
        data = idx._mm
        assert data is not None
        for order in (-1, 1):
            for pos in range(122000, 122400)[::order]:
                off = int(idx.offsets[pos])
                m = KERNEL_RE.search(idx.read_line(off))
                if m is None:
                    continue
                kh = int(m.group(1), 16)
                krec = idx.kernel_at(kh, off)
                assert krec is not None and krec.name.startswith("heat_")
                nargs = idx.num_args_after(krec.exit_offset)
                assert nargs is not None and nargs > 0
                want = reference_args(data[off - 65536 : off], kh, 1 << 20, 0, nargs)
                assert sorted(want) == list(range(nargs))
                got = idx.kernel_args_at(kh, off, krec.entry_offset, nargs)
                assert {i: a.offset for i, a in got.items()} == {
                    i: o + off - 65536 for i, o in want.items()
                }
    finally:
        idx.close()


def _write(p: Path, data: bytes) -> Path:
    p.write_bytes(data)
    return p


SYNTH = (
    b"-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=\n"
    b"CLIntercept (64-bit) is loading...\n"
    b"Control CallLogging is set to non-default value: true\n"
    b"... loading complete.\n"
    b">>>> Time: 1 clCreateBuffer: context = 0x1, flags = CL_MEM_READ_WRITE (1), size = 64, "
    b"host_ptr = (nil); EnqueueCounter: 0\n"
    b"<<<< Time: 2 clCreateBuffer: returned 0xb0 -> CL_SUCCESS\n"
    b">>>> Time: 3 clEnqueueWriteBuffer: queue = 0x9, buffer = 0xb0, blocking, offset = 0, "
    b"cb = 64, ptr = 0x5; EnqueueCounter: 0\n"
    b"<<<< Time: 4 clEnqueueWriteBuffer -> CL_SUCCESS\n"
    b">>>> Time: 5 clReleaseMemObject: [ ref count = 1 ] mem = 0xb0; EnqueueCounter: 1\n"
    b"<<<< Time: 6 clReleaseMemObject: [ ref count = 0 ] -> CL_SUCCESS\n"
    b">>>> Time: 7 clCreateBuffer: context = 0x1, flags = CL_MEM_READ_ONLY (4), size = 128, "
    b"host_ptr = (nil); EnqueueCounter: 1\n"
    b"<<<< Time: 8 clCreateBuffer: returned 0xb0 -> CL_SUCCESS\n"
    b">>>> Time: 9 clEnqueueReadBuffer: queue = 0x9, buffer = 0xb0, non-blocking, offset = 0, "
    b"cb = 128, ptr = 0x5; EnqueueCounter: 1\n"
    b"<<<< Time: 10 clEnqueueReadBuffer -> CL_SUCCESS\n"
    b"Device Time for clEnqueueReadBuffer (enqueue 1) = 1 ns (queued -> submit), 2 ns "
    b"(submit -> start), 3 ns (start -> end)\n"
    b"CLIntercept is shutting down...\n"
)


def test_handle_recycling(tmp_path: Path) -> None:
    idx = build_index(_write(tmp_path / "clintercept_log.txt", SYNTH))
    try:
        assert idx.numbers.tolist() == [0, 1]
        assert idx.kinds.tolist() == [EnqueueKind.WRITE, EnqueueKind.READ]
        first = idx.mem_at(0xB0, int(idx.offsets[0]))
        second = idx.mem_at(0xB0, int(idx.offsets[1]))
        assert first is not None and first.size == 64
        assert second is not None and second.size == 128 and second.flags == "CL_MEM_READ_ONLY"
        assert idx.device_times.tolist() == [[-1, -1, -1], [1, 2, 3]]
        assert idx.problems == []
    finally:
        idx.close()


def test_nul_run_leading_fragment_and_two_sessions(tmp_path: Path) -> None:
    fragment = b"<<<< Time: 9 clGetPlatformInfo -> CL_SUCCESS\n"
    data = SYNTH + b"\x00" * 5000 + fragment + SYNTH
    idx = build_index(_write(tmp_path / "clintercept_log.txt", b"xx\n" + data))
    try:
        assert idx.numbers.tolist() == [0, 1, 0, 1]
        assert len(idx.sessions) == 2
        msgs = " ".join(p.message for p in idx.problems)
        assert "NUL bytes" in msgs and "banner" in msgs and "2 sessions" in msgs
    finally:
        idx.close()


def test_truncated_and_empty_logs(tmp_path: Path) -> None:
    cut = SYNTH[: SYNTH.index(b"<<<< Time: 10")]
    idx = build_index(_write(tmp_path / "clintercept_log.txt", cut))
    try:
        assert idx.numbers.tolist() == [0, 1]
        assert any("shutting down" in p.message for p in idx.problems)
    finally:
        idx.close()
    idx = build_index(_write(tmp_path / "clintercept_log-1.txt", b""))
    assert len(idx.numbers) == 0 and idx.problems[0].message == "the call log is empty"
    assert [p.name for p in find_logs(tmp_path)] == ["clintercept_log.txt", "clintercept_log-1.txt"]
    with pytest.raises(CaptureError, match="cannot read"):
        build_index(tmp_path / "missing.txt")


def test_cancel(tmp_path: Path) -> None:
    ev = CancelToken()
    ev.cancel()
    with pytest.raises(IndexCancelled):
        build_index(_write(tmp_path / "clintercept_log.txt", SYNTH), cancel=ev)


def test_small_helpers() -> None:
    assert parse_ptr("(nil)") == 0
    assert parse_ptr("0x10") == 16
    assert parse_ptr("00000123ABCD0000") == 0x123ABCD0000
    assert parse_ptr("garbage") is None
    assert split_kernel_name("( void foo<int>(int*) ): queue = 0x1") == (
        "void foo<int>(int*)",
        "queue = 0x1",
    )
    assert split_kernel_name(": queue = 0x1") == (None, "queue = 0x1")


def test_logindex_is_a_dataclass_with_arrays(images_svm: Path) -> None:
    idx = build_index(images_svm / "clintercept_log.txt")
    assert isinstance(idx, LogIndex)
    assert idx.numbers.dtype == np.int64 and idx.kinds.dtype == np.uint8
    assert idx.kernel_ids.dtype == np.int32 and idx.device_times.shape == (len(idx.numbers), 3)
    idx.close()
    assert idx.read_line(0) == ""


OBJECTS = (
    b"-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=\n"
    b">>>> clCreateCommandQueue: context = 0x1, device = Oclgrind Simulator "
    b"(CL_DEVICE_TYPE_ACCELERATOR) (0x2), properties = CL_QUEUE_PROFILING_ENABLE (2); "
    b"EnqueueCounter: 0\n"
    b"<<<< clCreateCommandQueue: returned 0x9 -> CL_SUCCESS\n"
    b">>>> clCreateBuffer: context = 0x1, flags = CL_MEM_READ_WRITE (1), size = 256, "
    b"host_ptr = (nil); EnqueueCounter: 0\n"
    b"<<<< clCreateBuffer: returned 0xb0 -> CL_SUCCESS\n"
    b">>>> clCreateSubBuffer: buffer = 0xb0, flags = CL_MEM_READ_ONLY (4), "
    b"region = { origin = 128, size = 64 }; EnqueueCounter: 0\n"
    b"<<<< clCreateSubBuffer: returned 0xb1 -> CL_SUCCESS\n"
    b">>>> clSharedMemAllocINTEL: context = 0x1, device = Oclgrind Simulator "
    b"(CL_DEVICE_TYPE_ACCELERATOR) (0x2), properties = (nil), size = 4096, alignment = 0; "
    b"EnqueueCounter: 0\n"
    b"<<<< clSharedMemAllocINTEL: returned 0x7000 -> CL_SUCCESS\n"
    b">>>> clCreateImage2D: context = 0x1, flags = CL_MEM_READ_ONLY (4), "
    b"format->channel_order = CL_RG, format->channel_data_type = CL_UNSIGNED_INT16, "
    b"image_width = 8, image_height = 4, image_row_pitch = 0, host_ptr = (nil) ; "
    b"EnqueueCounter: 0\n"
    b"<<<< clCreateImage2D: returned 0xc0 -> CL_SUCCESS\n"
    b">>>> clCreateProgramWithSource: context = 0x1, count = 1; EnqueueCounter: 0\n"
    b"<<<< clCreateProgramWithSource: returned 0xd0, program number = 0003 -> CL_SUCCESS\n"
    b">>>> clCreateKernelsInProgram: program = 0xd0; EnqueueCounter: 0\n"
    b"<<<< clCreateKernelsInProgram: kernels = [ 0xe0, 0xe1 ] -> CL_SUCCESS\n"
    b">>>> clEnqueueTask( k ): queue = 0x9, kernel = 0xe1; EnqueueCounter: 0\n"
    b"<<<< clEnqueueTask -> CL_SUCCESS\n"
    b"CLIntercept is shutting down...\n"
)


def test_object_tables(tmp_path: Path) -> None:
    idx = build_index(_write(tmp_path / "clintercept_log.txt", OBJECTS))
    try:
        at = int(idx.offsets[0])
        assert idx.kinds.tolist() == [EnqueueKind.TASK]
        sub = idx.mem_at(0xB1, at)
        assert sub is not None and (sub.kind, sub.parent, sub.origin, sub.size) == (
            "subbuffer",
            0xB0,
            128,
            64,
        )
        usm = idx.svm_containing(0x7000 + 100, at)
        assert usm is not None and usm.kind == "usm" and usm.size == 4096
        img = idx.mem_at(0xC0, at)
        assert img is not None and img.image is not None and img.size == 8 * 4 * 4
        q = idx.queue_at(0x9, at)
        assert q is not None and q.device == "Oclgrind Simulator"
        k = idx.kernel_at(0xE1, at)  # found lazily from clCreateKernelsInProgram
        assert k is not None and k.program == 0xD0
        prog = idx.program_at(0xD0, at)
        assert prog is not None and prog.number == 3
        assert [p.message for p in idx.problems] == ["the log header lists no controls"]
    finally:
        idx.close()


def _snapshot(idx: LogIndex) -> dict[str, Any]:
    """Everything an index holds, in comparable form."""

    def table(t: dict[int, list[Any]]) -> dict[int, list[str]]:
        return {k: [repr(x) for x in v] for k, v in sorted(t.items())}

    return {
        "numbers": idx.numbers.tolist(),
        "offsets": idx.offsets.tolist(),
        "kinds": idx.kinds.tolist(),
        "functions": [idx.functions[i] for i in idx.function_ids],
        "kernels": [idx.kernel_names[k] if k >= 0 else None for k in idx.kernel_ids],
        "device_times": idx.device_times.tolist(),
        "dtypes": [
            str(a.dtype)
            for a in (idx.numbers, idx.offsets, idx.kinds, idx.function_ids, idx.kernel_ids)
        ],
        "controls": idx.controls,
        "sessions": idx.sessions,
        "shutdowns": idx.shutdowns,
        "problems": [repr(p) for p in idx.problems],
        "mem": table(idx.mem),
        "kernel_table": table(idx.kernels),
        "programs": table(idx.programs),
        "queues": table(idx.queues),
        "samplers": table(idx.samplers),
        "name_mapping": idx.name_mapping,
        "replay_lines": idx.replay_lines,
    }


def _index(log: Path, **kw: Any) -> dict[str, Any]:
    idx = build_index(log, **kw)
    try:
        return _snapshot(idx)
    finally:
        idx.close()


@pytest.fixture
def tiny_pieces_in_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Force the worker-process path with pieces of a few KiB (many piece boundaries)."""
    monkeypatch.setattr(li, "PARALLEL_MIN", 0)
    monkeypatch.setattr(li, "MIN_PIECE", 1)
    monkeypatch.setattr(li, "CHUNK", 4096)
    monkeypatch.setattr(li_devtimes, "CHUNK", 4096)
    monkeypatch.setattr(li, "_workers", lambda: 2)


@pytest.mark.child
@pytest.mark.parametrize("name", ["images_svm_pocl", "pyopencl_lib_oclgrind"])
def test_workers_and_small_pieces_give_the_same_index(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = capture_path(name) / "clintercept_log.txt"
    whole = _index(log)
    assert whole["numbers"] and whole["mem"] and whole["kernel_table"]
    monkeypatch.setattr(li, "CHUNK", 4096)
    monkeypatch.setattr(li_devtimes, "CHUNK", 4096)
    assert _index(log) == whole  # in this process, many pieces
    monkeypatch.setattr(li, "PARALLEL_MIN", 0)
    monkeypatch.setattr(li, "MIN_PIECE", 1)
    monkeypatch.setattr(li, "_workers", lambda: 2)
    seen: list[float | None] = []
    assert _index(log, progress=lambda e: seen.append(e.fraction)) == whole  # in worker processes
    assert len(seen) > 2 and seen == sorted(seen) and seen[-1] == 1.0


def _record_workers(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    pids: list[int] = []
    fork = li._fork_worker

    def recording(*a: Any) -> tuple[int, int]:
        pid, fd = fork(*a)
        pids.append(pid)
        return pid, fd

    monkeypatch.setattr(li, "_fork_worker", recording)
    return pids


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.child
def test_cancel_stops_the_workers(
    tmp_path: Path, tiny_pieces_in_workers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _write(tmp_path / "clintercept_log.txt", SYNTH * 200)
    pids = _record_workers(monkeypatch)
    ev = CancelToken()
    seen: list[float | None] = []

    def progress(event: ProgressEvent) -> None:
        seen.append(event.fraction)
        ev.cancel()

    with pytest.raises(IndexCancelled):
        build_index(log, progress=progress, cancel=ev)
    assert len(seen) == 1 and seen[0] is not None and seen[0] < 1.0
    assert len(pids) == 2 and all(_gone(p) for p in pids)


@pytest.mark.child
def test_a_failing_or_dying_worker_is_a_capture_error(
    tmp_path: Path, tiny_pieces_in_workers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _write(tmp_path / "clintercept_log.txt", SYNTH * 200)
    pids = _record_workers(monkeypatch)

    def no_memory(*a: Any) -> None:
        raise MemoryError("no room")

    monkeypatch.setattr(li, "_scan_piece", no_memory)
    with pytest.raises(CaptureError, match=r"^cannot index clintercept_log.txt: MemoryError"):
        build_index(log)

    def dying(*a: Any) -> None:
        os._exit(9)

    monkeypatch.setattr(li, "_scan_piece", dying)
    with pytest.raises(CaptureError, match="a worker process died"):
        build_index(log)
    assert len(pids) == 4 and all(_gone(p) for p in pids)


def _no_counters(data: bytes) -> bytes:
    return re.sub(rb"; EnqueueCounter: \d+", b"", data)


@pytest.mark.child
def test_enqueues_without_counters_are_numbered_by_order(
    tmp_path: Path, tiny_pieces_in_workers: None
) -> None:
    # the first enqueue has a counter (5), the next ones none: 6, 7, ... across pieces
    body = SYNTH.split(b"Device Time")[0].split(b"... loading complete.\n")[1]
    body = _no_counters(body)
    head = SYNTH.split(b">>>> Time: 1 ")[0]
    first = (
        b">>>> Time: 0 clEnqueueMarker: queue = 0x9; EnqueueCounter: 5\n"
        b"<<<< Time: 0 clEnqueueMarker -> CL_SUCCESS\n"
    )
    data = head + first + body * 300 + b"CLIntercept is shutting down...\n"
    log = _write(tmp_path / "clintercept_log.txt", data)
    idx = build_index(log)
    try:
        assert idx.numbers.tolist() == list(range(5, 5 + 1 + 600))
        assert [p.message for p in idx.problems] == [
            "600 enqueue lines have no EnqueueCounter (numbered by order)"
        ]
        # a buffer created without a counter: the number the next enqueue gets
        second = idx.mem_at(0xB0, int(idx.offsets[2]))
        assert second is not None and second.size == 128 and second.created_at == 7
    finally:
        idx.close()


def test_device_time_past_int64_is_dropped(tmp_path: Path) -> None:
    big = SYNTH.replace(b"= 1 ns (queued", b"= 99999999999999999999999 ns (queued")
    idx = build_index(_write(tmp_path / "clintercept_log.txt", big))
    try:
        assert idx.numbers.tolist() == [0, 1]
        assert idx.device_times.tolist() == [[-1, -1, -1], [-1, -1, -1]]
    finally:
        idx.close()


@pytest.mark.child
def test_device_times_with_two_sessions_go_to_the_latest_enqueue(
    tmp_path: Path, tiny_pieces_in_workers: None
) -> None:
    idx = build_index(_write(tmp_path / "clintercept_log.txt", SYNTH + SYNTH))
    try:
        assert idx.numbers.tolist() == [0, 1, 0, 1]
        assert idx.device_times.tolist() == [[-1, -1, -1]] * 3 + [[1, 2, 3]]
        assert not any("Device Time" in p.message for p in idx.problems)
    finally:
        idx.close()


@pytest.mark.child
def test_device_time_before_its_entry_line_and_one_without_entry(
    tmp_path: Path, tiny_pieces_in_workers: None
) -> None:
    early = (
        b"Device Time for clEnqueueWriteBuffer (enqueue 0) = 7 ns (queued -> submit), 8 ns "
        b"(submit -> start), 9 ns (start -> end)\n"
        b"Device Time for clEnqueueWriteBuffer (enqueue 5) = 7 ns (queued -> submit), 8 ns "
        b"(submit -> start), 9 ns (start -> end)\n"
    )
    cut = SYNTH.index(b">>>> Time: 1 ")
    data = SYNTH[:cut] + early + b"x" * 9000 + b"\n" + SYNTH[cut:]
    idx = build_index(_write(tmp_path / "clintercept_log.txt", data))
    try:
        assert idx.device_times.tolist() == [[7, 8, 9], [1, 2, 3]]
        assert [p.message for p in idx.problems] == [
            "1 Device Time lines name enqueues that have no entry line"
        ]
    finally:
        idx.close()


# ---- kernel argument state (kernel_args_at) against a plain line-by-line reading ----
SETARG_RE = re.compile(
    rb"^>>>> (?:Time: \d+ )?clSetKernelArg(?:SVMPointer|MemPointerINTEL)?\( .*?: "
    rb"kernel = (0x[0-9a-f]+|[0-9A-F]{16}), index = (\d+), ",
    re.MULTILINE,
)
KERNEL_RE = re.compile(r"kernel = (0x[0-9a-f]+|[0-9A-F]{16})")


def reference_args(
    data: bytes, kernel: int, at: int, stop: int, nargs: int | None
) -> dict[int, int]:
    """index -> offset of the latest clSetKernelArg line of ``kernel`` in [stop, at); with
    every index below ``nargs`` set: only the lines from the earliest of those on."""
    latest: dict[int, int] = {}
    for m in SETARG_RE.finditer(data, stop, at):
        if int(m.group(1), 16) == kernel:
            latest[int(m.group(2))] = m.start()
    if nargs is not None and all(i in latest for i in range(nargs)):
        if nargs == 0:
            return {}
        first = min(latest[i] for i in range(nargs))
        latest = {i: o for i, o in latest.items() if o >= first}
    return latest


def _kernel_calls(idx: LogIndex) -> list[tuple[int, int, int, int | None]]:
    """(enqueue offset, kernel handle, stop, nargs) of every kernel enqueue."""
    out = []
    for pos in np.flatnonzero(idx.kinds == EnqueueKind.KERNEL):
        off = int(idx.offsets[pos])
        m = KERNEL_RE.search(idx.read_line(off))
        assert m is not None
        kh = int(m.group(1), 16)
        krec = idx.kernel_at(kh, off)
        stop = krec.entry_offset if krec is not None else 0
        nargs = idx.num_args_after(krec.exit_offset) if krec is not None else None
        out.append((off, kh, stop, nargs))
    return out


@pytest.mark.parametrize("name", SMALL_CAPTURES)
def test_kernel_args_match_the_log_in_any_order(name: str) -> None:
    log = capture_path(name) / "clintercept_log.txt"
    data = log.read_bytes()
    calls = _kernel_calls(build_index(log))
    assert calls
    want = {
        (off, kh, stop, n): reference_args(data, kh, off, stop, n)
        for off, kh, stop, nargs in calls
        for n in (nargs, None)
    }
    keys = list(want)  # in log order
    orders = [keys, keys[::-1], keys[1::2] + keys[::2]]
    for order in orders:  # the per-kernel states kept between calls must not change results
        idx = build_index(log)
        try:
            for key in order:
                off, kh, stop, n = key
                got = idx.kernel_args_at(kh, off, stop, n)
                assert {i: a.offset for i, a in got.items()} == want[key], key
                assert all(a.index == i for i, a in got.items())
        finally:
            idx.close()


def _kline(t: int, kh: bytes, i: int, value: bytes, counter: int, name: bytes = b"k") -> bytes:
    return (
        b">>>> Time: %d clSetKernelArg( %s ): kernel = %s, index = %d, size = 4, value = %s; "
        b"EnqueueCounter: %d\n<<<< Time: %d clSetKernelArg -> CL_SUCCESS\n"
        % (t, name, kh, i, value, counter, t)
    )


def _enq(kh: bytes, counter: int) -> bytes:
    return (
        b">>>> Time: 1 clEnqueueNDRangeKernel( k ): queue = 0x9, kernel = %s, "
        b"global_work_size = < 4 >, local_work_size = < 1 >, event_wait_list = NULL; "
        b"EnqueueCounter: %d\n<<<< Time: 2 clEnqueueNDRangeKernel -> CL_SUCCESS\n" % (kh, counter)
    )


def test_kernel_args_windows_stops_and_fallbacks(tmp_path: Path) -> None:
    head = SYNTH.split(b">>>> Time: 1 clCreateBuffer")[0]
    filler = b">>>> Time: 3 clGetPlatformInfo: param_name = 0x902\n" * 2000  # ~100 KB
    a, b, w = b"0xaa", b"0x1aa", b"00000000000000CC"
    data = head + _kline(1, a, 0, b"0x1", 0) + _kline(1, a, 3, b"0x3", 0)  # 3: past nargs
    data += _kline(1, w, 0, b"0x7", 0) + filler  # a Windows-style handle
    data += _kline(1, a, 1, b"0x2", 0) + _kline(1, b, 1, b"0x9", 0) + filler
    data += _enq(a, 0) + _enq(w, 1) + filler
    # a kernel name that names another handle first: the kernel's own pattern decides
    data += _kline(1, a, 0, b"0x5", 2, b"odd: kernel = 0xbb, index = 1, x")
    data += _enq(a, 2) + b"CLIntercept is shutting down...\n"
    log = _write(tmp_path / "clintercept_log.txt", data)
    for order in ([0, 1, 2], [2, 1, 0], [1, 2, 0]):
        idx = build_index(log)
        try:
            offs = [int(o) for o in idx.offsets]
            assert len(offs) == 3
            got = {}
            for k in order:
                kh = 0xCC if k == 1 else 0xAA
                got[k] = idx.kernel_args_at(kh, offs[k], 0, 2)
            # index 1 is set ~100 KB before enqueue 0, index 0 further back
            assert {i: a.text for i, a in got[0].items()} == {0: "0x1", 1: "0x2", 3: "0x3"}
            assert {i: a.text for i, a in got[1].items()} == {0: "0x7"}  # index 1 never set
            # enqueue 2: index 0 is set again, index 1 still from before enqueue 0; index 3
            # was set before index 1's latest line, so it no longer counts
            assert {i: a.text for i, a in got[2].items()} == {0: "0x5", 1: "0x2"}
            assert got[2][0].counter == 2 and got[2][0].raw == (5).to_bytes(4, "little")
            assert idx.kernel_args_at(0x1AA, offs[0], 0, None)[1].text == "0x9"
            assert idx.kernel_args_at(0xAA, offs[0], 0, 0) == {}
            assert idx.kernel_args_at(0xAA, offs[0], offs[0], 2) == {}
        finally:
            idx.close()


def _cuts_reference(text: bytes, step: int) -> list[tuple[int, int]]:
    """The pieces as the index cut them through the map (bytes.rfind / find)."""
    cuts, pos = [], 0
    while pos < len(text):
        end = min(len(text), pos + step)
        if end < len(text):
            nl = text.rfind(b"\n", pos, end)
            if nl > pos:
                end = nl + 1
            # else: a line longer than the step is cut where the step ends
        cuts.append((pos, end))
        pos = end
    return cuts


@pytest.mark.parametrize(
    "text",
    [
        b"",
        b"no newline at all" * 10,
        b"a\nbb\nccc\n" * 50,
        b"short\n" + b"x" * 300 + b"\n" + b"y" * 700 + b"\nend",  # lines longer than a piece
        b"\n" * 40,
    ],
)
def test_line_aligned_cuts_read_with_pread_match_the_map(
    text: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pieces found with pread in small windows (not through the map, which would put the
    touched pages in the RSS) are the ones the map gave: line-aligned, tiling the file."""
    monkeypatch.setattr(li_scan, "_CUT_WINDOW", 7)
    path = tmp_path / "log.txt"
    path.write_bytes(text)
    for step in (1, 5, 64, 1 << 20):
        cuts = li_scan._line_aligned_cuts(path, len(text), step)
        assert cuts == _cuts_reference(text, step)
        assert [a for a, _ in cuts] == ([0, *[e for _, e in cuts][:-1]] if cuts else [])
        assert all(
            e == len(text) or text[e - 1 : e] == b"\n" or b"\n" not in text[a + 1 : e]
            for a, e in cuts
        )
