"""Sensitivity to launch overhead (pure numpy): the range's wall time against a host delay
injected before each launch, a least-squares slope with a 95 % bootstrap interval, what
it says (device-bound, launch-bound) and the one-line answer for 40 ns per launch.

x is the busy-wait really spent in a pass (all its launches, ns), y the pass's wall time
(first launch to the queue drained): the slope is wall ns per injected ns.  ~0: the
device is the bottleneck and host delay hides behind it; ~1: every ns of launch cost
adds to the wall time.  ``slope`` uses the delays up to ``SMALL_MAX_NS`` (the marginal
cost near the range's own launch cost, what a 40 ns change touches); ``slope_all`` the
whole ladder (where large delays make any range launch-bound)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from cltui.capture.textfmt import fmt_ns
from cltui.latency.schema import LadderPoint, Sensitivity

SMALL_MAX_NS = 1000
SAVED_NS = 40  # the question: removing 40 ns per launch
BOOT = 2000
DEVICE_BOUND, LAUNCH_BOUND = 0.2, 0.8


def slope_ci(
    x: Sequence[float], y: Sequence[float], seed: int = 0
) -> tuple[float, list[float]] | None:
    """Least-squares slope of y on x and its 95 % percentile-bootstrap interval (pairs
    resampled); None with fewer than 3 points or no spread in x."""
    xa, ya = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if len(xa) < 3 or float(np.ptp(xa)) <= 0:
        return None
    slope = _slope(xa, ya)
    gen = np.random.default_rng(seed)
    idx = gen.integers(0, len(xa), size=(BOOT, len(xa)))
    xs, ys = xa[idx], ya[idx]
    xm, ym = xs.mean(axis=1, keepdims=True), ys.mean(axis=1, keepdims=True)
    sxx = ((xs - xm) ** 2).sum(axis=1)
    ok = sxx > 0
    boots = ((xs - xm) * (ys - ym)).sum(axis=1)[ok] / sxx[ok]
    lo, hi = (float(v) for v in np.percentile(boots, [2.5, 97.5]))
    return slope, [lo, hi]


def _slope(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> float:
    xm, ym = x.mean(), y.mean()
    return float(((x - xm) * (y - ym)).sum() / ((x - xm) ** 2).sum())


def bound_of(slope: float | None) -> str:
    if slope is None:
        return "unknown"
    if slope < DEVICE_BOUND:
        return "device-bound"
    if slope > LAUNCH_BOUND:
        return "launch-bound"
    return "mixed"


def sensitivity(
    ladder: Sequence[tuple[int, Sequence[float], Sequence[float]]],
    launches: int,
    device: str,
) -> Sensitivity:
    """``ladder``: per delay (ns per launch), each pass's injected ns and wall ns."""
    points: list[LadderPoint] = []
    xs_all: list[float] = []
    ys_all: list[float] = []
    xs_small: list[float] = []
    ys_small: list[float] = []
    for delay, injected, wall in ladder:
        if not wall:
            continue
        points.append(
            {"delay_ns": int(delay), "passes": len(wall),
             "injected_ns_per_launch": float(np.median(injected)) / max(launches, 1),
             "wall_ns_median": float(np.median(wall))}
        )  # fmt: skip
        xs_all += [float(v) for v in injected]
        ys_all += [float(v) for v in wall]
        if delay <= SMALL_MAX_NS:
            xs_small += [float(v) for v in injected]
            ys_small += [float(v) for v in wall]
    small = slope_ci(xs_small, ys_small)
    full = slope_ci(xs_all, ys_all)
    base = [p["wall_ns_median"] for p in points if p["delay_ns"] == 0]
    wall0 = base[0] if base else None
    out: Sensitivity = {
        "ladder": points, "small_max_ns": SMALL_MAX_NS,
        "slope": small[0] if small else None, "ci95": small[1] if small else None,
        "slope_all": full[0] if full else None, "ci95_all": full[1] if full else None,
        "bound": bound_of(small[0] if small else None), "wall_ns": wall0,
        "launches": launches, "saving_ns": None, "saving_ci_ns": None,
        "saving_percent": None, "line": "",
    }  # fmt: skip
    if small is not None and wall0:
        per = SAVED_NS * launches
        saving = max(small[0], 0.0) * per
        out["saving_ns"] = saving
        out["saving_ci_ns"] = [max(small[1][0], 0.0) * per, max(small[1][1], 0.0) * per]
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
