"""Timing statistics of an experiment: medians and 95 % bootstrap confidence intervals
(pure numpy, seeded: the same samples give the same interval).

:func:`paired` compares A and B timed in turns (A B B A ...: repetition ``r`` of A and of B
saw the same drift): the median of the differences ``B[r] - A[r]`` and its interval.
:func:`interval` is one sample's median and its interval (a sweep point's time).

A difference is a result (``faster``, ``slower``) only when its interval excludes zero AND
its size reaches the minimum effect (``min_effect``: a fraction of A's median, from the
device's A/A calibration, :mod:`.noise`); anything else reads ``within noise`` and carries
no percentage (:func:`relative_text`).  ``level`` widens the interval for a family of
comparisons (the per-step rows: :func:`family_level`, Bonferroni).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import NotRequired, TypedDict

import numpy as np

__all__ = [
    "LEVEL", "NO_DIFFERENCE", "Diff", "Interval", "family_level", "interval", "paired",
    "relative_text", "unpaired",
]  # fmt: skip

BOOT = 2000  # resamples
SEED = 1234
NO_DIFFERENCE = "within noise"
LEVEL = 0.95  # the interval of one comparison
TOO_FEW = "too few runs"
MIN_RUNS = 5  # fewer samples give no interval worth the name


class Interval(TypedDict):
    """A median and its 95 % interval (ns); ``n`` samples."""

    median: float | None
    lo: float | None
    hi: float | None
    n: int


class Diff(TypedDict):
    """B against A: their medians, the median of the paired differences (B - A, ns) and its
    95 % interval, the relative change (diff / A's median), and the one-word reading
    (``faster``, ``slower``, ``within noise``, ``too few runs`` (under :data:`MIN_RUNS`
    pairs: no interval), ``no timing``); ``min_effect`` (a fraction of A's median) and
    ``level`` (the interval's coverage) when they were given."""

    a: float | None
    b: float | None
    diff: float | None
    lo: float | None
    hi: float | None
    relative: float | None
    n: int
    reading: str
    min_effect: NotRequired[float]
    level: NotRequired[float]


def _boot_medians(x: np.ndarray, seed: int) -> np.ndarray:
    """The medians of :data:`BOOT` resamples of ``x`` (read-only: the same samples and seed
    give the same array, made once: a sweep compares every point with the same capture's)."""
    return _boot_cached(x.tobytes(), seed)


@functools.lru_cache(maxsize=64)
def _boot_cached(data: bytes, seed: int) -> np.ndarray:
    x = np.frombuffer(data, dtype=np.float64)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(x), size=(BOOT, len(x)))
    meds: np.ndarray = np.median(x[idx], axis=1)
    meds.setflags(write=False)
    return meds


def interval(samples: Sequence[float], seed: int = SEED) -> Interval:
    """The median of ``samples`` and its 95 % bootstrap interval."""
    x = np.asarray(samples, dtype=np.float64)
    if x.size == 0:
        return {"median": None, "lo": None, "hi": None, "n": 0}
    meds = _boot_medians(x, seed)
    lo, hi = np.percentile(meds, [2.5, 97.5])
    return {"median": float(np.median(x)), "lo": float(lo), "hi": float(hi), "n": int(x.size)}


def family_level(m: int, level: float = LEVEL) -> float:
    """The coverage each of ``m`` comparisons needs for the family to keep ``level``
    (Bonferroni): the per-step rows of an A/B are ``m`` tests, not one."""
    return 1.0 - (1.0 - level) / max(m, 1)


def _reading(lo: float, hi: float, diff: float, base: float, min_effect: float) -> str:
    """faster/slower when the interval excludes zero and ``|diff|`` reaches the minimum
    effect (a fraction of ``base``), else within noise."""
    if lo <= 0.0 <= hi or abs(diff) < min_effect * max(base, 0.0):
        return NO_DIFFERENCE
    return "faster" if hi < 0 else "slower"


def _bounds(boot: np.ndarray, level: float) -> tuple[float, float]:
    tail = 50.0 * (1.0 - level)
    lo, hi = np.percentile(boot, [tail, 100.0 - tail])
    return float(lo), float(hi)


def paired(
    a: Sequence[float], b: Sequence[float], seed: int = SEED, *,
    min_effect: float = 0.0, level: float = LEVEL,
) -> Diff:  # fmt: skip
    """B against A over paired repetitions (the shorter length of the two); a result only
    beyond ``min_effect`` (a fraction of A's median), the interval at ``level``."""
    n = min(len(a), len(b))
    if n == 0:
        return {"a": None, "b": None, "diff": None, "lo": None, "hi": None, "relative": None,
                "n": 0, "reading": "no timing"}  # fmt: skip
    xa = np.asarray(a[:n], dtype=np.float64)
    xb = np.asarray(b[:n], dtype=np.float64)
    if n < MIN_RUNS:
        return _too_few(xa, xb, n)
    d = xb - xa
    lo, hi = _bounds(_boot_medians(d, seed), level)
    diff = float(np.median(d))
    base = float(np.median(xa))
    return {
        "a": base, "b": float(np.median(xb)), "diff": diff, "lo": lo, "hi": hi,
        "relative": diff / base if base > 0 else None, "n": n,
        "reading": _reading(lo, hi, diff, base, min_effect), "min_effect": min_effect,
        "level": level,
    }  # fmt: skip


def unpaired(
    a: Sequence[float], b: Sequence[float], seed: int = SEED, *,
    min_effect: float = 0.0, level: float = LEVEL,
) -> Diff:  # fmt: skip
    """B against A timed apart (a sweep point against the capture's configuration): the
    difference of the medians, its interval from resampling each side."""
    if not len(a) or not len(b):
        return paired([], [])
    xa = np.asarray(a, dtype=np.float64)
    xb = np.asarray(b, dtype=np.float64)
    if min(len(a), len(b)) < MIN_RUNS:
        return _too_few(xa, xb, min(len(a), len(b)))
    boot = _boot_medians(xb, seed) - _boot_medians(xa, seed + 1)
    lo, hi = _bounds(boot, level)
    ma, mb = float(np.median(xa)), float(np.median(xb))
    return {
        "a": ma, "b": mb, "diff": mb - ma, "lo": lo, "hi": hi,
        "relative": (mb - ma) / ma if ma > 0 else None, "n": min(len(a), len(b)),
        "reading": _reading(lo, hi, mb - ma, ma, min_effect), "min_effect": min_effect,
        "level": level,
    }  # fmt: skip


def _too_few(xa: np.ndarray, xb: np.ndarray, n: int) -> Diff:
    ma, mb = float(np.median(xa)), float(np.median(xb))
    return {"a": ma, "b": mb, "diff": mb - ma, "lo": None, "hi": None,
            "relative": (mb - ma) / ma if ma > 0 else None, "n": n, "reading": TOO_FEW}  # fmt: skip


def relative_text(d: Diff) -> str:
    """`` (-12.3%)`` for a measured difference (faster or slower), else "": a percentage
    beside "within noise" would claim a size the measurement does not support."""
    if d["relative"] is None or d["reading"] not in ("faster", "slower"):
        return ""
    return f" ({d['relative'] * 100:+.1f}%)"
