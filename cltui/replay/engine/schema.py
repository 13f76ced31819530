"""The typed contracts of a replay: the plan (a bundle's ``manifest.json``) and every result
shape, as TypedDicts.

They stay plain dicts at run time (JSON in, JSON out, nothing to convert), and type checkers
hold every reader to these keys: the plan builder, the engine, the runner, the CLI report, the
app's results screen, the exporter and the bundle's ``replay.py`` (this file is part of the
engine package, which a bundle carries whole).  The definitions live in :mod:`.schema_plan`
(the plan) and :mod:`.schema_results` (the results); every user imports them from here.
``docs/replay.schema.json`` documents the results for other tools; a test holds it to these
definitions key for key.  Standard library only.
"""

from .schema_plan import (
    ArgSpec,
    ArgTolerance,
    Change,
    CheckSpec,
    DataRef,
    ImageSpec,
    LoadSpec,
    LostRun,
    Manifest,
    MemorySpec,
    Mode,
    PlanSource,
    ProgramSpec,
    Scope,
    ScopeKernel,
    ScopeTransfer,
    Skipped,
    StepSpec,
    ToleranceSpec,
    TransferOp,
    TransferSpec,
)
from .schema_results import (
    BuildInfo,
    CheckResult,
    CompareResult,
    CrossCheck,
    Device,
    DeviceChoice,
    DeviceResult,
    DeviceStatus,
    EngineResult,
    Feasibility,
    Finding,
    FindingKind,
    LoadResult,
    LoopResult,
    ProbeOutput,
    ProbeResult,
    Report,
    ReportPlan,
    Stats,
    Status,
    StepResult,
    StepTiming,
    TimelineLaunch,
    TimelineRepetition,
    TimelineResult,
    TransferResult,
    Verdict,
    VerdictCounts,
    VerdictStatus,
)

__all__ = [
    "ArgSpec", "ArgTolerance", "BuildInfo", "Change", "CheckResult", "CheckSpec",
    "CompareResult", "CrossCheck", "DataRef", "Device", "DeviceChoice", "DeviceResult",
    "DeviceStatus", "EngineResult", "Feasibility", "Finding", "FindingKind", "ImageSpec",
    "LoadResult", "LoadSpec", "LoopResult", "LostRun", "Manifest", "MemorySpec", "Mode",
    "PlanSource", "ProbeOutput", "ProbeResult", "ProgramSpec", "Report", "ReportPlan", "Scope",
    "ScopeKernel", "ScopeTransfer", "Skipped", "Stats", "Status", "StepResult", "StepSpec",
    "StepTiming", "TimelineLaunch", "TimelineRepetition", "TimelineResult", "ToleranceSpec",
    "TransferOp", "TransferResult", "TransferSpec", "Verdict", "VerdictCounts", "VerdictStatus",
]  # fmt: skip
