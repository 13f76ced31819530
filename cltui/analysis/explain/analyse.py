"""The explanation of one enqueue from its runs (:mod:`.run`): **where** the two devices'
outputs differ (a divergence map per output), **why** (the controlled rebuild that makes the
difference go, else built-in accuracy, else unknown; a second run on each device for order
dependence), and the verdict that leads every output.

The report is a plain dict (``docs/cli.schema.json``, ``explain``): ``where`` and ``why``
are sections of their own, so that a ``line`` section (the first diverging statement) can
join them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cltui.analysis.explain.causes import ACCURACY, BUMPED, IMAGE_WRITE
from cltui.analysis.explain.divergence import divergence_map, scalars
from cltui.analysis.explain.judge import image_spec, order_cause, order_runs
from cltui.analysis.explain.rewrite import ULP_LIMITS, builtins_called
from cltui.analysis.explain.run import Runs
from cltui.replay.experiment.worker import BASE_ID

__all__ = ["explain_report"]


def _same(a: np.ndarray[Any, Any] | None, b: np.ndarray[Any, Any] | None) -> bool:
    return a is not None and b is not None and a.size == b.size and bool(np.array_equal(a, b))


def _differing(runs: Runs, pid: str, mems: list[str]) -> tuple[int | None, str | None]:
    """Elements that differ between the two devices in ``mems`` for point ``pid`` (None
    and why when a run is missing)."""
    a, b = (runs.runs.get(pid, {}).get(d["id"]) for d in runs.devices)
    for dev, out in zip(runs.devices, (a, b), strict=True):
        if out is None or out.error:
            return None, f"on {dev['name']}: {out.error if out else 'not run'}"
    assert a is not None and b is not None
    total = 0
    for c in runs.checks:
        if c["mem"] not in mems:
            continue
        da, db = a.data.get(c["mem"]), b.data.get(c["mem"])
        if da is None or db is None:
            return None, f"output {c['label']} missing"
        if not _same(da, db):
            total += divergence_map(da, db, c.get("dtype"), c.get("shape"))["differ"]
    return total, None


def _agreement(runs: Runs, mem: str, data: np.ndarray[Any, Any], check: dict[str, Any]) -> str:
    cap = runs.captured(mem)
    if cap is None:
        return "the capture holds no bytes of this output"
    if _same(cap, data):
        return "bit-exact"
    m = divergence_map(data, cap, check.get("dtype"), check.get("shape"))
    return f"{m['differ']:,} of {m['elements']:,} elements differ from it"


def _where(runs: Runs) -> list[dict[str, Any]]:
    a, b = (runs.runs[BASE_ID][d["id"]] for d in runs.devices)
    out: list[dict[str, Any]] = []
    for c in runs.checks:
        da, db = a.data.get(c["mem"]), b.data.get(c["mem"])
        if da is None or db is None or _same(da, db):
            continue
        m = divergence_map(da, db, c.get("dtype"), c.get("shape"), runs.captured(c["mem"]))
        out.append({
            "mem": c["mem"], "label": c["label"], "map": m,
            "capture": {"a": _agreement(runs, c["mem"], da, c),
                        "b": _agreement(runs, c["mem"], db, c)},
        })  # fmt: skip
    return out


def _builtins(runs: Runs, max_distance: float | None) -> dict[str, Any] | None:
    names = builtins_called(runs.source or "")
    if not names:
        return None
    limit = max(ULP_LIMITS[n] for n in names)
    within = max_distance is not None and max_distance <= 2 * limit
    limits = ", ".join(f"{n} {ULP_LIMITS[n]:g}" for n in names)
    return {
        "cause": "built-in accuracy",
        "text": (f"built-in accuracy (not removed by any rebuild; the kernel calls "
                 f"{', '.join(names)}: their ULP limits are {limits})"),
        "within_spec": True if within else None,
        "spec": (f"the largest difference, {max_distance:g} ULP, is at most {2 * limit:g} ULP: "
                 f"both devices within the {limit:g} ULP the specification allows"
                 if within else
                 f"the outputs differ by up to {max_distance:g} ULP, more than two results "
                 f"within {limit:g} ULP each can differ by directly (later arithmetic can "
                 "widen a difference): the specification does not settle it"),
        "builtins": [{"name": n, "ulp": ULP_LIMITS[n]} for n in names],
    }  # fmt: skip


def _within_limits(runs: Runs, where: list[dict[str, Any]], spec: str) -> tuple[bool | None, str]:
    """Whether every differing element is within what two devices whose built-ins keep
    their ULP limits can differ by, to first order: ``|a - b| <= 2 |P - R| + ulp``, where R
    is the output with the built-ins computed in double precision and P with each moved up
    by its limit (both on the first device), ulp the output's own rounding."""
    dev = runs.devices[0]["id"]
    outs = [runs.runs[BASE_ID].get(d["id"]) for d in runs.devices]
    ref, bumped = runs.runs.get(ACCURACY, {}).get(dev), runs.runs.get(BUMPED, {}).get(dev)
    parts = [ref, bumped, *outs]
    if any(p is None or p.error for p in parts):
        return None, spec + "; the bound could not be measured (a run is missing)"
    over = total = 0
    for w in where:
        c = next(c for c in runs.checks if c["mem"] == w["mem"])
        arrs = [p.data.get(w["mem"]) for p in parts if p is not None]
        if any(x is None for x in arrs):
            return None, spec + "; the bound could not be measured (an output is missing)"
        r, p, a, b = (scalars(x, _dtype(c))[0] for x in arrs if x is not None)
        if r.dtype.kind != "f":
            return None, spec + "; the bound is measured on float outputs only"
        n = min(r.size, p.size, a.size, b.size)
        r, p, a, b = r[:n], p[:n], a[:n], b[:n]
        diff = a.view(f"u{a.dtype.itemsize}") != b.view(f"u{b.dtype.itemsize}")
        room = 2 * np.abs(p.astype(np.float64) - r) + np.spacing(np.maximum(abs(a), abs(b)))
        gap = np.abs(a.astype(np.float64) - b)
        bad = diff & ~(gap <= room)
        over += int(np.count_nonzero(bad))
        total += int(np.count_nonzero(diff))
    if over == 0:
        return True, (f"{spec}; every one of the {total:,} differing elements is within what "
                      "two devices that keep these limits can differ by (measured: the "
                      "built-ins in double precision, then moved by their limits)")
    return None, (f"{spec}; {over:,} of {total:,} differing elements differ by more than "
                  "the limits explain to first order: the specification does not settle it")


def _dtype(c: dict[str, Any]) -> Any:
    from cltui.replay.engine.dtypes import make_dtype

    return make_dtype(c.get("dtype"))


def _why(runs: Runs, where: list[dict[str, Any]]) -> dict[str, Any]:
    mems = [w["mem"] for w in where]
    before = sum(int(w["map"]["differ"]) for w in where)
    tried: list[dict[str, Any]] = []
    for rb in runs.rebuilds:
        if rb.measure:
            continue
        left, error = _differing(runs, rb.id, mems)
        outcome = ("not run" if left is None else "removes it" if left == 0
                   else "reduces it" if left < before else "no change" if left == before
                   else "widens it")  # fmt: skip
        tried.append({"id": rb.id, "change": rb.change, "differ": left, "error": error,
                      "outcome": outcome})  # fmt: skip
    tried += [{"id": k, "change": why, "differ": None, "error": why, "outcome": "not run"}
              for k, why in runs.refused.items()]
    order, how = order_runs(runs)
    why: dict[str, Any] = {"rebuilds": tried, "order": order, "order_runs": how,
                           "builtins": None}
    by_id = {rb.id: rb for rb in runs.rebuilds}
    removes = [t for t in tried if t["outcome"] == "removes it"]
    reduces = sorted((t for t in tried if t["outcome"] == "reduces it"),
                     key=lambda t: t["differ"])  # fmt: skip
    worst = max((w["map"]["max"] or 0.0 for w in where), default=0.0)
    if any(order.values()):
        why.update(order_cause(runs, order, how))
    elif removes:
        rb = by_id[removes[0]["id"]]
        why.update(cause=rb.id, text=rb.cause, within_spec=rb.within_spec, spec=rb.spec,
                   rebuild=rb.change)  # fmt: skip
        if rb.id == ACCURACY and rb.within_spec is None:
            why["within_spec"], why["spec"] = _within_limits(runs, where, rb.spec)
        if rb.id == IMAGE_WRITE:
            why["within_spec"], why["spec"] = image_spec(runs, where)
    elif reduces:
        rb = by_id[reduces[0]["id"]]
        rest = _builtins(runs, worst)
        text = (f"{rb.cause}: {rb.change} leaves {reduces[0]['differ']:,} of {before:,} "
                "differing elements")
        if rest is not None:
            text += f"; the rest: {rest['text']}"
        why.update(cause=rb.id, text=text, rebuild=rb.change, builtins=rest,
                   within_spec=rb.within_spec if rest is None or rest["within_spec"]
                   else None, spec=rb.spec + (f"; {rest['spec']}" if rest else ""))
    else:
        rest = _builtins(runs, worst)
        if rest is not None:
            why.update(cause=rest["cause"], text=rest["text"], within_spec=rest["within_spec"],
                       spec=rest["spec"], builtins=rest)  # fmt: skip
        else:
            why.update(cause=None, text="unknown: no rebuild removes the difference and the "
                       "kernel calls no math built-in", within_spec=None,
                       spec="not determined")  # fmt: skip
    return why


def explain_report(runs: Runs, capture: str, enqueue: int) -> dict[str, Any]:
    """The whole report (see the module doc); ``verdict.status``: ``diverges``,
    ``no-divergence`` or ``incomplete``."""
    devs = [{"id": d["id"], "name": d["name"]} for d in runs.devices]
    head = {"capture": capture, "enqueue": enqueue, "kernel": runs.kernel,
            "program": runs.program, "options": runs.options,
            "devices": {"a": devs[0], "b": devs[1]}}  # fmt: skip
    names = f"{devs[0]['name']} vs {devs[1]['name']}"
    what = f"enqueue {enqueue} ({runs.kernel}) on {names}"
    missing = [f"{d['name']}: {o.error if o else 'not run'}" for d in runs.devices
               for o in [runs.runs[BASE_ID].get(d["id"])] if o is None or o.error]
    if runs.cancelled or missing:
        why_not = "cancelled" if runs.cancelled else "; ".join(missing)
        return {**head, "verdict": {"status": "incomplete",
                                    "line": f"INCOMPLETE: {what}: not replayed ({why_not})"},
                "where": [], "why": None}  # fmt: skip
    where = _where(runs)
    if not where:
        order, how = order_runs(runs)
        line = f"NO DIVERGENCE: {what}: every output is bit-exact between the devices"
        quiet: dict[str, Any] = {"order": order}
        if any(order.values()):
            quiet |= {"order_runs": how, **order_cause(runs, order, how)}
            line = (f"NO DIVERGENCE between the devices: {what}, but the outputs differ "
                    f"between runs on the same device; cause: {quiet['text']}; within the "
                    "OpenCL specification")
        return {**head, "verdict": {"status": "no-divergence", "line": line},
                "where": [], "why": quiet}  # fmt: skip
    why = _why(runs, where)
    line = f"DIVERGES: {what}: " + "; ".join(_amount(w) for w in where)
    line += f"; cause: {why['text']}"
    spec = why["within_spec"]
    line += ("; within the OpenCL specification" if spec is True
             else "; outside the OpenCL specification" if spec is False
             else "; the OpenCL specification does not settle it")
    status = "diverges"
    if why["cause"] is None and any(t["outcome"] == "not run" for t in why["rebuilds"]):
        status, line = "incomplete", "INCOMPLETE: " + line.removeprefix("DIVERGES: ") + (
            " (some rebuilds could not run)")
    return {**head, "verdict": {"status": status, "line": line}, "where": where, "why": why}


def _amount(w: dict[str, Any]) -> str:
    m = w["map"]
    most = f" (max {m['max']:g} {m['unit']})" if m["max"] is not None else ""
    return f"{w['label']}: {m['differ']:,} of {m['elements']:,} elements differ{most}"
