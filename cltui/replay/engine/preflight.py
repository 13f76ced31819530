"""The pre-flight: before the first step, what cannot run on this device and why (the rule of
:mod:`.feasible` on the facts of :mod:`.facts`), and what a step that cannot run leaves
behind: it is not launched, its checks are unchecked ("cannot run: REASON"), and the checks
after it that depend on its outputs are marked.  The :class:`Preflight` part of
:class:`.core.Engine` owns those findings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import EngineError, EngineOptions, _cl_msg
from .facts import device_facts, kernel_facts
from .feasible import (
    AT_LAUNCH,
    after_cannot_run,
    image_key,
    kernel_findings,
    memory_findings,
    step_findings,
)
from .schema import CheckResult, Finding, FindingKind, StepSpec

if TYPE_CHECKING:
    import pyopencl as cl

    from .feasible import DeviceFacts


def cannot_run_line(found: list[Finding]) -> str:
    """``cannot run: REASON; REASON`` (one line)."""
    return "cannot run: " + "; ".join(dict.fromkeys(f["reason"] for f in found))


class Preflight:
    """What cannot run on this device and why, found before the first step (see the module
    doc): the device's facts, the steps that cannot run, the findings a launch decides and
    the marks of the checks after a step that cannot run."""

    def __init__(self, opts: EngineOptions) -> None:
        self.plan = opts.plan
        self.progress = opts.progress
        self.facts: DeviceFacts | None = None  # the device's facts
        self.cannot: dict[int, list[Finding]] = {}  # step index -> why it cannot run here
        self.at_launch: dict[int, list[Finding]] = {}  # step -> findings its launch decides
        self.bad_mems: dict[str, tuple[FindingKind, str]] = {}  # objects not made here, and why
        # enqueue -> pre/post -> mem -> the enqueue that cannot run whose output it follows
        self.marks: dict[int, dict[str, dict[str, int]]] = {}

    def plan_findings(self, dev: cl.Device, ctx: cl.Context) -> None:
        """The device's facts and what the plan alone says cannot run here (work sizes,
        memory objects, image formats, -cl-std, local arguments)."""
        types = {image_key(m["image"])[0] for m in self.plan["memory"].values() if "image" in m}
        self.facts = device_facts(dev, ctx, types)
        self.bad_mems = memory_findings(self.plan, self.facts)
        for i, st in enumerate(self.plan["steps"]):
            found = step_findings(self.plan, st, self.facts, self.bad_mems)
            if found:
                self.cannot[i] = found

    def checked_kernel(
        self, i: int, prg: cl.Program, step: StepSpec, dev: cl.Device
    ) -> cl.Kernel | None:
        """Step ``i``'s kernel, or None when what the built kernel says makes it cannot-run
        (reqd_work_group_size, local memory); a local size over its work-group size is
        left to the launch (``at_launch``: feasible.AT_LAUNCH)."""
        import pyopencl as cl

        try:
            kern = cl.Kernel(prg, step["kernel"])
        except cl.Error as exc:
            raise EngineError(
                f"enqueue {step['enqueue']}: kernel {step['kernel']!r} not found in program "
                f"{step['program']}: {_cl_msg(exc)}",
                step["enqueue"],
            ) from None
        if self.facts is not None:
            found = kernel_findings(step, kernel_facts(kern, dev), self.facts)
            if any(f["kind"] not in AT_LAUNCH for f in found):
                self.cannot[i] = found
                return None
            if found:
                self.at_launch[i] = found
        return kern

    def refused(self, i: int, why: str, set_up_failed: dict[int, str]) -> None:
        """The driver refused step ``i``'s launch, as its ``at_launch`` findings said it
        might: the step cannot run after all; the checks after it are marked again."""
        self.cannot[i] = [{**f, "reason": f"{f['reason']}; the driver refused the launch "
                           f"({why})"} for f in self.at_launch.pop(i)]  # fmt: skip
        self.done(set_up_failed)

    def accepted_notes(self) -> list[str]:
        """One note per reason of the ``at_launch`` findings whose launches ran."""
        by: dict[str, list[str]] = {}
        for i in sorted(self.at_launch):
            for f in self.at_launch[i]:
                by.setdefault(f["reason"], []).append(f"{f['enqueue']} ({f['kernel']})")
        return [f"enqueue{'s' if len(e) > 1 else ''} {', '.join(e[:8])}"
                f"{f' and {len(e) - 8} more' if len(e) > 8 else ''}: {reason}; the driver "
                "accepted the launch" for reason, e in by.items()]  # fmt: skip

    def done(self, set_up_failed: dict[int, str]) -> None:
        """The marks of the checks after a step that cannot run (or whose kernel could not
        be set up), and the ``preflight`` event (the findings, so a watcher shows them
        before the first step)."""
        steps = self.plan["steps"]
        marks = after_cannot_run(self.plan, {*self.cannot, *set_up_failed})
        self.marks = {int(steps[i]["enqueue"]): m for i, m in marks.items()}
        self.progress({"type": "preflight", "cannot_run": self.findings()})

    def findings(self) -> list[Finding]:
        """Every finding, in step order."""
        return [f for i in sorted(self.cannot) for f in self.cannot[i]]

    def cannot_run_checks(self, i: int) -> list[CheckResult]:
        """The checks of step ``i``, which was not launched: unchecked, saying why."""
        line = cannot_run_line(self.cannot[i])
        return [
            {"mem": c["mem"], "args": c.get("args", []), "label": c.get("label", c["mem"]),
             "dtype": c.get("dtype"), "shape": c.get("shape"), "output": None,
             "data": c.get("data"), "status": "unchecked", "summary": line}
            for c in self.plan["steps"][i].get("checks", [])
        ]  # fmt: skip
