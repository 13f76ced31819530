"""cltypes: OpenCL C layouts, dtypes, parse_type errors, decoding and display."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from cltui.capture.cltypes import (
    BUILTINS,
    CType,
    TypeParseError,
    decode_value,
    format_value,
    make_record,
    parse_type,
)


@pytest.mark.parametrize(
    ("name", "size", "align", "np_name"),
    [("bool", 1, 1, "bool"), ("char", 1, 1, "int8"), ("uchar", 1, 1, "uint8"),
     ("short", 2, 2, "int16"), ("ushort", 2, 2, "uint16"), ("int", 4, 4, "int32"),
     ("uint", 4, 4, "uint32"), ("long", 8, 8, "int64"), ("ulong", 8, 8, "uint64"),
     ("half", 2, 2, "float16"), ("float", 4, 4, "float32"), ("double", 8, 8, "float64"),
     ("size_t", 8, 8, "uint64"), ("ptrdiff_t", 8, 8, "int64"), ("intptr_t", 8, 8, "int64"),
     ("uintptr_t", 8, 8, "uint64"), ("unsigned int", 4, 4, "uint32"),
     ("unsigned char", 1, 1, "uint8"), ("unsigned long", 8, 8, "uint64"),
     ("signed char", 1, 1, "int8"), ("cl_float", 4, 4, "float32"), ("cl_ulong", 8, 8, "uint64"),
     ("unsigned", 4, 4, "uint32")],
)
def test_scalars(name: str, size: int, align: int, np_name: str) -> None:
    ct = parse_type(name)
    assert ct.kind == "scalar"
    assert (ct.size, ct.align) == (size, align)
    assert ct.dtype == np.dtype(np_name)


@pytest.mark.parametrize("base", ["char", "uchar", "short", "int", "ulong", "half", "float",
                                  "double"])
@pytest.mark.parametrize("n", [2, 3, 4, 8, 16])
def test_vectors(base: str, n: int) -> None:
    ct = parse_type(f"{base}{n}")
    elem = BUILTINS[base]
    assert elem.size is not None
    assert ct.kind == "vector" and ct.lanes == n and ct.element == elem
    storage = 4 if n == 3 else n
    assert ct.size == ct.align == storage * elem.size
    assert ct.dtype is not None and ct.dtype.itemsize == ct.size


def test_float3_takes_four_lanes() -> None:
    ct = parse_type("float3")
    assert (ct.size, ct.align, ct.lanes) == (16, 16, 3)
    assert ct.dtype is not None
    arr = np.arange(8, dtype=np.float32).view(ct.dtype)
    assert arr["v"].tolist() == [[0, 1, 2], [4, 5, 6]]  # the padding lane is not part of it


def test_struct_char_float4() -> None:
    ct = parse_type("struct {char a; float4 b;}")
    assert (ct.kind, ct.size, ct.align) == ("struct", 32, 16)
    assert [(f.name, f.offset) for f in ct.fields] == [("a", 0), ("b", 16)]
    assert ct.dtype is not None and ct.dtype.itemsize == 32
    assert ct.dtype.fields is not None and ct.dtype.fields["b"][1] == 16


def test_struct_char_short() -> None:
    ct = parse_type("struct {char c; short s;}")
    assert (ct.size, ct.align) == (4, 2)
    assert [f.offset for f in ct.fields] == [0, 2]


def test_nested_struct_and_arrays() -> None:
    ct = parse_type("struct { char tag; struct { short a; double d; } inner; ushort id[3]; }")
    inner = ct.fields[1].ctype
    assert (inner.size, inner.align) == (16, 8)
    assert [(f.name, f.offset) for f in ct.fields] == [("tag", 0), ("inner", 8), ("id", 24)]
    assert (ct.size, ct.align) == (32, 8)
    ids = ct.fields[2].ctype
    assert (ids.kind, ids.count, ids.size, ids.align) == ("array", 3, 6, 2)
    raw = bytearray(32)
    raw[0] = 7
    struct.pack_into("<hd", raw, 8, -3, 2.5)  # "<" packs without padding: fix the double below
    struct.pack_into("<d", raw, 16, 2.5)
    struct.pack_into("<3H", raw, 24, 1, 2, 3)
    assert decode_value(bytes(raw), ct) == {"tag": 7, "inner": {"a": -3, "d": 2.5}, "id": [1, 2, 3]}
    assert ct.dtype is not None
    rec = np.frombuffer(bytes(raw), dtype=ct.dtype)[0]
    assert rec["inner"]["d"] == 2.5 and rec["id"].tolist() == [1, 2, 3]


def test_struct_float2_and_ushort_array() -> None:
    ct = parse_type("struct { float2 p; ushort id[2]; }")
    assert (ct.size, ct.align) == (16, 8)
    assert [f.offset for f in ct.fields] == [0, 8]


def test_arrays() -> None:
    ct = parse_type("float[3]")
    assert (ct.kind, ct.size, ct.align, ct.count) == ("array", 12, 4, 3)
    assert ct.dtype == np.dtype((np.float32, (3,)))
    two = parse_type("int[2][3]")
    assert two.size == 24 and two.count == 2 and two.element is not None
    assert two.element.count == 3


def test_packed_and_aligned() -> None:
    packed = parse_type("struct __attribute__((packed)) { char a; int b; }")
    assert (packed.size, packed.align) == (5, 1)
    assert [f.offset for f in packed.fields] == [0, 1]
    aligned = parse_type("struct { char a; } __attribute__((aligned(16)))")
    assert (aligned.size, aligned.align) == (16, 16)
    field_aligned = parse_type("struct { char a; int b __attribute__((aligned(8))); }")
    assert [f.offset for f in field_aligned.fields] == [0, 8]
    assert field_aligned.size == 16


def test_union() -> None:
    ct = parse_type("union { float f; uint u; uchar b[6]; }")
    assert (ct.kind, ct.size, ct.align) == ("union", 8, 4)
    assert all(f.offset == 0 for f in ct.fields)
    v = decode_value(struct.pack("<f", 1.0) + b"\0" * 4, ct)
    assert v is not None and v["u"] == 0x3F800000


def test_complex_types() -> None:
    ct = parse_type("cfloat_t")
    assert (ct.size, ct.align, ct.dtype) == (8, 4, np.dtype(np.complex64))
    assert [f.name for f in ct.fields] == ["real", "imag"]
    v = decode_value(struct.pack("<2f", 1.5, -2.0), ct)
    assert v == complex(1.5, -2.0)
    assert format_value(v, ct) == "(1.5-2.0j)"
    assert parse_type("cdouble_t").dtype == np.dtype(np.complex128)


def test_opaque_types() -> None:
    for name in ("image1d_t", "image1d_buffer_t", "image1d_array_t", "image2d_t",
                 "image2d_array_t", "image3d_t"):
        assert parse_type(name).kind == "image"
    assert parse_type("sampler_t").kind == "sampler"
    assert parse_type("event_t").kind == "event"


def test_typedefs_argument() -> None:
    real4 = parse_type("float4")
    ct = parse_type("struct { real4 a; int n; }", {"real4": real4})
    assert ct.size == 32 and ct.fields[0].ctype == real4


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "empty type"), ("   ", "empty type"), ("flot4", "unknown type 'flot4'"),
     ("struct { float }", "needs a name"), ("float[x]", "array size must be a number"),
     ("float4 )", "unexpected ')'"), ("struct { float a; ", "missing '}'"),
     ("float $", "unexpected character '$'"), ("void", "void has no size"),
     ("struct { float a; foo b; }", "unknown type 'foo' (field 'b')"), ("float[3", "expected ']'")],
)
def test_parse_type_errors(text: str, message: str) -> None:
    with pytest.raises(TypeParseError) as info:
        parse_type(text)
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)
    assert "\n" not in str(info.value)


def test_decode_scalars_and_vectors() -> None:
    assert decode_value(struct.pack("<i", -5), parse_type("int")) == -5
    assert decode_value(struct.pack("<Q", 2**63), parse_type("ulong")) == 2**63
    assert decode_value(struct.pack("<f", 0.1), parse_type("float")) == pytest.approx(0.1)
    assert decode_value(b"\x01", parse_type("bool")) is True
    assert decode_value(struct.pack("<4i", 1, 2, 3, 4), parse_type("int4")) == (1, 2, 3, 4)
    f3 = decode_value(struct.pack("<4f", 1, 2, 3, 99), parse_type("float3"))
    assert f3 == (1.0, 2.0, 3.0)


def test_decode_short_and_bad_input() -> None:
    assert decode_value(b"\x01\x02", parse_type("int")) is None
    assert decode_value(struct.pack("<2i", 1, 2), parse_type("int4")) == (1, 2)
    clip = parse_type("struct { float scale; float offset; int lo; int hi; }")
    assert decode_value(struct.pack("<ff", 1.5, 0.5), clip) == {"scale": 1.5, "offset": 0.5}
    assert decode_value(b"", clip) is None
    unknown = CType("mystery", "unknown", None, 1)
    assert decode_value(b"\0" * 8, unknown) is None
    weird = make_record("r", [("x", parse_type("float"))])
    assert decode_value(memoryview(b"\0\0\x80\x3f"), weird) == {"x": 1.0}  # type: ignore[arg-type]


def test_format_value() -> None:
    clip = parse_type("struct { float scale; float offset; int lo; int hi; }")
    raw = struct.pack("<ffii", 1.5, 0.5, 3, 7)
    assert format_value(decode_value(raw, clip), clip) == "{scale=1.5, offset=0.5, lo=3, hi=7}"
    f4 = parse_type("float4")
    assert format_value(decode_value(struct.pack("<4f", 1, 2, 3, 0.1), f4), f4) == \
        "(1.0, 2.0, 3.0, 0.1)"  # float32 0.1 shows as 0.1, not 0.10000000149011612
    i4 = parse_type("int4")
    assert format_value((1, 2, 3, 4), i4) == "(1, 2, 3, 4)"
    d = parse_type("double")
    assert format_value(0.1, d) == "0.1"
    assert format_value(float("nan"), d) == "nan"
    assert format_value(None, d) == "?"
    assert format_value([1, 2], parse_type("int[2]")) == "[1, 2]"
    assert format_value(True, parse_type("bool")) == "true"
