"""Memory objects on the device: creating buffers, images and SVM, kernel argument values,
writes, reads, restores and the host transfers a plan replays.  A mixin of
:class:`engine.Engine`; copied beside ``engine.py`` in a bundle."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

if __package__:
    pass
    from .engine_base import (
        PINNED_MIN_BYTES,
        EngineError,
        _cl_enum,
        _cl_msg,
        _EngineState,
        _image_1d,
        _Mem,
    )
else:  # pragma: no cover - the exported bundle runs this file as a script
    pass
    from engine_base import (  # type: ignore[no-redef, import-not-found]
        PINNED_MIN_BYTES,
        EngineError,
        _cl_enum,
        _cl_msg,
        _EngineState,
        _image_1d,
        _Mem,
    )


class _Memory(_EngineState):
    """Memory objects on the device: creating buffers, images and SVM, kernel argument values,"""

    def _create_mem(self, mid: str, info: dict[str, Any]) -> _Mem:
        import pyopencl as cl

        m = _Mem(info)
        rw = cl.mem_flags.READ_WRITE
        try:
            if m.kind == "image":
                im = info["image"]
                fmt = cl.ImageFormat(
                    _cl_enum(cl.channel_order, im["order"]), _cl_enum(cl.channel_type, im["type"])
                )
                w, h, d = (int(x) for x in im["shape"])
                itype = str(im.get("image_type", "CL_MEM_OBJECT_IMAGE2D"))
                if itype.endswith("IMAGE3D"):
                    m.buf = cl.create_image(self.ctx, rw, fmt, shape=(w, h, d))
                elif itype.endswith("IMAGE2D_ARRAY"):
                    m.buf = cl.create_image(self.ctx, rw, fmt, shape=(w, h, d), is_array=True)
                elif itype.endswith("IMAGE1D_ARRAY"):
                    m.buf = _image_1d(self.ctx, rw, fmt, w, h, cl.mem_object_type.IMAGE1D_ARRAY)
                elif itype.endswith("IMAGE1D"):
                    m.buf = _image_1d(self.ctx, rw, fmt, w, 0, cl.mem_object_type.IMAGE1D)
                else:
                    m.buf = cl.create_image(self.ctx, rw, fmt, shape=(w, h))
                m.image_region = (w, h, d)
                m.size = w * h * d * int(im["element_size"])
            elif m.kind == "svm" and self.has_svm:
                m.arr = cl.svm_empty(
                    self.ctx, cl.svm_mem_flags.READ_WRITE, max(m.size, 1), np.uint8
                )
                m.svm = cl.SVM(m.arr)
            elif m.kind == "subbuffer":
                parent = self.mems[info["parent"]]
                m.buf = parent.buf.get_sub_region(int(info.get("origin", 0)), m.size)
            else:  # buffer, or SVM emulated by a buffer
                if m.kind == "svm":
                    self.notes.append(
                        f"{info.get('label', mid)}: {self.device['name']} has no SVM: "
                        "emulated with a buffer"
                    )
                m.buf = cl.Buffer(self.ctx, rw, max(m.size, 1))
        except cl.Error as exc:
            raise EngineError(
                f"cannot create {info.get('label', mid)} on {self.device['name']}: {_cl_msg(exc)}"
            ) from None
        return m

    def _zero_fill(self) -> None:
        """Objects start zeroed (outputs that no load covers get defined contents)."""
        for m in self.mems.values():
            if m.kind == "subbuffer":
                continue
            self._write(m, np.zeros(m.size, dtype=np.uint8), blocking=False)
        self.queue.finish()

    def _arg_value(self, arg: dict[str, Any]) -> Any:
        import pyopencl as cl

        kind = arg["kind"]
        if kind in ("buffer", "image"):
            m = self.mems[arg["mem"]]
            return m.buf
        if kind == "svm":
            m = self.mems[arg["mem"]]
            off = int(arg.get("offset", 0))
            if m.svm is not None:
                if not off:
                    return m.svm
                view = cl.SVM(m.arr[off:])
                self._arg_refs.append(view)
                return view
            if not off:
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

    def _write(self, m: _Mem, host: npt.NDArray[np.uint8], blocking: bool = False) -> Any:
        import pyopencl as cl

        if m.image_region is not None:  # low-level call: enqueue_copy refuses 1D images
            return cl._cl._enqueue_write_image(
                self.queue, m.buf, (0, 0, 0), m.image_region, host, is_blocking=blocking
            )
        if m.svm is not None:
            return cl.enqueue_copy(self.queue, m.svm, host, is_blocking=blocking)
        return cl.enqueue_copy(self.queue, m.buf, host, is_blocking=blocking)

    def _read(self, m: _Mem, host: npt.NDArray[np.uint8]) -> Any:
        import pyopencl as cl

        if m.image_region is not None:
            return cl._cl._enqueue_read_image(
                self.queue, m.buf, (0, 0, 0), m.image_region, host, is_blocking=False
            )
        if m.svm is not None:
            return cl.enqueue_copy(self.queue, host, m.svm, is_blocking=False)
        return cl.enqueue_copy(self.queue, host, m.buf, is_blocking=False)

    def read_mem(self, mid: str) -> npt.NDArray[np.uint8]:
        """The current device contents of memory object ``mid`` (blocking)."""
        m = self.mems[mid]
        host = np.empty(m.size, np.uint8)
        self._read(m, host)
        self.queue.finish()
        return host

    def _restorer(self, m: _Mem, host: npt.NDArray[np.uint8]) -> Callable[[], Any]:
        """The cheapest way to put ``host`` back into ``m`` again and again: a device-side
        copy from a staged buffer (buffers, images), else a host write (SVM)."""
        import pyopencl as cl

        q = self.queue
        if m.svm is not None or m.buf is None or host.size != m.size or not m.size:
            return lambda: self._write(m, host)
        flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
        try:
            stage = cl.Buffer(self.ctx, flags, hostbuf=np.ascontiguousarray(host))
        except cl.Error:  # out of device memory: restore from the host
            return lambda: self._write(m, host)
        dst = m.buf
        if m.image_region is not None:
            region = m.image_region
            to_image = cl._cl._enqueue_copy_buffer_to_image
            return lambda: to_image(q, stage, dst, 0, (0, 0, 0), region)
        # the low-level call: enqueue_copy's argument dispatch costs ~2 us a call on PoCL
        copy_buffer = cl._cl._enqueue_copy_buffer
        return lambda: copy_buffer(q, stage, dst)

    def _host_input(self, load: dict[str, Any], m: _Mem) -> npt.NDArray[np.uint8]:
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

    def _readback(self, m: _Mem) -> npt.NDArray[np.uint8]:
        if m.svm is None and self._use_pinned(m.size):
            return self._pinned(m.size)
        return np.empty(m.size, np.uint8)

    def _use_pinned(self, nbytes: int) -> bool:
        """Transfers to and from a GPU go through pinned host memory: from pageable memory
        NVIDIA's driver reached 6 GB/s on an H200, from pinned memory 55 GB/s."""
        kind = str(self.device.get("type", ""))
        return nbytes >= PINNED_MIN_BYTES and "GPU" in kind and "CPU" not in kind

    def _pinned(self, nbytes: int) -> npt.NDArray[np.uint8]:
        """A host array in pinned (page-locked) memory, mapped for the engine's lifetime."""
        import pyopencl as cl

        try:
            buf = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR, nbytes)
            map_buffer: Any = cl.enqueue_map_buffer
            arr, _ev = map_buffer(
                self.queue, buf, cl.map_flags.READ | cl.map_flags.WRITE, 0, (nbytes,), np.uint8
            )
        except cl.Error:  # no pinned memory left: pageable memory still works
            return np.empty(nbytes, np.uint8)
        self._arg_refs.append(buf)
        return arr  # type: ignore[no-any-return]

    def _transfer_op(self, step: dict[str, Any], t: dict[str, Any]) -> Callable[[], Any]:
        """A host-side transfer of the capture (a fill, a copy) as one bound OpenCL call."""
        import pyopencl as cl

        op = t["op"]
        kind = op["op"]
        q = self.queue
        dst = self.mems[t["mem"]]
        where = f"enqueue {t['enqueue']} ({t.get('function', kind)}, before {step['enqueue']})"
        if dst.buf is None:
            raise EngineError(f"{where}: cannot replay it on an SVM allocation", t["enqueue"])
        if kind == "fill":
            pattern = np.frombuffer(bytes.fromhex(op["pattern"]), np.uint8).copy()
            return functools.partial(
                cl.enqueue_fill_buffer, q, dst.buf, pattern, int(op["offset"]), int(op["size"])
            )
        src = self.mems[op["src"]]
        if src.buf is None:
            raise EngineError(f"{where}: cannot replay it from an SVM allocation", t["enqueue"])
        if kind == "copy":
            return functools.partial(
                cl._cl._enqueue_copy_buffer, q, src.buf, dst.buf, int(op["size"]),
                int(op["src_offset"]), int(op["dst_offset"]),
            )  # fmt: skip
        if kind == "copy_rect":
            keys = ("src_row_pitch", "src_slice_pitch", "dst_row_pitch", "dst_slice_pitch")
            pitches = [int(op.get(k) or 0) for k in keys]
            return functools.partial(
                cl._cl._enqueue_copy_buffer_rect, q, src.buf, dst.buf,
                tuple(op["src_origin"] or (0, 0, 0)), tuple(op["dst_origin"] or (0, 0, 0)),
                tuple(op["region"]), tuple(pitches[:2]), tuple(pitches[2:]),
            )  # fmt: skip
        # copy_whole: the log has no image origin/region: the whole object
        zero = (0, 0, 0)
        if src.image_region is not None and dst.image_region is not None:
            return functools.partial(
                cl._cl._enqueue_copy_image, q, src.buf, dst.buf, zero, zero, src.image_region
            )
        if src.image_region is not None:
            return functools.partial(
                cl._cl._enqueue_copy_image_to_buffer, q, src.buf, dst.buf, zero,
                src.image_region, 0,
            )  # fmt: skip
        if dst.image_region is not None:
            return functools.partial(
                cl._cl._enqueue_copy_buffer_to_image, q, src.buf, dst.buf, 0, zero,
                dst.image_region,
            )  # fmt: skip
        return functools.partial(cl._cl._enqueue_copy_buffer, q, src.buf, dst.buf, dst.size)
