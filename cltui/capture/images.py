"""OpenCL image formats: the one table of channel orders and channel data types.

Everything that types an image (the log's formats, ``Image_MetaData`` files, replay plans, the
compare, the image and buffer panes) asks this module; nothing else holds a format table.

Texel sizes follow the Khronos conformance tests (``get_pixel_bytes``): a texel of a
non-packed format is its channel count times its channel size; the sRGB orders are ordinary
orders of 3 (``CL_sRGB``, ``CL_sRGBx``: the ``x`` is no stored channel, as in ``CL_RGBx``) or
4 channels; a packed data type (565, 555, 101010, 101010_2, UNORM_INT24) stores every channel
of a texel in one 16- or 32-bit word whatever the order says.  The enum values are the ones in
Khronos' ``CL/cl.h`` (a test reads the header and compares).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "ORDERS",
    "TYPES",
    "ChannelOrder",
    "ChannelType",
    "channel_order",
    "channel_type",
    "channels",
    "order_name",
    "texel_bytes",
    "texel_dtype",
    "texel_dtype_spec",
    "texel_scalar",
    "type_name",
]


@dataclass(frozen=True, slots=True)
class ChannelOrder:
    """A ``cl_channel_order``: its name, enum value, stored channels, whether it is sRGB."""

    name: str
    value: int
    channels: int
    srgb: bool = False


@dataclass(frozen=True, slots=True)
class ChannelType:
    """A ``cl_channel_type``.

    ``component`` is the numpy dtype of one stored channel, or of the whole packed word when
    ``packed``; ``normalized`` types read as floats in [0, 1] (UNORM) or [-1, 1] (SNORM);
    ``scalar`` is the OpenCL C scalar type of one channel (None for packed types).
    """

    name: str
    value: int
    component: str
    normalized: bool = False
    packed: bool = False
    scalar: str | None = None


ORDERS: tuple[ChannelOrder, ...] = (
    ChannelOrder("CL_R", 0x10B0, 1),
    ChannelOrder("CL_A", 0x10B1, 1),
    ChannelOrder("CL_RG", 0x10B2, 2),
    ChannelOrder("CL_RA", 0x10B3, 2),
    ChannelOrder("CL_RGB", 0x10B4, 3),
    ChannelOrder("CL_RGBA", 0x10B5, 4),
    ChannelOrder("CL_BGRA", 0x10B6, 4),
    ChannelOrder("CL_ARGB", 0x10B7, 4),
    ChannelOrder("CL_INTENSITY", 0x10B8, 1),
    ChannelOrder("CL_LUMINANCE", 0x10B9, 1),
    ChannelOrder("CL_Rx", 0x10BA, 1),
    ChannelOrder("CL_RGx", 0x10BB, 2),
    ChannelOrder("CL_RGBx", 0x10BC, 3),
    ChannelOrder("CL_DEPTH", 0x10BD, 1),
    ChannelOrder("CL_DEPTH_STENCIL", 0x10BE, 1),
    ChannelOrder("CL_sRGB", 0x10BF, 3, srgb=True),
    ChannelOrder("CL_sRGBx", 0x10C0, 3, srgb=True),
    ChannelOrder("CL_sRGBA", 0x10C1, 4, srgb=True),
    ChannelOrder("CL_sBGRA", 0x10C2, 4, srgb=True),
    ChannelOrder("CL_ABGR", 0x10C3, 4),
)

TYPES: tuple[ChannelType, ...] = (
    ChannelType("CL_SNORM_INT8", 0x10D0, "|i1", normalized=True, scalar="char"),
    ChannelType("CL_SNORM_INT16", 0x10D1, "<i2", normalized=True, scalar="short"),
    ChannelType("CL_UNORM_INT8", 0x10D2, "|u1", normalized=True, scalar="uchar"),
    ChannelType("CL_UNORM_INT16", 0x10D3, "<u2", normalized=True, scalar="ushort"),
    ChannelType("CL_UNORM_SHORT_565", 0x10D4, "<u2", normalized=True, packed=True),
    ChannelType("CL_UNORM_SHORT_555", 0x10D5, "<u2", normalized=True, packed=True),
    ChannelType("CL_UNORM_INT_101010", 0x10D6, "<u4", normalized=True, packed=True),
    ChannelType("CL_SIGNED_INT8", 0x10D7, "|i1", scalar="char"),
    ChannelType("CL_SIGNED_INT16", 0x10D8, "<i2", scalar="short"),
    ChannelType("CL_SIGNED_INT32", 0x10D9, "<i4", scalar="int"),
    ChannelType("CL_UNSIGNED_INT8", 0x10DA, "|u1", scalar="uchar"),
    ChannelType("CL_UNSIGNED_INT16", 0x10DB, "<u2", scalar="ushort"),
    ChannelType("CL_UNSIGNED_INT32", 0x10DC, "<u4", scalar="uint"),
    ChannelType("CL_HALF_FLOAT", 0x10DD, "<f2", scalar="half"),
    ChannelType("CL_FLOAT", 0x10DE, "<f4", scalar="float"),
    ChannelType("CL_UNORM_INT24", 0x10DF, "<u4", normalized=True, packed=True),
    ChannelType("CL_UNORM_INT_101010_2", 0x10E0, "<u4", normalized=True, packed=True),
)

_ORDER_BY_NAME = {o.name: o for o in ORDERS}
_ORDER_BY_VALUE = {o.value: o for o in ORDERS}
_TYPE_BY_NAME = {t.name: t for t in TYPES}
_TYPE_BY_VALUE = {t.value: t for t in TYPES}


def channel_order(order: str | int) -> ChannelOrder | None:
    """The channel order named ``order`` (``"CL_RGBA"``) or of enum value ``order``."""
    return _ORDER_BY_VALUE.get(order) if isinstance(order, int) else _ORDER_BY_NAME.get(order)


def channel_type(ctype: str | int) -> ChannelType | None:
    """The channel data type named ``ctype`` (``"CL_FLOAT"``) or of enum value ``ctype``."""
    return _TYPE_BY_VALUE.get(ctype) if isinstance(ctype, int) else _TYPE_BY_NAME.get(ctype)


def order_name(value: int) -> str:
    """The name of a channel order's enum value; an unknown value as ``0x...``."""
    entry = _ORDER_BY_VALUE.get(value)
    return entry.name if entry else f"0x{value:X}"


def type_name(value: int) -> str:
    """The name of a channel data type's enum value; an unknown value as ``0x...``."""
    entry = _TYPE_BY_VALUE.get(value)
    return entry.name if entry else f"0x{value:X}"


def channels(order: str | int) -> int | None:
    """Stored channels of a channel order, None when unknown."""
    entry = channel_order(order)
    return entry.channels if entry else None


def texel_bytes(order: str | int, ctype: str | int) -> int:
    """Bytes of one texel, 0 when the order or the data type is unknown."""
    t = channel_type(ctype)
    if t is None:
        return 0
    if t.packed:
        return np.dtype(t.component).itemsize
    ch = channels(order)
    return 0 if ch is None else ch * np.dtype(t.component).itemsize


def texel_dtype_spec(order: str | int, ctype: str | int) -> str | None:
    """The numpy dtype string of one texel (``"(4,)|u1"``, ``"<f4"``), None when unknown.

    A packed type is its packing word; a one-channel order its component; else a subarray.
    """
    t = channel_type(ctype)
    if t is None:
        return None
    if t.packed:
        return t.component
    ch = channels(order)
    if ch is None:
        return None
    return t.component if ch == 1 else f"({ch},){t.component}"


def texel_dtype(order: str | int, ctype: str | int) -> np.dtype[np.generic] | None:
    """:func:`texel_dtype_spec` as a numpy dtype."""
    spec = texel_dtype_spec(order, ctype)
    return None if spec is None else np.dtype(spec)


def texel_scalar(order: str | int, ctype: str | int) -> str | None:
    """The OpenCL C type of one texel (``"uchar4"``, ``"float"``), None when there is none.

    Orders of 3 channels (``CL_RGB``, ``CL_sRGB``, ``CL_sRGBx``...) have none: a ``uchar3``
    takes 4 bytes in OpenCL C, a texel 3.
    """
    t = channel_type(ctype)
    ch = channels(order)
    if t is None or t.scalar is None or ch is None or ch == 3:
        return None
    return t.scalar if ch == 1 else f"{t.scalar}{ch}"
