"""The facts the feasibility rule (:mod:`.feasible`) needs, queried from pyopencl: a device's
limits, extensions and image formats (:func:`device_facts`), a built kernel's work-group
facts (:func:`kernel_facts`).  A query a driver refuses leaves the most permissive value, so
a missing fact never makes an enqueue look impossible."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .feasible import DeviceFacts, KernelFacts

if TYPE_CHECKING:
    import pyopencl as cl

IMAGE_TYPES = ("IMAGE1D", "IMAGE1D_ARRAY", "IMAGE2D", "IMAGE2D_ARRAY", "IMAGE3D")

_KNOWN_C = ("1.0", "1.1", "1.2", "2.0", "3.0")


def _info(dev: cl.Device, name: str, default: Any) -> Any:
    """``dev.get_info(device_info.NAME)``, or ``default`` when the driver refuses."""
    import pyopencl as cl

    try:
        return dev.get_info(getattr(cl.device_info, name))
    except (cl.Error, AttributeError, ValueError, TypeError, RuntimeError):
        return default


def _version(text: str) -> tuple[int, int]:
    m = re.search(r"(\d+)\.(\d+)", text or "")
    return (int(m.group(1)), int(m.group(2))) if m else (1, 2)


def c_versions(dev: cl.Device) -> list[str]:
    """The OpenCL C versions ``-cl-std`` may name on ``dev``: ``CL_DEVICE_OPENCL_C_ALL_VERSIONS``
    (OpenCL 3.0), else every version up to ``CL_DEVICE_OPENCL_C_VERSION``."""
    listed = _info(dev, "OPENCL_C_ALL_VERSIONS", None) if _version(dev.version) >= (3, 0) else None
    if listed:
        out = []
        for nv in listed:
            packed = int(getattr(nv, "version", 0))
            v = f"{packed >> 22}.{(packed >> 12) & 0x3FF}"
            if v not in out:
                out.append(v)
        return sorted(out, key=lambda v: tuple(int(x) for x in v.split(".")))
    top = _version(str(_info(dev, "OPENCL_C_VERSION", "OpenCL C 1.2")).replace("OpenCL C", ""))
    return [v for v in _KNOWN_C if tuple(int(x) for x in v.split(".")) <= top]


def _formats(ctx: cl.Context, types: Iterable[str]) -> dict[str, list[str]]:
    """Read-write image formats per image type (``RGBA/FLOAT``): what the engine creates."""
    import pyopencl as cl

    out: dict[str, list[str]] = {}
    for itype in types:
        try:
            fmts = cl.get_supported_image_formats(
                ctx, cl.mem_flags.READ_WRITE, getattr(cl.mem_object_type, itype)
            )
        except (cl.Error, AttributeError, ValueError):
            continue
        out[itype] = [
            f"{_name(cl.channel_order, f.channel_order)}/"
            f"{_name(cl.channel_type, f.channel_data_type)}"
            for f in fmts
        ]
    return out


def _name(group: Any, value: int) -> str:
    """An enum value's name in a pyopencl group (``RGBA``), or its hex (a vendor's own)."""
    try:
        return str(group.to_string(int(value)))
    except (ValueError, KeyError, TypeError):
        return f"0x{int(value):X}"


def device_facts(
    dev: cl.Device, ctx: cl.Context, image_types: Iterable[str] = IMAGE_TYPES
) -> DeviceFacts:
    """What the feasibility rule needs of ``dev`` (``ctx``: a context on it, for the image
    formats of ``image_types``: the plan's; asking for all five costs ~1.8 ms on PoCL, most
    of the pre-flight)."""
    ext = str(_info(dev, "EXTENSIONS", "")).split()
    version = _version(str(dev.version))
    non_uniform = (2, 0) <= version < (3, 0) or (
        version >= (3, 0) and bool(_info(dev, "NON_UNIFORM_WORK_GROUP_SUPPORT", False))
    )
    images = bool(_info(dev, "IMAGE_SUPPORT", False))
    return {
        "name": str(dev.name).strip(),
        "max_work_group_size": int(_info(dev, "MAX_WORK_GROUP_SIZE", 0)),
        "max_work_item_sizes": [int(x) for x in _info(dev, "MAX_WORK_ITEM_SIZES", [])],
        "extensions": ext,
        "fp64": "cl_khr_fp64" in ext or bool(_info(dev, "DOUBLE_FP_CONFIG", 0)),
        "fp16": "cl_khr_fp16" in ext,
        "image_support": images,
        "image_formats": _formats(ctx, image_types) if images else {},
        "image2d_max": [int(_info(dev, "IMAGE2D_MAX_WIDTH", 0)),
                        int(_info(dev, "IMAGE2D_MAX_HEIGHT", 0))],
        "image3d_max": [int(_info(dev, "IMAGE3D_MAX_WIDTH", 0)),
                        int(_info(dev, "IMAGE3D_MAX_HEIGHT", 0)),
                        int(_info(dev, "IMAGE3D_MAX_DEPTH", 0))],
        "image_max_array": int(_info(dev, "IMAGE_MAX_ARRAY_SIZE", 0) or 0),
        "svm": int(_info(dev, "SVM_CAPABILITIES", 0) or 0) if version >= (2, 0) else 0,
        "opencl_c_versions": c_versions(dev),
        "non_uniform": non_uniform,
        "max_mem_alloc_size": int(_info(dev, "MAX_MEM_ALLOC_SIZE", 0)),
        "global_mem_size": int(_info(dev, "GLOBAL_MEM_SIZE", 0)),
        "local_mem_size": int(_info(dev, "LOCAL_MEM_SIZE", 0)),
    }  # fmt: skip


def kernel_facts(kern: cl.Kernel, dev: cl.Device) -> KernelFacts:
    """``CL_KERNEL_WORK_GROUP_SIZE``, ``CL_KERNEL_LOCAL_MEM_SIZE`` (asked before any argument
    is set) and ``CL_KERNEL_COMPILE_WORK_GROUP_SIZE`` of a kernel on ``dev``."""
    import pyopencl as cl

    def ask(name: str) -> Any:
        try:
            return kern.get_work_group_info(getattr(cl.kernel_work_group_info, name), dev)
        except (cl.Error, AttributeError, ValueError, TypeError, RuntimeError):
            return None

    wgs, local, reqd = ask("WORK_GROUP_SIZE"), ask("LOCAL_MEM_SIZE"), ask("COMPILE_WORK_GROUP_SIZE")
    sizes = [int(x) for x in reqd] if reqd is not None else []
    return {
        "work_group_size": int(wgs) if wgs else None,
        "local_mem_size": int(local) if local is not None else None,
        "reqd_work_group_size": sizes if any(sizes) else None,
    }
