"""Tiny synthetic captures in the real CLIntercept formats (for the analysis tests).

A :class:`SynthCapture` is a list of buffers and kernel enqueues of one program. Each
kernel has a numpy model (``sim``) that the builder runs to produce the Post dumps, so
the capture holds what a correct device would have written. A *planted* difference
replaces some output values of one enqueue, as if the device that made the capture
had computed them wrongly; the planted values flow on into the next kernels' inputs,
exactly as a real miscompiled kernel's results would.

The directory written has: ``clintercept_log.txt`` (header, context, queue, buffer,
program, kernel, clSetKernelArg and clEnqueueNDRangeKernel lines, Device Time lines,
footer), ``CLI_0000_<H8>_source.cl`` and ``..._options.txt``, ``memDumpPreEnqueue/`` and
``memDumpPostEnqueue/`` and one ``Replay/Enqueue_<E>_<k>/`` folder per kernel enqueue.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from cltui.capture.hashing import cli_hash64

DEVICE = "pthread-synthetic-cpu"
CTX = 0x5A000010
DEV = 0x5A000020
QUEUE = 0x5A000030
PROGRAM = 0x5A000040
KERNEL_BASE = 0x5A001000
BUFFER_BASE = 0x5A100000

Sim = Callable[[dict[str, npt.NDArray[Any]], list[Any]], None]


@dataclass
class Arg:
    """``("buf", name)``, ``("int", value)`` (a 4-byte int), ``("float", value)`` (a 4-byte
    float) or ``("local", nbytes)``."""

    kind: str
    value: Any


@dataclass
class Launch:
    kernel: str
    args: list[Arg]
    global_size: int
    local_size: int | None
    sim: Sim | None = None  # mutates the named buffers in place
    plant: dict[str, tuple[int, Any]] = field(default_factory=dict)  # buffer -> (index, value)
    # an unlogged host-side change before this launch: buffer -> (index, value)
    host_write: dict[str, tuple[int, Any]] = field(default_factory=dict)
    # logged host-side enqueues before this launch (each takes an enqueue number)
    before: list[HostOp] = field(default_factory=list)
    pre: bool = True  # write its Pre dumps (memDump and Replay)
    post: bool = True  # write its Post dumps


@dataclass
class HostOp:
    """A logged ``fill`` (``pattern`` over ``size`` bytes at ``offset``), ``copy`` (``size``
    bytes from ``src`` at ``offset`` to ``dst`` at ``dst_offset``) or ``write`` (``data``
    at ``offset``) on buffer ``dst``; ``copy_rect`` (``region`` bytes x rows x slices from
    ``src_origin`` to ``dst_origin``, the pitches the program passed: 0, tight, and that the
    layer does not log), and whole-object ``copy_image``, ``copy_image_to_buffer`` and
    ``copy_buffer_to_image`` (the layer logs no origin or region for them)."""

    kind: str
    dst: str
    src: str | None = None
    pattern: bytes = b""
    data: bytes = b""
    offset: int = 0
    dst_offset: int = 0
    size: int = 0
    src_origin: tuple[int, int, int] = (0, 0, 0)
    dst_origin: tuple[int, int, int] = (0, 0, 0)
    region: tuple[int, int, int] = (0, 1, 1)


@dataclass
class SynthCapture:
    source: str
    buffers: dict[str, npt.NDArray[Any]]  # initial contents (dtype matters)
    launches: list[Launch]
    options: str = ""
    first_enqueue: int = 0
    hashes: bool = False  # memDump files hold 64-bit hashes (DumpBufferHashes=1)
    replay: bool = True  # write Replay/ folders
    # the objects of ``buffers`` that are 2D images: name -> (width, height); a texel is one
    # int32 (CL_R, CL_SIGNED_INT32), the array holds them row by row
    images: dict[str, tuple[int, int]] = field(default_factory=dict)
    # another 4-byte texel format of an image: name -> (channel order, channel data type)
    image_formats: dict[str, tuple[str, str]] = field(default_factory=dict)


def _hex(v: int) -> str:
    return f"0x{v:x}"


def _dump_bytes(arr: npt.NDArray[Any], hashes: bool) -> bytes:
    if hashes:
        return f"{cli_hash64(arr.tobytes()):x}\n".encode()
    return arr.tobytes()


def write_capture(spec: SynthCapture, root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    src = spec.source.encode()
    h8 = f"{cli_hash64(src) & 0xFFFFFFFF:08X}"
    o8 = f"{cli_hash64(spec.options.encode()) & 0xFFFFFFFF:08X}"
    (root / f"CLI_0000_{h8}_source.cl").write_bytes(src)
    (root / f"CLI_0000_{h8}_0000_{o8}_options.txt").write_text(spec.options)
    pre_dir = root / "memDumpPreEnqueue"
    post_dir = root / "memDumpPostEnqueue"
    pre_dir.mkdir(exist_ok=True)
    post_dir.mkdir(exist_ok=True)

    t = [1000]

    def tick() -> int:
        t[0] += 7
        return t[0]

    lines: list[str] = [
        "-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=",
        "CLIntercept (64-bit) is loading...",
        "CLIntercept environment variable prefix: CLI_",
        "Control LogToFile is set to non-default value: true",
        "Control CallLogging is set to non-default value: true",
        "Control CallLoggingEnqueueCounter is set to non-default value: true",
        "Control DumpProgramSource is set to non-default value: true",
        "Control DumpBuffersBeforeEnqueue is set to non-default value: true",
        "Control DumpBuffersAfterEnqueue is set to non-default value: true",
        "Control CaptureReplay is set to non-default value: true",
        *(["Control DumpBufferHashes is set to non-default value: true"] if spec.hashes else []),
        "Control DevicePerformanceTimeLogging is set to non-default value: true",
        "Timer Started!",
        "... loading complete.",
    ]
    dev = f"{DEVICE} (CL_DEVICE_TYPE_CPU) ({_hex(DEV)})"
    n0 = spec.first_enqueue

    def call(text: str, ret: str, counter: int) -> None:
        name = text.split(":")[0].split("(")[0].strip()
        lines.append(f">>>> Time: {tick()} {text}; EnqueueCounter: {counter}")
        lines.append(f"<<<< Time: {tick()} {name}{ret} -> CL_SUCCESS")

    call(f"clCreateContext: properties = [ NULL ], num_devices = 1, devices = [ {dev} ]",
         f": returned {_hex(CTX)}", n0)
    call(f"clCreateCommandQueueWithProperties: context = {_hex(CTX)}, device = {dev}, "
         "properties = [ CL_QUEUE_PROPERTIES =  ]", f": returned {_hex(QUEUE)}", n0)
    handles: dict[str, int] = {}
    mem_ids: dict[str, int] = {}
    for i, (name, arr) in enumerate(spec.buffers.items()):
        handles[name] = BUFFER_BASE + 0x1000 * i
        mem_ids[name] = i
        if name in spec.images:
            w, h = spec.images[name]
            assert arr.nbytes == 4 * w * h, name
            order, ctype = spec.image_formats.get(name, ("CL_R", "CL_SIGNED_INT32"))
            call(f"clCreateImage: context = {_hex(CTX)}, flags = CL_MEM_READ_WRITE (1), "
                 f"format->channel_order = {order}, format->channel_data_type = {ctype}, "
                 f"desc->type = CL_MEM_OBJECT_IMAGE2D, desc->width = {w}, desc->height = {h}, "
                 "desc->depth = 1, desc->array_size = 1, desc->row_pitch = 0, "
                 "desc->slice_pitch = 0, desc->num_mip_levels = 0, desc->num_samples = 0, "
                 "desc->mem_object = (nil), host_ptr = (nil) ",
                 f": returned {_hex(handles[name])}", n0)
            continue
        call(f"clCreateBuffer: context = {_hex(CTX)}, flags = CL_MEM_READ_WRITE (1), "
             f"size = {arr.nbytes}, host_ptr = (nil)", f": returned {_hex(handles[name])}", n0)
    lines.append(f">>>> Time: {tick()} clCreateProgramWithSource: context = {_hex(CTX)}, "
                 f"count = 1; EnqueueCounter: {n0}")
    lines.append(f"<<<< Time: {tick()} clCreateProgramWithSource: returned {_hex(PROGRAM)}, "
                 "program number = 0000 -> CL_SUCCESS")
    lines.append(f">>>> Time: {tick()} clBuildProgram: program = {_hex(PROGRAM)}, "
                 f"pfn_notify = (nil); EnqueueCounter: {n0}")
    lines += [
        f"Build Info for program {_hex(PROGRAM)} (0000_{h8}_0000_{o8}) for 1 device(s):",
        "    Build finished in 1.00 ms.",
        f"Build Status for device 0 = {DEVICE} (OpenCL C 1.2 PoCL): CL_BUILD_SUCCESS",
        "-------> Start of Build Log:",
        "<------- End of Build Log",
        f"<<<< Time: {tick()} clBuildProgram -> CL_SUCCESS",
    ]
    khandles: dict[str, int] = {}
    for launch in spec.launches:
        if launch.kernel not in khandles:
            khandles[launch.kernel] = KERNEL_BASE + 0x100 * len(khandles)
            call(f"clCreateKernel: program = {_hex(PROGRAM)}, kernel_name = {launch.kernel}",
                 f": returned {_hex(khandles[launch.kernel])}", n0)

    state = {k: v.copy() for k, v in spec.buffers.items()}
    e = n0 - 1
    for launch in spec.launches:
        for op in launch.before:
            e += 1
            dst = state[op.dst].view(np.uint8)
            q = f"queue = {_hex(QUEUE)}"
            if op.kind == "fill":
                dst[op.offset : op.offset + op.size] = np.frombuffer(
                    op.pattern * (op.size // len(op.pattern)), np.uint8
                )
                call(f"clEnqueueFillBuffer: {q}, buffer = {_hex(handles[op.dst])}, pattern_size "
                     f"= {len(op.pattern)}, offset = {op.offset}, size = {op.size}", "", e)
            elif op.kind == "copy":
                assert op.src is not None
                sv = state[op.src].view(np.uint8)
                dst[op.dst_offset : op.dst_offset + op.size] = sv[op.offset : op.offset + op.size]
                call(f"clEnqueueCopyBuffer: {q}, src_buffer = {_hex(handles[op.src])}, "
                     f"dst_buffer = {_hex(handles[op.dst])}, src_offset = {op.offset}, "
                     f"dst_offset = {op.dst_offset}, cb = {op.size}", "", e)
            elif op.kind == "copy_rect":
                assert op.src is not None
                _copy_rect(state[op.src].view(np.uint8), dst, op)
                call(f"clEnqueueCopyBufferRect: {q}, src_buffer = {_hex(handles[op.src])}, "
                     f"dst_buffer = {_hex(handles[op.dst])}, src_origin = {_vec(op.src_origin)}, "
                     f"dst_origin = {_vec(op.dst_origin)}, region = {_vec(op.region)}", "", e)
            elif op.kind in _WHOLE_COPIES:
                assert op.src is not None
                fn, src_key, dst_key = _WHOLE_COPIES[op.kind]
                dst[:] = state[op.src].view(np.uint8)[: dst.size]
                call(f"{fn}: {q}, {src_key} = {_hex(handles[op.src])}, "
                     f"{dst_key} = {_hex(handles[op.dst])}", "", e)
            elif op.kind == "write":
                dst[op.offset : op.offset + len(op.data)] = np.frombuffer(op.data, np.uint8)
                call(f"clEnqueueWriteBuffer: {q}, buffer = {_hex(handles[op.dst])}, blocking, "
                     f"offset = {op.offset}, cb = {len(op.data)}, ptr = 0x7f0000001000", "", e)
            else:
                raise ValueError(op.kind)
        e += 1
        k = launch.kernel
        kh = khandles[k]
        replay = root / "Replay" / f"Enqueue_{e}_{k}"
        (replay / "Pre").mkdir(parents=True)
        (replay / "Post").mkdir()
        for i, a in enumerate(launch.args):
            if a.kind == "buf":
                val = f"size = 8, value = {_hex(handles[a.value])}"
                (replay / f"Argument{i}.bin").write_bytes(handles[a.value].to_bytes(8, "little"))
                (replay / f"SVM_Arg_Offset_{i}.txt").write_text("0\n")
            elif a.kind == "int":
                raw = int(a.value).to_bytes(4, "little", signed=True)
                val = f"size = 4, value = {_hex(int.from_bytes(raw, 'little'))}"
                (replay / f"Argument{i}.bin").write_bytes(raw)
            elif a.kind == "float":
                raw = np.float32(a.value).tobytes()
                val = f"size = 4, value = {_hex(int.from_bytes(raw, 'little'))}"
                (replay / f"Argument{i}.bin").write_bytes(raw)
            elif a.kind == "local":
                val = f"size = {int(a.value)}"
                (replay / f"Local{i}.txt").write_text(str(int(a.value)))
            else:
                raise ValueError(a.kind)
            lines.append(f">>>> Time: {tick()} clSetKernelArg( {k} ): kernel = {_hex(kh)}, "
                         f"index = {i}, {val}; EnqueueCounter: {e}")
            lines.append(f"<<<< Time: {tick()} clSetKernelArg -> CL_SUCCESS")
        bufs = [(i, a.value) for i, a in enumerate(launch.args) if a.kind == "buf"]
        for name, (idx, value) in launch.host_write.items():
            state[name][idx] = value
        for i, name in bufs:
            if name in spec.images:
                w, h = spec.images[name]
                order, ctype = spec.image_formats.get(name, ("CL_R", "CL_SIGNED_INT32"))
                ov, tv = _format_values(order, ctype)
                (replay / f"Image_MetaData_{i}.txt").write_text(
                    f"{w}\n{h}\n1\n4\n{4 * w}\n0\n{tv}\n{ov}\n4337\n"
                )
        dump_name = {
            name: (f"Image_{mem_ids[name]:04d}_{spec.images[name][0]}x{spec.images[name][1]}"
                   "x1_32bpp.raw") if name in spec.images else f"Buffer_{mem_ids[name]:04d}.bin"
            for _i, name in bufs
        }  # fmt: skip
        for i, name in bufs if launch.pre else []:
            fname = f"Enqueue_{e:04d}_Kernel_{k}_Arg_{i}_{dump_name[name]}"
            (pre_dir / fname).write_bytes(_dump_bytes(state[name], spec.hashes))
            (replay / "Pre" / fname).write_bytes(state[name].tobytes())
        if launch.sim is not None:
            launch.sim(state, [a.value for a in launch.args])
        for name, (idx, value) in launch.plant.items():
            state[name][idx] = value
        for i, name in bufs if launch.post else []:
            fname = f"Enqueue_{e:04d}_Kernel_{k}_Arg_{i}_{dump_name[name]}"
            (post_dir / fname).write_bytes(_dump_bytes(state[name], spec.hashes))
            (replay / "Post" / fname).write_bytes(state[name].tobytes())
        ls = launch.local_size
        (replay / "enqueueNumber.txt").write_text(f"{e}\n")
        (replay / "kernelName.txt").write_text(k)
        (replay / "worksizes.txt").write_text(f"{launch.global_size} \n{ls or 0} \n0 \n")
        (replay / "buildOptions.txt").write_text(spec.options + "\n")
        (replay / "ArgumentDataTypes.txt").write_text("")
        (replay / "kernel.cl").write_bytes(src + b"\x00")
        lines.append(f"Dumping kernel capture replay to directory: {replay}/")
        lsz = f", local_work_size = < {ls} >" if ls else ""
        lines.append(f">>>> Time: {tick()} clEnqueueNDRangeKernel( {k} ): queue = {_hex(QUEUE)}, "
                     f"kernel = {_hex(kh)}, global_work_size = < {launch.global_size} >{lsz}; "
                     f"EnqueueCounter: {e}")
        lines.append(f"<<<< Time: {tick()} clEnqueueNDRangeKernel -> CL_SUCCESS")
        lines.append(f"Device Time for {k} (enqueue {e}) = 10 ns (queued -> submit), "
                     "20 ns (submit -> start), 1000 ns (start -> end)")
    lines += ["CLIntercept is shutting down...", "... shutdown complete.", ""]
    (root / "clintercept_log.txt").write_text("\n".join(lines))
    if not spec.replay:
        import shutil

        shutil.rmtree(root / "Replay")
    return root


_WHOLE_COPIES = {
    "copy_image": ("clEnqueueCopyImage", "src_image", "dst_image"),
    "copy_image_to_buffer": ("clEnqueueCopyImageToBuffer", "src_image", "dst_buffer"),
    "copy_buffer_to_image": ("clEnqueueCopyBufferToImage", "src_buffer", "dst_image"),
}


def _format_values(order: str, ctype: str) -> tuple[int, int]:
    """The enum values of a 4-byte texel format (the one table's)."""
    from cltui.capture import images

    o, t = images.channel_order(order), images.channel_type(ctype)
    assert o is not None and t is not None and images.texel_bytes(order, ctype) == 4
    return o.value, t.value


def _vec(v: tuple[int, int, int]) -> str:
    return f"< {v[0]}, {v[1]}, {v[2]} >"


def _copy_rect(src: npt.NDArray[Any], dst: npt.NDArray[Any], op: HostOp) -> None:
    """A rectangle copy with the pitches a program passes as 0 (tight: the region's)."""
    (sx, sy, sz), (dx, dy, dz), (w, h, d) = op.src_origin, op.dst_origin, op.region
    row, sl = w, w * h
    for z in range(d):
        for y in range(h):
            so = (sz + z) * sl + (sy + y) * row + sx
            do = (dz + z) * sl + (dy + y) * row + dx
            dst[do : do + w] = src[so : so + w]


# --------------------------------------------------------------------------- fixtures

CHAIN_SOURCE = """\
__kernel void fill_iota(__global int *a, int base)
{
    int i = get_global_id(0);
    a[i] = base + i;
}

__kernel void scale(__global int *dst, __global const int *src, int s)
{
    int i = get_global_id(0);
    dst[i] = src[i] * s;
}

__kernel void add(__global int *c, __global const int *a, __global const int *b)
{
    int i = get_global_id(0);
    c[i] = a[i] + b[i];
}

__kernel void square(__global int *c)
{
    int i = get_global_id(0);
    c[i] = c[i] * c[i];
}
"""


def _fill_iota(st: dict[str, npt.NDArray[Any]], a: list[Any]) -> None:
    st[a[0]][:] = a[1] + np.arange(st[a[0]].size, dtype=np.int32)


def _scale(st: dict[str, npt.NDArray[Any]], a: list[Any]) -> None:
    st[a[0]][:] = st[a[1]] * np.int32(a[2])


def _add(st: dict[str, npt.NDArray[Any]], a: list[Any]) -> None:
    st[a[0]][:] = st[a[1]] + st[a[2]]


def _square(st: dict[str, npt.NDArray[Any]], a: list[Any]) -> None:
    st[a[0]][:] = st[a[0]] * st[a[0]]


def chain_capture(
    n: int = 16, plant_at: int | None = None, host_write_at: int | None = None
) -> SynthCapture:
    """Six dependent int kernels (enqueues 0-5); ``plant_at`` plants a wrong value there.

    0 fill_iota(A), 1 scale(B<-A), 2 add(C<-A,B), 3 square(C), 4 scale(B<-C), 5 add(A<-B,C).
    ``host_write_at`` changes buffer C before that launch without logging it.
    """
    z = np.zeros(n, dtype=np.int32)
    B = Arg("buf", "A"), Arg("buf", "B"), Arg("buf", "C")
    launches = [
        Launch("fill_iota", [B[0], Arg("int", 5)], n, 8, _fill_iota),
        Launch("scale", [B[1], B[0], Arg("int", 3)], n, 8, _scale),
        Launch("add", [B[2], B[0], B[1]], n, 8, _add),
        Launch("square", [B[2]], n, 8, _square),
        Launch("scale", [B[1], B[2], Arg("int", 2)], n, 8, _scale),
        Launch("add", [B[0], B[1], B[2]], n, 8, _add),
    ]
    if plant_at is not None:
        out = launches[plant_at].args[0].value
        launches[plant_at].plant[out] = (3, 12345)
    if host_write_at is not None:  # C changes behind the log's back before this launch
        launches[host_write_at].host_write["C"] = (1, -7)
    return SynthCapture(CHAIN_SOURCE, {"A": z.copy(), "B": z.copy(), "C": z.copy()}, launches)


# Line numbers matter: tests assert them (OOB_LINE, RACE_LINE_*).
BUGGY_SOURCE = """\
__kernel void oob_write(__global float *out, int n)
{
    int i = get_global_id(0);
    out[i + 1] = (float)i;
}

__kernel void local_race(__global const int *in, __global int *out, __local int *tmp)
{
    int l = get_local_id(0);
    tmp[l] = in[get_global_id(0)];
    out[get_global_id(0)] = tmp[(l + 1) % get_local_size(0)];
}

__kernel void clean(__global int *out)
{
    out[get_global_id(0)] = 2 * (int)get_global_id(0);
}

__kernel void diverge_barrier(__global int *out)
{
    int l = get_local_id(0);
    if (l < 2)
        barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = l;
}
"""
OOB_LINE = 4
RACE_LINES = (10, 11)
BARRIER_LINE = 23


def _oob(st: dict[str, npt.NDArray[Any]], a: list[Any]) -> None:
    out = st[a[0]]
    out[1:] = np.arange(out.size - 1, dtype=np.float32)


def _race(st: dict[str, npt.NDArray[Any]], a: list[Any]) -> None:
    st[a[1]][:] = np.roll(st[a[0]], -1)


def _clean(st: dict[str, npt.NDArray[Any]], a: list[Any]) -> None:
    st[a[0]][:] = 2 * np.arange(st[a[0]].size, dtype=np.int32)


def buggy_capture(n: int = 8) -> SynthCapture:
    """0 clean, 1 oob_write (writes out[n]), 2 local_race, 3 clean, 4 diverge_barrier.

    One work-group of ``n`` work-items each.
    """
    return SynthCapture(
        BUGGY_SOURCE,
        {
            "F": np.zeros(n, dtype=np.float32),
            "I": np.arange(n, dtype=np.int32),
            "O": np.zeros(n, dtype=np.int32),
        },
        [
            Launch("clean", [Arg("buf", "O")], n, n, _clean),
            Launch("oob_write", [Arg("buf", "F"), Arg("int", n)], n, n, _oob),
            Launch("local_race", [Arg("buf", "I"), Arg("buf", "O"), Arg("local", 4 * n)],
                   n, n, _race),
            Launch("clean", [Arg("buf", "O")], n, n, _clean),
            Launch("diverge_barrier", [Arg("buf", "O")], n, n, _lid),
        ],
    )


def _lid(st: dict[str, npt.NDArray[Any]], a: list[Any]) -> None:
    st[a[0]][:] = np.arange(st[a[0]].size, dtype=np.int32) % st[a[0]].size


# Oclgrind 21.10's uninitialised-value checker segfaults on shuffle2() of a vector whose
# other lanes were never set (found for issue 11; it runs fine with --uninitialized off).
CRASH_SOURCE = """\
__kernel void clean(__global int *out)
{
    out[get_global_id(0)] = 2 * (int)get_global_id(0);
}

__kernel void shuffle_uninit(__global float4 *out, __global const float4 *in)
{
    float4 v;
    float4 w = in[0];
    v.x = w.x;
    out[get_global_id(0)] = shuffle2(v, w, (uint4)(0, 5, 2, 7));
}

__kernel void oob_write(__global float *out, int n)
{
    int i = get_global_id(0);
    out[i + 1] = (float)i;
}
"""
CRASH_OOB_LINE = 17


def crash_capture(n: int = 8) -> SynthCapture:
    """0 clean, 1 shuffle_uninit (crashes Oclgrind's uninitialised-value checker),
    2 oob_write (an out-of-bounds write after the crash), 3 clean."""
    return SynthCapture(
        CRASH_SOURCE,
        {
            "O": np.zeros(n, dtype=np.int32),
            "V": np.zeros(4 * n, dtype=np.float32),
            "W": np.arange(4 * n, dtype=np.float32),
            "F": np.zeros(n, dtype=np.float32),
        },
        [
            Launch("clean", [Arg("buf", "O")], n, n, _clean),
            Launch("shuffle_uninit", [Arg("buf", "V"), Arg("buf", "W")], n, n),
            Launch("oob_write", [Arg("buf", "F"), Arg("int", n)], n, n, _oob),
            Launch("clean", [Arg("buf", "O")], n, n, _clean),
        ],
    )
