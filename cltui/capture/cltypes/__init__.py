"""OpenCL C types: layouts (OpenCL C alignment rules), numpy dtypes, parsing, decoding, display.

:mod:`.layout` holds the :class:`CType` model, the layout rules and the built-in types;
:mod:`.parse` reads a user-typed element format (``float4``, ``struct { float2 p; ushort id[2]; }``,
``int[3]``) into a ``CType`` (:func:`parse_type`), and the kernel-signature parser
(``signature.py``) builds the same ``CType`` objects from kernel sources; :mod:`.values` decodes
and displays one value.  Pure: stdlib + numpy.
"""

from cltui.capture.cltypes.layout import (
    BUILTINS,
    POINTER_SIZE,
    PREFERRED_BUILTINS,
    TYPE_KEYWORDS,
    VECTOR_WIDTHS,
    CType,
    Field,
    Kind,
    TypeParseError,
    array_of,
    lookup,
    make_record,
    pointer_to,
    unknown,
    vector_dtype,
    vector_of,
)
from cltui.capture.cltypes.parse import TypeParser, parse_type, tokenize_type
from cltui.capture.cltypes.values import Value, decode_value, format_value

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
    "TypeParser",
    "Value",
    "array_of",
    "decode_value",
    "format_value",
    "lookup",
    "make_record",
    "parse_type",
    "pointer_to",
    "tokenize_type",
    "unknown",
    "vector_dtype",
    "vector_of",
]
