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
(no guessing from kernel names). A child that crashes or stops making progress is
killed and the enqueue it was running is named.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from cltui.capture.capture import Capture
from cltui.capture.ranges import EnqueueRange

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


class CheckError(Exception):
    """The check could not run at all (one-line message)."""


@dataclass
class SourceLine:
    file: str  # as Oclgrind names it ("input.cl" = the program source)
    line: int
    column: int
    code: str  # the line as Oclgrind prints it
    source: str | None = None  # the capture's source file (relative to the capture)
    matches: bool | None = None  # the capture's line equals Oclgrind's text

    def where(self) -> str:
        name = self.source or self.file
        return f"{name}:{self.line}:{self.column}"

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "column": self.column, "code": self.code,
                "source": self.source, "matches": self.matches}


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
    status: str = "ok"  # ok | findings | crash | hang | error | cancelled
    notes: list[str] = field(default_factory=list)
    stderr_tail: str = ""

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
            "notes": list(self.notes),
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
            if step is not None and step.program in sources and sl.file == "input.cl":
                rel, text = sources[step.program]
                mapped.source = rel
                if 1 <= sl.line <= len(text):
                    mapped.matches = text[sl.line - 1].strip() == sl.code.strip()
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
    with contextlib.ExitStack() as stack:
        if work_dir:
            wd = Path(work_dir)
        else:  # a folder of our own, removed when done
            tmp = tempfile.TemporaryDirectory(prefix="cltui-check-")
            wd = Path(stack.enter_context(tmp))
        wd.mkdir(parents=True, exist_ok=True)
        job_path = wd / "job.json"
        job_path.write_text(json.dumps({"plan": manifest, "data_root": str(cap.path)}))
        err_path = wd / "oclgrind.txt"
        events, rc, status = _run_child(job_path, err_path, timeout, progress, cancel)

        steps: list[_Step] = []
        result: dict[str, Any] | None = None
        running: int | None = None
        for ev in events:
            et = ev.get("type")
            if et == "step":
                step = manifest["steps"][int(ev["i"])]
                steps.append(_Step(int(ev["enqueue"]), str(step["kernel"]), step.get("program"),
                                   int(ev.get("err_offset", 0))))
                running = int(ev["enqueue"])
            elif et == "step_done" and steps:
                steps[-1].end = int(ev.get("err_offset", 0))
                running = None
            elif et == "device":
                report.device = str(ev.get("name"))
            elif et == "result":
                result = ev.get("result")
        # a step whose child died keeps end=None: what follows its start is its output
        try:
            data = err_path.read_bytes()
        except OSError:
            data = b""
        raw = parse_oclgrind(data)
        sources = _program_sources(manifest, cap.path)
        report.findings = attribute(raw, steps, sources)
        tail = data[-2000:].decode("utf-8", "replace").strip()
        where = f"enqueue {running}" if running is not None else "the replay"
        if status == "hang":
            report.status, report.failed_enqueue = "hang", running
            report.error = f"{where} made no progress for {timeout:g} s under Oclgrind: killed"
        elif status == "cancelled":
            report.status, report.failed_enqueue = "cancelled", running
            report.error = f"cancelled ({where})"
        elif result is None:
            sig = ""
            if rc is not None and rc < 0:
                try:
                    sig = signal.Signals(-rc).name
                except ValueError:
                    sig = f"signal {-rc}"
            report.status, report.failed_enqueue = "crash", running
            report.error = (f"{where} crashed Oclgrind ({sig})" if sig else
                            f"the check process stopped with exit code {rc} ({where})")
        elif result.get("error"):
            report.status = "error"
            report.error = str(result["error"])
            report.failed_enqueue = result.get("failed_enqueue")
        else:
            report.status = "findings" if report.findings else "ok"
            report.notes.extend(str(n) for n in result.get("notes", []))
        if report.status in ("crash", "hang", "error"):
            report.stderr_tail = tail
        if report.failed_enqueue is not None:  # e.g. clCreateKernel failing during setup
            kname = dict(steps_meta).get(int(report.failed_enqueue))
            for f in report.findings:
                if f.enqueue is None and kname and any(f"'{kname}'" in d for d in f.details):
                    f.enqueue, f.kernel = int(report.failed_enqueue), kname
        return report


def _program_sources(manifest: dict[str, Any], root: Path) -> dict[str, tuple[str, list[str]]]:
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
) -> tuple[list[dict[str, Any]], int | None, str]:
    """Run the child; (events, return code, "" | "hang" | "cancelled")."""
    env = dict(os.environ)
    env.update(OCLGRIND_ENV)
    env["PYOPENCL_NO_CACHE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    src_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = src_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                    else "")
    read_fd, write_fd = os.pipe()
    with open(err_path, "wb") as err:
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "cltui.analysis.check", str(job_path), str(write_fd)],
                stdin=subprocess.DEVNULL, stdout=err, stderr=err, pass_fds=(write_fd,),
                env=env, start_new_session=True,
            )
        except OSError as exc:
            os.close(read_fd)
            os.close(write_fd)
            raise CheckError(f"cannot start the check process: {exc}") from None
    os.close(write_fd)
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        with os.fdopen(read_fd, "r", encoding="utf-8", errors="replace") as f:
            for ln in f:
                lines.put(ln)
        lines.put(None)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    events: list[dict[str, Any]] = []
    status = ""
    last = time.monotonic()
    while True:
        try:
            ln = lines.get(timeout=0.1)
        except queue.Empty:
            if cancel is not None and cancel.is_set():
                status = "cancelled"
                break
            if time.monotonic() - last > timeout:
                status = "hang"
                break
            continue
        if ln is None:
            break
        last = time.monotonic()
        try:
            ev = json.loads(ln)
        except ValueError:
            continue
        events.append(ev)
        if progress is not None and ev.get("type") != "result":
            progress(ev)
    if status and proc.poll() is None:
        with contextlib.suppress(OSError):
            proc.kill()
    try:
        rc = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            proc.kill()
        rc = proc.wait()
    reader.join(timeout=1)
    return events, rc, status


# --------------------------------------------------------------------------- child


def _child(job_path: str, fd: int) -> int:
    from cltui.capture.files import cli_hash64
    from cltui.replay import engine

    out: TextIO = os.fdopen(fd, "w", encoding="utf-8", buffering=1)

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
    loader = engine.dir_loader(plan, job["data_root"])
    result = engine.run_plan(plan, dev, loader, progress=send, hasher=lambda b: cli_hash64(b))
    send({"type": "result", "result": result})
    out.close()
    return 0


if __name__ == "__main__":  # pragma: no cover - the child process
    sys.exit(_child(sys.argv[1], int(sys.argv[2])))
