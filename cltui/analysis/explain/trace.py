"""Run the instrumented kernel (:mod:`.instrument`) on both devices from the enqueue's
captured inputs: the explanation's plan with the program's source replaced, a zeroed trace
buffer as the kernel's last argument and a check on it (so that the experiment machinery
saves it); the traces decoded per work-item."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from cltui.analysis.explain.instrument import CAP, HEADER, Instrumented, stride
from cltui.analysis.explain.run import Outputs, Runs, _collect
from cltui.progress import CancelToken, ProgressFn
from cltui.replay import lifecycle
from cltui.replay.engine.schema import Device, Manifest
from cltui.replay.experiment.apply import apply_variant
from cltui.replay.experiment.variant import ProgramChange, Variant, VariantError
from cltui.replay.experiment.worker import BASE_ID

__all__ = ["TRACE_MEM", "Entry", "Traced", "decode", "run_traced"]

TRACE_MEM = "cltui-trace"


@dataclass(frozen=True)
class Entry:
    site: int
    iteration: int
    slot: int  # 0: the value assigned; k: operand k
    lane: int
    lo: int
    hi: int


@dataclass
class Traced:
    """Per device id: its outputs (the trace buffer taken out) and per chosen work-item its
    entries and how many were dropped; or why it has none."""

    outputs: dict[str, Outputs]
    entries: dict[str, list[tuple[list[Entry], int]]]


def traced_plan(plan: Manifest, inst: Instrumented, root: str, work: Any) -> Manifest:
    """The explanation's plan running the instrumented source with the trace buffer."""
    step = plan["steps"][0]
    pid = step["program"]
    variant = Variant(range=str(step["enqueue"]), name="trace",
                      programs=(ProgramChange(pid, source=inst.source),))  # fmt: skip
    out = apply_variant(plan, variant, root, work)
    st = out["steps"][0]
    size = 4 * stride(len(inst.sites)) * len(inst.items)
    out["memory"][TRACE_MEM] = {"kind": "buffer", "label": "trace", "size": size}
    index = max((int(a["index"]) for a in st["args"]), default=-1) + 1
    st["args"] = [*copy.deepcopy(st["args"]), {"index": index, "kind": "buffer",
                                               "name": "cltui_trace", "mem": TRACE_MEM,
                                               "type": "__global uint *"}]  # fmt: skip
    st["checks"] = [*st["checks"], {"mem": TRACE_MEM, "args": [index], "label": "trace",
                                    "dtype": "<u4", "shape": None}]  # fmt: skip
    return out


def decode(raw: npt.NDArray[np.uint8], n_sites: int,
           n_items: int) -> list[tuple[list[Entry], int]]:  # fmt: skip
    """Each work-item's entries (in the order it recorded them) and its dropped count."""
    words = np.frombuffer(raw.tobytes(), dtype="<u4")
    out: list[tuple[list[Entry], int]] = []
    s = stride(n_sites)
    for k in range(n_items):
        sl = words[k * s : (k + 1) * s]
        if sl.size < s:
            out.append(([], 0))
            continue
        n = min(int(sl[0]), CAP)
        e = sl[HEADER : HEADER + 4 * n].reshape(n, 4)
        out.append(([Entry(int(r[0]), int(r[1]) & 0xFFFF, (int(r[1]) >> 16) & 0xFF,
                           int(r[1]) >> 24, int(r[2]), int(r[3])) for r in e],
                    int(sl[1])))  # fmt: skip
    return out


def run_traced(runs: Runs, inst: Instrumented, devices: list[Device], timeout: float,
               cancel: CancelToken | None, report: ProgressFn) -> Traced:  # fmt: skip
    """The instrumented kernel once on each device (a build failure is that device's
    error)."""
    work = lifecycle.temp_dir("explain")
    try:
        try:
            plan = traced_plan(runs.plan, inst, runs.root, work / "src")
        except VariantError as exc:
            err = Outputs(error=f"refused: {exc}")
            return Traced({d["id"]: err for d in devices}, {})
        got: dict[str, dict[str, Outputs]] = {BASE_ID: {}}
        # the traced plan as the job's base configuration: one run per device
        _collect(plan, [], devices, runs.root, timeout, work / "out", got, cancel, report)
    finally:
        lifecycle.remove(work)
    traced = Traced({}, {})
    for d in devices:
        out = got[BASE_ID].get(d["id"]) or Outputs(error="not run")
        raw = out.data.pop(TRACE_MEM, None)
        if raw is not None and out.error is None:
            traced.entries[d["id"]] = decode(raw, len(inst.sites), len(inst.items))
        elif out.error is None:
            out.error = "the trace buffer was not read back"
        traced.outputs[d["id"]] = out
    return traced

