"""cltui.capture.files / names / report against the real captures and small synthetic ones."""

from __future__ import annotations

import math
import os
import re
import struct
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

from cltui.capture.confine import map_bytes
from cltui.capture.files import (
    looks_like_hash_dump,
    parse_sampler_text,
    read_text_lenient,
    scan_dumps,
    scan_program_files,
    scan_programs,
    source_is_utf8,
)
from cltui.capture.files.report import parse_report, parse_report_text
from cltui.capture.hashing import cli_hash64, hash_file
from cltui.capture.model import Dump
from cltui.capture.names import (
    parse_dump_name,
    parse_mapunmap_name,
    parse_program_file_name,
    parse_replay_dir_name,
    parse_setkernelarg_name,
)
from cltui.capture.replayfolder import ImageMeta, read_replay_folder
from tests.conftest import CAPTURES, SMALL_CAPTURES

# ---------------------------------------------------------------------------------------------
# reference hash: the §5.2 rendering, verbatim


def _mix(a: int, b: int, c: int) -> tuple[int, int, int]:
    m = 0xFFFFFFFF
    a = (a - b - c) & m
    a ^= c >> 13
    b = (b - c - a) & m
    b ^= (a << 8) & m
    c = (c - a - b) & m
    c ^= b >> 13
    a = (a - b - c) & m
    a ^= c >> 12
    b = (b - c - a) & m
    b ^= (a << 16) & m
    c = (c - a - b) & m
    c ^= b >> 5
    a = (a - b - c) & m
    a ^= c >> 3
    b = (b - c - a) & m
    b ^= (a << 10) & m
    c = (c - a - b) & m
    c ^= b >> 15
    return a, b, c


def ref_hash64(data: bytes) -> int:
    a, hi, lo = 0x428A2F98, 0x71374491, 0xB5C0FBCF
    n = len(data) // 4
    for (w,) in struct.iter_unpack("<I", data[: n * 4]):
        a, hi, lo = _mix(a ^ w, hi, lo)
    if len(data) % 4:
        a, hi, lo = _mix(a ^ int.from_bytes(data[n * 4 :], "little"), hi, lo)
    return (hi << 32) | lo


def test_hash_matches_reference_on_every_length() -> None:
    rng = np.random.default_rng(1)
    for n in [*range(0, 40), 1023, 4097]:
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert cli_hash64(data) == ref_hash64(data), n
    # the empty string hashes to the documented options hash B5C0FBCF
    assert cli_hash64(b"") & 0xFFFFFFFF == 0xB5C0FBCF


def test_hash_accepts_arrays_and_views() -> None:
    arr = np.arange(37, dtype=np.float32)
    raw = arr.tobytes()
    assert cli_hash64(arr) == ref_hash64(raw)
    assert cli_hash64(memoryview(raw)) == ref_hash64(raw)
    assert cli_hash64(arr.reshape(37, 1)) == ref_hash64(raw)
    assert cli_hash64(raw[3:]) == ref_hash64(raw[3:])  # unaligned tail


def test_hash_speed_megabytes(tmp_path: Path) -> None:
    data = np.random.default_rng(2).integers(0, 256, 1 << 20, dtype=np.uint8).tobytes()
    t = time.process_time()  # CPU seconds: another process's load does not count
    h = cli_hash64(data)
    dt = time.process_time() - t
    assert dt < 5.0, f"1 MiB took {dt:.2f} CPU seconds"
    f = tmp_path / "d.bin"
    f.write_bytes(data)
    assert hash_file(f) == h


def _all_capture_roots(extra: list[Path]) -> list[Path]:
    roots = [CAPTURES / n for n in SMALL_CAPTURES if (CAPTURES / n).is_dir()]
    return roots + extra


def test_program_source_hashes_match_file_names(heat2d: Path) -> None:
    count = 0
    for root in _all_capture_roots([heat2d]):
        for name in os.listdir(root):
            m = re.fullmatch(r"CLI_(\d{4})_([0-9A-F]{8})_source\.cl", name)
            if not m:
                continue
            if count % 10 == 0:  # both entry points, on a share of the files
                data = (root / name).read_bytes()
                assert f"{cli_hash64(data) & 0xFFFFFFFF:08X}" == m[2], name
            assert f"{hash_file(root / name) & 0xFFFFFFFF:08X}" == m[2], name
            count += 1
    assert count >= 34 + 67 + 67 + 1 + 4


# ---------------------------------------------------------------------------------------------
# map_bytes


def test_map_bytes(tmp_path: Path) -> None:
    empty = tmp_path / "e.bin"
    empty.write_bytes(b"")
    assert map_bytes(empty).shape == (0,)
    assert map_bytes(empty, np.float32).dtype == np.float32
    odd = tmp_path / "o.bin"
    odd.write_bytes(struct.pack("<f", 1.5) + b"\x01\x02\x03")
    arr = map_bytes(odd, np.float32)
    assert isinstance(arr, np.memmap)
    assert arr.tolist() == [1.5]
    with pytest.raises(ValueError):
        arr[0] = 2.0  # read-only
    small = tmp_path / "s.bin"
    small.write_bytes(b"\x01\x02")
    assert map_bytes(small, np.float64).shape == (0,)
    assert map_bytes(small).tolist() == [1, 2]


# ---------------------------------------------------------------------------------------------
# names


def test_parse_names_examples() -> None:
    p = parse_dump_name("Enqueue_0003_Kernel_img3d_Arg_0_Image_0003_4x4x2_32bpp.raw")
    assert p is not None and p.is_image and p.image_region == (4, 4, 2) and p.image_bpp == 32
    assert (p.enqueue, p.kernel, p.arg, p.mem_id) == (3, "img3d", 0, 3)
    p = parse_dump_name(
        "Enqueue_0003_Kernel_cl::sycl::detail::__pf_kernel_wrapper<MyKernel>_Arg_0_Buffer_0002.bin"
    )
    assert p is not None and p.kernel == "cl::sycl::detail::__pf_kernel_wrapper<MyKernel>"
    p = parse_dump_name("Enqueue_122380_Kernel_heat_stencil_Arg_0_Buffer_0001.bin")
    assert p is not None and p.enqueue == 122380 and not p.is_image
    p = parse_dump_name("Enqueue_0001_Kernel_x_Arg_2_Buffer_0003.bin_Arg_1_Buffer_0004.bin")
    assert p is not None and (p.kernel, p.arg, p.mem_id) == ("x_Arg_2_Buffer_0003.bin", 1, 4)
    assert parse_dump_name("Enqueue_001_Kernel_x_Arg_0_Buffer_0000.bin") is None
    assert parse_dump_name("Enqueue_0001_Kernel_x_Arg_0_Buffer_0000.bin.tmp") is None
    s = parse_setkernelarg_name("SetKernelArg_0000_Kernel_unsigned short_Arg_4.bin")
    assert s is not None and (s.enqueue, s.kernel, s.arg) == (0, "unsigned short", 4)
    r = parse_replay_dir_name("Enqueue_2_void foo<int>(int*)")
    assert r is not None and (r.enqueue, r.kernel) == (2, "void foo<int>(int*)")
    mu = parse_mapunmap_name("Unmap_Buffer_0001_Offset_0000_Enqueue_0010.bin")
    assert mu is not None and (mu.kind, mu.mem_id, mu.offset, mu.enqueue) == ("unmap", 1, 0, 10)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("CLI_0000_FFDB9D01_source.cl", ("source", 0, "FFDB9D01", None, None, None)),
        (
            "CLI_0000_4B2602B5_0001_EB94D386_options.txt",
            ("options", 0, "4B2602B5", 1, "EB94D386", None),
        ),
        (
            "CLI_0000_FFDB9D01_0000_D3178473_CPU_build_log.txt",
            ("build_log", 0, "FFDB9D01", 0, "D3178473", "CPU"),
        ),
        (
            "CLI_0000_A4317E0E_0000_F82D1D2E_CPU_GPU_ACC_build_log.txt",
            ("build_log", 0, "A4317E0E", 0, "F82D1D2E", "CPU_GPU_ACC"),
        ),
        (
            "CLI_0000_1FD78BE0_0000_3DA3DBB0_CPU.bin",
            ("output_binary", 0, "1FD78BE0", 0, "3DA3DBB0", "CPU"),
        ),
        ("CLI_0003_6F60B3C3_CPU.bin", ("input_binary", 3, "6F60B3C3", None, None, "CPU")),
        (
            "CLI_0004_09D2822F_0000_8BF8A65D_compile_options.txt",
            ("compile_options", 4, "09D2822F", 0, "8BF8A65D", None),
        ),
        (
            "CLI_0006_00000000_0000_B5C0FBCF_link_options.txt",
            ("link_options", 6, "00000000", 0, "B5C0FBCF", None),
        ),
        ("CLI_C7D453C2_source.cl", ("source", None, "C7D453C2", None, None, None)),
        (
            "CLI_C7D453C2_0000_60DEA05D_options.txt",
            ("options", None, "C7D453C2", 0, "60DEA05D", None),
        ),
        ("CLI_EECA462D_0000.spv", ("spirv", None, "EECA462D", 0, None, None)),
        ("CLI_0002_EECA462D_0000.spvasm", ("spvasm", 2, "EECA462D", 0, None, None)),
        (
            "CLI_12345678_0000_ABCDEF01_options.txt",
            ("options", None, "12345678", 0, "ABCDEF01", None),
        ),
        ("CLI_10000_ABCDEF01_source.cl", ("source", 10000, "ABCDEF01", None, None, None)),
    ],
)
def test_parse_program_file_names(
    name: str, expected: tuple[str, int | None, str, int | None, str | None, str | None]
) -> None:
    p = parse_program_file_name(name)
    assert p is not None
    assert (p.kind, p.number, p.hash, p.compile_count, p.options_hash, p.device) == expected


@pytest.mark.parametrize(
    "name",
    [
        "CLI_0000_ffdb9d01_source.cl",  # lower-case hash
        "CLI_0000_FFDB9D01_source.c",
        "CLI_0000_FFDB9D01_0000_D3178473_XPU_build_log.txt",
        "CLI_000_FFDB9D01_source.cl",
        "clintercept_log.txt",
        "CLI_",
    ],
)
def test_parse_program_file_names_rejects(name: str) -> None:
    assert parse_program_file_name(name) is None


def test_isabin_name() -> None:
    p = parse_program_file_name("CLI_0001_AABBCCDD_0002_11223344_GPU_my kernel(int*).isabin")
    assert p is not None and p.kind == "isabin" and p.kernel == "my kernel(int*)"
    assert p.device == "GPU" and p.compile_count == 2


# ---------------------------------------------------------------------------------------------
# scan_dumps on the real captures, against listings done here


def _listing(root: Path, sub: str) -> list[str]:
    d = root / sub
    return sorted(os.listdir(d)) if d.is_dir() else []


def _count(table: Mapping[int, list[Dump]]) -> int:
    return sum(len(v) for v in table.values())


def test_scan_images_svm(images_svm: Path) -> None:
    idx = scan_dumps(images_svm, None)
    assert idx.problems == []
    assert not idx.buffer_hashes and not idx.image_hashes
    assert _count(idx.pre) == 13 == len(_listing(images_svm, "memDumpPreEnqueue"))
    assert _count(idx.post) == 13
    assert sorted(idx.pre) == [0, 1, 2, 3, 6, 7, 8]
    assert sorted(idx.replay) == [0, 1, 2, 3, 6, 7, 8]
    assert idx.replay_kernels[2] == "sample_linear"
    assert sum(len(v) for v in idx.setkernelarg.values()) == 15
    assert (
        idx.setkernelarg[2][("sample_linear", 3)]
        == images_svm / "SetKernelArg" / "SetKernelArg_0002_Kernel_sample_linear_Arg_3.bin"
    )
    vol = idx.pre[3][0]
    assert vol.is_image and vol.image_region == (16, 16, 8) and vol.image_bpp == 8
    assert vol.kernel == "volume_sum" and vol.arg == 0 and vol.mem_id == 4
    assert vol.size == 16 * 16 * 8
    d0 = idx.post[0]
    assert [(d.arg, d.image_region, d.image_bpp) for d in d0] == [
        (0, (64, 48, 1), 128),
        (1, (32, 24, 1), 128),
    ]
    # every image dump file is exactly W*H*D*bpp/8 bytes
    for table in (idx.pre, idx.post):
        for dumps in table.values():
            for d in dumps:
                if d.is_image:
                    assert d.image_region is not None and d.image_bpp is not None
                    w, h, dd = d.image_region
                    assert d.size == w * h * dd * d.image_bpp // 8
    assert idx.mapunmap == []
    assert idx.pre.file_count() == 13 and 4 not in idx.pre and idx.pre.get(4) is None
    assert idx.pre[3] is idx.pre[3]  # built once
    assert idx.pre.kernel(2) == "sample_linear" and idx.pre.kernel(4) is None
    assert not idx.pre.all_hashed(2) and not idx.pre.all_hashed(4)
    assert idx.dumps(8, "post") == idx.post[8] and idx.dumps(5) == []


def test_scan_opencv(opencv: Path) -> None:
    idx = scan_dumps(opencv, False)
    assert idx.problems == []
    assert _count(idx.pre) == 96 == _count(idx.post)
    assert sum(len(v) for v in idx.setkernelarg.values()) == 439
    assert len(idx.replay) == 24
    assert sorted(idx.replay) == [
        1, 4, 7, 8, 9, 10, 11, 12, 13, 16, 18, 19, 20, 21, 22, 25, 29, 31, 32, 33, 35, 36, 37, 38
    ]  # fmt: skip
    assert min(idx.pre) == 1 and max(idx.pre) == 69 and len(idx.pre) == 39
    # aliasing at 44: args 0 and 5 are the same memory object
    by_arg = {d.arg: d.mem_id for d in idx.pre[44]}
    assert by_arg[0] == by_arg[5]


@pytest.mark.parametrize("fixture", ["pyocl_pocl", "pyocl_oclgrind"])
def test_scan_pyopencl_pair(fixture: str, request: pytest.FixtureRequest) -> None:
    root: Path = request.getfixturevalue(fixture)
    idx = scan_dumps(root, None)
    assert idx.problems == []
    assert _count(idx.pre) == 83 == _count(idx.post)
    assert sum(len(v) for v in idx.setkernelarg.values()) == 730
    assert sorted(idx.replay) == [14, 16, *range(18, 39)]
    assert len(idx.replay) == 23
    assert sorted(idx.pre) == sorted({int(n[8:12]) for n in _listing(root, "memDumpPreEnqueue")})


def test_scan_heat2d(heat2d: Path) -> None:
    idx = scan_dumps(heat2d, None)
    assert idx.problems == []
    assert _count(idx.pre) == 57 == _count(idx.post)
    assert sum(len(v) for v in idx.setkernelarg.values()) == 317
    assert sorted(idx.replay) == [*range(122396, 122405), *range(122408, 122412)]
    assert 122380 in idx.pre and idx.pre[122380][0].kernel == "heat_stencil"
    assert min(idx.setkernelarg) >= 122380
    assert idx.replay[122396].name == "Enqueue_122396_heat_stencil"


def test_scan_dumps_bad_names_and_missing_folders(tmp_path: Path) -> None:
    assert scan_dumps(tmp_path, None).problems == []
    pre = tmp_path / "memDumpPreEnqueue"
    pre.mkdir()
    (pre / "Enqueue_0001_Kernel_k_Arg_0_Buffer_0000.bin").write_bytes(b"\0" * 64)
    (pre / "garbage.txt").write_bytes(b"x")
    (pre / "subdir").mkdir()
    (tmp_path / "Replay").mkdir()
    (tmp_path / "Replay" / "Enqueue_x_k").mkdir()
    (tmp_path / "Replay" / "Enqueue_5_k").mkdir()
    (tmp_path / "Replay" / "Enqueue_5_k_old").mkdir()
    (tmp_path / "SetKernelArg").mkdir()
    (tmp_path / "SetKernelArg" / "SetKernelArg_1_Kernel_k_Arg_0.bin").write_bytes(b"1")
    idx = scan_dumps(tmp_path, None)
    assert _count(idx.pre) == 1 and not idx.buffer_hashes
    wheres = sorted(p.where for p in idx.problems)
    assert wheres == [
        "Replay/Enqueue_5_k_old",
        "Replay/Enqueue_x_k",
        "SetKernelArg/SetKernelArg_1_Kernel_k_Arg_0.bin",
        "memDumpPreEnqueue/garbage.txt",
        "memDumpPreEnqueue/subdir",
    ]
    assert idx.replay == {5: tmp_path / "Replay" / "Enqueue_5_k"}


def test_hash_only_dumps(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    pre = tmp_path / "memDumpPreEnqueue"
    pre.mkdir()
    mu = tmp_path / "memDumpCreateMapUnmap"
    mu.mkdir()
    datas = {}
    for e in range(5):
        data = rng.integers(0, 256, 100 + e, dtype=np.uint8).tobytes()
        h = cli_hash64(data)
        datas[e] = h
        (pre / f"Enqueue_{e:04d}_Kernel_k_Arg_0_Buffer_{e:04d}.bin").write_text(f"{h:x}\n")
        (pre / f"Enqueue_{e:04d}_Kernel_k_Arg_1_Image_0009_4x1x1_32bpp.raw").write_bytes(bytes(16))
    (mu / "Map_Buffer_0001_Offset_0016_Enqueue_0003.bin").write_text("abc\n")
    idx = scan_dumps(tmp_path, None)
    assert idx.buffer_hashes and not idx.image_hashes and idx.hashes_only
    for e, h in datas.items():
        buf, img = idx.pre[e]
        assert buf.hashed and buf.hash_value() == h
        assert not img.hashed and img.hash_value() is None
    assert [(m.kind, m.mem_id, m.offset, m.enqueue, m.hashed) for m in idx.mapunmap] == [
        ("map", 1, 16, 3, True)
    ]
    assert not idx.pre.all_hashed(0)  # the image dump is raw
    assert scan_dumps(tmp_path, True).pre.all_hashed(0)
    forced = scan_dumps(tmp_path, False)
    assert not any(d.hashed for ds in forced.pre.values() for d in ds)
    both = scan_dumps(tmp_path, True)
    assert all(d.hashed for ds in both.pre.values() for d in ds)
    assert looks_like_hash_dump(pre / "Enqueue_0000_Kernel_k_Arg_0_Buffer_0000.bin")
    assert not looks_like_hash_dump(pre / "Enqueue_0000_Kernel_k_Arg_1_Image_0009_4x1x1_32bpp.raw")
    assert not looks_like_hash_dump(tmp_path / "missing")


def test_scan_dumps_many_files_is_fast(tmp_path: Path) -> None:
    pre = tmp_path / "memDumpPreEnqueue"
    pre.mkdir()
    n = 10000
    for i in range(n):
        (pre / f"Enqueue_{i:04d}_Kernel_k(int*)_Arg_{i % 7}_Buffer_{i:04d}.bin").touch()
    t = time.process_time()  # CPU seconds (a quadratic scan is ~100x): load does not count
    idx = scan_dumps(tmp_path, False)
    dt = time.process_time() - t
    assert _count(idx.pre) == n and len(idx.pre) == n
    assert dt < 1.0, f"{n} files took {dt:.2f} CPU seconds"


# ---------------------------------------------------------------------------------------------
# Replay folders


def _raw_text(p: Path) -> str:
    return p.read_bytes().decode()


def _check_folder_against_raw(folder: Path) -> None:
    """Independent reading of a folder's files, compared with read_replay_folder."""
    rf = read_replay_folder(folder)
    assert rf.problems == [], rf.problems
    assert rf.enqueue == int(_raw_text(folder / "enqueueNumber.txt"))
    assert rf.kernel_name == _raw_text(folder / "kernelName.txt")
    lines = _raw_text(folder / "worksizes.txt").split("\n")
    g = tuple(int(x) for x in lines[0].split())
    lo = tuple(int(x) for x in lines[1].split())
    assert rf.global_size == g
    assert rf.local_size == (None if not any(lo) else lo)
    assert rf.offset == tuple(int(x) for x in lines[2].split())
    assert rf.build_options == _raw_text(folder / "buildOptions.txt").rstrip("\n")
    names = os.listdir(folder)
    args = {
        int(m[1]): (folder / n).read_bytes()
        for n in names
        if (m := re.fullmatch(r"Argument(\d+)\.bin", n))
    }
    assert rf.arguments == args
    assert len(rf.device_binaries) == sum(n.startswith("DeviceBinary") for n in names)
    src = (folder / "kernel.cl").read_bytes()
    assert src.endswith(b"\0")
    assert rf.kernel_source == src[:-1]
    svm = {int(n[15:-4]): int(_raw_text(folder / n)) for n in names if n.startswith("SVM_Arg")}
    assert rf.svm_offsets == svm
    loc = {int(n[5:-4]): int(_raw_text(folder / n)) for n in names if n.startswith("Local")}
    assert rf.locals == loc
    pre = sorted(os.listdir(folder / "Pre")) if (folder / "Pre").is_dir() else []
    assert sorted(d.path.name for d in rf.pre.values()) == pre
    assert all(not d.hashed for d in rf.pre.values())
    types = _raw_text(folder / "ArgumentDataTypes.txt").split("\n")
    assert rf.arg_types == [t for t in types if t]


def test_replay_folders_of_every_capture(heat2d: Path) -> None:
    n = 0
    for root in _all_capture_roots([heat2d]):
        for name in sorted(os.listdir(root / "Replay")):
            _check_folder_against_raw(root / "Replay" / name)
            n += 1
    assert n == 7 + 24 + 23 + 23 + 13


def test_replay_images_svm_details(images_svm: Path) -> None:
    r = images_svm / "Replay"
    rf0 = read_replay_folder(r / "Enqueue_0_downsample")
    m0 = rf0.image_meta[0]
    assert (m0.width, m0.height, m0.depth, m0.element_size) == (64, 48, 1, 16)
    assert (m0.row_pitch, m0.slice_pitch) == (1024, 0)
    assert m0.channel_data_type_name == "CL_FLOAT" and m0.channel_order_name == "CL_RGBA"
    assert m0.image_type_name == "CL_MEM_OBJECT_IMAGE2D"
    got = m0.numpy_dtype_and_channels()
    assert got is not None
    dt, ch = got
    assert dt == np.float32 and ch == 4
    pre0 = rf0.pre[0]
    assert pre0.size == m0.packed_size
    img = pre0.array(dt).reshape(m0.depth, m0.height, m0.width, ch)
    assert img.shape == (1, 48, 64, 4) and np.isfinite(img).all()
    assert rf0.image_meta[1].region == (32, 24, 1)

    rf2 = read_replay_folder(r / "Enqueue_2_sample_linear")
    s = rf2.samplers[1]
    assert s.normalized_coords and s.addressing_mode == "CL_ADDRESS_REPEAT"
    assert s.filter_mode == "CL_FILTER_LINEAR"
    assert s.text == _raw_text(r / "Enqueue_2_sample_linear" / "Sampler1.txt")
    assert rf2.svm_offsets == {2: 0}

    rf3 = read_replay_folder(r / "Enqueue_3_volume_sum")
    m3 = rf3.image_meta[0]
    assert m3.region == (16, 16, 8) and m3.channel_order_name == "CL_R"
    assert m3.channel_data_type_name == "CL_UNSIGNED_INT8"
    assert m3.image_type_name == "CL_MEM_OBJECT_IMAGE3D"
    assert m3.numpy_dtype_and_channels() == (np.dtype(np.uint8), 1)

    rf6 = read_replay_folder(r / "Enqueue_6_svm_scale")
    rf7 = read_replay_folder(r / "Enqueue_7_svm_scale")
    assert rf6.svm_offsets == {0: 0} and rf7.svm_offsets == {0: 1024}
    assert rf7.locals == {2: int(_raw_text(r / "Enqueue_7_svm_scale" / "Local2.txt"))}
    assert rf7.arg_indices == [0, 1, 2]
    assert rf7.global_size == (512,) and rf7.local_size == (64,) and rf7.offset == (0,)
    assert rf7.kernel_source is not None and b"svm_scale" in rf7.kernel_source

    rf8 = read_replay_folder(r / "Enqueue_8_gather_rgba")
    assert rf8.image_meta[0].region == (64, 48, 1)
    assert set(rf8.svm_offsets) == {1, 2}


def test_replay_pyopencl_details(pyocl_pocl: Path, pyocl_oclgrind: Path) -> None:
    rf = read_replay_folder(pyocl_pocl / "Replay" / "Enqueue_18_run")
    assert rf.locals == {2: 4096, 3: 4096}
    rf = read_replay_folder(pyocl_oclgrind / "Replay" / "Enqueue_14_clip_by_rank")
    assert len(rf.arguments[6]) == 16 and "clip_params_t" in rf.arg_types
    rf = read_replay_folder(pyocl_pocl / "Replay" / "Enqueue_14_clip_by_rank")
    assert rf.arg_types == []  # PoCL without -cl-kernel-arg-info: 0-byte file


def _write_folder(folder: Path, files: dict[str, bytes]) -> None:
    folder.mkdir(parents=True)
    for name, data in files.items():
        p = folder / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


def test_replay_folder_crlf(tmp_path: Path) -> None:
    folder = tmp_path / "Enqueue_12_k"
    _write_folder(
        folder,
        {
            "enqueueNumber.txt": b"12\r\n",
            "kernelName.txt": b"k",
            "worksizes.txt": b"16 4 \r\n4 2 \r\n2 1 \r\n",
            "buildOptions.txt": b"-DFOO=1\r\n",
            "ArgumentDataTypes.txt": b"float*\r\nint\r\n",
            "Local1.txt": b"256",
            "SVM_Arg_Offset_0.txt": b"64\r\n",
            "Image_MetaData_2.txt": b"8\r\n4\r\n1\r\n16\r\n128\r\n0\r\n4318\r\n4277\r\n4337",
            "Sampler3.txt": b"CL_SAMPLER_NORMALIZED_COORDS = CL_FALSE, "
            b"CL_SAMPLER_ADDRESSING_MODE = CL_ADDRESS_CLAMP, "
            b"CL_SAMPLER_FILTER_MODE = CL_FILTER_NEAREST",
            "Argument0.bin": b"\x01\x02\r\n",
            "kernel.cl": b"kernel void k() {}\r\n\0",
            "DeviceBinary1.bin": b"b1",
            "DeviceBinary0.bin": b"b0",
            "Pre/Enqueue_0012_Kernel_k_Arg_0_Buffer_0000.bin": b"\0" * 8,
        },
    )
    rf = read_replay_folder(folder)
    assert rf.problems == []
    assert rf.enqueue == 12 and rf.kernel_name == "k"
    assert rf.global_size == (16, 4) and rf.local_size == (4, 2) and rf.offset == (2, 1)
    assert rf.build_options == "-DFOO=1" and rf.arg_types == ["float*", "int"]
    assert rf.locals == {1: 256} and rf.svm_offsets == {0: 64}
    assert rf.image_meta[2] == ImageMeta(8, 4, 1, 16, 128, 0, 4318, 4277, 4337)
    assert not rf.samplers[3].normalized_coords
    assert rf.arguments == {0: b"\x01\x02\r\n"}  # binary files untouched
    assert rf.kernel_source == b"kernel void k() {}\r\n"
    assert [p.name for p in rf.device_binaries] == ["DeviceBinary0.bin", "DeviceBinary1.bin"]
    assert list(rf.pre) == [0] and rf.post == {}


def test_replay_folder_garbled(tmp_path: Path) -> None:
    folder = tmp_path / "Enqueue_7_k"
    _write_folder(
        folder,
        {
            "enqueueNumber.txt": b"8\n",
            "kernelName.txt": b"",
            "worksizes.txt": b"16\n",
            "Local1.txt": b"lots",
            "SVM_Arg_Offset_0.txt": b"-3\n",
            "Image_MetaData_2.txt": b"8\n4\n1",
            "Sampler3.txt": b"\xff\xfe garbage",
            "kernel.cl": b"\0",
            "notes.txt": b"?",
            "Argument1.txt": b"1",
            "Weird/x": b"",
            "Pre/junk.bin": b"",
            "Post/Enqueue_0009_Kernel_k_Arg_0_Buffer_0000.bin": b"",
        },
    )
    rf = read_replay_folder(folder)
    assert rf.enqueue == 8  # the file wins over the folder name, with a problem
    assert rf.kernel_name == "k" and rf.global_size == () and rf.local_size is None
    assert rf.kernel_source is None and rf.locals == {} and rf.svm_offsets == {}
    assert rf.image_meta == {} and rf.samplers == {}
    assert all(p.where.startswith("Enqueue_7_k/") for p in rf.problems)
    assert all(p.enqueue == 8 for p in rf.problems)
    where = sorted(p.where.removeprefix("Enqueue_7_k/") for p in rf.problems)
    assert where == sorted(
        [
            "enqueueNumber.txt",
            "kernelName.txt",
            "worksizes.txt",
            "Local1.txt",
            "SVM_Arg_Offset_0.txt",
            "Image_MetaData_2.txt",
            "Sampler3.txt",
            "notes.txt",
            "Argument1.txt",
            "Weird",
            "Pre/junk.bin",
            "Post/Enqueue_0009_Kernel_k_Arg_0_Buffer_0000.bin",
        ]
    )
    assert all(str(p) and "\n" not in str(p) for p in rf.problems)


def test_replay_problem_paths_are_capture_relative(tmp_path: Path) -> None:
    folder = tmp_path / "Replay" / "Enqueue_3_x"
    _write_folder(folder, {"enqueueNumber.txt": b"3\n", "bad.txt": b""})
    rf = read_replay_folder(folder)
    assert "Replay/Enqueue_3_x/bad.txt" in [p.where for p in rf.problems]
    assert "Replay/Enqueue_3_x/worksizes.txt: enqueue 3: missing" in [str(p) for p in rf.problems]


def test_replay_folder_missing_and_empty(tmp_path: Path) -> None:
    rf = read_replay_folder(tmp_path / "Enqueue_3_gone")
    assert rf.enqueue == 3 and rf.kernel_name == "gone"
    assert [p.severity for p in rf.problems] == ["error"]
    (tmp_path / "odd").mkdir()
    rf = read_replay_folder(tmp_path / "odd")
    assert rf.enqueue is None and len(rf.problems) == 2


# ---------------------------------------------------------------------------------------------
# Programs


def test_scan_programs_real(opencv: Path, pyocl_oclgrind: Path, images_svm: Path) -> None:
    progs, problems = scan_programs(opencv)
    assert problems == [] and len(progs) == 34
    assert [p.number for p in progs] == list(range(34))
    for p in progs:
        assert p.source_path is not None and p.options_path is not None
        assert p.options == p.options_path.read_bytes().decode()
        assert p.source_path.name == f"CLI_{p.number:04d}_{p.hash}_source.cl"
        assert list(p.build_logs) == ["CPU"]
    progs, _ = scan_programs(pyocl_oclgrind)
    assert len(progs) == 67 and all(list(p.build_logs) == ["CPU_GPU_ACC"] for p in progs)
    assert all("PYOPENCL_USING_OCLGRIND" in p.options for p in progs)
    (p0,) = scan_programs(images_svm)[0]
    assert p0.hash == "4804838E" and p0.options.startswith("-I ")


def test_scan_programs_synthetic(tmp_path: Path) -> None:
    files = {
        "CLI_0000_4B2602B5_source.cl": b"kernel void r() {}",
        "CLI_0000_4B2602B5_0000_EFE3AAEA_options.txt": b"-DA=1",
        "CLI_0000_4B2602B5_0001_EB94D386_options.txt": b"-DA=2",
        "CLI_0000_4B2602B5_0000_EFE3AAEA_CPU_build_log.txt": b"log0",
        "CLI_0000_4B2602B5_0001_EB94D386_CPU_build_log.txt": b"log1",
        "CLI_0000_4B2602B5_0001_EB94D386_CPU.bin": b"pocl",
        "CLI_0003_6F60B3C3_CPU.bin": b"pocl",
        "CLI_0004_09D2822F_0000_8BF8A65D_compile_options.txt": b"",
        "CLI_0006_00000000_0000_B5C0FBCF_link_options.txt": b"",
        "CLI_0000_00000000_0000_00000000_CPU_build_log.txt": b"",
        "CLI_C7D453C2_source.cl": b"x",
        "CLI_EECA462D_0000.spv": b"\x03\x02\x23\x07",
        "CLI_bogus.txt": b"",
    }
    for n, d in files.items():
        (tmp_path / n).write_bytes(d)
    progs, problems = scan_programs(tmp_path)
    assert [p.where for p in problems] == ["CLI_bogus.txt"]
    by = {(p.number, p.hash): p for p in progs}
    p0 = by[(0, "4B2602B5")]
    assert p0.options == "-DA=2" and p0.options_path is not None
    assert p0.options_path.name == "CLI_0000_4B2602B5_0001_EB94D386_options.txt"
    assert p0.build_logs["CPU"].name.endswith("0001_EB94D386_CPU_build_log.txt")
    assert p0.binaries == {"CPU": tmp_path / "CLI_0000_4B2602B5_0001_EB94D386_CPU.bin"}
    assert by[(3, "6F60B3C3")].binaries == {"input:CPU": tmp_path / "CLI_0003_6F60B3C3_CPU.bin"}
    assert by[(6, "00000000")].options == "" and by[(6, "00000000")].options_path is not None
    assert by[(-1, "C7D453C2")].source_path == tmp_path / "CLI_C7D453C2_source.cl"
    assert by[(-1, "EECA462D")].source_path == tmp_path / "CLI_EECA462D_0000.spv"
    groups, _ = scan_program_files(tmp_path)
    assert sorted(groups[(0, "4B2602B5")].options) == [0, 1]
    last = groups[(0, "4B2602B5")].last_options()
    assert last is not None and last[:2] == (1, "EB94D386")
    assert groups[(4, "09D2822F")].options[0][0][1] == "compile_options"


def test_text_helpers(tmp_path: Path) -> None:
    f = tmp_path / "s.cl"
    f.write_bytes(b"a\0b\r\n\xff")
    assert read_text_lenient(f) == "ab\r\n\ufffd"
    assert not source_is_utf8(f)
    f.write_bytes("é\0".encode())
    assert source_is_utf8(f) and read_text_lenient(f) == "é"
    assert not source_is_utf8(tmp_path / "missing")


def test_parse_sampler_text() -> None:
    s = parse_sampler_text(
        "CL_SAMPLER_NORMALIZED_COORDS = CL_TRUE, CL_SAMPLER_ADDRESSING_MODE = "
        "CL_ADDRESS_MIRRORED_REPEAT, CL_SAMPLER_FILTER_MODE = CL_FILTER_NEAREST"
    )
    assert s is not None and s.normalized_coords
    assert s.addressing_mode == "CL_ADDRESS_MIRRORED_REPEAT"
    assert parse_sampler_text(s.text) == s
    assert parse_sampler_text("CL_SAMPLER_NORMALIZED_COORDS = CL_TRUE, CL_SAMPLER_ADDR") is None
    assert parse_sampler_text("") is None


@pytest.mark.parametrize(
    ("dtype_enum", "order_enum", "esize", "expected"),
    [
        (0x10DE, 0x10B5, 16, ("float32", 4)),
        (0x10DA, 0x10B0, 1, ("uint8", 1)),
        (0x10D2, 0x10B6, 4, ("uint8", 4)),
        (0x10DD, 0x10B2, 4, ("float16", 2)),
        (0x10D9, 0x10B4, 12, ("int32", 3)),
        (0x10D1, 0x10B3, 4, ("int16", 2)),
        (0x10D4, 0x10B4, 2, ("uint16", 1)),  # packed 565
        (0x10E0, 0x10B5, 4, ("uint32", 1)),  # packed 101010_2
    ],
)
def test_image_meta_dtypes(
    dtype_enum: int, order_enum: int, esize: int, expected: tuple[str, int]
) -> None:
    meta = ImageMeta(4, 4, 1, esize, 4 * esize, 0, dtype_enum, order_enum, 0x10F1)
    got = meta.numpy_dtype_and_channels()
    assert got is not None
    dt, ch = got
    assert (dt.name, ch) == expected
    assert dt.itemsize * ch == esize


def test_image_meta_unknown_enums() -> None:
    meta = ImageMeta(1, 1, 1, 4, 4, 0, 0x1234, 0x10B5, 0x9999)
    assert meta.numpy_dtype_and_channels() is None
    assert meta.channel_data_type_name == "0x1234" and meta.image_type_name == "0x9999"


# ---------------------------------------------------------------------------------------------
# Report


def _raw_rows(text: str) -> int:
    return sum(1 for ln in text.split("\n") if re.search(r"%, +-?\d+, +-?\d+, +-?\d+$", ln))


@pytest.mark.parametrize(
    ("name", "total"),
    [
        ("images_svm_pocl", 11),
        ("opencv_tapi_pocl", 84),
        ("pyopencl_lib_pocl", 123),
        ("pyopencl_lib_oclgrind", 123),
    ],
)
def test_report_small_captures(name: str, total: int) -> None:
    path = CAPTURES / name / "clintercept_report.txt"
    if not path.is_file():
        pytest.skip("capture missing")
    rep = parse_report(path)
    assert rep is not None and rep.problems == []
    assert rep.total_enqueues == total and rep.sessions == 1
    assert rep.host is not None and len(rep.devices) == 1
    text = path.read_text()
    assert len(rep.host.rows) + len(rep.devices[0].rows) == _raw_rows(text)
    dev = rep.devices[0]
    if "oclgrind" in name:
        assert (dev.device_name, dev.compute_units, dev.mhz) == ("Oclgrind Simulator", 1, 1)
    else:
        assert dev.device_name == "pthread-skylake-avx512-AMD EPYC" and dev.compute_units == 2
    # the device table's kernel calls add up to the kernel enqueues of the host table
    host_kernel_calls = sum(
        r.calls for r in rep.host.rows if r.name.startswith("clEnqueueNDRangeKernel(")
    )
    dev_kernel_calls = sum(r.calls for r in dev.rows if not r.name.startswith("clEnqueue"))
    assert host_kernel_calls == dev_kernel_calls > 0


def test_report_heat2d(heat2d: Path) -> None:
    rep = parse_report(heat2d / "clintercept_report.txt")
    assert rep is not None and rep.problems == []
    assert rep.total_enqueues == 204011
    assert rep.host is not None and rep.host.total_time_ns == 3050340779
    row = rep.host.row("clEnqueueNDRangeKernel( heat_stencil )")
    assert row is not None and row.calls == 100000 and row.percent == 41.13
    set_arg = rep.host.row("clSetKernelArg")
    assert set_arg is not None and set_arg.calls == 1722000
    (dev,) = rep.devices
    assert {r.name: r.calls for r in dev.rows} == {
        "clEnqueueCopyBuffer": 1,
        "clEnqueueReadBuffer": 2005,
        "clEnqueueWriteBuffer": 5,
        "heat_boundary": 100000,
        "heat_diffnorm_stage1": 2000,
        "heat_stencil": 100000,
    }
    assert sum(r.calls for r in dev.rows) == 204011


SYNTHETIC_REPORT = "\n".join(
    [
        "*** WARNING *** FinishAfterEnqueue Enabled!",
        "",
        "Total Enqueues: 6",
        "",
        "",
        "Leak Checking:",
        "",
        "No cl_context leaks detected.",
        "Possible leak of type cl_mem!",
        "    Number of Allocations: 3",
        "    Number of Retains:     0",
        "    Number of Releases:    2",
        "",
        "Kernel name mapping:",
        "",
        "Short Name, Long Name",
        "       k_0, a_kernel_with_a_really_quite_long_name_for_testing",
        "",
        "Host Performance Timing Results:",
        "",
        "Total Time (ns): 0",
        "",
        "                        Function Name,  Calls,     Time (ns), Time (%)"
        ",  Average (ns),      Min (ns),      Max (ns)",
        "             (device timing overhead),      2,             0,     nan%"
        ",             0,             0,             0",
        "                       clBuildProgram,      1,      23921469,   92.46%"
        ",      23921469,      23921469,      23921469",
        "",
        "Device Performance Timing Results for Some GPU, rev 2 (2CUs, 2596MHz):",
        "",
        "Total Time (ns): 32730",
        "",
        "                   Function Name,  Calls,     Time (ns), Time (%),  Av"
        "erage (ns),      Min (ns),      Max (ns)",
        "void foo<int, float>(int*, float), 1,  7852,   23.99%,   2617,   961,   4918",
        "work$0001_36958A43_0000_7C8F7E27 SIMD1 GWO[ 0 ] GWS[ 256 ] LWS[ 32 ], "
        "     2,       7951872,   99.99%,       3975936,       3537920,       4"
        "413952",
        "",
        "Device Performance Timing Histogram for Some GPU, rev 2:",
        "",
        "Total Events: 3",
        "",
        "  <         1 ns:         0 : ",
        "  <      2048 ns:         1 : *********************",
        " >= 536870912 ns:         2 : **",
        "",
    ]
)


def test_report_synthetic_blocks() -> None:
    rep = parse_report_text(SYNTHETIC_REPORT.encode(), "r.txt")
    assert rep.problems == []
    assert rep.warnings == ["*** WARNING *** FinishAfterEnqueue Enabled!"]
    assert rep.total_enqueues == 6
    assert rep.has_leaks and rep.leak_check[0] == "No cl_context leaks detected."
    assert len(rep.leak_check) == 5
    assert rep.kernel_name_mapping == {"k_0": "a_kernel_with_a_really_quite_long_name_for_testing"}
    assert rep.host is not None and math.isnan(rep.host.rows[0].percent)
    (dev,) = rep.devices
    assert dev.device_name == "Some GPU, rev 2" and dev.mhz == 2596
    assert [r.name for r in dev.rows] == [
        "void foo<int, float>(int*, float)",
        "work$0001_36958A43_0000_7C8F7E27 SIMD1 GWO[ 0 ] GWS[ 256 ] LWS[ 32 ]",
    ]
    assert dev.rows[0].max_ns == 4918
    (hist,) = rep.histograms
    assert hist.total_events == 3 and [b.count for b in hist.bins] == [0, 1, 2]
    assert hist.bins[-1].at_least


def test_report_crlf_appended_and_truncated(tmp_path: Path) -> None:
    crlf = parse_report_text(SYNTHETIC_REPORT.replace("\n", "\r\n").encode())
    assert crlf.problems == [] and crlf.devices[0].rows[0].calls == 1
    two = parse_report_text(("Total Enqueues: 1\n\n" + SYNTHETIC_REPORT).encode())
    assert two.sessions == 2 and two.total_enqueues == 6
    cut = SYNTHETIC_REPORT[: SYNTHETIC_REPORT.index("work$0001") + 50]
    part = parse_report_text(cut.encode())
    assert part.total_enqueues == 6 and part.host is not None
    assert len(part.devices[0].rows) == 1
    assert len(part.problems) == 2  # the cut row, and "ends mid-line"
    garbage = parse_report_text(b"\x00\xff\xfe garbage\nmore\n")
    assert garbage.total_enqueues is None and garbage.problems
    f = tmp_path / "clintercept_report.txt"
    f.write_bytes(b"")
    empty = parse_report(f)
    assert empty is not None and empty.total_enqueues is None and len(empty.problems) == 1
    assert parse_report(tmp_path / "missing.txt") is None
