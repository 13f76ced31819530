"""The typed contracts of a replay: the plan (a bundle's ``manifest.json``) and every result
shape, as TypedDicts.

They stay plain dicts at run time (JSON in, JSON out, nothing to convert), and type checkers
hold every reader to these keys: the plan builder, the engine, the runner, the CLI report, the
app's results screen, the exporter and the bundle's ``replay.py`` (this file is part of the
engine package, which a bundle carries whole).  ``docs/replay.schema.json`` documents the
results for other tools; a test holds it to these definitions key for key.  Standard library
only.
"""

from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "ArgSpec", "ArgTolerance", "BuildInfo", "Change", "CheckResult", "CheckSpec",
    "CompareResult", "CrossCheck", "DataRef", "Device", "DeviceChoice", "DeviceResult",
    "EngineResult", "Feasibility", "Finding", "FindingKind", "ImageSpec",
    "LoadResult", "LoadSpec", "LoopResult", "LostRun", "Manifest", "MemorySpec", "PlanSource",
    "ProbeOutput", "ProbeResult", "ProgramSpec", "Report", "ReportPlan", "Scope", "ScopeKernel",
    "ScopeTransfer", "Skipped", "Stats", "StepResult", "StepSpec", "StepTiming",
    "TimelineLaunch", "TimelineRepetition", "TimelineResult",
    "ToleranceSpec", "TransferOp", "TransferResult", "TransferSpec", "Verdict", "VerdictCounts",
    "VerdictStatus",
]  # fmt: skip

Status = Literal["equal", "within", "different", "unchecked"]
DeviceStatus = Literal["ok", "mismatch", "error", "crash", "killed", "hang", "cancelled"]
VerdictStatus = Literal["pass", "fail", "incomplete", "error"]
Mode = Literal["chain", "isolated", "strict"]
# what cannot run on a device (engine/feasible.py: KINDS)
FindingKind = Literal[
    "work-group-size", "work-item-size", "kernel-work-group-size", "reqd-work-group-size",
    "non-uniform-work-group", "local-memory", "max-alloc", "global-memory", "images",
    "image-format", "image-size", "image-3d-writes", "svm", "fp64", "fp16", "subgroups",
    "opencl-c-version",
]  # fmt: skip

# --------------------------------------------------------------------------- the plan


class ToleranceSpec(TypedDict, total=False):
    """A tolerance, or the keys of one that override another (``compare.Tolerance``)."""

    atol: float
    rtol: float
    ulp: int


ArgTolerance = dict[int, ToleranceSpec]  # argument index -> the keys that override the plan's

class PlanSource(TypedDict):
    capture: str
    range: str | None
    mode: Mode


class DataRef(TypedDict):
    """A file the plan reads: its path (relative to the capture or the bundle) and size."""

    path: str
    size: int
    sha256: NotRequired[str]  # in a bundle: the content's hash (the file is data/<sha256>.bin)
    captured_path: NotRequired[str]  # in a bundle: where the capture had it
    origin: NotRequired[str]  # "variant": a file cltui wrote for a variant (an absolute path)


class ProgramSpec(TypedDict):
    label: str
    source: str | None  # a data key
    il: NotRequired[str | None]  # SPIR-V, a data key
    options: str
    binaries: list[dict[str, str]]  # {data, device}
    include_dirs: NotRequired[list[str]]  # bundle folders (the exporter adds them)
    captured_options: NotRequired[str]  # in a bundle: the options before -I were rewritten


class ImageSpec(TypedDict):
    order: str
    type: str
    image_type: str
    shape: list[int]
    element_size: int


class MemorySpec(TypedDict):
    kind: Literal["buffer", "subbuffer", "image", "svm"]
    label: str
    size: int
    image: NotRequired[ImageSpec]
    parent: NotRequired[str]  # a sub-buffer's buffer and its offset there
    origin: NotRequired[int]
    svm_level: NotRequired[str]  # SVM: "coarse", "fine", "fine+atomics" (the capture's flags)


class ArgSpec(TypedDict, total=False):
    """One kernel argument: ``kind`` buffer/image/svm (``mem``), scalar (``hex``), local
    (``size``), sampler (``normalized``, ``addressing``, ``filter``), null."""

    index: int
    kind: str
    name: str | None
    type: str | None
    mem: str
    offset: int
    hex: str
    size: int
    value: object  # the scalar decoded for people (JSON); the engine uses hex
    normalized: bool
    addressing: str
    filter: str


class LoadSpec(TypedDict):
    mem: str
    data: str  # a data key
    why: Literal["input", "verify", "reload"]
    note: str


class CheckSpec(TypedDict):
    mem: str
    args: list[int]
    label: str
    dtype: str | list[Any] | None  # dtypes.DTypeSpec: a numpy dtype string, or a struct's fields
    shape: list[int] | None
    data: NotRequired[str]  # a data key; absent when there is nothing to compare with
    hash64: NotRequired[str | None]  # a hash-only dump's 64-bit hash (hex)
    note: NotRequired[str]
    tol: NotRequired[ToleranceSpec]
    after_unreplayed: NotRequired[int]


class TransferOp(TypedDict, total=False):
    op: Literal["fill", "copy", "copy_rect", "copy_whole"]
    src: str
    src_offset: int
    dst_offset: int
    offset: int
    size: int
    pattern: str  # hex
    src_origin: list[int] | None  # copy_rect
    dst_origin: list[int] | None
    region: list[int]
    src_row_pitch: int | None
    src_slice_pitch: int | None
    dst_row_pitch: int | None
    dst_slice_pitch: int | None


class TransferSpec(TypedDict):
    enqueue: int
    function: str
    mem: str
    op: TransferOp | None
    replayed: str | None  # "op" | "reload" | "input" | None
    why: str


# one kernel enqueue of the plan ("global" is a Python keyword: the functional form)
StepSpec = TypedDict(
    "StepSpec",
    {
        "enqueue": int,
        "kernel": str,
        "program": str,
        "device": NotRequired[str | None],
        "recovered": NotRequired[bool],
        "captured_time": NotRequired[dict[str, int]],
        "global": list[int],
        "local": list[int] | None,
        "offset": list[int] | None,
        "args": list[ArgSpec],
        "loads": list[LoadSpec],
        "prechecks": list[CheckSpec],
        "checks": list[CheckSpec],
        "transfers": NotRequired[list[TransferSpec]],
    },
)


class Change(TypedDict):
    """A host-side change the capture shows between two kernels of the range."""

    enqueue: int
    mem: str
    label: str
    args: list[int]
    after: int
    by: list[str]
    transfers: list[int]
    action: Literal["replay", "reload", "none", "unreplayed"]


class ScopeKernel(TypedDict):
    enqueue: int
    kernel: str | None
    replayed: bool
    why: NotRequired[str]  # only when it is not replayed
    recovered: NotRequired[bool]  # only when true


class ScopeTransfer(TypedDict):
    enqueue: int
    function: str
    mem: str
    label: str
    replayed: str | None
    why: str


class Scope(TypedDict, total=False):
    """Every kernel enqueue and host transfer inside the range, replayed or not."""

    kernels: list[ScopeKernel]
    transfers: list[ScopeTransfer]


class Skipped(TypedDict):
    enqueue: int
    kernel: str | None
    why: str
    recovered: NotRequired[bool]  # only when true


class LostRun(TypedDict):
    first: int
    last: int
    count: int
    why: str


class Manifest(TypedDict):
    """A replay plan: what the engine runs (and a bundle's ``manifest.json``)."""

    format: str
    version: int
    source: PlanSource
    tolerance: ToleranceSpec
    data: dict[str, DataRef]
    programs: dict[str, ProgramSpec]
    memory: dict[str, MemorySpec]
    steps: list[StepSpec]
    changes: list[Change]
    notes: list[str]
    scope: NotRequired[Scope]
    skipped: NotRequired[list[Skipped]]
    lost: NotRequired[list[LostRun]]
    bundle: NotRequired[dict[str, Any]]  # what the exporter adds (docs/cli-json.md)
    variant: NotRequired[dict[str, Any]]  # the changes a variant made (cltui try/sweep/export)


# --------------------------------------------------------------------------- results


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
