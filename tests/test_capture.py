"""The Capture facade on the real captures, checked against facts computed here from raw files."""

from __future__ import annotations

import json
import os
import re
import struct
from pathlib import Path

import numpy as np
import pytest

from cltui.capture import (
    ArgKind,
    Capture,
    CaptureError,
    EnqueueKind,
    open_capture,
)
from cltui.progress import CancelToken

from .conftest import SMALL_CAPTURES, capture_path, copy_capture

ENTRY_RE = re.compile(
    rb"^>>>> (?:Time: \d+ )?(clEnqueue\w+)(?:\( (.*?) \))?(?:: (.*?))?; EnqueueCounter: (\d+)$",
    re.MULTILINE,
)
SIZES_RE = re.compile(rb"global_work_size = < ([^>]*) >(?:, local_work_size = < ([^>]*) >)?")
DUMP_RE = re.compile(r"^Enqueue_(\d{4,})_Kernel_(.*)_Arg_(\d+)_(Buffer|Image)_(\d{4,})")


def _dims(b: bytes | None, sep: bytes) -> tuple[int, ...] | None:
    if b is None or b.strip() == b"NULL":
        return None
    return tuple(int(x) for x in b.split(sep))


def raw_enqueues(
    root: Path,
) -> list[tuple[int, str, str | None, tuple[int, ...] | None, tuple[int, ...] | None]]:
    out = []
    for m in ENTRY_RE.finditer((root / "clintercept_log.txt").read_bytes()):
        g = l_ = None
        if m.group(3):
            sm = SIZES_RE.search(m.group(3))
            if sm:
                g, l_ = _dims(sm.group(1), b" x "), _dims(sm.group(2), b" x ")
        out.append(
            (
                int(m.group(4)),
                m.group(1).decode(),
                m.group(2).decode() if m.group(2) else None,
                g,
                l_,
            )
        )
    return out


def _snapshot(root: Path) -> dict[str, tuple[int, float]]:
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            st = os.stat(os.path.join(dirpath, f))
            out[os.path.join(dirpath, f)] = (st.st_size, st.st_mtime)
    return out


@pytest.mark.parametrize("name", SMALL_CAPTURES)
def test_rows_match_raw_log(name: str) -> None:
    root = capture_path(name)
    before = _snapshot(root)
    cap = open_capture(root)
    raw = raw_enqueues(root)
    assert len(cap) == len(raw)
    assert cap.numbers.tolist() == [r[0] for r in raw]
    rows = cap.rows(0, len(cap))
    for row, (num, fn, kname, g, l_) in zip(rows, raw, strict=True):
        assert (row.number, row.function, row.kernel) == (num, fn, kname)
        if fn == "clEnqueueNDRangeKernel":
            assert row.kind is EnqueueKind.KERNEL
            assert (row.global_size, row.local_size) == (g, l_)
    n_dt = (root / "clintercept_log.txt").read_text().count("\nDevice Time for ")
    assert int((cap.device_times[:, 0] >= 0).sum()) == n_dt
    assert cap.problems == []
    json.dumps(cap.info())
    assert _snapshot(root) == before  # a capture directory is never written


@pytest.mark.slow  # reads every dump of a real capture: the full tier's (not --fast)
@pytest.mark.parametrize("name", SMALL_CAPTURES)
def test_every_dump_is_attached_to_its_enqueue_and_argument(name: str) -> None:
    root = capture_path(name)
    cap = open_capture(root)
    seen = 0
    for which in ("Pre", "Post"):
        folder = root / f"memDump{which}Enqueue"
        for fname in sorted(os.listdir(folder)):
            m = DUMP_RE.match(fname)
            assert m, fname
            enq = cap.enqueue(int(m.group(1)))
            assert enq.row.kernel == m.group(2)
            args = {a.index: a for a in enq.args}
            arg = args[int(m.group(3))]
            dump = arg.pre if which == "Pre" else arg.post
            assert dump is not None and dump.path.name == fname
            size = (folder / fname).stat().st_size
            if arg.kind is ArgKind.SCALAR:
                # the layer keeps stale argument state when a kernel handle is recycled
                # (opencv 48 args 5/10): attached, and reported
                assert any(f"argument {arg.index} (" in p.message for p in enq.problems)
                seen += 1
                continue
            if m.group(4) == "Buffer":
                assert arg.kind in (ArgKind.BUFFER, ArgKind.SVM)
                assert arg.dtype is not None and size % arg.dtype.itemsize == 0
                assert arg.mem is not None and arg.mem.size == size
            else:
                assert arg.kind is ArgKind.IMAGE and arg.mem is not None
                assert arg.mem.size == size
            seen += 1
    assert seen > 0
    with_rows = int(cap.has_pre.sum())
    assert with_rows == len(
        {
            DUMP_RE.match(f).group(1)  # type: ignore[union-attr]
            for f in os.listdir(root / "memDumpPreEnqueue")
        }
    )


def _ska(root: Path, e: int, kernel: str, i: int) -> bytes:
    name = f"SetKernelArg_{e:04d}_Kernel_{kernel}_Arg_{i}.bin"
    return (root / "SetKernelArg" / name).read_bytes()


def test_images_svm_values(images_svm: Path) -> None:
    cap = open_capture(images_svm)
    log = (images_svm / "clintercept_log.txt").read_text()
    e2 = cap.enqueue(2)
    a = {x.index: x for x in e2.args}
    assert a[0].kind is ArgKind.IMAGE and a[0].access == "read_only"
    assert a[1].kind is ArgKind.SAMPLER and a[1].sampler is not None
    assert a[1].sampler.addressing_mode == "CL_ADDRESS_REPEAT"
    assert a[2].kind is ArgKind.BUFFER and a[2].dtype is not None
    assert a[2].dtype.itemsize == 16 and a[2].dtype.base == np.float32
    hexval = re.search(r"sample_linear \): kernel = \S+, index = 3, size = 4, value = (0x\w+)", log)
    assert hexval is not None
    expected = struct.unpack("<f", int(hexval.group(1), 16).to_bytes(4, "little"))[0]
    assert a[3].name == "scale" and a[3].value == pytest.approx(expected)
    assert a[3].raw == _ska(images_svm, 2, "sample_linear", 3)
    e7 = cap.enqueue(7)
    s = {x.index: x for x in e7.args}
    assert s[0].kind is ArgKind.SVM and s[0].svm_offset == 1024
    assert s[0].mem is not None and s[0].mem.kind == "svm" and s[0].mem.size == 4096
    assert s[2].kind is ArgKind.LOCAL and s[2].local_size == 256
    assert e7.device == "pthread-skylake-avx512-AMD EPYC"
    assert e7.program is not None and e7.program.number == 0
    e4 = cap.enqueue(4)  # clEnqueueSVMMap
    assert e4.row.kind is EnqueueKind.SVM and e4.mem is not None and e4.mem.kind == "svm"
    assert e4.nbytes == 4096 and e4.blocking is True
    e3 = cap.enqueue(3)
    img = e3.args[0]
    assert img.mem is not None and img.mem.image is not None
    assert img.pre is not None and img.pre.image_region == (16, 16, 8)


def test_pyopencl_struct_and_offsets(pyocl_pocl: Path, pyocl_oclgrind: Path) -> None:
    for root in (pyocl_pocl, pyocl_oclgrind):
        cap = open_capture(root)
        e = cap.enqueue(14)
        a = {x.index: x for x in e.args}
        raw = _ska(root, 14, "clip_by_rank", 6)
        scale, offset, lo, hi = struct.unpack("<ffii", raw)
        assert a[6].type_name == "clip_params_t" and a[6].kind is ArgKind.SCALAR
        assert a[6].value == {"scale": scale, "offset": offset, "lo": lo, "hi": hi}
        assert a[6].dtype is not None and a[6].dtype.names == ("scale", "offset", "lo", "hi")
        assert a[1].value == 0 and a[1].kind is ArgKind.SCALAR  # "(nil)" 64-bit offset
        e18 = cap.enqueue(18)
        locs = [x for x in e18.args if x.kind is ArgKind.LOCAL]
        assert [x.local_size for x in locs] == [4096, 4096]
        e13 = cap.enqueue(13)  # a blocking read in the middle of the chain
        assert e13.row.kind is EnqueueKind.READ and e13.blocking is True
        assert e13.mem is not None and e13.nbytes is not None and e13.nbytes <= e13.mem.size
        assert cap.enqueue(17).row.kind is EnqueueKind.MARKER
    # four different programs define "run" (18-21)
    cap = open_capture(pyocl_pocl)
    progs = {cap.enqueue(n).program.number for n in (18, 19, 20, 21)}  # type: ignore[union-attr]
    assert len(progs) == 4


def test_opencv_uchar_args_and_aliasing(opencv: Path) -> None:
    cap = open_capture(opencv)
    e = cap.enqueue(31)
    assert e.row.kernel == "threshold"
    a = {x.index: x for x in e.args}
    for i in (8, 9, 10):
        assert a[i].size == 1 and a[i].dtype == np.uint8
        assert a[i].value == _ska(opencv, 31, "threshold", i)[0]
        assert a[i].raw_source == "setkernelarg"
    e44 = cap.enqueue(44)
    b = {x.index: x for x in e44.args}
    assert b[0].handle == b[5].handle and b[0].mem is b[5].mem
    assert cap.enqueue(5).row.kind is EnqueueKind.MAP
    assert cap.enqueue(6).row.kind is EnqueueKind.UNMAP


def test_find_and_info(pyocl_pocl: Path) -> None:
    cap = open_capture(pyocl_pocl)
    raw = raw_enqueues(pyocl_pocl)
    pos = cap.find("scan_")
    assert [raw[p][2] for p in pos] == [r[2] for r in raw if r[2] and "scan_" in r[2]]
    assert len(cap.find(r"^scan_lev\d$", regex=True)) == 26
    reads = cap.find(kinds=[EnqueueKind.READ])
    assert len(reads) == 19
    assert cap.find("axpb", first=20, last=30).tolist() == [
        i for i, r in enumerate(raw) if r[2] and "axpb" in r[2] and 20 <= r[0] <= 30
    ]
    info = cap.info()
    assert info["enqueues"] == 123 and info["kinds"]["kernel"] == 98
    assert info["kernels"]["axpb"]["count"] == 8
    assert info["data"]["replay_folders"] == 23
    assert info["data"]["setkernelarg_dumps"] == 730
    assert info["devices"] == ["pthread-skylake-avx512-AMD EPYC"]
    with pytest.raises(CaptureError, match="bad regular expression"):
        cap.find("(", regex=True)
    assert cap.position_of(10**9) is None
    with pytest.raises(KeyError):
        cap.enqueue(10**9)


@pytest.mark.child
def test_heat2d(heat2d: Path) -> None:
    fractions: list[float | None] = []
    cap = open_capture(heat2d, progress=lambda e: fractions.append(e.fraction))
    assert len(cap) == 204011
    assert int((cap.device_times[:, 0] >= 0).sum()) == 204011
    assert fractions[-1] == 1.0
    assert len(cap.find("heat_stencil")) == 100000
    e = cap.enqueue(122396)
    assert e.row.has_pre and e.row.has_replay and e.replay_dir is not None
    names = [a.name for a in e.args]
    assert all(names) and len(names) == 8
    for a in e.args:
        if a.kind is ArgKind.BUFFER:
            assert a.pre is not None and a.mem is not None and a.pre.size == a.mem.size
    late = cap.enqueue(204000)  # args set long before, no dumps: from the log text
    assert all(a.raw_source in ("log", "") for a in late.args)
    rows = cap.rows(204000, 204011)
    assert [r.number for r in rows] == list(range(204000, 204011))
    info = cap.info()
    assert info["kernels"]["heat_stencil"]["timed"] == 100000


def test_bad_paths(tmp_path: Path) -> None:
    with pytest.raises(CaptureError, match="does not exist"):
        open_capture(tmp_path / "nope")
    f = tmp_path / "file.txt"
    f.write_text("x")
    with pytest.raises(CaptureError, match="is a file, not a capture folder"):
        open_capture(f)
    with pytest.raises(CaptureError, match=r"is not a capture folder: expected clintercept_log"):
        open_capture(tmp_path)


def test_dumps_only_and_log_only(images_svm: Path, tmp_path: Path) -> None:
    a = copy_capture(images_svm, tmp_path / "a")
    (a / "clintercept_log.txt").unlink()
    cap = open_capture(a)
    assert cap.numbers.tolist() == [0, 1, 2, 3, 6, 7, 8]
    assert any("no clintercept_log.txt" in p.message for p in cap.problems)
    e = cap.enqueue(2)
    args = {x.index: x for x in e.args}
    assert args[3].value == pytest.approx(struct.unpack("<f", _ska(a, 2, "sample_linear", 3))[0])
    assert args[2].pre is not None and args[2].dtype is not None
    # an unreadable log (a directory in its place) with dumps: the dumps still open
    (a / "clintercept_log.txt").mkdir()
    cap = open_capture(a)
    assert len(cap) == 7
    b = copy_capture(images_svm, tmp_path / "b")
    for d in ("memDumpPreEnqueue", "memDumpPostEnqueue", "Replay", "SetKernelArg"):
        for p in sorted((b / d).rglob("*"), reverse=True):
            p.rmdir() if p.is_dir() else p.unlink()
        (b / d).rmdir()
    cap = open_capture(b)
    assert len(cap) == 11 and not cap.has_pre.any()
    e = cap.enqueue(2)
    args = {x.index: x for x in e.args}
    assert args[3].raw_source == "log" and args[3].value == pytest.approx(0.025)
    assert args[1].sampler is not None


def test_bad_data_gives_problems(pyocl_pocl: Path, tmp_path: Path) -> None:
    root = copy_capture(pyocl_pocl, tmp_path)
    # a dump of the wrong size
    dump = root / "memDumpPostEnqueue" / "Enqueue_0014_Kernel_clip_by_rank_Arg_0_Buffer_0011.bin"
    dump.write_bytes(dump.read_bytes()[:1001])
    # a missing source and a non-UTF-8 source
    cap0 = open_capture(pyocl_pocl)
    p22 = cap0.enqueue(22).program
    p3 = cap0.enqueue(3).program
    assert p22 is not None and p3 is not None and p22.number != p3.number
    assert p22.source_path is not None and p3.source_path is not None
    (root / p22.source_path.name).unlink()
    src3 = root / p3.source_path.name
    src3.write_bytes(b"// caf\xe9\n" + src3.read_bytes())
    cap = open_capture(root)
    e14 = cap.enqueue(14)
    msgs = [str(p) for p in e14.problems]
    assert any(
        "damaged post dump: 1001 bytes, the buffer is 32768 bytes (log)" in m for m in msgs
    ), msgs
    e22 = cap.enqueue(22)  # falls back to the Replay folder's kernel.cl
    assert e22.args and all(a.name for a in e22.args)
    e3 = cap.enqueue(3)
    assert [a.name for a in e3.args][:2] == [a.name for a in cap0.enqueue(3).args][:2]
    assert all(a.name for a in e3.args)


def test_missing_source_without_replay(pyocl_pocl: Path, tmp_path: Path) -> None:
    root = copy_capture(pyocl_pocl, tmp_path)
    cap0 = open_capture(pyocl_pocl)
    prog = cap0.enqueue(3).program  # axpb at 3 is outside the Replay window (14-38)
    assert prog is not None and prog.source_path is not None
    for p in root.glob(f"CLI_{prog.number:04d}_*"):
        p.unlink()
    cap = open_capture(root)
    e = cap.enqueue(3)
    # another program defines the same kernel (found by grepping the sources), or none does
    assert e.program is None or e.program.number != prog.number
    assert len(e.args) == len(cap0.enqueue(3).args)  # still decoded from the log


def test_truncated_log_capture(images_svm: Path, tmp_path: Path) -> None:
    root = copy_capture(images_svm, tmp_path)
    log = root / "clintercept_log.txt"
    data = log.read_bytes()
    cut = data.index(b"clEnqueueNDRangeKernel( svm_scale )")
    log.write_bytes(data[: cut + 40])
    cap = open_capture(root)
    assert isinstance(cap, Capture)
    assert any("shutting down" in p.message for p in cap.problems)
    assert 6 in cap.numbers.tolist()
    e6 = cap.enqueue(6)
    assert any("no exit line" in p.message for p in e6.problems)
    assert cap.enqueue(3).args
    # the dumps of 7 and 8 (past the end of the log) are still enqueues
    assert cap.numbers.tolist()[-2:] == [7, 8]
    assert any("past the end of the log" in p.message for p in cap.problems)
    e8 = cap.enqueue(8)
    assert e8.row.kernel == "gather_rgba" and e8.row.has_pre
    assert {a.index for a in e8.args} == {0, 1, 2} and all(a.name for a in e8.args)


def test_progress_and_cancel(opencv: Path) -> None:
    seen: list[float] = []
    cap = open_capture(opencv, progress=lambda e: seen.append(e.fraction or 0.0))
    assert seen and seen == sorted(seen) and seen[-1] == 1.0 and len(cap) == 84
    ev = CancelToken()
    ev.cancel()
    with pytest.raises(CaptureError, match="cancelled"):
        open_capture(opencv, cancel=ev)


def _decoded(cap: Capture, number: int) -> str:
    e = cap.enqueue(number)
    return repr((e.row, e.line, e.event, e.program, e.kernel_handle, e.args, e.problems))


@pytest.mark.slow  # CPU seconds on a real capture: the full tier's (./dev test --fast leaves it)
@pytest.mark.parametrize("name", ["pyopencl_lib_pocl", "opencv_tapi_pocl"])
def test_decoding_does_not_depend_on_the_order(name: str) -> None:
    """States kept between decodes (argument states per kernel, signatures) change nothing."""
    root = capture_path(name)
    numbers = [int(n) for n in open_capture(root).numbers]
    forward = open_capture(root)
    backward = open_capture(root)
    want = {n: _decoded(forward, n) for n in numbers}
    got = {n: _decoded(backward, n) for n in reversed(numbers)}
    assert got == want
    forward.close()
    backward.close()


def test_appendpid_folders_open_the_process_with_the_enqueues(
    images_svm: Path, tmp_path: Path
) -> None:
    """With AppendPid each process writes <DUMPDIR>.<pid>: opening <DUMPDIR> opens the folder
    of the process with the most enqueues (a child such as PoCL's linker has none), and a
    problem names the folder opened and the others."""
    parent = copy_capture(images_svm, tmp_path).rename(tmp_path / "app.18841")
    child = tmp_path / "app.18850"
    child.mkdir()
    head = (images_svm / "clintercept_log.txt").read_bytes()[:4000]
    (child / "clintercept_log.txt").write_bytes(head)
    (child / "clintercept_report.txt").write_text("Total Enqueues: 0\n")
    (tmp_path / "app.notapid").mkdir()
    cap = open_capture(tmp_path / "app")
    assert Path(cap.path) == parent and len(cap) == 11
    (note,) = [str(p) for p in cap.problems if "AppendPid" in str(p)]
    assert "app does not exist; opened app.18841" in note
    assert "the others: app.18850 (0 enqueues)" in note
    # a parent that left no report (it did not exit normally) still beats a child with none
    (parent / "clintercept_report.txt").unlink()
    assert Path(open_capture(tmp_path / "app").path) == parent
    # the folder holding them is not a capture: the error names the captures inside it
    with pytest.raises(CaptureError, match=r"captures inside it: app\.18841, app\.18850$"):
        open_capture(tmp_path)
    # no such folder and no .<pid> siblings: as before
    with pytest.raises(CaptureError, match="does not exist"):
        open_capture(tmp_path / "other")
