"""The programs a plan builds: the captured program (source + captured options, its device
binaries) or, without one, what the enqueue's ``Replay/`` folder holds."""

from __future__ import annotations

from cltui.capture.model import Enqueue, Program
from cltui.capture.replayfolder import ReplayFolder
from cltui.replay.engine.schema import ProgramSpec
from cltui.replay.plan.base import PlanState


def program(st: PlanState, enq: Enqueue) -> str | None:
    """The program id of a kernel enqueue (added to ``programs`` once), None when the
    capture has neither its source nor a binary."""
    prog = enq.program
    rf = st.replay(enq)
    if prog is not None:
        pid = f"p{prog.number}"
        if pid not in st.programs:
            st.programs[pid] = _captured(st, enq, prog, rf)
        return pid
    if rf is not None:
        spec = _from_replay(st, enq, rf)
        if spec is None:
            return None
        pid = f"r{enq.number}"
        st.programs[pid] = spec
        return pid
    return None


def _captured(st: PlanState, enq: Enqueue, prog: Program, rf: ReplayFolder | None) -> ProgramSpec:
    """A program the log created: its binaries, its source (the Replay folder's when the
    capture has none), else the Replay folder's binary or SPIR-V."""
    binaries = []
    for tag, path in sorted(prog.binaries.items()):
        binaries.append({"data": st.key(path), "device": enq.device or tag})
    src = st.key(prog.source_path) if prog.source_path is not None else None
    if src is None and rf is not None and rf.kernel_source_path and rf.kernel_source:
        src = st.key(rf.kernel_source_path)
    if src is None and rf is not None:
        for p in rf.device_binaries[:1]:
            binaries.append({"data": st.key(p), "device": enq.device or ""})
    return {
        "label": f"program {prog.number:04d}",
        "source": src,
        "il": st.key(rf.spirv) if src is None and rf and rf.spirv else None,
        "options": prog.options or "",
        "binaries": binaries,
    }


def _from_replay(st: PlanState, enq: Enqueue, rf: ReplayFolder) -> ProgramSpec | None:
    """A program only the Replay folder holds (None when it holds nothing to build)."""
    src = st.key(rf.kernel_source_path) if rf.kernel_source and rf.kernel_source_path else None
    bins = [{"data": st.key(p), "device": enq.device or ""} for p in rf.device_binaries[:1]]
    il = st.key(rf.spirv) if src is None and rf.spirv else None
    if src is None and il is None and not bins:
        return None
    return {
        "label": f"Replay/{rf.path.name}",
        "source": src,
        "il": il,
        "options": rf.build_options or "",
        "binaries": bins,
    }
