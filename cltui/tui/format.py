"""Small text formatters shared by the TUI's widgets."""

from __future__ import annotations

from collections.abc import Sequence

from cltui.text.units import fmt_bytes, fmt_ns

__all__ = ["ellipsize", "fmt_bytes", "fmt_ns", "fmt_size"]


def fmt_size(dims: Sequence[int] | None) -> str:
    """``(64, 64)`` -> ``64x64``; ``None`` -> ``-`` (a NULL size)."""
    if dims is None:
        return "-"
    return "x".join(str(d) for d in dims)


def ellipsize(text: str, width: int) -> str:
    """``text`` cut to ``width`` cells with an ellipsis, padded with spaces to ``width``."""
    if width <= 0:
        return ""
    if len(text) > width:
        return text[: width - 1] + "…" if width > 1 else text[:1]
    return text.ljust(width)
