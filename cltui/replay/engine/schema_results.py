"""The typed contracts of a replay's results: a step's checks, a device's run, the verdict and
the report ``cltui replay --json`` prints, as TypedDicts (plain dicts at run time).
``docs/replay.schema.json`` documents them for other tools; a test holds it to these
definitions key for key.  Part of the engine package, which a bundle carries whole;
:mod:`.schema` is where its users import it from.  Standard library only.
"""

from typing import Any, Literal, NotRequired, TypedDict

from .schema_plan import Change, LostRun, Mode, Skipped, ToleranceSpec

__all__ = [
    "BuildInfo", "CheckResult", "CompareResult", "CrossCheck", "Device", "DeviceChoice",
    "DeviceResult", "DeviceStatus", "EngineResult", "Feasibility", "Finding", "FindingKind",
    "LoadResult", "LoopResult", "ProbeOutput", "ProbeResult", "Report", "ReportPlan", "Stats",
    "Status", "StepResult", "StepTiming", "TimelineLaunch", "TimelineRepetition",
    "TimelineResult", "TransferResult", "Verdict", "VerdictCounts", "VerdictStatus",
]  # fmt: skip

Status = Literal["equal", "within", "different", "unchecked"]
DeviceStatus = Literal["ok", "mismatch", "error", "crash", "killed", "hang", "cancelled"]
VerdictStatus = Literal["pass", "fail", "incomplete", "error"]
# what cannot run on a device (engine/feasible.py: KINDS)
FindingKind = Literal[
    "work-group-size", "work-item-size", "kernel-work-group-size", "reqd-work-group-size",
    "non-uniform-work-group", "local-memory", "max-alloc", "global-memory", "images",
    "image-format", "image-size", "image-3d-writes", "svm", "fp64", "fp16", "subgroups",
    "opencl-c-version",
]  # fmt: skip


class Stats(TypedDict):
    min: float
    median: float
    max: float


class Device(TypedDict):
    id: str
    platform: str
    name: str
    version: str
    platform_version: NotRequired[str]
    driver: NotRequired[str]
    type: NotRequired[str]
    svm: NotRequired[bool]
    images: NotRequired[bool]
    max_work_group_size: NotRequired[int]
    global_mem: NotRequired[int]


class DeviceChoice(TypedDict):
    rule: Literal["user", "captured", "most-alike", "real-before-simulator", "first"]
    why: str


class VerdictCounts(TypedDict, total=False):
    kernels: int
    replayed: int
    skipped: int
    outputs: int
    checked: int
    unchecked: int
    equal: int
    within: int
    different: int
    departed: int
    recovered: int
    lost: int
    after_unreplayed: int
    transfers: int
    transfers_replayed: int
    cannot_run: int
    after_cannot_run: int


class Verdict(TypedDict):
    status: VerdictStatus
    line: str
    counts: VerdictCounts


class CompareResult(TypedDict):
    status: Status
    dtype: str
    elements: int
    expected_size: int
    actual_size: int
    n_diff: int
    n_bad: int
    max_abs: float | str | None
    max_rel: NotRequired[float | str | None]
    max_ulp: float | str | None
    first: Any
    note: str
    leaves: NotRequired[list[str]]


class CheckResult(TypedDict):
    mem: str
    args: list[int]
    label: str
    dtype: NotRequired[str | list[Any] | None]
    shape: NotRequired[list[int] | None]
    output: str | None
    tolerance: NotRequired[ToleranceSpec]
    data: NotRequired[str | None]
    status: Status
    summary: NotRequired[str]
    result: NotRequired[CompareResult]
    after_unreplayed: NotRequired[int]  # the check follows an unreplayed host write there
    after_cannot_run: NotRequired[int]  # it follows what an enqueue that could not run left


class LoadResult(TypedDict):
    mem: str
    why: str
    note: str
    done: bool


class StepTiming(TypedDict):
    queued_to_submit: Stats | None
    submit_to_start: Stats | None
    start_to_end: Stats | None
    host_enqueue: Stats | None
    samples: int


class TransferResult(TypedDict):
    """A host transfer before a step, and whether the replay did it."""

    enqueue: int
    function: str
    mem: str | None
    replayed: str | None
    why: str
    done: bool


class Finding(TypedDict):
    """A kernel enqueue that cannot run on a device, and why (engine/feasible.py)."""

    enqueue: int
    kernel: str
    kind: FindingKind
    reason: str


class StepResult(TypedDict):
    enqueue: int
    kernel: str | None
    status: str
    checks: list[CheckResult]
    prechecks: list[CheckResult]
    loads: list[LoadResult]
    timing: StepTiming
    transfers: NotRequired[list[TransferResult]]  # the host transfers before it, as planned
    recovered: NotRequired[bool]  # the step's kernel was recovered from a damaged log
    cannot_run: NotRequired[list[Finding]]  # status "cannot-run": why it was not launched


class BuildInfo(TypedDict):
    how: str
    seconds: float


class LoopResult(TypedDict):
    launches: int
    host_ns_per_repetition: Stats | None
    probe: NotRequired[bool]


class ProbeOutput(TypedDict):
    enqueue: int
    mem: str
    files: list[str]


class ProbeResult(TypedDict):
    runs: int
    outputs: list[ProbeOutput]


class TimelineLaunch(TypedDict):
    """One launch of a timeline repetition: the host call (``time.perf_counter_ns``) and
    the four profiling counters (the device's clock, ns)."""

    step: int
    host_start: int
    host_ns: int
    queued: int
    submit: int
    start: int
    end: int


class TimelineRepetition(TypedDict):
    """One timing repetition: its start (host clock), the launch loop's host time, the
    wall time to the queue drained, and its launches in order."""

    host_start: int
    loop_ns: int
    wall_ns: int
    launches: list[TimelineLaunch]


class TimelineResult(TypedDict):
    """``timeline``: every timing repetition's launches (``cltui latency``)."""

    clock: str
    repetitions: list[TimelineRepetition]


class EngineResult(TypedDict):
    """What the engine returns for one device (``run_plan``); the runners complete it into
    a :class:`DeviceResult` (runner, status, device choice, verdict)."""

    device: Device
    ok: bool
    error: str | None
    failed_enqueue: int | None
    repeat: int
    loop: NotRequired[LoopResult]
    steps: list[StepResult]
    builds: dict[str, BuildInfo]
    notes: list[str]
    probe: NotRequired[ProbeResult]
    build_log: NotRequired[str]
    cannot_run: NotRequired[list[Finding]]  # the pre-flight's findings on this device
    timeline: NotRequired[TimelineResult]


class DeviceResult(TypedDict):
    runner: Literal["cltui", "replay.py", "replay.cpp"]
    device: Device
    device_choice: DeviceChoice
    status: DeviceStatus
    ok: bool
    error: str | None
    failed_enqueue: int | None
    stderr: NotRequired[str]
    stderr_log: NotRequired[str]  # a file holding the child's whole stderr (cltui only)
    partial: NotRequired[bool]
    probe: NotRequired[dict[str, Any]]  # --probe: {runs, outputs: [{enqueue, mem, files}]}
    timeline: NotRequired[TimelineResult]  # cltui latency: every launch of the repetitions
    repeat: int
    loop: Any
    builds: dict[str, Any]
    notes: list[str]
    steps: list[StepResult]
    verdict: Verdict
    cannot_run: NotRequired[list[Finding]]  # the pre-flight's findings on this device


class Feasibility(TypedDict):
    """Will a plan run on a device: the pre-flight alone (``cltui feasible``)."""

    device: Device
    status: Literal["ok", "cannot-run", "error"]
    error: str | None
    steps: int  # kernel enqueues of the plan
    runnable: int  # those that can run on the device
    cannot_run: list[Finding]
    at_launch: list[Finding]  # launches the driver decides (feasible.AT_LAUNCH): not counted
    facts: NotRequired[dict[str, Any]]  # the device's facts the rule used (feasible.DeviceFacts)
    device_choice: NotRequired[DeviceChoice]


class ReportPlan(TypedDict):
    range: str | None
    mode: Mode | None
    steps: int
    changes: list[Change]
    notes: list[str]
    skipped: NotRequired[list[Skipped]]
    lost: NotRequired[list[LostRun]]


class CrossCheck(TypedDict):
    enqueue: int
    kernel: str | None
    mem: str
    label: str
    a: str
    b: str
    status: Status
    summary: str
    result: NotRequired[CompareResult]


class Report(TypedDict):
    """What ``cltui replay --json`` prints: one run of a plan on one or more devices."""

    plan: ReportPlan
    repeat: int
    devices: list[DeviceResult]
    cross: list[CrossCheck]
    ok: bool
    outputs: str | None
    probe: NotRequired[list[Any]]
    verdict: Verdict
