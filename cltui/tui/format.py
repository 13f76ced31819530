"""Small text formatters shared by the TUI's widgets."""

from __future__ import annotations

from collections.abc import Sequence


def fmt_ns(ns: int | None) -> str:
    """A duration in nanoseconds, 3 significant digits (``""`` for unknown)."""
    if ns is None or ns < 0:
        return ""
    if ns < 1_000:
        return f"{ns} ns"
    for scale, unit in ((1e3, "µs"), (1e6, "ms"), (1e9, "s")):
        value = ns / scale
        if value < 1000 or unit == "s":
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{ns} ns"  # pragma: no cover - unreachable


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "?"
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.1f} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{n} B"  # pragma: no cover - unreachable


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
