"""**Which line**: the first statement whose value differs between the two devices.

The kernel is instrumented (:mod:`.instrument`) for a few work-items (the differing ones
and equal neighbours, or the user's ``--items``), run on both devices (:mod:`.trace`), and
each work-item's two traces are walked in program order: the first entry that differs is
either a statement's value with its operands still equal (the devices part at this
expression) or an operand (a value read from memory that already differs: the cause is
upstream, in another work-item or outside the recorded statements).  The instrumented
kernel's outputs are checked against the original's on each device.

The section is a plain dict (``line`` of the report, see ``docs/cli.schema.json``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cltui.analysis.explain.divergence import scalars
from cltui.analysis.explain.instrument import Instrumented, InstrumentError, Site, instrument
from cltui.analysis.explain.run import Runs
from cltui.analysis.explain.trace import Entry, Traced, run_traced
from cltui.errors import CltuiError
from cltui.progress import CancelToken, ProgressFn, no_progress
from cltui.replay.engine.dtypes import make_dtype
from cltui.replay.experiment.worker import BASE_ID

__all__ = ["MAX_DIFFERING", "choose_items", "explain_line", "parse_items", "trace_section", "value"]

MAX_DIFFERING = 6  # differing work-items traced
NEIGHBOURS = 2  # equal work-items traced next to them

Item = tuple[int, int, int]


def parse_items(texts: list[str]) -> list[Item]:
    """``--items`` values: work-items ``X[,Y[,Z]]``, several to a value (spaces between)."""
    out: list[Item] = []
    for text in texts:
        for word in text.split():
            try:
                nums = [int(p) for p in word.split(",")]
            except ValueError:
                raise CltuiError(f"--items {word!r}: a work-item is X, X,Y or X,Y,Z "
                                 "(global ids)") from None  # fmt: skip
            if not 1 <= len(nums) <= 3 or min(nums) < 0:
                raise CltuiError(f"--items {word!r}: a work-item is X, X,Y or X,Y,Z "
                                 "(global ids)")  # fmt: skip
            item = [*nums, 0, 0][:3]
            out.append((item[0], item[1], item[2]))
    return list(dict.fromkeys(out))


def _coords(linear: int, size: list[int]) -> Item:
    total = int(np.prod(size)) if size else 1
    linear %= max(total, 1)
    out = []
    for s in [*size, 1, 1][:3]:
        out.append(linear % max(s, 1))
        linear //= max(s, 1)
    return (out[0], out[1], out[2])


def differing_items(runs: Runs) -> tuple[list[int], int]:
    """The items (linear) whose output elements differ between the devices, and how many
    items the outputs hold."""
    a, b = (runs.runs[BASE_ID].get(d["id"]) for d in runs.devices)
    found: set[int] = set()
    total = 0
    if a is None or b is None:
        return [], 0
    for c in runs.checks:
        da, db = a.data.get(c["mem"]), b.data.get(c["mem"])
        if da is None or db is None or da.size != db.size:
            continue
        dt = make_dtype(c.get("dtype"))
        va, lanes = scalars(da, dt)
        vb, _ = scalars(db, dt)
        if va.dtype.kind == "V":
            diff = va != vb
        else:
            u = f"u{va.dtype.itemsize}"
            diff = va.view(u) != vb.view(u)
        total = max(total, va.size // max(lanes, 1))
        found.update(int(i) // max(lanes, 1) for i in np.flatnonzero(diff)[:100_000])
    return sorted(found), total


def choose_items(runs: Runs) -> list[Item]:
    """The differing work-items (the first ones and some spread over the rest) and equal
    neighbours of the first."""
    differ, total = differing_items(runs)
    if not differ:
        return []
    size = [int(g) for g in runs.plan["steps"][0]["global"]]
    k = MAX_DIFFERING // 2
    spread = differ[k :: max(1, (len(differ) - k) // k)][:k] if len(differ) > k else []
    chosen = list(dict.fromkeys(differ[:k] + spread))
    diffset = set(differ)
    near = [i for d in differ[:k] for i in (d - 1, d + 1)
            if 0 <= i < max(total, 1) and i not in diffset]  # fmt: skip
    chosen += list(dict.fromkeys(near))[:NEIGHBOURS]
    return list(dict.fromkeys(_coords(i, size) for i in chosen))


_SIGNED = {"char": 8, "short": 16, "int": 32, "long": 64}


def value(kind: str, lo: int, hi: int) -> float | int:
    """A recorded scalar as Python (a float keeps its float32 value)."""
    if kind == "float":
        return float(np.array([lo], np.uint32).view(np.float32)[0])
    if kind == "double":
        return float(np.array([lo | (hi << 32)], np.uint64).view(np.float64)[0])
    if kind == "half":
        return float(np.array([lo], np.uint16).view(np.float16)[0])
    bits = lo | (hi << 32) if kind in ("long", "ulong") else lo
    width = _SIGNED.get(kind)
    if width is not None:
        bits &= (1 << width) - 1
        if bits >> (width - 1):
            bits -= 1 << width
    return bits


def _values(entries: list[Entry], start: int, site: Site, slot: int) -> list[float | int]:
    """The lanes of one slot of the statement run whose entries surround ``start``."""
    key = (entries[start].site, entries[start].iteration)
    kind = site.kind if slot == 0 else site.operands[slot - 1].kind
    return [value(kind, e.lo, e.hi) for e in entries
            if (e.site, e.iteration) == key and e.slot == slot]  # fmt: skip


def _first(site_of: list[Site], ea: list[Entry], eb: list[Entry],
           dense: bool = False) -> dict[str, Any] | None:  # fmt: skip
    """Where one work-item's two traces first differ (None: they do not)."""
    for k, (x, y) in enumerate(zip(ea, eb, strict=False)):
        if (x.site, x.iteration, x.slot, x.lane) != (y.site, y.iteration, y.slot, y.lane):
            s = site_of[x.site]
            return {"kind": "paths", "index": k, "site": s.id, "line": s.line,
                    "iteration": x.iteration}  # fmt: skip
        if (x.lo, x.hi) == (y.lo, y.hi):
            continue
        s = site_of[x.site]
        ops = []
        for n, op in enumerate([] if dense else s.operands, start=1):
            va, vb = _values(ea, k, s, n), _values(eb, k, s, n)
            ops.append({"text": op.text, "a": va, "b": vb, "equal": va == vb})
        out = {"kind": "here" if x.slot == 0 else "upstream", "index": k, "site": s.id,
               "line": s.line, "iteration": x.iteration, "lane": x.lane,
               "a": _values(ea, k, s, 0), "b": _values(eb, k, s, 0), "operands": ops,
               "operands_equal": all(o["equal"] for o in ops) if x.slot == 0 else False}
        if x.slot:
            out["operand"] = s.operands[x.slot - 1].text
        if dense:  # no operand recorded: every statement before it agrees
            out["earlier_agree"] = True
        return out
    if len(ea) != len(eb):
        k = min(len(ea), len(eb))
        s = site_of[(ea if len(ea) > k else eb)[k].site]
        return {"kind": "paths", "index": k, "site": s.id, "line": s.line, "iteration": 0}
    return None


def _same_outputs(runs: Runs, traced: Traced) -> dict[str, bool | None]:
    out: dict[str, bool | None] = {}
    for key, d in zip("ab", runs.devices, strict=True):
        base, inst = runs.runs[BASE_ID].get(d["id"]), traced.outputs.get(d["id"])
        if base is None or inst is None or base.error or inst.error:
            out[key] = None
            continue
        out[key] = all(m in inst.data and np.array_equal(v, inst.data[m])
                       for m, v in base.data.items())  # fmt: skip
    return out


def explain_line(runs: Runs, items: list[Item] | None = None, *, timeout: float = 60.0,
                 cancel: CancelToken | None = None,
                 progress: ProgressFn | None = None) -> dict[str, Any]:  # fmt: skip
    """The ``line`` section of the report (see the module doc)."""
    return trace_section(runs, items, timeout=timeout, cancel=cancel, progress=progress)[0]


def trace_section(runs: Runs, items: list[Item] | None = None, *, timeout: float = 60.0,
                  cancel: CancelToken | None = None, progress: ProgressFn | None = None
                  ) -> tuple[dict[str, Any], Instrumented | None, Traced | None]:  # fmt: skip
    """:func:`explain_line`, with the instrumentation and the traces it compared (None when
    it traced nothing)."""
    chosen = items if items else choose_items(runs)
    head: dict[str, Any] = {"items": [list(i) for i in chosen],
                            "chosen": "given" if items else "automatic"}  # fmt: skip
    if not chosen:
        return {**head, "status": "no-divergence",
                "text": "no divergence: no work-item's outputs differ"}, None, None  # fmt: skip
    if runs.source is None:
        return ({**head, "status": "not-run", "text": "the program has no source in the "
                 "capture"}, None, None)  # fmt: skip
    try:
        inst = instrument(runs.source, runs.kernel, runs.options, chosen)
    except InstrumentError as exc:
        return {**head, "status": "not-run", "text": f"not instrumented: {exc}"}, None, None
    traced = run_traced(runs, inst, runs.devices, timeout, cancel, progress or no_progress)
    if False in _same_outputs(runs, traced).values() and _dense_fits(runs, inst):
        # recording changed how a device compiles the kernel: every work-item then
        # stores each value in its own place, with no counter and no branch
        dense = instrument(runs.source, runs.kernel, runs.options, chosen, dense=True)
        again = run_traced(runs, dense, runs.devices, timeout, cancel,
                           progress or no_progress)  # fmt: skip
        if False not in _same_outputs(runs, again).values():
            head["recording"] = ("dense: the last run of each statement, every work-item "
                                 "(the counting trace changed a device's outputs)")
            return _compare(runs, dense, again, head), dense, again
    return _compare(runs, inst, traced, head), inst, traced


DENSE_MAX_BYTES = 256 << 20


def _dense_fits(runs: Runs, inst: Instrumented) -> bool:
    """Whether a dense trace (two words a lane of each record) stays within
    :data:`DENSE_MAX_BYTES`."""
    from cltui.analysis.explain.trace import work_items

    words = sum(2 * s.lanes * (1 + len(s.operands)) for s in inst.sites)
    return 4 * words * work_items(runs.plan) <= DENSE_MAX_BYTES


def _compare(runs: Runs, inst: Instrumented, traced: Traced,
             head: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    head.update(sites=len(inst.sites), skipped=inst.skipped,
                same_outputs=_same_outputs(runs, traced),
                instrumented_source=inst.source)  # (for a bug report's bundle)
    errors = [f"{d['name']}: {o.error if o else 'not run'}" for d in runs.devices
              for o in [traced.outputs.get(d["id"])] if o is None or o.error]  # fmt: skip
    if errors:
        return {**head, "status": "not-run",
                "text": "the instrumented kernel did not run (" + "; ".join(errors) + ")"}
    ta, tb = (traced.entries[d["id"]] for d in runs.devices)
    per: list[dict[str, Any]] = []
    dropped = 0
    for item, (ea, da), (eb, db) in zip(inst.items, ta, tb, strict=True):
        dropped += da + db
        per.append({"item": list(item),
                    "first": _first(inst.sites, ea, eb, inst.dense is not None)})
    head.update(per_item=per, dropped=dropped)
    found = [p for p in per if p["first"] is not None]
    here = [p for p in found if p["first"]["kind"] == "here"]
    pick = min(here or found, key=lambda p: p["first"]["index"]) if found else None
    changed = [d["name"] for k, d in zip("ab", runs.devices, strict=True)
               if head["same_outputs"].get(k) is False]  # fmt: skip
    if pick is None and changed:
        return {**head, "status": "no-difference",
                "text": "not found: the instrumented kernel computes other outputs than the "
                f"original on {' and '.join(changed)} (recording changes how it is "
                "compiled) and its traces agree"}  # fmt: skip
    if pick is None:
        return {**head, "status": "no-difference",
                "text": "the traced statements agree for every chosen work-item (the "
                "difference is in a statement that is not recorded, or after the "
                "recorded iterations)"}  # fmt: skip
    f = pick["first"]
    site = inst.sites[f["site"]]
    lines = (runs.source or "").splitlines()
    src = lines[site.line - 1] if 0 < site.line <= len(lines) else ""
    status = {"here": "found", "upstream": "upstream", "paths": "paths"}[f["kind"]]
    return {**head, "status": status, "item": pick["item"], "site": site.to_dict(),
            "source_line": src, "first": f, "text": _text(status, site, pick["item"], f)}


def _text(status: str, site: Site, item: list[int], f: dict[str, Any]) -> str:
    at = f"line {site.line} ({site.function}): {site.target} = {site.expr}"
    who = f"work-item ({', '.join(str(i) for i in item)})"
    if status == "paths":
        return f"the devices take different paths for {who} near line {site.line}"
    if status == "upstream":
        return (f"{at}: its operand {f['operand']} already differs for {who}: the value "
                "comes from memory written elsewhere (the cause is upstream)")
    if f.get("earlier_agree"):
        return f"{at}: the value differs for {who} while every statement before it agrees"
    return f"{at}: the value differs for {who} while its operands are equal"


def explain_line_safe(runs: Runs, items: list[Item] | None = None,
                      keep: list[Any] | None = None, **kw: Any) -> dict[str, Any]:  # fmt: skip
    """:func:`explain_line`, a failure one line of the section rather than an exception
    (``keep``: the instrumentation and the traces appended, for the walk)."""
    try:
        sec, inst, traced = trace_section(runs, items, **kw)
        if keep is not None and inst is not None and traced is not None:
            keep.append((inst, traced))
        return sec
    except CltuiError as exc:
        return {"items": [list(i) for i in items or []], "status": "not-run", "text": str(exc)}


def with_line(report: dict[str, Any], runs: Runs, items: list[Item] | None = None,
              keep: list[Any] | None = None, **kw: Any) -> dict[str, Any]:  # fmt: skip
    """The report with its ``line`` section: traced when an output differs (or the user
    named work-items), else "no divergence"."""
    if report["where"] or items:
        report["line"] = explain_line_safe(runs, items, keep, **kw)
        if not report["where"] and report["line"]["status"] == "no-difference":
            report["line"]["text"] = "the traced statements agree for every chosen work-item"
    elif report["verdict"]["status"] == "no-divergence":
        report["line"] = {"items": [], "chosen": "automatic", "status": "no-divergence",
                          "text": "no divergence: every output is bit-exact between the "
                          "devices"}  # fmt: skip
    return report
