"""Memory objects on the device: creating buffers, images and SVM, kernel argument values,
writes, reads, restores and the host transfers a plan replays.  The :class:`DeviceMemory`
part of :class:`.core.Engine` owns the memory objects."""

from __future__ import annotations

import functools
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

import numpy as np

from .base import (
    PINNED_MIN_BYTES,
    EngineError,
    EngineOptions,
    HostArray,
    Restore,
    Shared,
    _cl_enum,
    _cl_msg,
    _image_1d,
    _Mem,
)
from .schema import (
    ArgSpec,
    ImageSpec,
    LoadSpec,
    Manifest,
    MemorySpec,
    StepSpec,
    TransferOp,
    TransferSpec,
)

if TYPE_CHECKING:
    import pyopencl as cl


class DeviceMemory:
    """The plan's memory objects on one device (``mems``: memory id -> :class:`.base._Mem`)
    and the pyopencl objects kernel arguments refer to, kept alive (see the module doc)."""

    def __init__(self, opts: EngineOptions, notes: list[str], shared: Shared) -> None:
        self.device = opts.device
        self.loader = opts.loader
        self.notes = notes  # the engine's notes (one list for every part)
        self.dev, self.ctx, self.queue = shared.dev, shared.ctx, shared.queue
        self.has_svm = bool(opts.device.get("svm"))
        self.mems: dict[str, _Mem] = {}
        # objects a kernel argument refers to must outlive the launches: clSetKernelArg
        # copies only the handle, and a released sampler makes NVIDIA's driver fail the
        # enqueue with CL_INVALID_KERNEL_ARGS (PoCL happens to tolerate it)
        self._arg_refs: list[object] = []

    def create_all(self, plan: Manifest, skip: Collection[str]) -> None:
        """Every memory object of ``plan`` except those in ``skip`` (not made here), zeroed."""
        for mid, info in plan["memory"].items():
            if mid not in skip:
                self.mems[mid] = self.create(mid, info)
        self.zero_fill()

    def create(self, mid: str, info: MemorySpec) -> _Mem:
        import pyopencl as cl

        m = _Mem(info)
        rw = cl.mem_flags.READ_WRITE
        try:
            if m.kind == "image":
                m.image = m.obj = self.create_image(info["image"], rw)
                w, h, d = (int(x) for x in info["image"]["shape"])
                m.image_region = (w, h, d)
                m.size = w * h * d * int(info["image"]["element_size"])
            elif m.kind == "svm" and self.has_svm:
                m.arr = cl.svm_empty(
                    self.ctx, cl.svm_mem_flags.READ_WRITE, max(m.size, 1), np.dtype(np.uint8)
                )
                m.svm = cl.SVM(m.arr)
            elif m.kind == "subbuffer":
                parent = self.mems[info.get("parent", "")].buf
                if parent is None:
                    raise EngineError(f"{info.get('label', mid)}: its parent is not a buffer")
                m.buf = m.obj = parent.get_sub_region(int(info.get("origin", 0)), m.size)
            else:  # buffer, or SVM emulated by a buffer
                if m.kind == "svm":
                    self.notes.append(
                        f"{info.get('label', mid)}: {self.device['name']} has no SVM: "
                        "emulated with a buffer"
                    )
                m.buf = m.obj = cl.Buffer(self.ctx, rw, max(m.size, 1))
        except cl.Error as exc:
            raise EngineError(
                f"cannot create {info.get('label', mid)} on {self.device['name']}: {_cl_msg(exc)}"
            ) from None
        return m

    def create_image(self, im: ImageSpec, rw: cl.mem_flags) -> cl.Image:
        import pyopencl as cl

        fmt = cl.ImageFormat(
            _cl_enum(cl.channel_order, im["order"]), _cl_enum(cl.channel_type, im["type"])
        )
        w, h, d = (int(x) for x in im["shape"])
        itype = str(im.get("image_type", "CL_MEM_OBJECT_IMAGE2D"))
        if itype.endswith("IMAGE3D"):
            return cl.create_image(self.ctx, rw, fmt, shape=(w, h, d))
        if itype.endswith("IMAGE2D_ARRAY"):
            return cl.create_image(self.ctx, rw, fmt, shape=(w, h, d), is_array=True)
        if itype.endswith("IMAGE1D_ARRAY"):
            return _image_1d(self.ctx, rw, fmt, w, h, cl.mem_object_type.IMAGE1D_ARRAY)
        if itype.endswith("IMAGE1D"):
            return _image_1d(self.ctx, rw, fmt, w, 0, cl.mem_object_type.IMAGE1D)
        return cl.create_image(self.ctx, rw, fmt, shape=(w, h))

    def zero_fill(self) -> None:
        """Objects start zeroed (outputs that no load covers get defined contents)."""
        for m in self.mems.values():
            if m.kind == "subbuffer":
                continue
            self.write(m, np.zeros(m.size, dtype=np.uint8), blocking=False)
        self.queue.finish()

    def arg_value(self, arg: ArgSpec) -> Any:
        """The value ``Kernel.set_arg`` takes for a plan argument (a pyopencl object, a
        scalar's bytes, None; Any: pyopencl's ``KernelArg`` type leaves out LocalMemory)."""
        import pyopencl as cl

        kind = arg["kind"]
        if kind in ("buffer", "image"):
            return self.mems[arg["mem"]].obj
        if kind == "svm":
            return self._svm_arg(self.mems[arg["mem"]], int(arg.get("offset", 0)))
        if kind == "scalar":
            raw = bytes.fromhex(arg["hex"])
            return np.frombuffer(raw, dtype=np.uint8).copy()
        if kind == "local":
            return cl.LocalMemory(max(int(arg["size"]), 1))
        if kind == "sampler":
            sampler = cl.Sampler(
                self.ctx,
                bool(arg["normalized"]),
                _cl_enum(cl.addressing_mode, arg["addressing"]),
                _cl_enum(cl.filter_mode, arg["filter"]),
            )
            self._arg_refs.append(sampler)
            return sampler
        if kind == "null":
            return None
        raise EngineError(f"argument {arg.get('index')}: cannot replay a {kind!r} argument")

    def _svm_arg(self, m: _Mem, off: int) -> cl.SVM[HostArray] | cl.Buffer | None:
        """An SVM argument at byte ``off``: an SVM pointer, or (no SVM on the device) the
        emulating buffer or an aligned sub-buffer of it."""
        import pyopencl as cl

        if m.svm is not None and m.arr is not None:
            if not off:
                return m.svm
            view = cl.SVM(m.arr[off:])
            self._arg_refs.append(view)
            return view
        if not off or m.buf is None:
            return m.buf
        if off not in m.subs:
            align = int(self.dev.mem_base_addr_align) // 8
            if align and off % align:
                raise EngineError(
                    f"device has no SVM and the SVM offset {off} is not a multiple of its "
                    f"{align}-byte sub-buffer alignment"
                )
            m.subs[off] = m.buf.get_sub_region(off, m.size - off)
        return m.subs[off]

    def write(self, m: _Mem, host: HostArray, blocking: bool = False) -> cl.Event:
        import pyopencl as cl

        if m.image is not None:  # low-level call: enqueue_copy refuses 1D images
            return cl._cl._enqueue_write_image(
                self.queue, m.image, (0, 0, 0), m.image_region, host, is_blocking=blocking
            )
        dst: Any = m.svm if m.svm is not None else m.buf  # an SVM pointer or a buffer
        return cl.enqueue_copy(self.queue, dst, host, is_blocking=blocking)

    def read(self, m: _Mem, host: HostArray) -> cl.Event:
        import pyopencl as cl

        if m.image is not None:
            return cl._cl._enqueue_read_image(
                self.queue, m.image, (0, 0, 0), m.image_region, host, is_blocking=False
            )
        src: Any = m.svm if m.svm is not None else m.buf  # an SVM pointer or a buffer
        return cl.enqueue_copy(self.queue, host, src, is_blocking=False)

    def read_mem(self, mid: str) -> HostArray:
        """The current device contents of memory object ``mid`` (blocking)."""
        m = self.mems[mid]
        host = np.empty(m.size, np.uint8)
        self.read(m, host)
        self.queue.finish()
        return host

    def restorer(self, m: _Mem, host: HostArray) -> Restore:
        """The cheapest way to put ``host`` back into ``m`` again and again: a device-side
        copy from a staged buffer (buffers, images), else a host write (SVM)."""
        import pyopencl as cl

        q = self.queue
        if m.svm is not None or m.obj is None or host.size != m.size or not m.size:
            return lambda: self.write(m, host)
        flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
        try:
            stage = cl.Buffer(self.ctx, flags, hostbuf=np.ascontiguousarray(host))
        except cl.Error:  # out of device memory: restore from the host
            return lambda: self.write(m, host)
        if m.image is not None:
            image, region = m.image, m.image_region
            to_image = cl._cl._enqueue_copy_buffer_to_image
            return lambda: to_image(q, stage, image, 0, (0, 0, 0), region)
        # the low-level call: enqueue_copy's argument dispatch costs ~2 us a call on PoCL
        copy_buffer = cl._cl._enqueue_copy_buffer
        dst = m.buf
        if dst is None:  # not reached: an object is a buffer or an image
            return lambda: self.write(m, host)
        return lambda: copy_buffer(q, stage, dst)

    def host_input(self, load: LoadSpec, m: _Mem) -> HostArray:
        """A load's data as the host side of a write into ``m`` (pinned on a GPU, its size
        fixed to the object's)."""
        data = self.loader(load["data"])
        if data.size == m.size:
            if m.svm is None and self._use_pinned(m.size):
                staged = self._pinned(m.size)
                staged[:] = data
                return staged
            # pyopencl wraps an SVM copy's host side in SVM(), which needs a writable array
            return data if (m.svm is None or data.flags.writeable) else np.array(data)
        fixed = self._pinned(m.size) if self._use_pinned(m.size) else np.empty(m.size, np.uint8)
        n = min(m.size, data.size)
        fixed[:n] = data[:n]
        fixed[n:] = 0
        return fixed

    def readback(self, m: _Mem) -> HostArray:
        if m.svm is None and self._use_pinned(m.size):
            return self._pinned(m.size)
        return np.empty(m.size, np.uint8)

    def _use_pinned(self, nbytes: int) -> bool:
        """Transfers to and from a GPU go through pinned host memory: from pageable memory
        NVIDIA's driver reached 6 GB/s on an H200, from pinned memory 55 GB/s."""
        kind = str(self.device.get("type", ""))
        return nbytes >= PINNED_MIN_BYTES and "GPU" in kind and "CPU" not in kind

    def _pinned(self, nbytes: int) -> HostArray:
        """A host array in pinned (page-locked) memory, mapped for the engine's lifetime."""
        import pyopencl as cl

        try:
            buf = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR, nbytes)
            map_buffer: Any = cl.enqueue_map_buffer  # its stub refuses our flags and dtype
            arr, _ev = map_buffer(
                self.queue, buf, cl.map_flags.READ | cl.map_flags.WRITE, 0, (nbytes,), np.uint8
            )
        except cl.Error:  # no pinned memory left: pageable memory still works
            return np.empty(nbytes, np.uint8)
        self._arg_refs.append(buf)
        pinned: HostArray = arr
        return pinned

    def transfer_op(self, step: StepSpec, t: TransferSpec) -> Restore:
        """A host-side transfer of the capture (a fill, a copy) as one bound OpenCL call."""
        import pyopencl as cl

        op: TransferOp = t["op"] or {}
        kind = op["op"]
        q = self.queue
        dst = self.mems[t["mem"]]
        where = f"enqueue {t['enqueue']} ({t.get('function', kind)}, before {step['enqueue']})"
        if dst.obj is None:
            raise EngineError(f"{where}: cannot replay it on an SVM allocation", t["enqueue"])
        src = self.mems[op["src"]] if kind != "fill" else dst
        if src.obj is None:
            raise EngineError(f"{where}: cannot replay it from an SVM allocation", t["enqueue"])
        if kind == "copy_whole":  # the log has no image origin/region: the whole object
            return _copy_whole(q, src, dst)
        if src.buf is None or dst.buf is None:
            raise EngineError(f"{where}: cannot replay it on an image", t["enqueue"])
        if kind == "fill":
            pattern = np.frombuffer(bytes.fromhex(op["pattern"]), np.uint8).copy()
            return functools.partial(
                cl.enqueue_fill_buffer, q, dst.buf, pattern, int(op["offset"]), int(op["size"])
            )
        if kind == "copy":
            return functools.partial(
                cl._cl._enqueue_copy_buffer, q, src.buf, dst.buf, int(op["size"]),
                int(op["src_offset"]), int(op["dst_offset"]),
            )  # fmt: skip
        pitches = [  # copy_rect
            int(op.get("src_row_pitch") or 0), int(op.get("src_slice_pitch") or 0),
            int(op.get("dst_row_pitch") or 0), int(op.get("dst_slice_pitch") or 0),
        ]  # fmt: skip
        return functools.partial(
            cl._cl._enqueue_copy_buffer_rect, q, src.buf, dst.buf,
            tuple(op.get("src_origin") or (0, 0, 0)), tuple(op.get("dst_origin") or (0, 0, 0)),
            tuple(op["region"]), tuple(pitches[:2]), tuple(pitches[2:]),
        )  # fmt: skip


def _copy_whole(q: cl.CommandQueue, src: _Mem, dst: _Mem) -> Restore:
    """A whole-object copy between buffers and images, as one bound OpenCL call."""
    import pyopencl as cl

    zero = (0, 0, 0)
    if src.image is not None and dst.image is not None:
        return functools.partial(
            cl._cl._enqueue_copy_image, q, src.image, dst.image, zero, zero, src.image_region
        )
    if src.image is not None and dst.buf is not None:
        return functools.partial(
            cl._cl._enqueue_copy_image_to_buffer, q, src.image, dst.buf, zero,
            src.image_region, 0,
        )  # fmt: skip
    if dst.image is not None and src.buf is not None:
        return functools.partial(
            cl._cl._enqueue_copy_buffer_to_image, q, src.buf, dst.image, 0, zero,
            dst.image_region,
        )  # fmt: skip
    assert src.buf is not None and dst.buf is not None  # objects of one of the kinds above
    return functools.partial(cl._cl._enqueue_copy_buffer, q, src.buf, dst.buf, dst.size)
