"""What ``cltui check`` found: findings mapped to enqueues, crashes, the report.

Plain dataclasses with ``to_dict`` for ``cltui check --json`` (docs/cli-json.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NotRequired, TypedDict

from cltui.analysis.oclgrind import SourceLine, SourceLineJSON


class FindingJSON(TypedDict):
    kind: str
    message: str
    enqueue: int | None
    kernel: str | None
    line: int | None
    lines: list[SourceLineJSON]
    entity: str | None
    work_group: str | None
    count: int
    details: list[str]


class Retry(TypedDict):
    """One retry of a crashed enqueue: the checkers it ran without and how it ended."""

    without: list[str]
    outcome: str
    signal: NotRequired[str]


class CrashJSON(TypedDict):
    enqueue: int
    kernel: str
    signal: str
    checker: str | None
    checked: bool
    unchecked_by: list[str]
    retries: list[Retry]
    stderr: str
    stderr_log: str | None  # a file holding the check process's whole stderr
    summary: str


class EnqueueJSON(TypedDict):
    enqueue: int
    kernel: str


class CheckReportJSON(TypedDict):
    """What ``cltui check --json`` prints (docs/cli-json.md)."""

    capture: str
    range: str
    mode: str
    device: str | None
    status: str
    error: str | None
    failed_enqueue: int | None
    enqueues: list[EnqueueJSON]
    findings: list[FindingJSON]
    crashes: list[CrashJSON]
    unchecked: list[int]
    notes: list[str]
    stderr: str
    stderr_log: str | None  # a file holding the check process's whole stderr


@dataclass
class Finding:
    kind: str
    message: str
    enqueue: int | None  # None: outside any enqueue (build, setup)
    kernel: str | None
    lines: list[SourceLine]
    entity: str | None = None  # the first work-item that hit it
    work_group: str | None = None
    count: int = 1  # how many times Oclgrind reported it (work-items, addresses)
    details: list[str] = field(default_factory=list)

    @property
    def line(self) -> int | None:
        return self.lines[0].line if self.lines else None

    def to_dict(self) -> FindingJSON:
        return {
            "kind": self.kind,
            "message": self.message,
            "enqueue": self.enqueue,
            "kernel": self.kernel,
            "line": self.line,
            "lines": [s.to_dict() for s in self.lines],
            "entity": self.entity,
            "work_group": self.work_group,
            "count": self.count,
            "details": list(self.details),
        }


@dataclass
class Crash:
    """An enqueue that crashed Oclgrind, and what the retries found."""

    enqueue: int
    kernel: str
    signal: str  # e.g. SIGSEGV
    stderr: str  # the tail of Oclgrind's output from this enqueue's start
    checker: str | None = None  # the checker whose absence let it finish (None: unknown)
    retries: list[Retry] = field(default_factory=list)  # {without, outcome}
    checked: bool = False  # a retry finished: its findings are in the report
    unchecked_by: list[str] = field(default_factory=list)  # checkers left off for it
    log: str | None = None  # a file holding the crashed run's whole stderr

    def line(self) -> str:
        head = f"enqueue {self.enqueue} ({self.kernel}) crashed Oclgrind ({self.signal})"
        if self.checker is not None:
            return (f"{head}: its {self.checker} checker crashes on it; checked again "
                    f"without it (--{self.checker} off)")
        if self.checked:
            return f"{head}: it did not crash when checked again alone"
        return f"{head}: it crashes Oclgrind even alone and with every checker off"

    def to_dict(self) -> CrashJSON:
        return {"enqueue": self.enqueue, "kernel": self.kernel, "signal": self.signal,
                "checker": self.checker, "checked": self.checked,
                "unchecked_by": list(self.unchecked_by), "retries": list(self.retries),
                "stderr": self.stderr, "stderr_log": self.log, "summary": self.line()}


@dataclass
class CheckReport:
    capture: str
    range: str
    mode: str
    device: str | None
    enqueues: list[tuple[int, str]]  # the steps replayed (enqueue, kernel)
    findings: list[Finding]
    error: str | None = None  # build failure, crash, hang...
    failed_enqueue: int | None = None
    status: str = "ok"  # ok | findings | incomplete | crash | hang | error | cancelled | killed
    notes: list[str] = field(default_factory=list)
    stderr_tail: str = ""
    crashes: list[Crash] = field(default_factory=list)
    unchecked: list[int] = field(default_factory=list)  # enqueues no run got to
    stderr_log: str | None = None  # a file holding the last run's whole stderr

    def for_enqueue(self, number: int) -> list[Finding]:
        return [f for f in self.findings if f.enqueue == number]

    def to_dict(self) -> CheckReportJSON:
        return {
            "capture": self.capture,
            "range": self.range,
            "mode": self.mode,
            "device": self.device,
            "status": self.status,
            "error": self.error,
            "failed_enqueue": self.failed_enqueue,
            "enqueues": [{"enqueue": e, "kernel": k} for e, k in self.enqueues],
            "findings": [f.to_dict() for f in self.findings],
            "crashes": [c.to_dict() for c in self.crashes],
            "unchecked": list(self.unchecked),
            "notes": list(self.notes),
            "stderr": self.stderr_tail,
            "stderr_log": self.stderr_log,
        }
