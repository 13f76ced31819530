"""How a device's replay ended, and the report of a replay: the result a crash, a hang, a
kill or a cancel gets (with the steps that finished before it), and the report of every
device's result (the documented fields set, the verdicts, the devices against each other).
The results come from the children as JSON (:mod:`cltui.replay.runner`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from cltui.process import lifecycle
from cltui.process.child import Event
from cltui.replay.cross import cross_compare
from cltui.replay.engine import combine_verdicts, verdict
from cltui.replay.engine.schema import (
    ArgTolerance,
    Device,
    DeviceResult,
    Manifest,
    Report,
    StepResult,
    ToleranceSpec,
)


@dataclass
class Progress:
    """What a device's events said so far: the enqueue running, the program building, the
    steps that ended (with their checks), and the result once the child sent it."""

    running: int | None = None
    building: str | None = None
    result: DeviceResult | None = None
    finished: list[StepResult] = field(default_factory=list)

    def see(self, ev: Event) -> bool:
        """Note an event from the child (JSON); False for the result, which is not passed on."""
        et = ev.get("type")
        if et == "step":
            self.running, self.building = ev.get("enqueue"), None
        elif et == "step_done":
            self.running = None
            if isinstance(ev.get("step"), dict):
                self.finished.append(partial_step(ev.pop("step")))
        elif et == "build":
            self.building = ev.get("label")
        elif et == "timing":
            self.running = None
        if et == "result":
            self.result = cast(DeviceResult, ev["result"])  # the engine's result, as JSON
            return False
        return True

    @property
    def where(self) -> str:
        if self.running is not None:
            return f"enqueue {self.running}"
        if self.building is not None:
            return f"the build of {self.building}"
        return "the replay"


def ended(
    dev: Device, how: str, rc: int, seen: Progress, timeout: float, cancelled: bool
) -> DeviceResult:
    """The device's result from how its child ended (``how``: the supervisor's status,
    ``rc`` its exit status) and what its events said."""
    where, result, finished = seen.where, seen.result, seen.finished
    if how == "hang":
        msg = why_ended("hang", "", "", where, timeout, "replay process")
        return failed(dev, "hang", msg, seen.running, finished)
    if how == "cancelled" or (cancelled and result is None):
        return failed(dev, "cancelled", why_ended("cancelled", "", "", where, timeout),
                      seen.running, finished)  # fmt: skip
    if result is None:
        cause, what = lifecycle.exit_cause(rc)
        status = "killed" if cause == "killed" else "crash"
        msg = why_ended(how, cause, what, where, timeout, "replay process")
        return failed(dev, status, msg, seen.running, finished)
    result["status"] = (
        "error" if result.get("error") else ("ok" if result.get("ok") else "mismatch")
    )
    return result


def why_ended(how: str, cause: str, what: str, where: str, timeout: float,
              process: str = "process") -> str:  # fmt: skip
    """What ended a child (``how``: the supervisor's ``hang`` or ``cancelled``, else how it
    exited: ``cause`` and ``what`` of :func:`~cltui.process.lifecycle.exit_cause`) while it
    was at ``where`` (``enqueue 41``, ``the build of p17``, ...): one line, the replay's and
    the experiments' alike."""
    if how == "hang":
        return f"{where} did not finish within {timeout:g} s: the {process} was killed"
    if how == "cancelled":
        return f"cancelled ({where})"
    if cause == "fault":
        return f"{where} crashed the driver ({what})"
    if cause == "killed":
        return f"the {process} was killed ({what}) from outside while {where} ran"
    return f"the {process} stopped with {what or 'no result'} ({where})"


def partial_step(step: dict[str, Any]) -> StepResult:
    """A step as ``step_done`` sent it (JSON), shaped like a finished run's (no timing yet)."""
    step.setdefault("checks", [])
    step.setdefault("prechecks", [])
    step.setdefault("loads", [])
    step.setdefault(
        "timing",
        {"queued_to_submit": None, "submit_to_start": None, "start_to_end": None,
         "host_enqueue": None, "samples": 0},
    )  # fmt: skip
    return cast(StepResult, step)


def failed(
    dev: Device,
    status: str,
    msg: str,
    enqueue: int | None,
    finished: list[StepResult] | None = None,
) -> DeviceResult:
    """A device result for a fault: ``steps`` are those that finished before it (the
    report sets the rest of the documented fields, the caller the device choice)."""
    return cast(
        DeviceResult,
        {
            "device": dev,
            "ok": False,
            "status": status,
            "error": msg,
            "failed_enqueue": enqueue,
            "steps": list(finished or []),
            "partial": True,
            "builds": {},
            "notes": [],
        },
    )


def make_report(
    plan: Manifest,
    results: list[DeviceResult],
    repeat: int,
    tolerance: ToleranceSpec,
    arg_tolerance: ArgTolerance,
    save_dir: Path,
) -> Report:
    """The report of the device results (each given every documented field: docs/cli-json.md)."""
    for r in results:
        r["runner"] = "cltui"
        r.setdefault("repeat", repeat)
        r.setdefault("loop", None)
        r.setdefault("failed_enqueue", None)
    cross = cross_compare(plan, results, tolerance, arg_tolerance)
    # devices against each other is information: floating point differs by design
    ok = all(r.get("status") == "ok" for r in results)
    for res in results:
        res["verdict"] = verdict(plan, res)
    names = [_device_id(r.get("device")) for r in results]
    return {
        "verdict": combine_verdicts([r["verdict"] for r in results], names),
        "plan": {
            "range": plan["source"].get("range"),
            "mode": plan["source"].get("mode"),
            "steps": len(plan.get("steps", [])),
            "changes": plan.get("changes", []),
            "notes": plan.get("notes", []),
            "skipped": plan.get("skipped", []),
            "lost": plan.get("lost", []),
        },
        "repeat": repeat,
        "devices": results,
        "cross": cross,
        "ok": ok and bool(results),
        "outputs": str(save_dir),
    }


def _device_id(device: Mapping[str, object] | None) -> str:
    return str(device.get("id", "?")) if device else "?"
