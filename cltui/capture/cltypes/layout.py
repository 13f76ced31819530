"""OpenCL C types: the :class:`CType` model, layouts (OpenCL C alignment rules), numpy dtypes and
the built-in types by name.

Layout rules (OpenCL C 1.2 §6.1.5, 64-bit devices): scalars are aligned to their size; a vector of
n lanes takes n lanes (3 lanes take 4) and is aligned to its size; a struct is aligned to its most
aligned field and its size rounded up to that; ``__attribute__((packed))`` drops padding,
``__attribute__((aligned(N)))`` raises the alignment. ``size_t``/``ptrdiff_t``/pointers are 8 bytes.

dtypes: scalars -> numpy scalar dtypes; vectors of 2/4/8/16 lanes -> a sub-array dtype
``(elem, n)``; 3-lane vectors -> a structured dtype with one field ``v`` of shape (3,) and itemsize
``4 * elem`` (so the padding lane is never compared); structs/unions -> structured dtypes with
explicit offsets and itemsize; arrays -> ``(elem, count)``; ``cfloat_t``/``cdouble_t`` ->
``complex64``/``complex128``. Images, samplers and events have no dtype (the argument is a
handle).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from cltui.errors import CltuiError

__all__ = [
    "BUILTINS",
    "POINTER_SIZE",
    "PREFERRED_BUILTINS",
    "TYPE_KEYWORDS",
    "VECTOR_WIDTHS",
    "CType",
    "Field",
    "Kind",
    "TypeParseError",
    "array_of",
    "lookup",
    "make_record",
    "pointer_to",
    "unknown",
    "vector_dtype",
    "vector_of",
]

Kind = Literal[
    "scalar", "vector", "struct", "union", "pointer", "image", "sampler", "event", "void",
    "array", "unknown",
]

VECTOR_WIDTHS = (2, 3, 4, 8, 16)
POINTER_SIZE = 8


class TypeParseError(CltuiError, ValueError):
    """A type text that cannot be parsed; the message is one line meant for the user."""


@dataclass(frozen=True)
class Field:
    name: str
    ctype: CType
    offset: int


@dataclass(frozen=True)
class CType:
    name: str
    kind: Kind
    size: int | None
    align: int
    dtype: np.dtype[np.generic] | None = field(default=None, compare=False)
    fields: tuple[Field, ...] = ()
    element: CType | None = None
    lanes: int = 1
    count: int = 0

    @property
    def is_known(self) -> bool:
        return self.kind != "unknown"

    @property
    def is_complex(self) -> bool:
        return self.dtype is not None and self.dtype.kind == "c"

    def __str__(self) -> str:
        return self.name


# --------------------------------------------------------------------------- scalars

_SCALAR_DEFS: dict[str, str] = {
    "bool": "?", "char": "i1", "uchar": "u1", "short": "i2", "ushort": "u2", "int": "i4",
    "uint": "u4", "long": "i8", "ulong": "u8", "half": "f2", "float": "f4", "double": "f8",
    "size_t": "u8", "ptrdiff_t": "i8", "intptr_t": "i8", "uintptr_t": "u8",
}
_VECTOR_BASES = ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "half",
                 "float", "double")

# multi-word and host spellings -> canonical OpenCL C name
_ALIASES: dict[str, str] = {
    "unsigned char": "uchar", "signed char": "char", "unsigned short": "ushort",
    "signed short": "short", "short int": "short", "unsigned short int": "ushort",
    "signed short int": "short", "unsigned int": "uint", "signed int": "int", "unsigned": "uint",
    "signed": "int", "unsigned long": "ulong", "signed long": "long", "long int": "long",
    "unsigned long int": "ulong", "signed long int": "long", "long long": "long",
    "unsigned long long": "ulong", "long long int": "long", "unsigned long long int": "ulong",
    "_Bool": "bool", "uint8_t": "uchar", "int8_t": "char", "uint16_t": "ushort",
    "int16_t": "short", "uint32_t": "uint", "int32_t": "int", "uint64_t": "ulong",
    "int64_t": "long",
}
for _b in ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "half", "float",
           "double", "bool"):
    _ALIASES[f"cl_{_b}"] = _b
    if _b in _VECTOR_BASES:
        for _n in VECTOR_WIDTHS:
            _ALIASES[f"cl_{_b}{_n}"] = f"{_b}{_n}"
_ALIASES["cl_bool"] = "uint"  # the host cl_bool is a 32-bit unsigned integer

_IMAGES = ("image1d_t", "image1d_array_t", "image1d_buffer_t", "image2d_t", "image2d_array_t",
           "image2d_depth_t", "image2d_array_depth_t", "image2d_msaa_t", "image3d_t")
_OTHER_OPAQUE: dict[str, Kind] = {"sampler_t": "sampler", "event_t": "event", "cl_mem": "image",
                                  "queue_t": "event", "clk_event_t": "event"}


def _scalar(name: str) -> CType:
    dt = np.dtype(_SCALAR_DEFS[name])
    return CType(name, "scalar", dt.itemsize, dt.itemsize, dt)


def vector_dtype(elem: np.dtype[np.generic], lanes: int) -> np.dtype[np.generic]:
    if lanes == 3:
        return np.dtype({"names": ["v"], "formats": [(elem, (3,))], "offsets": [0],
                         "itemsize": 4 * elem.itemsize})
    return np.dtype((elem, (lanes,)))


def vector_of(elem: CType, lanes: int, name: str | None = None) -> CType:
    assert elem.dtype is not None and elem.size is not None
    storage = 4 if lanes == 3 else lanes
    size = storage * elem.size
    return CType(name or f"{elem.name}{lanes}", "vector", size, size,
                 vector_dtype(elem.dtype, lanes), element=elem, lanes=lanes)


def _complex(name: str, base: str) -> CType:
    elem = _scalar(base)
    assert elem.size is not None
    dt = np.dtype("c8" if base == "float" else "c16")
    fields = (Field("real", elem, 0), Field("imag", elem, elem.size))
    return CType(name, "struct", 2 * elem.size, elem.size, dt, fields=fields)


def _build_builtins() -> dict[str, CType]:
    out: dict[str, CType] = {name: _scalar(name) for name in _SCALAR_DEFS}
    for base in _VECTOR_BASES:
        for n in VECTOR_WIDTHS:
            out[f"{base}{n}"] = vector_of(out[base], n)
    out["void"] = CType("void", "void", 0, 1)
    for img in _IMAGES:
        out[img] = CType(img, "image", POINTER_SIZE, POINTER_SIZE)
    for name, kind in _OTHER_OPAQUE.items():
        out[name] = CType(name, kind, POINTER_SIZE, POINTER_SIZE)
    out["cfloat_t"] = _complex("cfloat_t", "float")
    out["cdouble_t"] = _complex("cdouble_t", "double")
    for alias, canon in _ALIASES.items():
        out[alias] = out[canon]
    return out


BUILTINS: dict[str, CType] = _build_builtins()
#: names whose built-in meaning wins over a typedef in the source (pyopencl-complex.h's unions)
PREFERRED_BUILTINS = frozenset({"cfloat_t", "cdouble_t"})

TYPE_KEYWORDS = frozenset({"unsigned", "signed", "char", "short", "int", "long", "float",
                           "double", "half", "bool", "_Bool", "void"})


def unknown(name: str) -> CType:
    return CType(name, "unknown", None, 1)


def pointer_to(pointee: CType) -> CType:
    return CType(f"{pointee.name}*", "pointer", POINTER_SIZE, POINTER_SIZE, np.dtype("u8"),
                 element=pointee)


def array_of(elem: CType, count: int) -> CType:
    if elem.size is None or elem.dtype is None:
        return CType(f"{elem.name}[{count}]", "array", None, elem.align, None, element=elem,
                     count=count)
    return CType(f"{elem.name}[{count}]", "array", elem.size * count, elem.align,
                 np.dtype((elem.dtype, (count,))) if count > 0 else None, element=elem,
                 count=count)


def _round_up(x: int, a: int) -> int:
    return (x + a - 1) // a * a if a > 1 else x


def make_record(
    name: str,
    members: list[tuple[str, CType]],
    *,
    union: bool = False,
    packed: bool = False,
    aligned: int | None = None,
    member_aligns: list[int | None] | None = None,
) -> CType:
    """Lay out a struct/union per the OpenCL C rules; unknown members make the record unknown."""
    kind: Kind = "union" if union else "struct"
    offset = 0
    size = 0
    align = 1
    out: list[Field] = []
    for i, (fname, ct) in enumerate(members):
        if ct.size is None or ct.kind == "unknown":
            # the last field is the first one without a known layout (for error messages)
            return CType(name, "unknown", None, 1, fields=(*out, Field(fname, ct, -1)))
        a = 1 if packed else ct.align
        extra = member_aligns[i] if member_aligns else None
        if extra:
            a = max(a, extra)
        align = max(align, a)
        if union:
            out.append(Field(fname, ct, 0))
            size = max(size, ct.size)
        else:
            offset = _round_up(offset, a)
            out.append(Field(fname, ct, offset))
            offset += ct.size
            size = offset
    if aligned:
        align = max(align, aligned)
    size = _round_up(size, align)
    dtype: np.dtype[np.generic] | None
    try:
        names = [f.name or f"_{i}" for i, f in enumerate(out)]
        if len(set(names)) != len(names):
            names = [f"{n}_{i}" for i, n in enumerate(names)]
        formats = [f.ctype.dtype if f.ctype.dtype is not None else np.dtype(("V", f.ctype.size))
                   for f in out]
        dtype = np.dtype({"names": names, "formats": formats,
                          "offsets": [f.offset for f in out], "itemsize": max(size, 1)})
    except (ValueError, TypeError):
        dtype = None
    return CType(name, kind, size, align, dtype, fields=tuple(out))



def lookup(name: str, typedefs: dict[str, CType] | None = None) -> CType:
    """A type by name: typedefs first (except `PREFERRED_BUILTINS`), then built-ins."""
    name = " ".join(name.split())
    if name in PREFERRED_BUILTINS:
        return BUILTINS[name]
    if typedefs and name in typedefs:
        return typedefs[name]
    if name in BUILTINS:
        return BUILTINS[name]
    return unknown(name)
