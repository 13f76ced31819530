"""Run what an explanation needs: one kernel enqueue, isolated (its inputs from its own Pre
dumps), as captured (``A``, twice: ``again`` is the second run) and with each controlled
rebuild (:mod:`.causes`), on two devices, through the experiment machinery (one child per
device, :class:`~cltui.replay.experiment.job.ExperimentJob`), each point's outputs saved.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from cltui.analysis.explain.causes import REVERSED, Rebuild, rebuilds
from cltui.analysis.explain.linearfilter import linear_samplers
from cltui.analysis.probe import saved_outputs
from cltui.capture.capture import Capture
from cltui.capture.confine import read_bytes_inside
from cltui.capture.model import EnqueueKind
from cltui.capture.ranges import EnqueueRange
from cltui.errors import CltuiError
from cltui.process import lifecycle
from cltui.progress import CancelToken, ProgressEvent, ProgressFn, no_progress
from cltui.replay.engine.compare import Tolerance
from cltui.replay.engine.schema import Device, Manifest
from cltui.replay.experiment.apply import apply_variant, program_source
from cltui.replay.experiment.job import ExperimentJob, Point
from cltui.replay.experiment.variant import VariantError
from cltui.replay.experiment.worker import BASE_ID
from cltui.replay.plan import PlanError, build_plan

__all__ = ["AGAIN", "DeviceRuns", "ExplainError", "Outputs", "Runs", "enqueue_plan",
           "local_runs", "run_explain"]

AGAIN = "again"  # the capture's configuration run a second time (order dependence)


class ExplainError(CltuiError):
    """An enqueue that cannot be explained (not a kernel enqueue, no plan): one line."""


@dataclass
class Outputs:
    """One point's run on one device: its outputs' bytes by mem id, or why it has none."""

    data: dict[str, npt.NDArray[np.uint8]] = field(default_factory=dict)
    error: str | None = None


class DeviceRuns(Protocol):
    """Where an explanation's device runs happen: ``base`` (point id
    :data:`~cltui.replay.experiment.worker.BASE_ID`) and ``points``, each an ordinary replay
    of one plan, on each of ``devices``; each outcome into ``runs[point id][device id]``;
    whether it was cancelled.  :func:`local_runs` runs them here (one child per device);
    the fleet ships each plan as a bundle to the column's host (:mod:`cltui.fleet.explain`)."""

    def __call__(self, base: Manifest, points: list[Point], devices: list[Device], root: str,
                 timeout: float, runs: dict[str, dict[str, Outputs]],
                 cancel: CancelToken | None, report: ProgressFn) -> bool: ...


@dataclass
class Runs:
    """Every run of an explanation (see the module doc)."""

    plan: Manifest
    root: str
    kernel: str
    program: str
    options: str
    source: str | None
    devices: list[Device]
    rebuilds: list[Rebuild]
    refused: dict[str, str]  # a rebuild that does not apply to the plan: why
    checks: list[dict[str, Any]]  # the step's output checks (mem, label, dtype, shape, data)
    runs: dict[str, dict[str, Outputs]]  # point id -> device id -> its outputs
    cancelled: bool = False
    device_runs: DeviceRuns = field(default_factory=lambda: local_runs)  # the traced runs too

    def captured(self, mem: str) -> npt.NDArray[np.uint8] | None:
        """The capture's bytes of an output (None: the capture holds only its hash)."""
        c = next((c for c in self.checks if c["mem"] == mem), None)
        key = c.get("data") if c else None
        ref = self.plan["data"].get(key) if key else None
        if not ref:
            return None
        try:
            raw = read_bytes_inside(self.root, Path(self.root) / ref["path"])
        except (OSError, CltuiError):
            return None
        return np.frombuffer(raw, dtype=np.uint8)


def enqueue_plan(cap: Capture, enqueue: int) -> Manifest:
    """The isolated plan of one kernel enqueue (its inputs from its Pre dumps)."""
    kinds = cap.find(None, kinds=[EnqueueKind.KERNEL], first=enqueue, last=enqueue)
    if len(kinds) == 0:
        raise ExplainError(f"enqueue {enqueue} is not a kernel enqueue of this capture")
    try:
        plan = build_plan(cap, EnqueueRange(enqueue, enqueue), "isolated", Tolerance(), {})
    except PlanError as exc:
        raise ExplainError(str(exc)) from None
    manifest = plan.to_manifest()
    if len(manifest["steps"]) != 1:
        raise ExplainError(f"enqueue {enqueue}: the plan has {len(manifest['steps'])} steps")
    return manifest


def run_explain(cap: Capture, enqueue: int, devices: list[Device], *, timeout: float = 60.0,
                cancel: CancelToken | None = None, progress: ProgressFn | None = None,
                device_runs: DeviceRuns | None = None) -> Runs:  # fmt: skip
    """Enqueue ``enqueue`` as captured (twice) and with each rebuild on both ``devices`` (one
    device: as captured, twice, and in reverse work-item order), through ``device_runs``
    (None: :func:`local_runs`)."""
    report = progress or no_progress
    plan = enqueue_plan(cap, enqueue)
    root = str(cap.path)
    step = plan["steps"][0]
    pid = step["program"]
    try:
        source: str | None = program_source(plan, pid, root)
    except (VariantError, OSError, CltuiError):
        source = None
    options = plan["programs"][pid].get("options") or ""
    work = lifecycle.temp_dir("explain")
    try:
        return _run(plan, root, step["kernel"], plan["programs"][pid].get("label", pid),
                    options, source, devices, work, timeout, cancel, report,
                    device_runs or local_runs)  # fmt: skip
    finally:
        lifecycle.remove(work)


def _run(plan: Manifest, root: str, kernel: str, program: str, options: str,
         source: str | None, devices: list[Device], work: Path, timeout: float,
         cancel: CancelToken | None, report: ProgressFn,
         collect: DeviceRuns) -> Runs:  # fmt: skip
    step = plan["steps"][0]
    samplers = linear_samplers(source, kernel, step["args"]) if source is not None else {}
    found = rebuilds(str(step["enqueue"]), source, options, kernel, samplers)
    if len(devices) == 1:  # one device: only whether its runs agree (order dependence)
        found = [rb for rb in found if rb.id == REVERSED]
    points: list[Point] = [Point(AGAIN, plan)]
    refused: dict[str, str] = {}
    kept: list[Rebuild] = []
    for rb in found:
        try:
            points.append(Point(rb.id, apply_variant(plan, rb.variant, root, work / "src")))
            kept.append(rb)
        except VariantError as exc:
            refused[rb.id] = str(exc)
    checks = [dict(c) for c in plan["steps"][0]["checks"]]
    runs: dict[str, dict[str, Outputs]] = {p: {} for p in [BASE_ID, *(q.id for q in points)]}
    cancelled = collect(plan, points, devices, root, timeout, runs, cancel, report)
    # a device whose process crashed runs once more (Oclgrind died now and then of a
    # SIGSEGV on a run that passed the next time: two builds at once, which
    # engine.base.build_program now keeps apart); a second crash is what is reported
    crashed = [d for d in devices if any(
        (o := r.get(d["id"])) is not None and (o.error or "").startswith("crash")
        for r in runs.values())]  # fmt: skip
    if crashed and not cancelled:
        again: dict[str, dict[str, Outputs]] = {p: {} for p in runs}
        cancelled = collect(plan, points, crashed, root, timeout, again, cancel, no_progress)
        for pid, by_dev in again.items():
            for dev, out in by_dev.items():
                first = runs[pid].get(dev)
                if first is not None and first.error is None:
                    continue  # it ran the first time: that run stands
                if (out.error or "").startswith("crash"):
                    out = Outputs(error=f"{out.error} (and again on a second try)")
                runs[pid][dev] = out
    return Runs(plan, root, kernel, program, options, source, devices, kept, refused,
                checks, runs, cancelled=cancelled, device_runs=collect)  # fmt: skip


def local_runs(base: Manifest, points: list[Point], devices: list[Device], root: str,
               timeout: float, runs: dict[str, dict[str, Outputs]],
               cancel: CancelToken | None, report: ProgressFn) -> bool:  # fmt: skip
    """:class:`DeviceRuns` here: ``base`` and ``points`` on ``devices``, one child per
    device (the experiment machinery); each outcome into ``runs``; whether it was
    cancelled."""
    save = lifecycle.temp_dir("explain")
    try:
        return _collect(base, points, devices, root, timeout, save, runs, cancel, report)
    finally:
        lifecycle.remove(save)


def _collect(plan: Manifest, points: list[Point], devices: list[Device], root: str,
             timeout: float, save: Path, runs: dict[str, dict[str, Outputs]],
             cancel: CancelToken | None, report: ProgressFn) -> bool:  # fmt: skip
    job = ExperimentJob(plan, points, devices, root, repeat=1, timeout=timeout, save_dir=save)
    if cancel is not None:
        cancel.on_cancel(job.cancel)
    total = len(devices) * (len(points) + 1)
    done = 0
    try:
        for ev in job.events():
            if ev["type"] == "device":
                report(ProgressEvent(done / total, f"runs on {ev['device']} {ev['name']}"))
            if ev["type"] != "point":
                continue
            done += 1
            report(ProgressEvent(done / total, f"{ev['id']} on {ev['device']}"))
            runs[str(ev["id"])][str(ev["device"])] = _outputs(ev)
    finally:  # a child still running (an interrupt, an error here) goes first
        cancelled = job.cancelled
        job.cancel()
        job.cleanup()  # the saved outputs are read already
    return cancelled


def _outputs(ev: dict[str, Any]) -> Outputs:
    """A point's saved outputs, read now (the job's folder goes when it ends)."""
    if ev.get("refused"):
        return Outputs(error=f"refused: {ev['refused']}")
    res = ev.get("result") or {}
    if res.get("error") or res.get("status") in ("crash", "hang", "cancelled", "killed"):
        what = res.get("status") or "error"
        return Outputs(error=f"{what}: {res.get('error') or 'no result'}")
    out = Outputs()
    for _st, c, path in saved_outputs(res):
        try:
            out.data[str(c["mem"])] = np.fromfile(path, dtype=np.uint8)
        except OSError as exc:
            out.error = f"output of {c['mem']} not read back: {exc.strerror or exc}"
    if not out.data and out.error is None:
        out.error = "no output was read back"
    return out
