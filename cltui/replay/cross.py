"""What the replayed outputs say across devices and repetitions: each further device's
outputs against the first device's, and a probed result's outputs per repetition."""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import numpy.typing as npt

from cltui.replay.engine import compare as cmp
from cltui.replay.engine.schema import (
    ArgTolerance,
    CheckResult,
    CrossCheck,
    DeviceResult,
    Manifest,
    ToleranceSpec,
)


def cross_compare(
    plan: Manifest,
    results: list[DeviceResult],
    tolerance: ToleranceSpec | None = None,
    arg_tolerance: ArgTolerance | None = None,
) -> list[CrossCheck]:
    """Each further device's replayed outputs against the first device's."""
    usable = [r for r in results if r.get("steps") and not r.get("partial")]
    if len(usable) < 2:
        return []
    base = usable[0]
    tol = cmp.Tolerance.from_dict(plan.get("tolerance")).merged(tolerance)
    out: list[CrossCheck] = []
    base_checks = {
        (st["enqueue"], c["mem"]): c
        for st in base["steps"]
        for c in st["checks"]
        if c.get("output")
    }
    for other in usable[1:]:
        for st in other["steps"]:
            for c in st["checks"]:
                ref = base_checks.get((st["enqueue"], c["mem"]))
                if ref is None or not c.get("output"):
                    continue
                t = tol.merged(c.get("tolerance"))
                for a in c.get("args", []):
                    t = t.merged((arg_tolerance or {}).get(int(a)))
                res = _compare(ref, c, t)
                if res is None:
                    continue
                entry = {
                    "enqueue": st["enqueue"],
                    "kernel": st["kernel"],
                    "mem": c["mem"],
                    "label": c.get("label", c["mem"]),
                    "a": base["device"]["id"],
                    "b": other["device"]["id"],
                    "status": res.status,
                    "summary": res.summary(),
                    "result": res.to_dict(),
                }
                # compare.CompareResult: a str status and a plain dict (the schema's shape)
                out.append(cast(CrossCheck, entry))
    return out


def _compare(ref: CheckResult, c: CheckResult, t: cmp.Tolerance) -> cmp.CompareResult | None:
    """Two devices' bytes of one output (None when either file cannot be read)."""
    try:
        a_data = np.fromfile(str(ref["output"]), dtype=np.uint8)
        b_data = np.fromfile(str(c["output"]), dtype=np.uint8)
    except OSError:
        return None
    return cmp.compare_bytes(a_data, b_data, c.get("dtype"), t, c.get("shape"))


Outputs = dict[tuple[int, str], npt.NDArray[np.uint8]]


def probe_runs(result: DeviceResult) -> list[Outputs]:
    """A probed device result's outputs, one mapping (enqueue, mem) -> bytes per repetition.

    Repetitions whose bytes equal repetition 0's share its file (and its array here).
    Empty when the result has no ``probe`` entry (an error, or not probed).
    """
    probe: dict[str, Any] = result.get("probe") or {}  # the child's JSON
    runs: list[Outputs] = [{} for _ in range(int(probe.get("runs", 0)))]
    loaded: dict[str, npt.NDArray[np.uint8]] = {}
    for o in probe.get("outputs", []):
        for rep, path in enumerate(o["files"]):
            if path not in loaded:
                try:
                    loaded[path] = np.fromfile(path, dtype=np.uint8)
                except OSError:
                    continue
            runs[rep][(int(o["enqueue"]), str(o["mem"]))] = loaded[path]
    return runs
