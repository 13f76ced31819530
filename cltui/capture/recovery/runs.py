"""Sets of enqueue numbers as sorted inclusive runs ``(first, last)``, and their text.

A report or a file name may claim any count, so lost numbers are never held one entry per
number: every operation here is linear in the runs (and in the numbers it is given).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence

__all__ = ["count", "in_runs", "minus", "range_text", "ranges_of", "runs_total"]

Runs = Sequence[tuple[int, int]]


def in_runs(runs: Runs, number: int) -> bool:
    """Whether ``number`` lies in one of the sorted ``runs`` (a binary search)."""
    i = bisect.bisect_right(runs, (number, 1 << 62)) - 1
    return i >= 0 and runs[i][0] <= number <= runs[i][1]


def runs_total(runs: Runs) -> int:
    """How many numbers the runs hold."""
    return sum(b - a + 1 for a, b in runs)


def minus(runs: Runs, taken: Iterable[int]) -> list[tuple[int, int]]:
    """``runs`` without the numbers ``taken`` (all of which lie inside ``runs``)."""
    out: list[tuple[int, int]] = []
    cuts = sorted(set(taken))
    j = 0
    for a, b in runs:
        start = a
        while j < len(cuts) and cuts[j] <= b:
            c = cuts[j]
            if c >= start:
                if c > start:
                    out.append((start, c - 1))
                start = c + 1
            j += 1
        if start <= b:
            out.append((start, b))
    return out


def ranges_of(numbers: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted numbers as inclusive (first, last) runs."""
    out: list[tuple[int, int]] = []
    for n in sorted(set(numbers)):
        if out and n == out[-1][1] + 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out


def range_text(ranges: Runs, limit: int = 12) -> str:
    """``[(0, 1), (3, 3), (5, 9)]`` -> ``0-1,3,5-9`` (the first ``limit`` runs, then ``,...``)."""
    parts = [str(a) if a == b else f"{a}-{b}" for a, b in ranges[:limit]]
    if len(ranges) > limit:
        parts.append("...")
    return ",".join(parts)


def count(n: int, word: str) -> str:
    """``1 kernel``, ``2 kernels``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
