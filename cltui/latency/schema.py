"""The shapes of ``cltui latency --json`` (held key for key to ``docs/cli.schema.json``'s
``latency`` definitions by ``tests/test_latency.py``)."""

from __future__ import annotations

from typing import Any, TypedDict

from cltui.replay.engine.schema import Finding

__all__ = [
    "CaptureTiming", "DeviceLatency", "Dist", "KernelStages", "LadderPoint", "LatencyReport",
    "Outlier", "RunnerCost", "Sensitivity", "StageSummary",
]  # fmt: skip


class Dist(TypedDict):
    """One stage's distribution (ns): percentiles and a histogram of ``BINS`` equal bins
    from ``min`` to ``max``."""

    count: int
    min: float
    p50: float
    p90: float
    p99: float
    max: float
    mean: float
    hist: list[int]


class KernelStages(TypedDict):
    kernel: str
    launches: int
    enqueues: list[int]
    stages: dict[str, Dist | None]


class Outlier(TypedDict):
    stage: str
    enqueue: int
    kernel: str
    repetition: int
    ns: float
    median_ns: float
    times_median: float


class StageSummary(TypedDict):
    """Every stage for the range and per kernel, and the outliers by enqueue."""

    launches: int
    stages: dict[str, Dist | None]
    kernels: list[KernelStages]
    outliers: list[Outlier]


class CaptureTiming(StageSummary):
    """What the application saw, from the capture: host call times (the log's ``Time:``,
    microseconds, under the layer and its dumps) and device stage durations."""

    source: str
    notes: list[str]


class RunnerCost(TypedDict):
    """One runner's host time per launch (the launch loop's time over its launches;
    median of the passes) and its ratio to the floor's."""

    runner: str
    what: str
    host_ns_per_launch: float | None
    ratio_to_floor: float | None
    passes: int
    spread: list[float] | None  # its passes' quartiles (ns per launch), None under 4 passes


class LadderPoint(TypedDict):
    delay_ns: int
    passes: int
    injected_ns_per_launch: float
    wall_ns_median: float


class Sensitivity(TypedDict):
    """The range's wall time against a host delay injected before each launch: the robust
    slope (dimensionless: wall ns per injected ns; Theil-Sen over rung medians paired by
    round) with its 95 % bootstrap interval, clipped to 0..1, over the whole ladder
    (``slope``) and near zero delay (``slope_small``: delays up to ``small_max_ns``);
    ``slope_raw``/``ci95_raw`` unclipped, ``flag`` when they lie outside 0..1;
    ``measurable`` false (``bound`` "not measurable") when no delay injects more per pass
    than the wall's noise (``noise_ns``); the saving never above ``saving_bound_ns``
    (40 ns x launches); hyperfine-style ``outliers`` among the ladder's ``passes`` and the
    ``warnings`` the figures carry.  With the busy passes (an event per launch) ``slope_wall``
    is the wall's own slope (unclipped), ``slope_wait`` that of the time the device waited
    for launches, the slope the lesser of the two, and ``contention`` what the wall's growth
    beyond the wait says (the device's own time grew), else None."""

    ladder: list[LadderPoint]
    small_max_ns: int
    slope: float | None
    ci95: list[float] | None
    slope_small: float | None
    ci95_small: list[float] | None
    bound: str
    wall_ns: float | None
    launches: int
    saving_ns: float | None
    saving_ci_ns: list[float] | None
    saving_percent: float | None
    line: str
    slope_raw: float | None
    ci95_raw: list[float] | None
    flag: str | None
    slope_wall: float | None
    ci95_wall: list[float] | None
    slope_wait: float | None
    ci95_wait: list[float] | None
    contention: str | None
    noise_ns: float | None
    measurable: bool
    saving_bound_ns: float
    outliers: int
    passes: int
    warnings: list[str]


class DeviceLatency(TypedDict):
    device: dict[str, Any]
    device_choice: dict[str, str]
    error: str | None
    launched: int  # kernel launches per repetition on this device (not those that cannot run)
    cannot_run: list[Finding]  # the pre-flight's: not launched, not in the figures
    engine: StageSummary | None
    native: StageSummary | None
    runners: list[RunnerCost]
    sensitivity: Sensitivity | None
    notes: list[str]
    warnings: list[str]  # figures to read with care (their passes disagree, outliers)


class LatencyReport(TypedDict):
    capture: str
    range: str
    kernels: int
    not_measured: str | None  # what of the range the plan skips or the log lost (counts)
    repeat: int
    capture_timing: CaptureTiming
    devices: list[DeviceLatency]
    trace: str | None
