"""The figures of ``cltui latency`` (pure: numpy, no device): launches as records, the
distribution of each stage (p50/p90/p99/max, a histogram), per kernel and for the range,
the outliers named by enqueue, and histograms drawn with block characters."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Sequence

import numpy as np

from cltui.latency.schema import Dist, KernelStages, Outlier, StageSummary

# the stages of one launch, in the order they happen
STAGES = ("host_enqueue", "queued_to_submit", "submit_to_start", "start_to_end", "end_to_next")
STAGE_TITLES = {
    "host_enqueue": "host enqueue call",
    "queued_to_submit": "queued→submit",
    "submit_to_start": "submit→start",
    "start_to_end": "start→end",
    "end_to_next": "end→next start",
}
STAGE_SHORT = {
    "host_enqueue": "host call",
    "queued_to_submit": "queued→subm",
    "submit_to_start": "submit→start",
    "start_to_end": "start→end",
    "end_to_next": "end→next",
}
BLOCKS = " ▁▂▃▄▅▆▇█"
BINS = 24
OUTLIERS = 8  # named per summary, the farthest first


@dataclasses.dataclass(frozen=True, slots=True)
class Launch:
    """One launch: which (repetition, step, enqueue, kernel) and its stages in ns (None
    where the source does not say: the capture logs no timestamps, so no gap)."""

    rep: int
    step: int
    enqueue: int
    kernel: str
    stages: dict[str, float | None]
    host_start: float | None = None  # host clock (ns), for timelines
    device_start: float | None = None  # device clock (ns): queued
    device_times: tuple[int, int, int, int] | None = None  # queued, submit, start, end


def distribution(values: Sequence[float]) -> Dist | None:
    """p50/p90/p99/max (and min, mean, count) and a histogram of ``values``; None if empty."""
    if not values:
        return None
    a = np.asarray(values, dtype=np.float64)
    p50, p90, p99 = (float(x) for x in np.percentile(a, [50, 90, 99]))
    lo, hi = float(a.min()), float(a.max())
    if hi > lo:
        counts, _edges = np.histogram(a, bins=BINS, range=(lo, hi))
    else:
        counts = np.array([len(a)])
    return {
        "count": len(a), "min": lo, "p50": p50, "p90": p90, "p99": p99, "max": hi,
        "mean": float(a.mean()), "hist": [int(c) for c in counts],
    }  # fmt: skip


def stage_values(launches: Iterable[Launch], stage: str) -> list[tuple[float, Launch]]:
    """The launches that have ``stage``, with its value."""
    out: list[tuple[float, Launch]] = []
    for ln in launches:
        v = ln.stages.get(stage)
        if v is not None:
            out.append((float(v), ln))
    return out


def summarise(launches: Sequence[Launch]) -> StageSummary:
    """Every stage's distribution for the range and per kernel, and the outliers."""
    stages: dict[str, Dist | None] = {}
    found: list[Outlier] = []
    for stage in STAGES:
        pairs = stage_values(launches, stage)
        stages[stage] = distribution([v for v, _ in pairs])
        found.extend(outliers(pairs, stage))
    found.sort(key=lambda o: -o["times_median"])
    kernels: list[KernelStages] = []
    names = list(dict.fromkeys(ln.kernel for ln in launches))
    for name in names:
        mine = [ln for ln in launches if ln.kernel == name]
        kernels.append(
            {
                "kernel": name,
                "launches": len(mine),
                "enqueues": sorted({ln.enqueue for ln in mine}),
                "stages": {s: distribution([v for v, _ in stage_values(mine, s)]) for s in STAGES},
            }
        )
    return {"launches": len(launches), "stages": stages, "kernels": kernels,
            "outliers": found[:OUTLIERS]}  # fmt: skip


def outliers(pairs: list[tuple[float, Launch]], stage: str) -> list[Outlier]:
    """The far-out values of a stage (above Q3 + 3 IQR and over twice the median)."""
    if len(pairs) < 8:
        return []
    a = np.asarray([v for v, _ in pairs])
    q1, med, q3 = (float(x) for x in np.percentile(a, [25, 50, 75]))
    fence = max(q3 + 3.0 * (q3 - q1), 2.0 * med)
    out: list[Outlier] = []
    for v, ln in pairs:
        if v > fence and v > 0:
            out.append(
                {"stage": stage, "enqueue": ln.enqueue, "kernel": ln.kernel, "repetition": ln.rep,
                 "ns": v, "median_ns": med, "times_median": v / med if med > 0 else float("inf")}
            )  # fmt: skip
    out.sort(key=lambda o: -o["ns"])
    return out[:OUTLIERS]


def blocks(counts: Sequence[int], width: int | None = None) -> str:
    """A histogram as one line of block characters (``width`` columns: bins merged)."""
    if not counts:
        return ""
    c = np.asarray(counts, dtype=np.float64)
    if width is not None and 0 < width < len(c):
        edges = np.linspace(0, len(c), width + 1).astype(int)
        c = np.asarray([c[a:b].sum() for a, b in itertools.pairwise(edges)])
    top = float(c.max())
    if top <= 0:
        return BLOCKS[0] * len(c)
    steps = len(BLOCKS) - 1
    # a bin with any launch shows at least the lowest block
    return "".join(BLOCKS[0] if v <= 0 else BLOCKS[max(1, round(v / top * steps))] for v in c)


def with_gaps(launches: list[Launch]) -> list[Launch]:
    """The launches of one repetition in order, each given the gap from its end to the
    next launch's start (device clock; None for the last)."""
    out: list[Launch] = []
    for k, ln in enumerate(launches):
        gap: float | None = None
        nxt = launches[k + 1] if k + 1 < len(launches) else None
        if nxt is not None and ln.device_times is not None and nxt.device_times is not None:
            gap = float(nxt.device_times[2] - ln.device_times[3])
        out.append(dataclasses.replace(ln, stages={**ln.stages, "end_to_next": gap}))
    return out
