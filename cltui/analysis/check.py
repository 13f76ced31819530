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
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cltui.analysis.attribute import StepSpan, attribute, source_lines
from cltui.analysis.check_report import CheckReport, Crash, Finding, Retry
from cltui.analysis.oclgrind import parse_oclgrind
from cltui.capture.capture import Capture
from cltui.capture.confine import read_bytes_inside
from cltui.capture.ranges import EnqueueRange
from cltui.capture.safeopen import MAX_SOURCE
from cltui.errors import CltuiError
from cltui.process.child import Event, keep_log
from cltui.progress import CancelToken
from cltui.replay.engine.schema import DeviceResult, Manifest

OCLGRIND_ENV = {
    "OCLGRIND_CHECK_API": "1",
    "OCLGRIND_DATA_RACES": "1",
    "OCLGRIND_UNINITIALIZED": "1",
}
DEFAULT_TIMEOUT = 300.0  # seconds without progress (Oclgrind simulates every work-item)


class CheckError(CltuiError):
    """The check could not run at all (one-line message)."""


# Oclgrind's checkers that can be switched off (its --uninitialized, --data-races and
# --check-api options; the memory checker is always on), in the order a crash retries them
CHECKERS: dict[str, str] = {
    "uninitialized": "OCLGRIND_UNINITIALIZED",
    "data-races": "OCLGRIND_DATA_RACES",
    "check-api": "OCLGRIND_CHECK_API",
}


# --------------------------------------------------------------------------- parent


Progress = Callable[[Event], None]


def run_check(
    cap: Capture,
    rng: EnqueueRange,
    *,
    mode: str = "isolated",
    timeout: float = DEFAULT_TIMEOUT,
    progress: Progress | None = None,
    cancel: CancelToken | None = None,
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
    with contextlib.ExitStack() as stack:
        if work_dir:
            wd = Path(work_dir)
        else:  # a folder of our own, removed when done (or at exit, or swept after a kill)
            from cltui.process import lifecycle

            wd = stack.enter_context(lifecycle.scratch("check"))
        wd.mkdir(parents=True, exist_ok=True)
        session = _Session(cap, rng, mode, timeout, cancel, wd, report)
        last = session.check_all(manifest, progress)
        report.unchecked = [e for e, _k in steps_meta if e not in session.seen]
        _conclude(report, last, timeout)
        return report


@dataclass
class _Session:
    """The child runs of one check: the range, and after a crash the crashed enqueue's
    retries and the rest of the range."""

    cap: Capture
    rng: EnqueueRange
    mode: str
    timeout: float
    cancel: CancelToken | None
    wd: Path
    report: CheckReport
    seen: set[int] = field(default_factory=set)  # the enqueues some run finished
    tag: int = 0
    interrupted: bool = False  # ctrl-c or SIGTERM stopped a run: no more runs

    def once(self, man: Manifest, checkers: list[str], prog: Progress | None) -> _Run:
        self.tag += 1
        run = _run_once(man, self.cap.path, self.wd, self.tag, checkers, self.timeout, prog,
                        self.cancel)
        self.interrupted = self.interrupted or run.status == "interrupted"
        return run

    def check_all(self, manifest: Manifest, progress: Progress | None) -> _Run | None:
        """Check the range, going on after each crash; the run that ended the check
        (None: the last one crashed and was retried)."""
        report = self.report
        kernels = dict(report.enqueues)
        current: Manifest | None = manifest
        last: _Run | None = None
        while current is not None:
            run = self.once(current, list(CHECKERS), progress)
            last = run
            report.device = report.device or run.device
            report.findings.extend(run.findings)
            self.seen.update(run.finished)
            if run.status != "crash" or run.running is None:
                break
            # an enqueue crashed Oclgrind: find out how, then go on after it
            bad = run.running
            crash = Crash(bad, kernels.get(bad, "?"), run.signal, run.stderr_from_running,
                          log=run.log)
            report.crashes.append(crash)
            if progress is not None:
                progress({"type": "crash", "enqueue": bad, "signal": run.signal})
            self.retry(crash)
            if self.interrupted:
                return _Run("interrupted", bad, [], [], None, report.device, "", "", "", "")
            if self.cancel is not None and self.cancel.is_set():
                return _Run("cancelled", bad, [], [], None, report.device, "", "", "", "")
            last = None if crash.checked or crash.retries else run
            current = self.plan_after(bad)
        return last

    def retry(self, crash: Crash) -> None:
        """Check the crashed enqueue again alone, then alone with each checker off in turn,
        until a run finishes (its findings join the report)."""
        from cltui.replay.plan import PlanError, build_plan

        bad = crash.enqueue
        try:
            alone = build_plan(self.cap, EnqueueRange(bad, bad), self.mode).to_manifest()
        except PlanError:
            return
        all_on = list(CHECKERS)
        tries: list[list[str]] = [[]] + [[c] for c in all_on] + [all_on]
        for off in tries:
            retry = self.once(alone, [c for c in all_on if c not in off], None)
            outcome = retry.status or "ok"
            entry: Retry = {"without": off, "outcome": outcome}
            if retry.signal:
                entry["signal"] = retry.signal
            crash.retries.append(entry)
            if outcome == "crash":
                continue
            if outcome != "ok":  # a hang, an error or a cancel: stop retrying
                break
            crash.checked = True
            crash.unchecked_by = list(off)
            if len(off) == 1:
                crash.checker = off[0]
            self.report.findings.extend(retry.findings)
            self.seen.add(bad)
            break

    def plan_after(self, bad: int) -> Manifest | None:
        """The plan of the rest of the range after enqueue ``bad`` (None: nothing left)."""
        from cltui.replay.plan import PlanError, build_plan

        later = [e for e, _k in self.report.enqueues if e > bad]
        if not later:
            return None
        try:
            return build_plan(
                self.cap, EnqueueRange(later[0], self.rng.last, self.rng.kernel), self.mode
            ).to_manifest()
        except PlanError:
            return None


def _conclude(report: CheckReport, last: _Run | None, timeout: float) -> None:
    """Set the report's status, error and stderr tail from the run that ended the check."""
    if last is None:  # the last enqueue crashed and was retried: nothing else ran
        last = _Run("", None, [], [], None, report.device, "", "", "", "")
    _set_status(report, last, timeout)
    report.stderr_log = last.log or (report.crashes[-1].log if report.crashes else None)
    if report.status in ("crash", "hang", "error", "killed"):
        report.stderr_tail = last.stderr_tail or (
            report.crashes[-1].stderr if report.crashes else "")
    elif report.crashes:
        report.stderr_tail = report.crashes[-1].stderr
    if report.failed_enqueue is not None:  # e.g. clCreateKernel failing during setup
        kname = dict(report.enqueues).get(int(report.failed_enqueue))
        for f in report.findings:
            if f.enqueue is None and kname and any(f"'{kname}'" in d for d in f.details):
                f.enqueue, f.kernel = int(report.failed_enqueue), kname


def _set_status(report: CheckReport, last: _Run, timeout: float) -> None:
    where = f"enqueue {last.running}" if last.running is not None else "the replay"
    if last.status == "hang":
        report.status, report.failed_enqueue = "hang", last.running
        report.error = f"{where} made no progress for {timeout:g} s under Oclgrind: killed"
    elif last.status in ("cancelled", "interrupted"):
        report.status, report.failed_enqueue = "cancelled", last.running
        report.error = f"{last.status} ({where})"
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


@dataclass
class _Run:
    """One child run of a plan on Oclgrind."""

    status: str  # "" (finished) | crash | hang | cancelled | interrupted | killed
    running: int | None  # the enqueue that was running when it stopped
    finished: list[int]
    findings: list[Finding]
    result: DeviceResult | None  # the engine's result, from the child's JSON
    device: str | None
    signal: str
    exit_text: str
    stderr_tail: str
    stderr_from_running: str
    log: str | None = None  # a file holding this run's whole stderr (a crash, hang, kill)


def _run_once(
    manifest: Manifest,
    root: Path,
    wd: Path,
    tag: int,
    checkers: list[str],
    timeout: float,
    progress: Progress | None,
    cancel: CancelToken | None,
) -> _Run:
    from cltui.process import lifecycle

    job_path = wd / f"job{tag}.json"
    job_path.write_text(json.dumps({"plan": manifest, "data_root": str(root)}))
    err_path = wd / f"oclgrind{tag}.txt"
    events, rc, status = _run_child(job_path, err_path, timeout, progress, cancel, checkers)
    steps: list[StepSpan] = []
    finished: list[int] = []
    result: DeviceResult | None = None
    running: int | None = None
    running_at = 0
    device: str | None = None
    for ev in events:
        et = ev.get("type")
        if et == "step":
            step = manifest["steps"][int(ev["i"])]
            running_at = int(ev.get("err_offset", 0))
            steps.append(StepSpan(int(ev["enqueue"]), str(step["kernel"]), step.get("program"),
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
    log = None
    if data and status in ("crash", "hang", "killed"):
        kept = keep_log(err_path, f"check-{running if running is not None else 'setup'}-{status}")
        log = str(kept) if kept is not None else None
    return _Run(status, running, finished, findings, result, device, sig, exit_text, tail,
                own_text.decode("utf-8", "replace").strip(), log)


def _program_sources(manifest: Manifest, root: Path) -> dict[str, tuple[str, list[str]]]:
    out: dict[str, tuple[str, list[str]]] = {}
    for pid, info in manifest.get("programs", {}).items():
        key = info.get("source")
        if not key:
            continue
        rel = manifest["data"][key]["path"]
        try:
            data = read_bytes_inside(root, root / rel, MAX_SOURCE)
            text = data.rstrip(b"\0").decode("utf-8", "replace")
        except OSError:
            continue
        out[pid] = (rel, source_lines(text))
    return out


def _run_child(
    job_path: Path,
    err_path: Path,
    timeout: float,
    progress: Progress | None,
    cancel: CancelToken | None,
    checkers: list[str] | None = None,
) -> tuple[list[Event], int | None, str]:
    """Run the child; (events, return code, "" | "hang" | "cancelled" | "interrupted")."""
    from cltui.process.child import Child

    on = list(CHECKERS) if checkers is None else checkers
    env: dict[str, str | None] = {var: "1" if n in on else None for n, var in CHECKERS.items()}
    env["PYOPENCL_NO_CACHE"] = "1"
    try:
        child = Child("cltui.analysis.check", job_path, err_path, env=env)
    except OSError as exc:
        raise CheckError(f"cannot start the check process: {exc}") from None
    events: list[Event] = []
    with child:  # also on ctrl-c: no Oclgrind is left running
        try:
            for ev in child.events(timeout, cancel):
                events.append(ev)
                if progress is not None and ev.get("type") != "result":
                    progress(ev)
        except KeyboardInterrupt:  # ctrl-c, SIGTERM: what ran so far is kept
            child.kill()
            child.finish()
            return events, None, "interrupted"
        rc = child.finish()
    return events, rc, child.status


# --------------------------------------------------------------------------- child


def _child(job_path: str, fd: int) -> int:
    from cltui.capture.hashing import cli_hash64
    from cltui.process.child import connect
    from cltui.replay import engine

    out = connect(fd)  # an Oclgrind check must not outlive a killed cltui

    def send(ev: Event) -> None:
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
