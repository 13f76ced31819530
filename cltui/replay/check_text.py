"""One check as a table cell, the same in the CLI's tables and the app's: the status and its
key figures (the differing elements of all, the largest ULP distance where there is one)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cltui.replay.engine.schema import CheckResult

__all__ = ["check_cell", "number_text"]


def check_cell(c: CheckResult) -> str:
    """``equal``, ``cannot run``, ``different 12/4096 3 ULP``, ``within 5/64``, ``... (hash)``."""
    res: Mapping[str, Any] = c.get("result") or {}
    if c["status"] == "unchecked" and str(c.get("summary", "")).startswith("cannot run"):
        return "cannot run"
    if c["status"] in ("equal", "unchecked"):
        return str(c["status"])
    if not res:  # compared by hash: no element counts
        return f"{c['status']} (hash)"
    text = f"{c['status']} {res.get('n_diff', '?')}/{res.get('elements', '?')}"
    if res.get("max_ulp") is not None:
        text += f" {number_text(res['max_ulp'])} ULP"
    return text


def number_text(v: Any) -> str:
    """A figure as the tables print it (a whole float without its ``.0``)."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)
