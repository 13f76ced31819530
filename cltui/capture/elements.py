"""What one element of an argument's data is: the one answer for the buffer pane, the results
screen, the compare across captures and the replay plan.

A buffer's element is the kernel signature's pointee type (decoded once, with the enqueue:
``KernelArg.ctype`` / ``KernelArg.dtype``); an image's is one texel of its format
(:mod:`cltui.capture.images`), else of the dump's bits per texel.  Without either, bytes.
"""

from __future__ import annotations

import numpy as np

from cltui.capture import images
from cltui.capture.cltypes import CType, parse_type
from cltui.capture.model import ArgKind, Dump, KernelArg

__all__ = ["element_ctype", "element_dtype"]

# a texel by its bits when the log has no image format
_TEXEL_BY_BPP = {8: "uchar", 16: "ushort", 32: "uchar4", 64: "ushort4", 128: "float4"}


def element_ctype(arg: KernelArg) -> CType | None:
    """The OpenCL C type of one element of ``arg``'s data, None when unknown (show bytes)."""
    if arg.kind is ArgKind.IMAGE:
        fmt = arg.mem.image if arg.mem is not None else None
        dump = arg.pre or arg.post
        name = images.texel_scalar(fmt.channel_order, fmt.channel_data_type) if fmt else None
        if name is None and dump is not None and dump.image_bpp in _TEXEL_BY_BPP:
            name = _TEXEL_BY_BPP[dump.image_bpp]
        return parse_type(name) if name else None
    ctype = arg.ctype
    if ctype is None or not ctype.size or ctype.dtype is None:
        return None
    return ctype


def element_dtype(
    arg: KernelArg, dump: Dump
) -> tuple[np.dtype[np.generic], tuple[int, ...] | None]:
    """The numpy dtype to read ``dump`` of ``arg`` with, and an image's (w, h, d) grid.

    An image's format is trusted only when its texel size is the dump's; else the dump's
    bits per texel as bytes.  A buffer without a known element type reads as bytes.
    """
    if dump.is_image:
        shape = dump.image_region
        fmt = arg.mem.image if arg.mem is not None else None
        if fmt is not None:
            dt = images.texel_dtype(fmt.channel_order, fmt.channel_data_type)
            if dt is not None and (dump.image_bpp is None or dt.itemsize * 8 == dump.image_bpp):
                return dt, shape
        if dump.image_bpp and dump.image_bpp % 8 == 0 and dump.image_bpp > 8:
            return np.dtype(f"({dump.image_bpp // 8},)u1"), shape
        return np.dtype(np.uint8), shape
    if arg.dtype is not None and arg.dtype.itemsize > 0:
        return arg.dtype, None
    return np.dtype(np.uint8), None
