"""Two judgements of an explanation's runs (:mod:`.run`) that need more than one rebuild's
count: order dependence (a second run, and a run with every id read in reverse, on each
device) and whether each device's image writes keep the specification's conversion (each
device's outputs against its own run with the conversion done as the specification writes
it, :mod:`.imagewrite`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from cltui.analysis.explain.causes import IMAGE_WRITE, REVERSED
from cltui.analysis.explain.divergence import divergence_map, scalars
from cltui.analysis.explain.imagewrite import STEP_RULE
from cltui.analysis.explain.order import atomics_called
from cltui.analysis.explain.run import AGAIN, Runs
from cltui.analysis.explain.text import value_text
from cltui.replay.experiment.worker import BASE_ID

__all__ = ["ORDER_SPEC", "image_spec", "order_cause", "order_runs"]

_HOW = {AGAIN: "a second run", REVERSED: "the work-items in reverse order"}

ORDER_SPEC = ("the specification leaves the order work-items and work-groups run in open "
              "(a data race's result is undefined, the order atomics take effect in "
              "unspecified): any of these results is allowed, neither device is wrong; the "
              "program depends on the order")  # fmt: skip


def _same(a: Any, b: Any) -> bool:
    return a is not None and b is not None and a.size == b.size and bool(np.array_equal(a, b))


def order_runs(runs: Runs) -> tuple[dict[str, bool | None], dict[str, str | None]]:
    """Per device (a, b): True when a second run's or the reversed order's outputs differ
    from the first run's (None: no run to compare), and which run showed it."""
    order: dict[str, bool | None] = {}
    how: dict[str, str | None] = {}
    for key, dev in zip(("a", "b"), runs.devices, strict=False):
        first = runs.runs[BASE_ID].get(dev["id"])
        order[key], how[key] = None, None
        if first is None or first.error:
            continue
        for pid in (AGAIN, REVERSED):
            other = runs.runs.get(pid, {}).get(dev["id"])
            if other is None or other.error:
                continue
            if order[key] is None:
                order[key] = False
            if any(not _same(first.data.get(m), other.data.get(m)) for m in first.data):
                order[key], how[key] = True, _HOW[pid]
                break
    return order, how


def order_cause(runs: Runs, order: dict[str, bool | None], how: dict[str, str | None]
                ) -> dict[str, Any]:  # fmt: skip
    """The order-dependence cause (text, within the specification, why)."""
    which = "; ".join(f"{d['name']}, with {how[k]}" for k, d in zip("ab", runs.devices,
                                                                    strict=False) if order[k])
    atomics = atomics_called(runs.source or "")
    kind = (f"an order-dependent reduction or atomic update (the kernel calls "
            f"{', '.join(atomics)})" if atomics else
            "a data race (work-items write, or write and read, the same location without "
            "a barrier or an atomic between them)")  # fmt: skip
    return {"cause": "order dependence",
            "text": f"order dependence: the outputs differ between runs on the same device "
                    f"({which}){_between(runs, order, how)}: {kind}",
            "within_spec": True, "spec": ORDER_SPEC}  # fmt: skip


def _between(runs: Runs, order: dict[str, bool | None], how: dict[str, str | None]) -> str:
    """Where the first device that showed it differs between its runs (an output, how many
    elements, the first one with both values)."""
    key = next(k for k in ("a", "b") if order[k])
    dev = runs.devices[0 if key == "a" else 1]["id"]
    pid = next(p for p, h in _HOW.items() if h == how[key])
    first, other = runs.runs[BASE_ID][dev], runs.runs[pid][dev]
    for c in runs.checks:
        x, y = first.data.get(c["mem"]), other.data.get(c["mem"])
        if x is None or y is None or _same(x, y):
            continue
        m = divergence_map(x, y, c.get("dtype"), c.get("shape"))
        e = min(m["worst"], key=lambda e: e["index"]) if m["worst"] else None
        at = (f"; first: element {e['index']}, {value_text(e['a'], m['dtype'])} then "
              f"{value_text(e['b'], m['dtype'])}" if e else "")
        return f"; {c['label']}: {m['differ']:,} of {m['elements']:,} elements{at}"
    return ""


def image_spec(runs: Runs, where: list[dict[str, Any]]) -> tuple[bool | None, str]:
    """Whether each device's differing outputs are within one step of the specification's
    conversion (its own run with the conversion done in the kernel), and why."""
    bad: list[str] = []
    for dev in runs.devices:
        first = runs.runs[BASE_ID].get(dev["id"])
        ref = runs.runs.get(IMAGE_WRITE, {}).get(dev["id"])
        if first is None or ref is None or first.error or ref.error:
            return None, STEP_RULE + "; not measured (a run is missing)"
        over = total = 0
        sample = ""
        for w in where:
            c = next(c for c in runs.checks if c["mem"] == w["mem"])
            got, want = first.data.get(w["mem"]), ref.data.get(w["mem"])
            if got is None or want is None:
                return None, STEP_RULE + "; not measured (an output is missing)"
            dt = _dtype(c)
            g, _ = scalars(got, dt)
            r, _ = scalars(want, dt)
            n = min(g.size, r.size)
            if g.dtype.kind not in "iu":
                return None, STEP_RULE + "; measured on normalized integer channels only"
            gap = np.abs(g[:n].astype(np.int64) - r[:n].astype(np.int64))
            far = np.flatnonzero(gap > 1)
            over += int(far.size)
            total += int(np.count_nonzero(gap))
            if far.size and not sample:
                i = int(far[0])
                sample = f" (element {i}: {g[i]} where the conversion gives {r[i]})"
        if over:
            bad.append(f"{dev['name']} writes {over:,} channel values more than one step from "
                       f"the specification's conversion{sample}")
    if bad:
        return False, STEP_RULE + "; " + "; ".join(bad)
    return True, STEP_RULE + "; both devices' values are within one step of it"


def _dtype(c: dict[str, Any]) -> Any:
    from cltui.replay.engine.dtypes import make_dtype

    return make_dtype(c.get("dtype"))
