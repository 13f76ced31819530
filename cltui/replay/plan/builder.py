"""One kernel enqueue -> one step of the plan: its program, arguments, the inputs to load
before it and the checks after it (or the reason it is skipped); what an unreplayed host
change taints.  The parts it assembles are mixins over one state (:mod:`.base`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from cltui.capture.history import reads_only
from cltui.capture.model import Enqueue, EnqueueKind, KernelArg
from cltui.replay.engine.schema import ArgSpec, Skipped, StepSpec
from cltui.replay.plan.args import arg
from cltui.replay.plan.base import PlanState, ScopeEntry, StepIO
from cltui.replay.plan.checks import check, obj, unchecked
from cltui.replay.plan.inputs import inputs
from cltui.replay.plan.programs import program


@dataclass
class _Launch:
    """What a kernel enqueue needs to run: its program, work size and arguments."""

    program: str
    global_size: tuple[int, ...]
    args: list[ArgSpec]
    mem_args: dict[str, list[KernelArg]]  # memory id -> the arguments naming it


def add(st: PlanState, enq: Enqueue) -> None:
    """The step of a kernel enqueue of the range (a note for any other enqueue)."""
    n = enq.number
    if enq.row.kind is not EnqueueKind.KERNEL:
        st.notes.append(
            f"enqueue {n}: {enq.row.function} is not replayed (only clEnqueueNDRangeKernel is)"
        )
        return
    scope = ScopeEntry(n, enq.row.kernel or "", recovered=enq.recovered)
    st.kernels.append(scope)
    launch = _launch(st, enq, scope)
    if launch is None:
        return
    scope.replayed = True
    io = StepIO()
    written: set[str] = set()
    for mid, margs in launch.mem_args.items():
        o = obj(st, enq, mid, margs)
        if any(not reads_only(a) for a in margs):
            written.add(mid)
        inputs(st, enq, o, io)
        if o.post is not None:
            io.checks.append(check(st, o, o.post))
        elif o.post_damage is not None:  # the capture's side is damaged: never a FAIL
            why = f"damaged dump: {o.post_damage}"
            st.notes.append(f"enqueue {n}: argument {margs[0].index} unchecked ({why})")
            io.checks.append(unchecked(st, o, why))
        else:
            why = f"no Post dump of argument {margs[0].index} ({st.memory[mid]['label']}): "
            why += "not checked"
            st.notes.append(f"enqueue {n}: {why}")
            io.checks.append(unchecked(st, o, why))
        st.state[mid] = (n, o.post)
    _taint(st, launch, written, io)
    _unknown(st, launch, written, io)
    st.steps.append(_step(st, enq, scope, launch, io))


def _launch(st: PlanState, enq: Enqueue, scope: ScopeEntry) -> _Launch | None:
    """The program, work size and arguments, or None when the step is skipped."""
    gsz = enq.row.global_size
    if enq.recovered and not gsz:
        from cltui.capture.recovery import sources_text

        skip(
            st,
            scope,
            f"recovered from {sources_text(enq.recovered_from)}, without its work sizes: "
            "the log that held them is lost and no Replay/ folder has them",
        )
        return None
    pid = program(st, enq)
    if pid is None:
        skip(st, scope, f"no program source or binary for {scope.kernel!r}")
        return None
    if not gsz:
        skip(st, scope, "no global work size")
        return None
    launch = _Launch(pid, gsz, [], {})
    for a in enq.args:
        spec, problem = arg(st, enq, a, launch.mem_args)
        if problem is not None:
            skip(st, scope, problem)
            return None
        launch.args.append(spec)
    return launch


def _taint(st: PlanState, launch: _Launch, written: set[str], io: StepIO) -> None:
    """An unreplayed host write an input follows taints what this kernel writes (and
    marks its checks); a load clears it.  Taint follows data: the check of an object the
    kernel only reads is marked only when that object itself follows the write."""
    for mid in {ld["mem"] for ld in io.loads}:
        st.taint.pop(mid, None)
    tainted = [st.taint[mid] for mid in launch.mem_args if mid in st.taint]
    if tainted:
        at = min(tainted)
        for c in io.checks:
            if c["mem"] in st.taint:
                c["after_unreplayed"] = st.taint[c["mem"]]
            elif c["mem"] in written:
                c["after_unreplayed"] = at
        for mid in written:
            st.taint.setdefault(mid, at)


def _unknown(st: PlanState, launch: _Launch, written: set[str], io: StepIO) -> None:
    """An input whose replayed state is unknown (:attr:`unknown`) makes what this kernel
    writes unknown: those checks (and the unknown object's own) are unchecked, with the
    reason, never compared; a load clears it."""
    for mid in {ld["mem"] for ld in io.loads}:
        st.unknown.pop(mid, None)
    inputs = [st.unknown[mid] for mid in launch.mem_args if mid in st.unknown]
    if not inputs:
        return
    for c in io.checks:
        why = st.unknown.get(c["mem"]) or (inputs[0] if c["mem"] in written else None)
        if why is None or not (c.get("data") or c.get("hash64")):
            continue
        c.pop("data", None)
        cast(dict[str, object], c).pop("hash64", None)
        c["note"] = f"input unknown: {why}"
    for mid in written:
        st.unknown.setdefault(mid, inputs[0])


def _step(st: PlanState, enq: Enqueue, scope: ScopeEntry, launch: _Launch, io: StepIO) -> StepSpec:
    """The step's entry (the host transfers queued since the last step go with it)."""
    step: StepSpec = {
        "enqueue": enq.number,
        "kernel": scope.kernel,
        "program": launch.program,
        "global": list(launch.global_size),
        "local": list(enq.row.local_size) if enq.row.local_size else None,
        "offset": list(enq.global_offset) if enq.global_offset else None,
        "device": enq.device,
        "args": launch.args,
        "loads": io.loads,
        "prechecks": io.prechecks,
        "checks": io.checks,
    }
    if st.queued_ops:
        step["transfers"] = st.queued_ops
        st.queued_ops = []
    if scope.recovered:
        step["recovered"] = True
    dt = enq.row.device_time
    if dt is not None:
        step["captured_time"] = {
            "queued_to_submit": dt.queued_to_submit,
            "submit_to_start": dt.submit_to_start,
            "start_to_end": dt.start_to_end,
        }
    return step


def skip(st: PlanState, scope: ScopeEntry, why: str) -> None:
    """A kernel enqueue of the range that is not replayed, and why (in its scope entry,
    the plan's ``skipped`` list and a note)."""
    scope.why = why
    rec: Skipped = {"enqueue": scope.enqueue, "kernel": scope.kernel, "why": why}
    if scope.recovered:
        rec["recovered"] = True
    st.skipped.append(rec)
    st.notes.append(f"enqueue {scope.enqueue} skipped: {why}")
