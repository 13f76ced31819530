"""Run the instrumented kernel (:mod:`.instrument`) on both devices from the enqueue's
captured inputs: the explanation's plan with the program's source replaced, a zeroed trace
buffer as the kernel's last argument and a check on it (so that the experiment machinery
saves it); the traces decoded per work-item."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from cltui.analysis.explain.instrument import Instrumented
from cltui.analysis.explain.recorder import ADDRESS, BASE_SITE, CAP, HEADER, stride
from cltui.analysis.explain.run import Outputs, Runs
from cltui.process import lifecycle
from cltui.progress import CancelToken, ProgressFn
from cltui.replay.engine.schema import Device, Manifest
from cltui.replay.experiment.apply import apply_variant
from cltui.replay.experiment.variant import ProgramChange, Variant, VariantError
from cltui.replay.experiment.worker import BASE_ID

__all__ = ["TRACE_MEM", "Addresses", "Entry", "Traced", "decode", "run_raw", "run_traced"]

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
class Addresses:
    """One work-item's recorded addresses (on one device, in one run): each memory base's
    (:attr:`.instrument.Instrumented.bases`) and each memory operand's, by (site,
    iteration, operand slot)."""

    bases: dict[int, int] = field(default_factory=dict)
    operands: dict[tuple[int, int, int], int] = field(default_factory=dict)


@dataclass
class Traced:
    """Per device id: its outputs (the trace buffer taken out) and per chosen work-item its
    entries and how many were dropped, and its addresses; or why it has none."""

    outputs: dict[str, Outputs]
    entries: dict[str, list[tuple[list[Entry], int]]]
    addresses: dict[str, list[Addresses]] = field(default_factory=dict)


def traced_plan(plan: Manifest, inst: Instrumented, root: str, work: Any) -> Manifest:
    """The explanation's plan running the instrumented source with the trace buffer."""
    step = plan["steps"][0]
    pid = step["program"]
    variant = Variant(range=str(step["enqueue"]), name="trace",
                      programs=(ProgramChange(pid, source=inst.source),))  # fmt: skip
    out = apply_variant(plan, variant, root, work)
    st = out["steps"][0]
    size = 4 * stride(len(inst.sites)) * len(inst.items)
    if inst.words:
        size = 4 * inst.words
    elif inst.dense is not None:
        size = 4 * max(len(inst.dense), 1) * work_items(plan)
    out["memory"][TRACE_MEM] = {"kind": "buffer", "label": "trace", "size": size}
    index = max((int(a["index"]) for a in st["args"]), default=-1) + 1
    st["args"] = [*copy.deepcopy(st["args"]), {"index": index, "kind": "buffer",
                                               "name": "cltui_trace", "mem": TRACE_MEM,
                                               "type": "__global uint *"}]  # fmt: skip
    st["checks"] = [*st["checks"], {"mem": TRACE_MEM, "args": [index], "label": "trace",
                                    "dtype": "<u4", "shape": None}]  # fmt: skip
    return out


def work_items(plan: Manifest) -> int:
    """The enqueue's global work size (work-items)."""
    return int(np.prod([int(g) for g in plan["steps"][0]["global"]]))


def decode_dense(raw: npt.NDArray[np.uint8], inst: Instrumented,
                 plan: Manifest) -> list[tuple[list[Entry], int]]:  # fmt: skip
    """A dense trace's entries of the chosen work-items, a statement's operands before its
    value, statements in the order of their sites."""
    assert inst.dense is not None
    words = np.frombuffer(raw.tobytes(), dtype="<u4")
    n = work_items(plan)
    size = [int(g) for g in plan["steps"][0]["global"]] + [1, 1]
    off = [int(o) for o in (plan["steps"][0].get("offset") or [])] + [0, 0, 0]
    out: list[tuple[list[Entry], int]] = []
    for item in inst.items:
        rel = [item[d] - off[d] for d in range(3)]
        g = rel[0] + size[0] * (rel[1] + size[1] * rel[2])
        got: dict[tuple[int, int, int], list[int]] = {}
        for row, (site, slot, lane, part) in enumerate(inst.dense):
            k = row * n + g
            bits = int(words[k]) if 0 <= g < n and k < words.size else 0
            got.setdefault((site, slot, lane), [0, 0])[part] = bits
        order = sorted(got, key=lambda key: (key[0], key[1] == 0, key[1], key[2]))
        out.append(([Entry(s, 0, sl, ln, *got[s, sl, ln]) for s, sl, ln in order], 0))
    return out


def decode(raw: npt.NDArray[np.uint8], n_sites: int, n_items: int,
           addresses: list[Addresses] | None = None) -> list[tuple[list[Entry], int]]:
    """Each work-item's entries (in the order it recorded them) and its dropped count; its
    addresses (not compared: they differ between devices) into ``addresses``."""
    words = np.frombuffer(raw.tobytes(), dtype="<u4")
    out: list[tuple[list[Entry], int]] = []
    s = stride(n_sites)
    for k in range(n_items):
        sl = words[k * s : (k + 1) * s]
        got = Addresses()
        if addresses is not None:
            addresses.append(got)
        if sl.size < s:
            out.append(([], 0))
            continue
        n = min(int(sl[0]), CAP)
        e = sl[HEADER : HEADER + 4 * n].reshape(n, 4)
        entries = []
        for r in e:
            x = Entry(int(r[0]), int(r[1]) & 0xFFFF, (int(r[1]) >> 16) & 0xFF, int(r[1]) >> 24,
                      int(r[2]), int(r[3]))  # fmt: skip
            if x.site == BASE_SITE:
                got.bases[x.slot] = x.lo | (x.hi << 32)
            elif x.slot & ADDRESS:
                got.operands[x.site, x.iteration, x.slot & ~ADDRESS] = x.lo | (x.hi << 32)
            else:
                entries.append(x)
        out.append((entries, int(sl[1])))
    return out


def run_raw(runs: Runs, inst: Instrumented, devices: list[Device], timeout: float,
            cancel: CancelToken | None, report: ProgressFn) -> dict[str, tuple[Outputs, Any]]:
    """The instrumented kernel once on each device (a build failure is that device's
    error): per device id its outputs and the trace buffer's bytes (None: not read back)."""
    work = lifecycle.temp_dir("explain")
    try:
        try:
            plan = traced_plan(runs.plan, inst, runs.root, work / "src")
        except VariantError as exc:
            err = Outputs(error=f"refused: {exc}")
            return {d["id"]: (err, None) for d in devices}
        got: dict[str, dict[str, Outputs]] = {BASE_ID: {}}
        # the traced plan as the base configuration: one run per device, where the
        # explanation's other runs happened (here, or on a fleet column's host)
        runs.device_runs(plan, [], devices, runs.root, timeout, got, cancel, report)
    finally:
        lifecycle.remove(work)
    out: dict[str, tuple[Outputs, Any]] = {}
    for d in devices:
        res = got[BASE_ID].get(d["id"]) or Outputs(error="not run")
        raw = res.data.pop(TRACE_MEM, None)
        if raw is None and res.error is None:
            res.error = "the trace buffer was not read back"
        out[d["id"]] = (res, raw if res.error is None else None)
    return out


def run_traced(runs: Runs, inst: Instrumented, devices: list[Device], timeout: float,
               cancel: CancelToken | None, report: ProgressFn) -> Traced:  # fmt: skip
    """The instrumented kernel once on each device, its traces decoded."""
    traced = Traced({}, {})
    for dev, (out, raw) in run_raw(runs, inst, devices, timeout, cancel, report).items():
        if raw is not None:
            if inst.dense is None:
                traced.addresses[dev] = []
                traced.entries[dev] = decode(raw, len(inst.sites), len(inst.items),
                                             traced.addresses[dev])  # fmt: skip
            else:
                traced.entries[dev] = decode_dense(raw, inst, runs.plan)
        traced.outputs[dev] = out
    return traced
