"""Durations and sizes as text: the one formatter of the app, the CLI and the bundle's replay.py.

Standard library only: it is copied, byte for byte, into every exported bundle with the
replay engine (``lib/cltui/text/``, cltui.export.exporter).
"""

from __future__ import annotations

__all__ = ["fmt_bytes", "fmt_ns"]


def fmt_ns(ns: float | None, unknown: str = "") -> str:
    """A duration in nanoseconds, 3 significant digits (``187 µs``, ``22.8 ms``).

    ``unknown`` stands for a missing or negative duration (the app shows nothing, the CLI "-").
    """
    if ns is None or ns < 0:
        return unknown
    if ns < 999.5:
        return f"{ns:.0f} ns"
    for scale, unit in ((1e3, "µs"), (1e6, "ms"), (1e9, "s")):
        value = ns / scale
        if value < 999.5 or unit == "s":
            return f"{value:.3g} {unit}" if value < 99.95 else f"{value:.0f} {unit}"
    return f"{ns} ns"  # pragma: no cover - unreachable


def fmt_bytes(n: int | None) -> str:
    """A size in bytes with a binary unit (``64.0 KiB``); ``?`` when unknown."""
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
