"""A small JSON Schema validator for the keywords ``manifest.schema.json`` uses ($ref, type,
enum, minimum, minLength, minItems, required, properties, additionalProperties, prefixItems,
items), giving the first
problem as one line.  A bundle's engine has no jsonschema; replay.cpp's ``cpp/verify.hpp``
walks the same schema in the same order and says the same words (the shared cases in
``tests/fixtures/bundle_cases.json`` hold the two to each other, and jsonschema to both).
Standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from typing import Any

from ...errors import CltuiError

__all__ = ["SchemaError", "first_problem", "manifest_schema", "printable"]

# Keywords that only annotate (no validation); any other keyword is refused, so the schema
# cannot come to use one that the validators here and in replay.cpp silently skip.
_ANNOTATIONS = frozenset({"$schema", "$id", "$defs", "title", "description"})
_KNOWN = frozenset(
    {"$ref", "type", "enum", "minimum", "minLength", "minItems", "required", "properties",
     "additionalProperties", "prefixItems", "items"}
) | _ANNOTATIONS  # fmt: skip

_ARTICLE = {
    "object": "an object", "array": "an array", "string": "a string", "integer": "an integer",
    "number": "a number", "boolean": "a boolean", "null": "null",
}  # fmt: skip


class SchemaError(CltuiError, ValueError):
    """The schema itself uses what this validator does not know (cltui's own mistake)."""


def manifest_schema() -> dict[str, Any]:
    """``manifest.schema.json`` of this package (beside this file, in cltui and in a bundle)."""
    text = (
        resources.files(__package__ or "cltui.replay.engine")
        .joinpath("manifest.schema.json")
        .read_text(encoding="utf-8")
    )
    schema: dict[str, Any] = json.loads(text)
    return schema


def printable(text: str) -> str:
    """``text`` with control characters as ``\\xNN`` (the same rule as replay.cpp's)."""
    return "".join(f"\\x{ord(c):02x}" if ord(c) < 0x20 or ord(c) == 0x7F else c for c in text)


def json_type(value: object) -> str:
    """The JSON type of a decoded value; a number with a fraction or exponent is a number."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer" if -(1 << 63) <= value < 1 << 63 else "number"  # as replay.cpp
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _matches(kind: str, want: str) -> bool:
    return kind == want or (want == "number" and kind == "integer")


def _where(path: str) -> str:
    return path or "manifest"


def first_problem(doc: object, schema: Mapping[str, Any]) -> str | None:
    """The first place where ``doc`` breaks ``schema`` as ``'<where>: <what>'``, else None."""
    return _check(doc, schema, schema, "")


def _resolve(node: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    seen = 0
    while "$ref" in node:
        ref = str(node["$ref"])
        if not ref.startswith("#/$defs/") or seen > 32:
            raise SchemaError(f"unsupported $ref {ref!r}")
        node = root["$defs"][ref[len("#/$defs/") :]]
        seen += 1
    return node


def _check(doc: object, node: Mapping[str, Any], root: Mapping[str, Any], path: str) -> str | None:
    node = _resolve(node, root)
    unknown = set(node) - _KNOWN
    if unknown:
        raise SchemaError(f"unsupported keyword {sorted(unknown)[0]!r}")
    kind = json_type(doc)
    if "type" in node:
        want = node["type"] if isinstance(node["type"], list) else [node["type"]]
        if not any(_matches(kind, w) for w in want):
            said = " or ".join(_ARTICLE[w] for w in want)
            return f"{_where(path)}: expected {said}, got {_ARTICLE[kind]}"
    if "enum" in node and doc not in node["enum"]:
        allowed = ", ".join("null" if v is None else str(v) for v in node["enum"])
        return f"{_where(path)}: expected one of {allowed}"
    low = node.get("minimum")
    if kind in ("integer", "number") and low is not None and doc < low:
        return f"{_where(path)}: must be at least {node['minimum']}"
    if kind == "string" and "minLength" in node and len(str(doc)) < int(node["minLength"]):
        return f"{_where(path)}: shorter than {node['minLength']} characters"
    if isinstance(doc, dict):
        return _check_object(doc, node, root, path)
    if isinstance(doc, list):
        if len(doc) < int(node.get("minItems", 0)):
            return f"{_where(path)}: fewer than {node['minItems']} items"
        prefix: list[Any] = node.get("prefixItems", [])
        for i, item in enumerate(doc):
            sub = prefix[i] if i < len(prefix) else node.get("items")
            if sub is not None and (problem := _check(item, sub, root, f"{path}[{i}]")):
                return problem
    return None


def _check_object(
    doc: dict[str, Any], node: Mapping[str, Any], root: Mapping[str, Any], path: str
) -> str | None:
    for key in node.get("required", []):
        if key not in doc:
            return f"{_where(path)}: missing key '{printable(key)}'"
    props: Mapping[str, Any] = node.get("properties", {})
    for key, sub in props.items():
        if key in doc and (said := _check(doc[key], sub, root, _member(path, key))):
            return said
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        for key, value in doc.items():
            if key not in props and (said := _check(value, extra, root, _member(path, key))):
                return said
    elif extra is not None:
        raise SchemaError("additionalProperties must be a schema")
    return None


def _member(path: str, key: str) -> str:
    return f"{path}.{printable(key)}" if path else printable(key)
