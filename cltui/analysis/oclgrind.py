"""Oclgrind's stderr parsed: one :class:`RawFinding` per block it prints.

Oclgrind (the OpenCL simulator) reports out-of-bounds accesses, data races, uses of
uninitialised values, barrier divergence and API misuse on stderr: one block per finding,
a header line then tab-indented lines (see :func:`parse_oclgrind`). The ``At line N of
input.cl`` lines are lines of the program source it was given (:class:`SourceLine`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TypedDict

# finding kinds
OUT_OF_BOUNDS = "out-of-bounds"
DATA_RACE = "data-race"
UNINITIALIZED = "uninitialized"
BARRIER_DIVERGENCE = "barrier-divergence"
ACCESS = "invalid-access"  # e.g. a write to a read-only buffer
API = "api-error"
FATAL = "fatal"  # Oclgrind stopped (e.g. an LLVM intrinsic it does not implement)
OTHER = "other"

_HEADERS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^Invalid (read|write) of size \d+ at "), OUT_OF_BOUNDS),
    (re.compile(r"^(Read-write|Write-write|Read-read|Write-read) data race at "), DATA_RACE),
    (re.compile(r"^Uninitiali[sz]ed |uninitiali[sz]ed (value|index|address)", re.I),
     UNINITIALIZED),
    (re.compile(r"^Work-group divergence detected"), BARRIER_DIVERGENCE),
    (re.compile(r"^Work-item divergence detected"), BARRIER_DIVERGENCE),
    (re.compile(r"^Invalid (read|write) (from|to) "), ACCESS),
    (re.compile(r"^Oclgrind - OpenCL runtime error detected"), API),
    (re.compile(r"^OCLGRIND FATAL ERROR"), FATAL),
]
_AT_LINE = re.compile(r"^At line (\d+) \(column (\d+)\) of (.+?):\s*$")
_ENTITY = re.compile(r"^(?:Entity|First entity|Second entity):\s*(.*)$")
_KERNEL = re.compile(r"^Kernel:\s*(\S.*)$")
_WORKGROUP = re.compile(r"^Work-group:\s*(.*)$")
_FUNCTION = re.compile(r"^Function:\s*(\S+)")
_ERROR = re.compile(r"^Error:\s*(\S+)")


class SourceLineJSON(TypedDict):
    """A :class:`SourceLine` in ``cltui check --json``."""

    file: str
    line: int
    column: int
    code: str
    source: str | None
    matches: bool | None
    reported_line: int


@dataclass
class SourceLine:
    file: str  # as Oclgrind names it ("input.cl" = the program source, else a #line name)
    line: int  # the line of ``source`` when mapped, else Oclgrind's
    column: int
    code: str  # the line as Oclgrind prints it
    source: str | None = None  # the capture's source file (relative to the capture)
    matches: bool | None = None  # the capture's line equals Oclgrind's text
    reported: int | None = None  # Oclgrind's line number when a #line directive moved it

    def where(self) -> str:
        name = self.source or self.file
        return f"{name}:{self.line}:{self.column}"

    def to_dict(self) -> SourceLineJSON:
        return {"file": self.file, "line": self.line, "column": self.column, "code": self.code,
                "source": self.source, "matches": self.matches,
                "reported_line": self.reported if self.reported is not None else self.line}


@dataclass
class RawFinding:
    """One block of Oclgrind output."""

    offset: int  # byte offset in the stderr file
    kind: str
    message: str  # the header line
    kernel: str | None = None
    entities: list[str] = field(default_factory=list)
    work_group: str | None = None
    lines: list[SourceLine] = field(default_factory=list)
    details: list[str] = field(default_factory=list)  # the block's other lines
    function: str | None = None  # API errors
    error: str | None = None


def _classify(header: str) -> str | None:
    for rx, kind in _HEADERS:
        if rx.search(header):
            return kind
    return None


def parse_oclgrind(data: bytes | str) -> list[RawFinding]:
    """Split Oclgrind's stderr into findings (blocks: a header line, then tab-indented lines).

    ``offset`` of each finding is the byte offset of its header line in ``data``. Lines
    that belong to no recognised block (Python warnings, build logs) are skipped.
    """
    blob = data.encode("utf-8") if isinstance(data, str) else data
    out: list[RawFinding] = []
    cur: RawFinding | None = None
    pending_line: SourceLine | None = None
    pos = 0
    for raw in blob.splitlines(keepends=True):
        here = pos
        pos += len(raw)
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not line.strip():
            if cur is not None and cur.kind == FATAL:
                cur = None  # a fatal block ends at the first blank line
            continue
        if cur is not None and cur.kind == FATAL:  # its lines are not indented
            cur.details.append(line.strip())
            continue
        if not line.startswith(("\t", " ")):
            kind = _classify(line.strip())
            if kind is None:
                cur = None
                pending_line = None
                continue
            cur = RawFinding(here, kind, line.strip())
            out.append(cur)
            pending_line = None
            continue
        if cur is None:
            continue
        body = line.strip()
        if pending_line is not None and line.startswith(("\t  ", "\t\t", "    ")):
            pending_line.code = body
            pending_line = None
            continue
        pending_line = None
        if m := _AT_LINE.match(body):
            sl = SourceLine(m.group(3), int(m.group(1)), int(m.group(2)), "")
            cur.lines.append(sl)
            pending_line = sl
        elif m := _KERNEL.match(body):
            cur.kernel = m.group(1).strip()
        elif m := _ENTITY.match(body):
            if m.group(1).strip():
                cur.entities.append(m.group(1).strip())
        elif m := _WORKGROUP.match(body):
            cur.work_group = m.group(1).strip()
        elif m := _FUNCTION.match(body):
            cur.function = m.group(1)
            cur.details.append(body)
        elif m := _ERROR.match(body):
            cur.error = m.group(1)
            cur.details.append(body)
        elif line.startswith("\t  ") or line.startswith("\t\t"):
            continue  # an LLVM instruction line
        else:
            cur.details.append(body)
    return out
