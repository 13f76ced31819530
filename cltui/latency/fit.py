"""Sensitivity to launch overhead (pure numpy): the range's wall time against a host delay
injected before each launch, a least-squares slope with a 95 % bootstrap interval, what
it says (device-bound, launch-bound) and the one-line answer for 40 ns per launch.

x is the busy-wait really spent in a pass (all its launches, ns), y the pass's wall time
(first launch to the queue drained): the slope is wall ns per injected ns.  ~0: the
device is the bottleneck and host delay hides behind it; ~1: every ns of launch cost
adds to the wall time.  The C++ runner runs every delay once per round (the order
shuffled), so the fit is within rounds and the bootstrap resamples rounds.  ``slope``
uses the whole ladder (the headline and the 40 ns line); ``slope_small`` only the
delays up to ``SMALL_MAX_NS``: the marginal cost right at the range's own launch cost,
which differs where a range turns launch-bound only past some delay (its interval is
wide where the injected time is small against the wall time's noise)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cltui.capture.textfmt import fmt_ns
from cltui.latency.schema import LadderPoint, Sensitivity

SMALL_MAX_NS = 1000
SAVED_NS = 40  # the question: removing 40 ns per launch
BOOT = 2000
DEVICE_BOUND, LAUNCH_BOUND = 0.2, 0.8


def slope_ci(
    rounds: Sequence[Sequence[tuple[float, float]]], seed: int = 0
) -> tuple[float, list[float]] | None:
    """Least-squares slope of wall on injected time, within rounds (each round's points
    minus their round's mean: a drift of the machine between rounds drops out), and its
    95 % percentile-bootstrap interval (rounds resampled); None with fewer than 3
    rounds or no spread in x."""
    kept = [r for r in rounds if len(r) >= 2]
    if len(kept) < 3:
        return None
    dx = [np.asarray([p[0] for p in r]) - np.mean([p[0] for p in r]) for r in kept]
    dy = [np.asarray([p[1] for p in r]) - np.mean([p[1] for p in r]) for r in kept]
    sxy = np.asarray([float((a * b).sum()) for a, b in zip(dx, dy, strict=True)])
    sxx = np.asarray([float((a * a).sum()) for a in dx])
    if float(sxx.sum()) <= 0:
        return None
    slope = float(sxy.sum() / sxx.sum())
    gen = np.random.default_rng(seed)
    idx = gen.integers(0, len(kept), size=(BOOT, len(kept)))
    den = sxx[idx].sum(axis=1)
    ok = den > 0
    boots = sxy[idx].sum(axis=1)[ok] / den[ok]
    lo, hi = (float(v) for v in np.percentile(boots, [2.5, 97.5]))
    return slope, [lo, hi]


def bound_of(slope: float | None, ci: list[float] | None = None) -> str:
    """device-bound (< 0.2), launch-bound (> 0.8) or mixed; ``undetermined`` when the
    interval reaches both below 0.2 and above 0.8 (the noise hides the answer)."""
    if slope is None:
        return "unknown"
    if ci is not None and ci[0] < DEVICE_BOUND and ci[1] > LAUNCH_BOUND:
        return "undetermined"
    if slope < DEVICE_BOUND:
        return "device-bound"
    if slope > LAUNCH_BOUND:
        return "launch-bound"
    return "mixed"


def _rounds(
    ladder: Sequence[tuple[int, Sequence[float], Sequence[float]]], max_delay: float
) -> list[list[tuple[float, float]]]:
    """Per round k, the k-th pass of every delay up to ``max_delay``: (injected, wall)."""
    out: list[list[tuple[float, float]]] = []
    for delay, injected, wall in ladder:
        if delay > max_delay:
            continue
        for k, (x, y) in enumerate(zip(injected, wall, strict=False)):
            while len(out) <= k:
                out.append([])
            out[k].append((float(x), float(y)))
    return out


def sensitivity(
    ladder: Sequence[tuple[int, Sequence[float], Sequence[float]]],
    launches: int,
    device: str,
) -> Sensitivity:
    """``ladder``: per delay (ns per launch), each round's pass: injected ns and wall ns."""
    points: list[LadderPoint] = [
        {"delay_ns": int(delay), "passes": len(wall),
         "injected_ns_per_launch": float(np.median(injected)) / max(launches, 1),
         "wall_ns_median": float(np.median(wall))}
        for delay, injected, wall in ladder if len(wall)
    ]  # fmt: skip
    full = slope_ci(_rounds(ladder, float("inf")))
    small = slope_ci(_rounds(ladder, SMALL_MAX_NS))
    base = [p["wall_ns_median"] for p in points if p["delay_ns"] == 0]
    wall0 = base[0] if base else None
    out: Sensitivity = {
        "ladder": points, "small_max_ns": SMALL_MAX_NS,
        "slope": full[0] if full else None, "ci95": full[1] if full else None,
        "slope_small": small[0] if small else None, "ci95_small": small[1] if small else None,
        "bound": bound_of(*full) if full else "unknown", "wall_ns": wall0,
        "launches": launches, "saving_ns": None, "saving_ci_ns": None,
        "saving_percent": None, "line": "",
    }  # fmt: skip
    if full is not None and wall0:
        per = SAVED_NS * launches
        saving = max(full[0], 0.0) * per
        out["saving_ns"] = saving
        out["saving_ci_ns"] = [max(full[1][0], 0.0) * per, max(full[1][1], 0.0) * per]
        out["saving_percent"] = 100.0 * saving / wall0
    out["line"] = saving_line(out, device)
    return out


def saving_line(s: Sensitivity, device: str) -> str:
    """"removing 40 ns per launch would save about X of this range's Y (Z %) on DEVICE"."""
    if s["saving_ns"] is None or s["wall_ns"] is None or s["saving_ci_ns"] is None:
        return f"no sensitivity figure on {device}: the delay ladder did not run"
    lo, hi = s["saving_ci_ns"]
    return (
        f"removing {SAVED_NS} ns per launch would save about {fmt_ns(s['saving_ns'])} "
        f"(95 % CI {fmt_ns(lo)} to {fmt_ns(hi)}) of this range's {fmt_ns(s['wall_ns'])} "
        f"({s['saving_percent'] or 0.0:.2f} %) on {device}"
    )
