"""Decoding one value of an OpenCL C type from raw bytes, and its display text."""

from __future__ import annotations

import math
import struct
from typing import TypeAlias, Union

import numpy as np

from cltui.capture.cltypes.layout import POINTER_SIZE, CType

__all__ = ["Scalar", "Value", "decode_value", "format_value"]

Scalar: TypeAlias = bool | int | float | complex
#: a decoded value: a scalar (pointers and handles as int), a vector's lanes as a tuple, an
#: array's items as a list, a struct's or union's fields by name
Value: TypeAlias = Union[Scalar, tuple[Scalar, ...], list["Value"], dict[str, "Value"]]  # noqa: UP007

def _decode_scalar(raw: bytes, ct: CType) -> Scalar:
    assert ct.dtype is not None
    v = np.frombuffer(raw[: ct.dtype.itemsize], dtype=ct.dtype.newbyteorder("<")
                      if ct.dtype.byteorder not in ("|", "=") else ct.dtype)[0]
    if ct.dtype.kind == "b":
        return bool(v)
    if ct.dtype.kind in "iu":
        return int(v)
    if ct.dtype.kind == "c":
        return complex(v)
    return float(v)


def decode_value(raw: bytes, ctype: CType) -> Value | None:
    """Decode one value; a short buffer decodes what is there (or gives None). Never raises."""
    try:
        return _decode(bytes(raw), ctype)
    except Exception:  # decoding user data must never raise
        return None


def _decode(raw: bytes, ct: CType) -> Value | None:
    if ct.kind == "scalar":
        if ct.size is None or len(raw) < ct.size:
            return None
        return _decode_scalar(raw, ct)
    if ct.kind == "vector":
        elem = ct.element
        if elem is None or elem.size is None:
            return None
        n = min(ct.lanes, len(raw) // elem.size)
        if n == 0:
            return None
        return tuple(_decode_scalar(raw[i * elem.size:], elem) for i in range(n))
    if ct.kind in ("struct", "union"):
        if ct.is_complex and ct.size is not None and len(raw) >= ct.size:
            return _decode_scalar(raw, ct)
        out: dict[str, Value] = {}
        for f in ct.fields:
            if f.offset >= len(raw):
                break
            v = _decode(raw[f.offset:], f.ctype)
            if v is None:
                break
            if not f.name and isinstance(v, dict):
                out.update(v)
            else:
                out[f.name] = v
        return out if out else None
    if ct.kind == "array":
        elem = ct.element
        if elem is None or not elem.size:
            return None
        items: list[Value] = []
        for i in range(ct.count):
            v = _decode(raw[i * elem.size:], elem)
            if v is None:
                break
            items.append(v)
        return items if items else None
    if ct.kind in ("pointer", "image", "sampler", "event"):
        if len(raw) < POINTER_SIZE:
            return None
        handle: int = struct.unpack_from("<Q", raw)[0]
        return handle
    return None


def _fmt_float(v: float) -> str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(v)


def format_value(value: object, ctype: CType) -> str:
    """Display text: floats at their precision, vectors ``(1, 2, 3, 4)``, structs ``{a=1, b=2}``."""
    if value is None:
        return "?"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if ctype.dtype is not None and ctype.dtype.kind == "f" and ctype.dtype.itemsize < 8:
            return _short_float(value, ctype.dtype.itemsize)
        return _fmt_float(value)
    if isinstance(value, complex):
        return f"({_fmt_float(value.real)}{'+' if value.imag >= 0 else '-'}"\
               f"{_fmt_float(abs(value.imag))}j)"
    if isinstance(value, int):
        if ctype.kind in ("pointer", "image", "sampler", "event"):
            return f"0x{value:x}"
        return str(value)
    if isinstance(value, tuple):
        elem = ctype.element or ctype
        return "(" + ", ".join(format_value(v, elem) for v in value) + ")"
    if isinstance(value, list):
        elem = ctype.element or ctype
        return "[" + ", ".join(format_value(v, elem) for v in value) + "]"
    if isinstance(value, dict):
        by_name = _field_types(ctype)
        parts = [f"{k}={format_value(v, by_name.get(k, ctype))}" for k, v in value.items()]
        return "{" + ", ".join(parts) + "}"
    return str(value)


def _field_types(ct: CType) -> dict[str, CType]:
    out: dict[str, CType] = {}
    for f in ct.fields:
        if f.name:
            out[f.name] = f.ctype
        else:
            out.update(_field_types(f.ctype))
    return out


def _short_float(value: float, itemsize: int) -> str:
    """Shortest text that round-trips at the value's own precision (float32 / half, by the
    ``itemsize`` of the element's float dtype)."""
    if not math.isfinite(value):
        return _fmt_float(value)
    x = np.float16(value) if itemsize == 2 else np.float32(value)
    s = np.format_float_positional(x, unique=True, trim="-")
    if "e" not in s and len(s) > 17:
        s = np.format_float_scientific(x, unique=True, trim="-")
    if "." not in s and "e" not in s and "inf" not in s and "nan" not in s:
        s += ".0"
    return s
