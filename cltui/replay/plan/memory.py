"""The memory objects of a plan: one per captured object (two arguments naming one object
share it), buffers with their size, images with their format, region and texel size."""

from __future__ import annotations

from typing import Literal

from cltui.capture import images
from cltui.capture.model import ArgKind, Dump, Enqueue, KernelArg
from cltui.replay.engine.schema import ImageSpec, MemorySpec
from cltui.replay.plan.base import PlanState


def mem_id(st: PlanState, enq: Enqueue, a: KernelArg) -> str:
    """The object's id: its creation in the log, else the layer's number, else the arg."""
    d = a.pre or a.post
    if a.mem is not None:
        return f"h{a.mem.handle:x}@{a.mem.line_offset}"
    if d is not None:
        return f"m{d.mem_id:04d}"
    return f"e{enq.number}a{a.index}"


def mem(st: PlanState, enq: Enqueue, a: KernelArg) -> tuple[str, str | None]:
    """(memory id, problem) for a buffer/image/SVM argument."""
    mid = mem_id(st, enq, a)
    d = a.pre or a.post
    kind: Literal["buffer", "image", "svm"] = (
        "image" if a.kind is ArgKind.IMAGE else ("svm" if a.kind is ArgKind.SVM else "buffer")
    )
    num = f"{d.mem_id:04d}" if d is not None else (f"{a.handle:#x}" if a.handle else "?")
    label = f"{kind} {num}"
    if mid in st.memory:
        if d is not None and "0x" in st.memory[mid]["label"]:
            st.memory[mid]["label"] = label  # the dumps name it: use the layer's number
        return mid, None
    info: MemorySpec = {"kind": kind, "label": label, "size": 0}
    if kind == "image":
        image, problem = _image(st, enq, a, d, label)
        if image is None:
            return mid, problem
        info["image"] = image
        w, h, dd = image["shape"]
        info["size"] = w * h * dd * image["element_size"]
    else:
        m = a.mem
        size = m.size if m is not None else 0
        if not size and d is not None and not d.hashed:
            size = d.size
        if not size:
            return mid, f"unknown size of argument {a.index} ({label})"
        info["size"] = size
        if kind == "svm":  # what the feasibility pre-flight holds a device to
            flags = m.flags if m is not None else ""
            fine = "FINE_GRAIN" in flags
            info["svm_level"] = ("fine+atomics" if fine and "SVM_ATOMICS" in flags
                                 else "fine" if fine else "coarse")  # fmt: skip
        if m is not None and m.kind == "subbuffer":
            st.notes.append(
                f"enqueue {enq.number}: argument {a.index} is a sub-buffer; replayed as a "
                "separate buffer (aliasing with its parent is not kept)"
            )
    st.memory[mid] = info
    return mid, None


def _image(
    st: PlanState, enq: Enqueue, a: KernelArg, d: Dump | None, label: str
) -> tuple[ImageSpec | None, str]:
    """An image argument's format, region and texel size (the log's creation, else the
    Replay folder's metadata), or the problem."""
    fmt = a.mem.image if a.mem is not None else None
    rf = st.replay(enq)
    meta = rf.image_meta.get(a.index) if rf is not None else None
    if fmt is not None:
        order, ctype, itype = fmt.channel_order, fmt.channel_data_type, fmt.image_type
        w, h, dd = _region(fmt.image_type, fmt.width, fmt.height, fmt.depth, fmt.array_size)
    elif meta is not None:
        order, ctype = meta.channel_order_name, meta.channel_data_type_name
        itype = meta.image_type_name
        w, h, dd = meta.region
    else:
        return None, f"no format known for the image of argument {a.index} ({label})"
    # the layer marks 1D images as 2D (capture-format §6.2): trust the kernel signature
    tname = (a.type_name or "").replace(" ", "")
    if "image1d_array_t" in tname and not itype.endswith("IMAGE1D_ARRAY"):
        itype, w, h, dd = "CL_MEM_OBJECT_IMAGE1D_ARRAY", w, max(h, 1), 1
    elif "image1d_t" in tname and not itype.endswith("IMAGE1D"):
        itype, h, dd = "CL_MEM_OBJECT_IMAGE1D", 1, 1
    if d is not None and d.image_bpp:
        esize = d.image_bpp // 8
    elif meta is not None:
        esize = meta.element_size
    else:
        esize = images.texel_bytes(order, ctype)
    if not esize:
        return None, f"unknown texel size for the image of argument {a.index} ({label})"
    spec: ImageSpec = {
        "order": order,
        "type": ctype,
        "image_type": itype,
        "shape": [w, h, dd],
        "element_size": esize,
    }
    return spec, ""


def _region(itype: str, w: int, h: int, d: int, array_size: int) -> tuple[int, int, int]:
    """The region the layer dumps (capture-format §3.3)."""
    if itype.endswith("IMAGE1D_ARRAY"):
        return max(w, 1), max(array_size, 1), 1
    hh = h if h else (array_size if array_size else 1)
    dd = d if d else (array_size if array_size else 1)
    if itype.endswith("IMAGE2D") or itype.endswith("IMAGE1D") or itype.endswith("BUFFER"):
        dd = 1
    if itype.endswith("IMAGE1D") or itype.endswith("IMAGE1D_BUFFER"):
        hh = 1
    return max(w, 1), max(hh, 1), max(dd, 1)
