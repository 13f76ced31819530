"""The JSON Schemas of docs/ (Draft 2020-12) that the ``--json`` outputs are held to."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

DOCS = Path(__file__).resolve().parent.parent / "docs"


@cache
def _validator(schema: str, ref: str) -> jsonschema.Draft202012Validator:
    doc = json.loads((DOCS / schema).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(doc)
    if ref:
        doc = {"$schema": doc["$schema"], "$defs": doc["$defs"], "$ref": f"#/$defs/{ref}"}
    return jsonschema.Draft202012Validator(doc)


def validate(document: Any, schema: str = "replay.schema.json", ref: str = "") -> None:
    """Raise with every violation listed (path: message) when ``document`` does not match."""
    errors = sorted(_validator(schema, ref).iter_errors(document), key=lambda e: e.json_path)
    if errors:
        raise AssertionError(
            f"{len(errors)} schema violation(s) of docs/{schema}{'#' + ref if ref else ''}:\n"
            + "\n".join(f"  {e.json_path}: {e.message[:300]}" for e in errors[:20])
        )
