"""Replay a range on Oclgrind with its checks on; map each finding to enqueue, kernel, line.

Oclgrind (the OpenCL simulator) checks every memory access and reports, on stderr,
out-of-bounds accesses, data races, uses of uninitialised values, barrier divergence
and API misuse: one block per finding (see :func:`parse_oclgrind`). Its programs carry
debug line info by default (it rejects ``-g``), and the replayed source is the capture's
program source byte for byte, so the ``At line N of input.cl`` lines are lines of the
capture's ``CLI_*_source.cl``.

The replay runs in a child process (``python -m cltui.analysis.check JOB FD``) with the
Oclgrind checks enabled through its environment variables. The child runs the replay
engine and stamps every progress event with the size of its stderr file at that
moment, so the parent knows which bytes of Oclgrind's output each enqueue produced
(no guessing from kernel names). A child that stops making progress is killed and the
enqueue it was running is named. An enqueue that crashes Oclgrind (its uninitialised-value
checker segfaults on some kernels) is run again alone, then alone with each checker of
:data:`CHECKERS` off until a run finishes; the report names the enqueue, the signal, the
checker and Oclgrind's output (:class:`Crash`), and the range goes on after it. A child
killed from outside (SIGKILL, SIGTERM) is reported as such, not as a crash. Sources with
``#line`` directives are mapped back to their own lines (:func:`line_map`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cltui.capture.capture import Capture
from cltui.capture.ranges import EnqueueRange
from cltui.errors import CltuiError
from cltui.replay.engine.schema import Manifest

OCLGRIND_ENV = {
    "OCLGRIND_CHECK_API": "1",
    "OCLGRIND_DATA_RACES": "1",
    "OCLGRIND_UNINITIALIZED": "1",
}
DEFAULT_TIMEOUT = 300.0  # seconds without progress (Oclgrind simulates every work-item)

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
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
# API "errors" that are pyopencl probing optional device/platform queries
_INFO_QUERY = re.compile(r"^clGet\w*Info$")


class CheckError(CltuiError):
    """The check could not run at all (one-line message)."""


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

    def to_dict(self) -> dict[str, Any]:
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

    def to_dict(self) -> dict[str, Any]:
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


# Oclgrind's checkers that can be switched off (its --uninitialized, --data-races and
# --check-api options; the memory checker is always on), in the order a crash retries them
CHECKERS: dict[str, str] = {
    "uninitialized": "OCLGRIND_UNINITIALIZED",
    "data-races": "OCLGRIND_DATA_RACES",
    "check-api": "OCLGRIND_CHECK_API",
}


@dataclass
class Crash:
    """An enqueue that crashed Oclgrind, and what the retries found."""

    enqueue: int
    kernel: str
    signal: str  # e.g. SIGSEGV
    stderr: str  # the tail of Oclgrind's output from this enqueue's start
    checker: str | None = None  # the checker whose absence let it finish (None: unknown)
    retries: list[dict[str, Any]] = field(default_factory=list)  # {without, outcome}
    checked: bool = False  # a retry finished: its findings are in the report
    unchecked_by: list[str] = field(default_factory=list)  # checkers left off for it

    def line(self) -> str:
        head = f"enqueue {self.enqueue} ({self.kernel}) crashed Oclgrind ({self.signal})"
        if self.checker is not None:
            return (f"{head}: its {self.checker} checker crashes on it; checked again "
                    f"without it (--{self.checker} off)")
        if self.checked:
            return f"{head}: it did not crash when checked again alone"
        return f"{head}: it crashes Oclgrind even alone and with every checker off"

    def to_dict(self) -> dict[str, Any]:
        return {"enqueue": self.enqueue, "kernel": self.kernel, "signal": self.signal,
                "checker": self.checker, "checked": self.checked,
                "unchecked_by": list(self.unchecked_by), "retries": list(self.retries),
                "stderr": self.stderr, "summary": self.line()}


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

    def for_enqueue(self, number: int) -> list[Finding]:
        return [f for f in self.findings if f.enqueue == number]

    def to_dict(self) -> dict[str, Any]:
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
        }


# --------------------------------------------------------------------------- parsing


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


@dataclass
class _Step:
    enqueue: int
    kernel: str
    program: str | None
    start: int
    end: int | None = None


def attribute(
    raw: list[RawFinding],
    steps: list[_Step],
    sources: dict[str, tuple[str, list[str]]],
) -> list[Finding]:
    """Give each finding its enqueue (by stderr offset), map lines, merge repeats.

    ``sources``: program id -> (source path relative to the capture, its lines).
    """
    merged: dict[tuple[Any, ...], Finding] = {}
    order: list[tuple[Any, ...]] = []
    maps: dict[str, LineMap | None] = {}
    for r in raw:
        if r.kind == API and r.function and _INFO_QUERY.match(r.function):
            continue
        step = None
        for st in steps:
            if st.start <= r.offset and (st.end is None or r.offset < st.end):
                step = st
        lines = []
        for sl in r.lines:
            mapped = SourceLine(sl.file, sl.line, sl.column, sl.code)
            if step is not None and step.program is not None and step.program in sources:
                rel, text = sources[step.program]
                if step.program not in maps:
                    maps[step.program] = line_map(text)
                lmap = maps[step.program]
                here = lmap.find(sl.file, sl.line) if lmap is not None else (
                    sl.line if sl.file == "input.cl" else None)
                if here is not None:
                    mapped.source = rel
                    if here != sl.line:
                        mapped.line, mapped.reported = here, sl.line
                    if 1 <= here <= len(text):
                        if sl.code.strip() in ("", _NO_SOURCE):
                            # Oclgrind cannot open a #line file name: the capture's text
                            mapped.code, mapped.matches = text[here - 1].strip(), True
                        else:
                            mapped.matches = text[here - 1].strip() == sl.code.strip()
            lines.append(mapped)
        kernel = r.kernel or (step.kernel if step is not None else None)
        enqueue = step.enqueue if step is not None else None
        where = [(s.file, s.line, s.column) for s in lines]
        if r.kind == DATA_RACE:  # the same pair of accesses, whichever came first
            where.sort()
        key = (enqueue, r.kind, _ADDRESS.sub("<addr>", r.message), kernel, tuple(where),
               r.function, r.error)
        hit = merged.get(key)
        if hit is not None:
            hit.count += 1
            continue
        merged[key] = Finding(
            kind=r.kind, message=r.message, enqueue=enqueue, kernel=kernel, lines=lines,
            entity=r.entities[0] if r.entities else None, work_group=r.work_group,
            details=list(r.details),
        )
        order.append(key)
    return [merged[k] for k in order]


_NO_SOURCE = "(source not available)"  # Oclgrind's text for a file it cannot read
# ``#line N`` / ``#line N "file"`` and the preprocessor's ``# N "file"`` line markers
_LINE_DIRECTIVE = re.compile(r'^\s*#\s*(?:line\s+)?(\d+)(?:\s+"((?:[^"\\]|\\.)*)")?')


class LineMap:
    """Where each line of a source with ``#line`` directives is, as the compiler names it
    ((file, line) after the directives), back to the source's own line numbers."""

    def __init__(self, back: dict[tuple[str, int], int]) -> None:
        self.back = back
        self.by_base: dict[tuple[str, int], int] = {}
        for (name, n), here in back.items():
            self.by_base.setdefault((name.rsplit("/", 1)[-1], n), here)

    def find(self, file: str, line: int) -> int | None:
        hit = self.back.get((file, line))
        if hit is None:  # Oclgrind may print the name with or without a folder
            hit = self.by_base.get((file.rsplit("/", 1)[-1], line))
        return hit


def line_map(text: list[str]) -> LineMap | None:
    """A :class:`LineMap` for ``text`` (its lines), or None when it has no ``#line``
    directive (Oclgrind's lines are then the source's, in a file it calls ``input.cl``)."""
    back: dict[tuple[str, int], int] = {}
    name, cur = "input.cl", 1
    seen = False
    for j, line in enumerate(text, 1):
        m = _LINE_DIRECTIVE.match(line)
        if m is not None:
            seen = True
            cur = int(m.group(1)) if len(m.group(1)) < 12 else 1 << 40
            if m.group(2) is not None:
                name = m.group(2).replace('\\"', '"').replace("\\\\", "\\")
            continue
        back.setdefault((name, cur), j)
        cur += 1
    return LineMap(back) if seen else None


# --------------------------------------------------------------------------- parent


Progress = Callable[[dict[str, Any]], None]


def run_check(
    cap: Capture,
    rng: EnqueueRange,
    *,
    mode: str = "isolated",
    timeout: float = DEFAULT_TIMEOUT,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    work_dir: str | Path | None = None,
) -> CheckReport:
    """Replay ``rng`` of ``cap`` on Oclgrind with its checks; see the module doc.

    ``mode`` is a plan mode (``isolated`` by default: every kernel from its own captured
    inputs, exactly what it saw in the capture). ``progress`` receives the engine's
    events (``step``, ``step_done``, ``build``); ``cancel`` kills the child.
    Raises :class:`CheckError` when no plan can be made (nothing replayable in range).

    An enqueue that crashes Oclgrind is checked again alone, then alone with each of its
    :data:`CHECKERS` off in turn until one run finishes (that checker is named), and the
    rest of the range is checked from the next enqueue on (a new plan from there: in
    chain mode it starts from the capture's data, as any range does).
    """
    from cltui.replay.plan import PlanError, build_plan

    try:
        plan = build_plan(cap, rng, mode)
    except PlanError as exc:
        raise CheckError(str(exc)) from None
    manifest = plan.to_manifest()
    steps_meta = [(int(s["enqueue"]), str(s["kernel"])) for s in manifest["steps"]]
    report = CheckReport(str(cap.path), str(rng), mode, None, steps_meta, [],
                         notes=list(plan.notes))
    kernels = dict(steps_meta)
    all_on = list(CHECKERS)
    with contextlib.ExitStack() as stack:
        if work_dir:
            wd = Path(work_dir)
        else:  # a folder of our own, removed when done (or at exit, or swept after a kill)
            from cltui.replay import lifecycle

            wd = stack.enter_context(lifecycle.scratch("check"))
        wd.mkdir(parents=True, exist_ok=True)
        tag = [0]

        def once(man: Manifest, checkers: list[str], prog: Progress | None) -> _Run:
            tag[0] += 1
            return _run_once(man, cap.path, wd, tag[0], checkers, timeout, prog, cancel)

        seen: set[int] = set()
        current: Manifest | None = manifest
        last: _Run | None = None  # the run that ended the check (None: a handled crash)
        while current is not None:
            run = once(current, all_on, progress)
            last = run
            report.device = report.device or run.device
            report.findings.extend(run.findings)
            seen.update(run.finished)
            if run.status != "crash" or run.running is None:
                break
            # an enqueue crashed Oclgrind: find out how, then go on after it
            bad = run.running
            crash = Crash(bad, kernels.get(bad, "?"), run.signal, run.stderr_from_running)
            report.crashes.append(crash)
            if progress is not None:
                progress({"type": "crash", "enqueue": bad, "signal": run.signal})
            try:
                alone = build_plan(cap, EnqueueRange(bad, bad), mode).to_manifest()
            except PlanError:
                alone = None
            tries: list[list[str]] = [[]] + [[c] for c in all_on] + [all_on]
            for off in tries if alone is not None else []:
                assert alone is not None
                retry = once(alone, [c for c in all_on if c not in off], None)
                outcome = retry.status or "ok"
                crash.retries.append({"without": off, "outcome": outcome,
                                      **({"signal": retry.signal} if retry.signal else {})})
                if outcome == "crash":
                    continue
                if outcome != "ok":  # a hang, an error or a cancel: stop retrying
                    break
                crash.checked = True
                crash.unchecked_by = list(off)
                if len(off) == 1:
                    crash.checker = off[0]
                report.findings.extend(retry.findings)
                seen.add(bad)
                break
            if cancel is not None and cancel.is_set():
                last = _Run("cancelled", bad, [], [], None, report.device, "", "", "", "")
                break
            later = [e for e, _k in steps_meta if e > bad]
            current = None
            last = None if crash.checked or crash.retries else run
            if later:
                try:
                    current = build_plan(
                        cap, EnqueueRange(later[0], rng.last, rng.kernel), mode
                    ).to_manifest()
                except PlanError:
                    current = None
        report.unchecked = [e for e, _k in steps_meta if e not in seen]
        if last is None:  # the last enqueue crashed and was retried: nothing else ran
            last = _Run("", None, [], [], {"notes": []}, report.device, "", "", "", "")
        where = f"enqueue {last.running}" if last.running is not None else "the replay"
        if last.status == "hang":
            report.status, report.failed_enqueue = "hang", last.running
            report.error = f"{where} made no progress for {timeout:g} s under Oclgrind: killed"
        elif last.status == "cancelled":
            report.status, report.failed_enqueue = "cancelled", last.running
            report.error = f"cancelled ({where})"
        elif last.status == "killed":
            report.status, report.failed_enqueue = "killed", last.running
            report.error = (f"the check process was killed ({last.signal}) from outside "
                            f"while {where} ran")
        elif last.status == "crash":  # outside any enqueue (a build, the setup)
            report.status, report.failed_enqueue = "crash", last.running
            report.error = (f"{where} crashed Oclgrind ({last.signal})" if last.signal else
                            f"the check process stopped with {last.exit_text} ({where})")
        elif last.result is not None and last.result.get("error"):
            report.status = "error"
            report.error = str(last.result["error"])
            report.failed_enqueue = last.result.get("failed_enqueue")
        else:
            if last.result is not None:
                report.notes.extend(str(n) for n in last.result.get("notes", []))
            if any(not c.checked for c in report.crashes):
                report.status = "crash"
                bad_ones = [c.enqueue for c in report.crashes if not c.checked]
                report.failed_enqueue = bad_ones[0]
            elif report.findings:
                report.status = "findings"
            elif report.crashes or report.unchecked:
                report.status = "incomplete"
            else:
                report.status = "ok"
        if report.status in ("crash", "hang", "error", "killed"):
            report.stderr_tail = last.stderr_tail or (
                report.crashes[-1].stderr if report.crashes else "")
        elif report.crashes:
            report.stderr_tail = report.crashes[-1].stderr
        if report.failed_enqueue is not None:  # e.g. clCreateKernel failing during setup
            kname = kernels.get(int(report.failed_enqueue))
            for f in report.findings:
                if f.enqueue is None and kname and any(f"'{kname}'" in d for d in f.details):
                    f.enqueue, f.kernel = int(report.failed_enqueue), kname
        return report


@dataclass
class _Run:
    """One child run of a plan on Oclgrind."""

    status: str  # "" (finished) | crash | hang | cancelled | killed
    running: int | None  # the enqueue that was running when it stopped
    finished: list[int]
    findings: list[Finding]
    result: dict[str, Any] | None
    device: str | None
    signal: str
    exit_text: str
    stderr_tail: str
    stderr_from_running: str


def _run_once(
    manifest: Manifest,
    root: Path,
    wd: Path,
    tag: int,
    checkers: list[str],
    timeout: float,
    progress: Progress | None,
    cancel: threading.Event | None,
) -> _Run:
    from cltui.replay import lifecycle

    job_path = wd / f"job{tag}.json"
    job_path.write_text(json.dumps({"plan": manifest, "data_root": str(root)}))
    err_path = wd / f"oclgrind{tag}.txt"
    events, rc, status = _run_child(job_path, err_path, timeout, progress, cancel, checkers)
    steps: list[_Step] = []
    finished: list[int] = []
    result: dict[str, Any] | None = None
    running: int | None = None
    running_at = 0
    device: str | None = None
    for ev in events:
        et = ev.get("type")
        if et == "step":
            step = manifest["steps"][int(ev["i"])]
            running_at = int(ev.get("err_offset", 0))
            steps.append(_Step(int(ev["enqueue"]), str(step["kernel"]), step.get("program"),
                               running_at))
            running = int(ev["enqueue"])
        elif et == "step_done" and steps:
            steps[-1].end = int(ev.get("err_offset", 0))
            finished.append(steps[-1].enqueue)
            running = None
        elif et == "device":
            device = str(ev.get("name"))
        elif et == "result":
            result = ev.get("result")
    # a step whose child died keeps end=None: what follows its start is its output
    try:
        data = err_path.read_bytes()
    except OSError:
        data = b""
    raw = parse_oclgrind(data)
    findings = attribute(raw, steps, _program_sources(manifest, root))
    sig = exit_text = ""
    if not status and result is None:
        cause, exit_text = lifecycle.exit_cause(rc)
        status = "killed" if cause == "killed" else "crash"
        sig = exit_text if cause in ("fault", "killed") else ""
    tail = data[-2000:].decode("utf-8", "replace").strip()
    own = data[running_at:] if running is not None else b""
    own_text = (own[:1000] + (b"\n...\n" + own[-1000:] if len(own) > 2000 else own[1000:2000]))
    return _Run(status, running, finished, findings, result, device, sig, exit_text, tail,
                own_text.decode("utf-8", "replace").strip())


def _program_sources(manifest: Manifest, root: Path) -> dict[str, tuple[str, list[str]]]:
    out: dict[str, tuple[str, list[str]]] = {}
    for pid, info in manifest.get("programs", {}).items():
        key = info.get("source")
        if not key:
            continue
        rel = manifest["data"][key]["path"]
        try:
            text = (root / rel).read_bytes().rstrip(b"\0").decode("utf-8", "replace")
        except OSError:
            continue
        out[pid] = (rel, text.splitlines())
    return out


def _run_child(
    job_path: Path,
    err_path: Path,
    timeout: float,
    progress: Progress | None,
    cancel: threading.Event | None,
    checkers: list[str] | None = None,
) -> tuple[list[dict[str, Any]], int | None, str]:
    """Run the child; (events, return code, "" | "hang" | "cancelled")."""
    from cltui.replay.child import Child

    on = list(CHECKERS) if checkers is None else checkers
    env: dict[str, str | None] = {var: "1" if n in on else None for n, var in CHECKERS.items()}
    env["PYOPENCL_NO_CACHE"] = "1"
    try:
        child = Child("cltui.analysis.check", job_path, err_path, env=env)
    except OSError as exc:
        raise CheckError(f"cannot start the check process: {exc}") from None
    events: list[dict[str, Any]] = []
    with child:  # also on ctrl-c: no Oclgrind is left running
        for ev in child.events(timeout, cancel):
            events.append(ev)
            if progress is not None and ev.get("type") != "result":
                progress(ev)
        rc = child.finish()
    return events, rc, child.status


# --------------------------------------------------------------------------- child


def _child(job_path: str, fd: int) -> int:
    from cltui.capture.hashing import cli_hash64
    from cltui.replay import engine
    from cltui.replay.child import connect

    out = connect(fd)  # an Oclgrind check must not outlive a killed cltui

    def send(ev: dict[str, Any]) -> None:
        sys.stderr.flush()
        ev = dict(ev)
        ev["err_offset"] = os.fstat(2).st_size
        out.write(json.dumps(ev) + "\n")
        out.flush()

    job = json.loads(Path(job_path).read_text())
    plan = job["plan"]
    try:
        devices = engine.resolve_devices(["oclgrind"])
    except engine.EngineError as exc:
        send({"type": "result", "result": {"ok": False, "error": str(exc), "steps": []}})
        return 0
    dev = devices[0]
    send({"type": "device", "id": dev["id"], "name": dev["name"]})
    from cltui.replay.runner import capture_loader

    loader = capture_loader(plan, job["data_root"])
    result = engine.run_plan(plan, dev, loader, progress=send, hasher=lambda b: cli_hash64(b))
    send({"type": "result", "result": result})
    out.close()
    return 0


if __name__ == "__main__":  # pragma: no cover - the child process
    sys.exit(_child(sys.argv[1], int(sys.argv[2])))
