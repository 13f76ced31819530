"""OpenCL C types: layouts (OpenCL C alignment rules), numpy dtypes, parsing, decoding, display.

`parse_type` reads a user-typed element format (``float4``, ``struct { float2 p; ushort id[2]; }``,
``int[3]``) into a `CType`; the kernel-signature parser (`signature.py`) builds the same `CType`
objects from kernel sources. Pure: stdlib + numpy.

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

import math
import re
import struct
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from cltui.errors import CltuiError

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
    dtype: np.dtype[Any] | None = field(default=None, compare=False)
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


def vector_dtype(elem: np.dtype[Any], lanes: int) -> np.dtype[Any]:
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
    dtype: np.dtype[Any] | None
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


# --------------------------------------------------------------------------- parse_type

_TOKEN_RE = re.compile(r"\s*(?:(?P<id>[A-Za-z_]\w*)|(?P<num>0[xX][0-9a-fA-F]+|\d+)[uUlL]*"
                       r"|(?P<p>[{}\[\];,*()+\-/]))")


def tokenize_type(text: str) -> list[str]:
    toks: list[str] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None or m.end() == pos:
            rest = text[pos:].strip()
            if not rest:
                break
            raise TypeParseError(f"unexpected character {rest[0]!r} at column {pos + 1}")
        toks.append(m.group("id") or m.group("num") or m.group("p"))
        pos = m.end()
    return toks


_IGNORED_QUALIFIERS = frozenset({
    "const", "volatile", "restrict", "__restrict", "__restrict__", "__global", "global",
    "__local", "local", "__constant", "constant", "__private", "private", "__generic", "generic",
    "__read_only", "read_only", "__write_only", "write_only", "__read_write", "read_write",
    "__const",
})


class _TypeParser:
    """Recursive-descent parser for a type or a struct body, over pre-split tokens."""

    def __init__(self, toks: list[str], typedefs: dict[str, CType], tags: dict[str, CType]):
        self.toks = toks
        self.i = 0
        self.typedefs = typedefs
        self.tags = tags

    def peek(self, k: int = 0) -> str | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def take(self) -> str:
        if self.i >= len(self.toks):
            raise TypeParseError("unexpected end of type")
        t = self.toks[self.i]
        self.i += 1
        return t

    def expect(self, t: str) -> None:
        got = self.peek()
        if got != t:
            raise TypeParseError(f"expected {t!r}, found {got or 'end of text'!r}")
        self.i += 1

    def attributes(self) -> tuple[bool, int | None]:
        """Consume any ``__attribute__((...))``; returns (packed, aligned)."""
        packed = False
        aligned: int | None = None
        while self.peek() in ("__attribute__", "__attribute"):
            self.i += 1
            start = self.i
            depth = 0
            while True:
                t = self.take()
                if t == "(":
                    depth += 1
                elif t == ")":
                    depth -= 1
                    if depth == 0:
                        break
            body = self.toks[start:self.i]
            if "packed" in body or "__packed__" in body:
                packed = True
            for key in ("aligned", "__aligned__"):
                if key in body:
                    k = body.index(key)
                    if k + 1 < len(body) and body[k + 1] == "(":
                        aligned = self._eval_align(body[k + 2:])
                    else:
                        aligned = 16
        return packed, aligned

    def _eval_align(self, toks: list[str]) -> int | None:
        depth = 1
        expr: list[str] = []
        j = 0
        while j < len(toks):
            t = toks[j]
            if t == "(":
                depth += 1
            elif t == ")":
                depth -= 1
                if depth == 0:
                    break
            if t == "sizeof" and j + 1 < len(toks) and toks[j + 1] == "(":
                end = toks.index(")", j)
                sub = _TypeParser(toks[j + 2:end], self.typedefs, self.tags)
                ct = sub.type_name()
                expr.append(str(ct.size or 0))
                j = end + 1
                continue
            expr.append(t)
            j += 1
        text = "".join(expr)
        if not re.fullmatch(r"[0-9+*/()\- ]+", text or "x"):
            return None
        try:
            value = eval(text, {"__builtins__": {}}, {})  # digits and operators only
        except (SyntaxError, ZeroDivisionError, TypeError):
            return None
        return int(value) if isinstance(value, (int, float)) and value > 0 else None

    def specifier(self) -> CType:
        """Qualifiers + a base type (scalar words, typedef name, struct/union/enum)."""
        words: list[str] = []
        while True:
            t = self.peek()
            if t is None:
                break
            if t in _IGNORED_QUALIFIERS:
                self.i += 1
                continue
            if t in ("__attribute__", "__attribute"):
                self.attributes()
                continue
            if t in ("struct", "union"):
                if words:
                    break
                return self.record()
            if t == "enum":
                if words:
                    break
                self.i += 1
                if self.peek() not in (None, "{"):
                    self.i += 1
                if self.peek() == "{":
                    self.skip_braces()
                return BUILTINS["int"]
            if t in TYPE_KEYWORDS:
                words.append(t)
                self.i += 1
                continue
            if not words and re.match(r"[A-Za-z_]\w*$", t):
                self.i += 1
                words.append(t)
                break
            break
        if not words:
            raise TypeParseError(f"expected a type name, found {self.peek() or 'end of text'!r}")
        name = " ".join(words)
        return lookup(name, self.typedefs)

    def skip_braces(self) -> None:
        depth = 0
        while True:
            t = self.take()
            if t == "{":
                depth += 1
            elif t == "}":
                depth -= 1
                if depth == 0:
                    return

    def record(self) -> CType:
        union = self.take() == "union"
        packed, aligned = self.attributes()
        tag: str | None = None
        if self.peek() not in (None, "{") and re.match(r"[A-Za-z_]\w*$", self.peek() or ""):
            tag = self.take()
        p2, a2 = self.attributes()
        packed, aligned = packed or p2, a2 or aligned
        key = ("union " if union else "struct ") + (tag or "")
        if self.peek() != "{":
            if tag is None:
                raise TypeParseError("expected '{' after struct")
            return self.tags.get(key) or unknown(key)
        self.expect("{")
        members: list[tuple[str, CType]] = []
        aligns: list[int | None] = []
        while self.peek() != "}":
            if self.peek() is None:
                raise TypeParseError("missing '}' at the end of the struct")
            if self.peek() == ";":
                self.i += 1
                continue
            base = self.specifier()
            _, base_align = self.attributes()
            if self.peek() == ";":  # anonymous struct/union member: flatten its fields
                self.i += 1
                members.append(("", base))
                aligns.append(base_align)
                continue
            while True:
                fname, ct, fa = self.declarator(base)
                if not fname:
                    raise TypeParseError(f"struct field of type {base.name} needs a name")
                members.append((fname, ct))
                aligns.append(fa or base_align)
                if self.peek() == ",":
                    self.i += 1
                    continue
                break
            self.expect(";")
        self.expect("}")
        p4, a4 = self.attributes()
        packed, aligned = packed or p4, a4 or aligned
        name = key if tag else ("union" if union else "struct")
        flat: list[tuple[str, CType]] = []
        flat_aligns: list[int | None] = []
        for (fname, ct), a in zip(members, aligns, strict=True):
            flat.append((fname, ct))
            flat_aligns.append(a)
        rec = make_record(name, flat, union=union, packed=packed, aligned=aligned,
                          member_aligns=flat_aligns)
        if tag:
            self.tags[key] = rec
        return rec

    def declarator(self, base: CType) -> tuple[str, CType, int | None]:
        ct = base
        while self.peek() in ("*",) or self.peek() in _IGNORED_QUALIFIERS:
            if self.take() == "*":
                ct = pointer_to(ct)
        name = ""
        t = self.peek()
        if t is not None and re.match(r"[A-Za-z_]\w*$", t) and t not in ("__attribute__",):
            name = self.take()
        dims: list[int] = []
        while self.peek() == "[":
            self.i += 1
            size_tok = self.take()
            if not re.match(r"(0[xX][0-9a-fA-F]+|\d+)$", size_tok):
                raise TypeParseError(f"array size must be a number, found {size_tok!r}")
            dims.append(int(size_tok, 16) if size_tok[:2] in ("0x", "0X") else int(size_tok))
            self.expect("]")
        for count in reversed(dims):
            ct = array_of(ct, count)
        _, fa = self.attributes()
        return name, ct, fa

    def type_name(self) -> CType:
        base = self.specifier()
        self.attributes()
        _, ct, _ = self.declarator(base)
        return ct


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


def _unknown_message(ct: CType) -> str:
    path: list[str] = []
    while ct.fields and ct.fields[-1].offset == -1:
        path.append(ct.fields[-1].name)
        ct = ct.fields[-1].ctype
    while ct.kind == "array" and ct.element is not None:
        ct = ct.element
    where = f" (field {'.'.join(path)!r})" if path else ""
    return f"unknown type {ct.name!r}{where}"


def parse_type(text: str, typedefs: dict[str, CType] | None = None) -> CType:
    """Parse a user-typed element format (``float4``, ``struct { float x; int k; }``, ...)."""
    if not text or not text.strip():
        raise TypeParseError("empty type")
    toks = tokenize_type(text)
    while toks and toks[-1] == ";" and toks.count("{") == toks.count("}"):
        toks.pop()
    p = _TypeParser(toks, dict(typedefs or {}), {})
    ct = p.type_name()
    if p.peek() is not None:
        raise TypeParseError(f"unexpected {p.peek()!r} after type {ct.name!r}")
    if ct.kind == "unknown":
        raise TypeParseError(_unknown_message(ct))
    if ct.kind == "void":
        raise TypeParseError("void has no size")
    return ct


# --------------------------------------------------------------------------- decode / format

def _decode_scalar(raw: bytes, ct: CType) -> Any:
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


def decode_value(raw: bytes, ctype: CType) -> Any:
    """Decode one value; a short buffer decodes what is there (or gives None). Never raises."""
    try:
        return _decode(bytes(raw), ctype)
    except Exception:  # decoding user data must never raise
        return None


def _decode(raw: bytes, ct: CType) -> Any:
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
        out: dict[str, Any] = {}
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
        items = []
        for i in range(ct.count):
            v = _decode(raw[i * elem.size:], elem)
            if v is None:
                break
            items.append(v)
        return items if items else None
    if ct.kind in ("pointer", "image", "sampler", "event"):
        if len(raw) < POINTER_SIZE:
            return None
        return struct.unpack_from("<Q", raw)[0]
    return None


def _fmt_float(v: float) -> str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(v)


def format_value(value: Any, ctype: CType) -> str:
    """Display text: floats at their precision, vectors ``(1, 2, 3, 4)``, structs ``{a=1, b=2}``."""
    if value is None:
        return "?"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if ctype.dtype is not None and ctype.dtype.kind == "f" and ctype.dtype.itemsize < 8:
            return _short_float(value, ctype.dtype)
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


def _short_float(value: float, dt: np.dtype[Any]) -> str:
    """Shortest text that round-trips at the value's own precision (float32 / half)."""
    if not math.isfinite(value):
        return _fmt_float(value)
    s = np.format_float_positional(dt.type(value), unique=True, trim="-")
    if "e" not in s and len(s) > 17:
        s = np.format_float_scientific(dt.type(value), unique=True, trim="-")
    if "." not in s and "e" not in s and "inf" not in s and "nan" not in s:
        s += ".0"
    return s
