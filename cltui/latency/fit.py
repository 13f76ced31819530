"""Sensitivity to launch overhead (pure numpy): the range's wall time against a host delay
injected before each launch, a robust slope with a 95 % bootstrap interval, what it says
(device-bound, launch-bound) and the one-line answer for 40 ns per launch.

x is the wait really spent in a pass (all its launches, ns; the C++ runner sleeps through a
wait from 2 us, so that on a CPU device the wait leaves the cores to the device's threads,
and busy-waits a shorter one), y the pass's wall time
(first launch to the queue drained): the slope is wall ns per injected ns.  ~0: the
device is the bottleneck and host delay hides behind it; ~1: every ns of launch cost
adds to the wall time.  The C++ runner runs every delay once per round (the order
shuffled), so each rung is paired with the no-delay pass of its own round (a drift of the
machine between rounds drops out): per rung the median of the paired differences, and
the slope is the Theil-Sen estimate (the median of the pairwise slopes) over those rung
medians and the origin, so one slow pass moves a median a little, never the slope much.
The bootstrap resamples rounds.

Only rungs whose injected time per pass reaches the wall's noise carry the slope (one
pass's spread once paired by round, from the median absolute deviation, as two standard
errors of the rung's median over the rounds: more rounds resolve smaller delays); below it
the answer is "not measurable".  The slope's physical range is 0..1: the figures are
clipped to it, and a slope whose interval lies outside is flagged (above 1: something
besides the wait grew with the gaps between launches; on a CPU device the host's launch
calls and the device's threads share cores).

The wall also grows when the device itself slows (a CPU device's threads get less of the
cores on a busy machine), which is not launch cost.  The C++ runner's busy passes (the same
waits, an event per launch) give the time the device waited for launches; the slope is then
the lesser of the wall's and the wait's (:func:`split_slope`), and the wall's growth beyond
the wait is named (``contention``).  ``slope`` uses the whole ladder (the headline and the
40 ns line); ``slope_small`` only the delays up to ``SMALL_MAX_NS``."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from cltui.latency.schema import LadderPoint, Sensitivity
from cltui.text.units import fmt_ns

SMALL_MAX_NS = 1000
SAVED_NS = 40  # the question: removing 40 ns per launch
BOOT = 2000
DEVICE_BOUND, LAUNCH_BOUND = 0.2, 0.8
MAD_SIGMA = 1.4826  # a normal sample's sigma from its median absolute deviation
MEDIAN_SE = 1.2533  # a median's standard error over a mean's (normal samples)
GATE_SE = 2.0  # a delay counts when it injects this many standard errors of its median
OUTLIER_Z = 14.0  # hyperfine's modified Z-score threshold for a statistical outlier
DISAGREE_WIDTH = 0.5  # a slope interval wider than this: the rounds disagree
NOT_MEASURABLE = "not measurable"
OWN_MIN = 0.05  # the device's own growth (ns per injected ns) worth a line

Ladder = Sequence[tuple[int, Sequence[float], Sequence[float]]]
# per delay, each round's busy pass (an event per launch): injected ns, wall ns and the time
# the device waited for launches (ns; negative: not measured)
BusyLadder = Sequence[tuple[int, Sequence[float], Sequence[float], Sequence[float]]]


def _matrix(ladder: Ladder, max_delay: float) -> tuple[np.ndarray, np.ndarray] | None:
    """(injected, wall) as (rungs, rounds) arrays, the no-delay rung first, NaN where a
    rung lacks a round; None without a no-delay rung or a second rung."""
    rungs = sorted((d, i, w) for d, i, w in ladder if d <= max_delay and len(w))
    if not rungs or rungs[0][0] != 0 or len(rungs) < 2:
        return None
    rounds = max(len(w) for _d, _i, w in rungs)
    x = np.full((len(rungs), rounds), np.nan)
    y = np.full((len(rungs), rounds), np.nan)
    for k, (_d, inj, wall) in enumerate(rungs):
        n = min(len(inj), len(wall))
        x[k, :n] = np.asarray(inj[:n], dtype=np.float64)
        y[k, :n] = np.asarray(wall[:n], dtype=np.float64)
    return x, y


def wall_noise(y: np.ndarray) -> float | None:
    """The wall's noise once paired by round (``y``: (rungs, rounds), the no-delay rung
    first): each pass minus its round's no-delay pass, about its rung's median; 1.4826 x
    the median absolute deviation of those, over sqrt(2) (a difference holds two passes'
    noise).  A drift of the machine between rounds is not in it, as it is not in the fit."""
    d = y[1:] - y[0]
    with np.errstate(all="ignore"):
        r = d - np.nanmedian(d, axis=1, keepdims=True)
    r = r[np.isfinite(r)]
    if r.size < 3:
        return None
    return float(MAD_SIGMA * np.median(np.abs(r)) / np.sqrt(2.0))


def _theil_sen(px: np.ndarray, py: np.ndarray) -> np.ndarray:
    """Theil-Sen slopes of points (..., k): the median of the pairwise slopes, per row."""
    slopes = []
    for i, j in itertools.combinations(range(px.shape[-1]), 2):
        dx = px[..., j] - px[..., i]
        with np.errstate(divide="ignore", invalid="ignore"):
            slopes.append(np.where(np.abs(dx) > 0, (py[..., j] - py[..., i]) / dx, np.nan))
    return np.asarray(np.nanmedian(np.stack(slopes, axis=-1), axis=-1))


def gate_of(noise: float, rounds: int) -> float:
    """The least injected time per pass a delay needs to count: :data:`GATE_SE` standard
    errors of its median paired difference over ``rounds`` (one pass's ``noise`` each)."""
    return float(GATE_SE * MEDIAN_SE * np.sqrt(2.0) * noise / np.sqrt(max(rounds, 1)))


Fitter = tuple[Callable[[np.ndarray], np.ndarray], np.ndarray, int]


def _fitter(x: np.ndarray, y: np.ndarray, noise: float, use: np.ndarray | None = None
            ) -> Fitter | None:  # fmt: skip
    """(the fit of a set of rounds, the rungs it uses, the rounds): Theil-Sen over the origin
    and the rung medians of differences paired by round, on the rungs whose injected time
    reaches :func:`gate_of` ``noise`` (or on ``use``); None when no rung does or fewer than
    3 rounds pair."""
    dx, dy = x[1:] - x[0], y[1:] - y[0]
    ok = np.isfinite(dx) & np.isfinite(dy)
    if int(ok.all(axis=0).sum()) < 3:
        return None
    if use is None:
        with np.errstate(all="ignore"):
            mx = np.nanmedian(np.where(ok, dx, np.nan), axis=1)
        gate = gate_of(noise, int(ok.all(axis=0).sum()))
        use = np.flatnonzero(np.isfinite(mx) & (mx >= max(gate, 1.0)))
    use = use[use < dx.shape[0]]
    if use.size == 0:
        return None
    dx, dy, ok = dx[use], dy[use], ok[use]

    def fit(cols: np.ndarray) -> np.ndarray:  # cols: (..., rounds) round indices
        with np.errstate(all="ignore"):
            px = np.nanmedian(np.where(ok[:, cols], dx[:, cols], np.nan), axis=-1)
            py = np.nanmedian(np.where(ok[:, cols], dy[:, cols], np.nan), axis=-1)
        px, py = np.moveaxis(px, 0, -1), np.moveaxis(py, 0, -1)
        zero = np.zeros((*px.shape[:-1], 1))
        return _theil_sen(np.concatenate([zero, px], -1), np.concatenate([zero, py], -1))

    return fit, use, int(dx.shape[1])


def _interval(slope: float, boots: np.ndarray) -> tuple[float, list[float]] | None:
    boots = boots[np.isfinite(boots)]
    if boots.size == 0 or not np.isfinite(slope):
        return None
    lo, hi = (float(v) for v in np.percentile(boots, [2.5, 97.5]))
    return slope, [lo, hi]


def robust_slope(
    x: np.ndarray, y: np.ndarray, noise: float, seed: int = 0
) -> tuple[float, list[float]] | None:
    """The slope of :func:`_fitter` and its 95 % bootstrap interval (rounds resampled)."""
    f = _fitter(x, y, noise)
    if f is None:
        return None
    fit, _use, rounds = f
    gen = np.random.default_rng(seed)
    return _interval(float(fit(np.arange(rounds))),
                     fit(gen.integers(0, rounds, size=(BOOT, rounds))))  # fmt: skip


class Split(NamedTuple):
    """The wall's slope, the device's wait for launches (its events), the launch sensitivity
    (the lesser of the two, per resample) and the wall's growth beyond the wait (the
    device's own time: contention), each (slope, 95 % interval)."""

    wall: tuple[float, list[float]]
    wait: tuple[float, list[float]]
    launch: tuple[float, list[float]]
    excess: tuple[float, list[float]]


def split_slope(
    wall: tuple[np.ndarray, np.ndarray], busy: tuple[np.ndarray, np.ndarray], noise: float,
    seed: int = 0,
) -> Split | None:  # fmt: skip
    """The wall's slope (timed passes: no event) beside the slope of the time the device
    waited for launches (busy passes: an event per launch; a launch queued only after the
    one before had ended waited from that end to its start), each on the rungs its own
    noise resolves, over the same resampled rounds.  The wall grows by launch cost and by
    the device's own time (a CPU
    device's threads get less of the cores on a busy machine); only the wait is launch
    cost, and with events a pass waits at least as much as without (their host cost only
    makes launches later), so the launch sensitivity is the lesser of the two.  None when
    either cannot be fitted."""
    fw = _fitter(*wall, noise)
    wait_noise = wall_noise(busy[1])
    if fw is None or wait_noise is None:
        return None
    fb = _fitter(*busy, wait_noise)  # its own noise: far below the wall's where it never waits
    if fb is None:
        return None
    rounds = min(fw[2], fb[2])
    cols = np.random.default_rng(seed).integers(0, rounds, size=(BOOT, rounds))
    every = np.arange(rounds)
    w, b = float(fw[0](every)), float(fb[0](every))
    bw, bb = fw[0](cols), fb[0](cols)
    parts = (_interval(w, bw), _interval(b, bb), _interval(min(w, b), np.fmin(bw, bb)),
             _interval(w - b, bw - bb))  # fmt: skip
    if any(p is None for p in parts):
        return None
    return Split(*(p for p in parts if p is not None))


def slope_ci(
    rounds: Sequence[Sequence[tuple[float, float]]], seed: int = 0
) -> tuple[float, list[float]] | None:
    """The robust slope of rounds given point by point (each round: its rungs in one
    order, the first at no delay), with no noise gate; None with fewer than 3 rounds."""
    kept = [r for r in rounds if len(r) >= 2]
    if len(kept) < 3 or len({len(r) for r in kept}) != 1:
        return None
    x = np.asarray([[p[0] for p in r] for r in kept], dtype=np.float64).T
    y = np.asarray([[p[1] for p in r] for r in kept], dtype=np.float64).T
    return robust_slope(x, y, 0.0, seed)


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


def clip(slope: float, ci: list[float]) -> tuple[float, list[float]]:
    """The slope and its interval in the physical range 0..1."""
    return min(max(slope, 0.0), 1.0), [min(max(v, 0.0), 1.0) for v in ci]


def flag_of(raw: tuple[float, list[float]] | None, cpu: bool, waited: bool = False) -> str | None:
    """What a slope outside 0..1 (its whole interval) says, or None; ``waited``: the slope
    is the device's wait for launches (its events), not the wall's."""
    if raw is None:
        return None
    slope, (lo, hi) = raw
    if lo > 1.0 and waited:
        return (f"the device waited {slope:.2f} ns for launches per injected ns, more than the "
                "delay itself: the host's own launch calls slowed as the busy-wait grew"
                + (" (contention: the host loop and the device share cores)" if cpu else "")
                + "; read the slope as 1, launch-bound")  # fmt: skip
    if lo > 1.0:
        if cpu:
            return (f"the wall grew {slope:.2f} ns per injected ns, more than the wait itself: "
                    "on a CPU device the host's launch calls and the device's threads share "
                    "cores (contention; the ladder's waits from 2 µs sleep and leave them the "
                    "cores); read the slope as 1, launch-bound")  # fmt: skip
        return (f"the wall grew {slope:.2f} ns per injected ns, more than the delay itself: "
                "something else competes with the host loop (read the slope as 1)")
    if hi < 0.0:
        return (f"the wall shrank as the delay grew (slope {slope:.2f}): not a launch cost; "
                "the device ran better with gaps between launches (read the slope as 0)")
    return None


def contention_of(split: Split | None, cpu: bool) -> str | None:
    """What the wall's growth beyond the device's wait for launches says (its interval above
    0 and at least :data:`OWN_MIN` ns per injected ns), or None."""
    if split is None:
        return None
    ex, (lo, _hi) = split.excess
    if lo <= 0.0 or ex < OWN_MIN:
        return None
    head = "contention: " if cpu else ""
    why = ("its threads share the cores with the host's launch calls and whatever else "
           "runs here" if cpu else "the device slowed while the host loop ran")
    return (f"{head}the wall grew {split.wall[0]:.2f} ns per injected ns, the device waited "
            f"for launches {max(split.wait[0], 0.0):.2f} (its events): the other {ex:.2f} is "
            f"the device's own time growing ({why}); not launch cost, left out of the slope")


def outliers(samples: Sequence[float]) -> int:
    """How many samples are statistical outliers by hyperfine's rule (a modified Z-score,
    0.6745 (x - median) / MAD, above 14)."""
    x = np.asarray(samples, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size < 3:
        return 0
    mad = float(np.median(np.abs(x - np.median(x))))
    if mad <= 0:
        return 0
    return int((np.abs(0.6745 * (x - np.median(x)) / mad) > OUTLIER_Z).sum())


def busy_ladder(native: Mapping[str, Any]) -> BusyLadder | None:
    """The C++ runner's busy passes (``busy_ladder`` of its ``--latency`` JSON), or None."""
    out = [(int(p["delay_ns"]), p["passes"]["injected_ns"], p["passes"]["wall_ns"],
            p["passes"]["wait_ns"])
           for p in native.get("busy_ladder") or [] if "wait_ns" in p.get("passes", {})]
    return out or None  # fmt: skip


def _waits(busy: BusyLadder, max_delay: float) -> tuple[np.ndarray, np.ndarray] | None:
    """The busy passes' (injected, wait) matrices; None where no wait was measured."""
    m = _matrix([(d, inj, [v if v >= 0 else np.nan for v in wait])
                 for d, inj, _w, wait in busy], max_delay)  # fmt: skip
    return m if m is not None and bool(np.isfinite(m[1]).any(axis=0).sum() >= 3) else None


def wait_slope(busy: BusyLadder | None) -> tuple[float, list[float]] | None:
    """The slope of the device's wait for launches alone (its own noise gate), or None.
    Where the wall's noise hides every delay and its interval lies below
    :data:`DEVICE_BOUND`, the device did not wait for launches: the launch sensitivity,
    the lesser of the wall's slope and the wait's, is no larger whatever the wall did."""
    m = _waits(busy, float("inf")) if busy else None
    noise = wall_noise(m[1]) if m is not None else None
    return robust_slope(*m, noise) if m is not None and noise is not None else None


def _split(ladder: Ladder, busy: BusyLadder | None, max_delay: float, noise: float | None,
           ) -> Split | None:  # fmt: skip
    """:func:`split_slope` of the ladder and the busy passes' wait (same delays), or None."""
    if not busy or noise is None:
        return None
    wall_m, busy_m = _matrix(ladder, max_delay), _waits(busy, max_delay)
    if wall_m is None or busy_m is None:
        return None
    return split_slope(wall_m, busy_m, noise)


def sensitivity(
    ladder: Ladder, launches: int, device: str, cpu: bool = False, busy: BusyLadder | None = None
) -> Sensitivity:
    """``ladder``: per delay (ns per launch), each round's pass: injected ns and wall ns;
    ``cpu``: the device is a CPU (a slope above 1 is contention for its cores); ``busy``:
    the same delays' busy passes (:data:`BusyLadder`): the launch sensitivity is then the
    device's wait for launches, never above the wall's slope (:func:`split_slope`)."""
    points: list[LadderPoint] = [
        {"delay_ns": int(delay), "passes": len(wall),
         "injected_ns_per_launch": float(np.median(injected)) / max(launches, 1),
         "wall_ns_median": float(np.median(wall))}
        for delay, injected, wall in ladder if len(wall)
    ]  # fmt: skip
    base = [p["wall_ns_median"] for p in points if p["delay_ns"] == 0]
    wall0 = base[0] if base else None
    full_m = _matrix(ladder, float("inf"))
    noise = wall_noise(full_m[1]) if full_m is not None else None
    raw_wall = (robust_slope(*full_m, noise or 0.0)
                if full_m is not None and noise is not None else None)  # fmt: skip
    small_m = _matrix(ladder, SMALL_MAX_NS)
    raw_small = (robust_slope(*small_m, noise or 0.0)
                 if small_m is not None and noise is not None else None)  # fmt: skip
    split = _split(ladder, busy, float("inf"), noise) if raw_wall is not None else None
    split_small = _split(ladder, busy, SMALL_MAX_NS, noise) if raw_small is not None else None
    raw = split.launch if split is not None else raw_wall
    alone = wait_slope(busy) if raw is None and full_m is not None and noise is not None else None
    hidden = alone if alone is not None and alone[1][1] < DEVICE_BOUND else None
    raw = hidden or raw
    raw_small = split_small.launch if split_small is not None else raw_small
    full = clip(*raw) if raw is not None else None
    small = clip(*raw_small) if raw_small is not None else None
    measurable = full_m is not None and noise is not None and raw is not None
    out: Sensitivity = {
        "ladder": points, "small_max_ns": SMALL_MAX_NS,
        "slope": full[0] if full else None, "ci95": full[1] if full else None,
        "slope_small": small[0] if small else None, "ci95_small": small[1] if small else None,
        "slope_raw": raw[0] if raw else None, "ci95_raw": raw[1] if raw else None,
        "flag": flag_of(raw, cpu, split is not None), "noise_ns": noise,
        "measurable": measurable,
        "slope_wall": raw_wall[0] if raw_wall else None,
        "ci95_wall": raw_wall[1] if raw_wall else None,
        "slope_wait": split.wait[0] if split else alone[0] if alone else None,
        "ci95_wait": split.wait[1] if split else alone[1] if alone else None,
        "contention": contention_of(split, cpu),
        "bound": (bound_of(*full) if full else
                  NOT_MEASURABLE if full_m is not None and noise is not None else "unknown"),
        "wall_ns": wall0, "launches": launches, "saving_ns": None, "saving_ci_ns": None,
        "saving_bound_ns": SAVED_NS * launches, "saving_percent": None, "line": "",
        "outliers": sum(outliers(w) for _d, _i, w in ladder),
        "passes": sum(len(w) for _d, _i, w in ladder), "warnings": [],
    }  # fmt: skip
    if full is not None and wall0:
        per = SAVED_NS * launches
        out["saving_ns"] = full[0] * per
        out["saving_ci_ns"] = [full[1][0] * per, full[1][1] * per]
        out["saving_percent"] = 100.0 * full[0] * per / wall0
    out["warnings"] = _warnings(out, raw, raw_small)
    if hidden is not None:
        out["warnings"].append(
            "the wall's noise hides every delay of the ladder, but the device did not wait for "
            "launches (its events): device-bound; the slope is the wait's")
    if cpu and split is None and out["bound"] in ("mixed", "undetermined"):
        out["warnings"].append(
            "a CPU device: its threads share the cores with the host's launch calls and with "
            "whatever else runs here (the ladder's waits from 2 µs sleep and leave them the "
            "cores), so part of a mixed slope can be contention for cores, not launch cost; "
            "a machine with idle cores tells them apart")
    out["line"] = saving_line(out, device)
    return out


def _warnings(
    s: Sensitivity, raw: tuple[float, list[float]] | None,
    raw_small: tuple[float, list[float]] | None,
) -> list[str]:  # fmt: skip
    out: list[str] = []
    if raw is not None and raw[1][1] - raw[1][0] > DISAGREE_WIDTH:
        out.append(f"the rounds disagree: the slope's 95 % interval spans {raw[1][0]:.2f} to "
                   f"{raw[1][1]:.2f}; run again with more --repeat, on a quieter machine")
    if s["outliers"]:
        out.append(f"{s['outliers']} of {s['passes']} ladder passes are statistical outliers "
                   "(modified Z-score above 14, hyperfine's rule): something else ran on the "
                   "machine; the medians give them little weight, a quieter machine gives "
                   "steadier figures")  # fmt: skip
    if raw_small is None and s["measurable"] and s["noise_ns"] is not None:
        out.append(f"slope near 0: {NOT_MEASURABLE}: the delays up to "
                   f"{fmt_ns(s['small_max_ns'])} inject less per pass than the wall's noise "
                   f"resolves ({fmt_ns(_gate(s))} over {_rounds(s)} rounds)")  # fmt: skip
    return out


def _rounds(s: Sensitivity) -> int:
    return max((p["passes"] for p in s["ladder"] if p["delay_ns"] == 0), default=0)


def _gate(s: Sensitivity) -> float:
    return gate_of(s["noise_ns"] or 0.0, _rounds(s))


def saving_line(s: Sensitivity, device: str) -> str:
    """"removing 40 ns per launch would save about X of this range's Y (Z %) on DEVICE",
    never more than 40 ns x the launches; "not measurable" when the noise hides it."""
    bound = (f"at most {fmt_ns(SAVED_NS)} x {s['launches']} launches = "
             f"{fmt_ns(s['saving_bound_ns'])}")
    if s["bound"] == NOT_MEASURABLE and s["noise_ns"] is not None:
        big = max((p["injected_ns_per_launch"] for p in s["ladder"]), default=0.0)
        return (f"removing {SAVED_NS} ns per launch: {NOT_MEASURABLE} on {device}: the largest "
                f"delay injected, {fmt_ns(big * s['launches'])} a pass, is below the wall's "
                f"noise ({fmt_ns(s['noise_ns'])} a pass: {fmt_ns(_gate(s))} over "
                f"{_rounds(s)} rounds) ({bound}; more --repeat or a quieter machine)")  # fmt: skip
    if s["saving_ns"] is None or s["wall_ns"] is None or s["saving_ci_ns"] is None:
        return f"no sensitivity figure on {device}: the delay ladder did not run"
    lo, hi = s["saving_ci_ns"]
    line = (f"removing {SAVED_NS} ns per launch would save about {fmt_ns(s['saving_ns'])} "
            f"(95 % CI {fmt_ns(lo)} to {fmt_ns(hi)}; {bound}) of this range's "
            f"{fmt_ns(s['wall_ns'])} ({s['saving_percent'] or 0.0:.2f} %) on {device}")  # fmt: skip
    if s["noise_ns"] is not None and s["saving_bound_ns"] < s["noise_ns"]:
        line += (f"; below the wall's noise ({fmt_ns(s['noise_ns'])} a pass): no single pass "
                 "shows it")
    return line
