"""Parse a replay RANGE: ``12``, ``12-40``, ``12-``, ``-40``, each with an optional ``/kernel``."""

from __future__ import annotations

import re
from dataclasses import dataclass

from cltui.errors import CltuiError

_RANGE_RE = re.compile(r"^\s*(?P<a>\d+)?\s*(?P<dash>-)?\s*(?P<b>\d+)?\s*(?:/(?P<k>.*))?$")


class RangeError(CltuiError, ValueError):
    """A RANGE text that cannot be read (one-line message)."""


@dataclass(frozen=True)
class EnqueueRange:
    first: int | None  # None: from the start
    last: int | None  # None: to the end
    kernel: str | None = None  # kernel-name substring filter

    def __str__(self) -> str:
        a = "" if self.first is None else str(self.first)
        b = "" if self.last is None else str(self.last)
        text = a if self.first is not None and self.first == self.last else f"{a}-{b}"
        return text + (f"/{self.kernel}" if self.kernel else "")


def parse_range(text: str) -> EnqueueRange:
    """``"12"`` -> 12..12; ``"12-40"``; ``"12-"`` -> 12..end; ``"12-40/saxpy"``."""
    m = _RANGE_RE.match(text)
    if not m or (m.group("a") is None and m.group("b") is None):
        raise RangeError(
            f"bad range {text!r}: expected N, N-M, N- or -M, optionally followed by /KERNEL"
        )
    a = int(m.group("a")) if m.group("a") is not None else None
    b = int(m.group("b")) if m.group("b") is not None else None
    kernel = (m.group("k") or "").strip() or None
    if m.group("dash") is None:
        if a is None or b is not None:
            raise RangeError(f"bad range {text!r}")
        b = a
    if a is not None and b is not None and b < a:
        raise RangeError(f"bad range {text!r}: {b} is before {a}")
    return EnqueueRange(a, b, kernel)
