"""The one duration/size formatter (cltui.text.units), shared by the app, the CLI and the
bundle's replay.py."""

from __future__ import annotations

import pytest

from cltui.text.units import fmt_bytes, fmt_ns


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "0 ns"),
        (999, "999 ns"),
        (999.6, "1 µs"),  # rounds up into the next unit, never "1000 ns"
        (12_345, "12.3 µs"),
        (99_960, "100 µs"),
        (187_000, "187 µs"),
        (999_600, "1 ms"),
        (22_845_184, "22.8 ms"),
        (5e9, "5 s"),
        (12.5, "12 ns"),  # medians are floats
    ],
)
def test_fmt_ns(ns: float, text: str) -> None:
    assert fmt_ns(ns) == text


def test_unknown_durations() -> None:
    assert fmt_ns(None) == "" and fmt_ns(-1) == ""
    assert fmt_ns(None, "-") == "-" and fmt_ns(-5, "-") == "-"


def test_fmt_bytes() -> None:
    assert fmt_bytes(None) == "?"
    assert fmt_bytes(1023) == "1023 B"
    assert fmt_bytes(65536) == "64.0 KiB"
    assert fmt_bytes(300 * 1024 * 1024) == "300 MiB"
