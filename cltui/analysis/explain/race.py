"""Which work-items race: when an enqueue's outputs differ between runs on the same device
(:func:`.judge.order_runs`), the elements that differ are watched (:mod:`.watch`) in a run
on each device: every work-item's store to them, with its line and the value it wrote.  Two
work-items that write one element with nothing ordering them (other work-groups, or one
work-group with no barrier between the two stores) are a write-write race, named with both
lines; an element that one work-item alone writes says the race is upstream of it (in what
that work-item read).

The section is a plain dict (``why.race`` of the report, see ``docs/cli.schema.json``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cltui.analysis.explain.causes import REVERSED
from cltui.analysis.explain.divergence import scalars
from cltui.analysis.explain.instrument import InstrumentError
from cltui.analysis.explain.judge import order_runs
from cltui.analysis.explain.line import value
from cltui.analysis.explain.linetext import item_text, value_text
from cltui.analysis.explain.run import AGAIN, Runs
from cltui.analysis.explain.source import Base
from cltui.analysis.explain.watch import STORE, Access, Target, Watched, run_watch, watch_source
from cltui.errors import CltuiError
from cltui.progress import CancelToken, ProgressFn, no_progress
from cltui.replay.engine.dtypes import make_dtype
from cltui.replay.engine.schema import Device
from cltui.replay.experiment.worker import BASE_ID

__all__ = ["MAX_ELEMENTS", "name_race", "with_race"]

MAX_ELEMENTS = 4  # differing elements watched
SHOWN = 4  # writes named in the text (the JSON has every one)
_DTYPES = {"float": "float32", "double": "float64", "half": "float16"}


def _targets(runs: Runs, key: str, pid: str) -> list[tuple[Target, str, int]]:
    """The first differing elements between the device's first run and run ``pid``: the
    watched element, the output's label and the element's index."""
    dev = runs.devices[0 if key == "a" else 1]["id"]
    first, other = runs.runs[BASE_ID][dev], runs.runs[pid][dev]
    step = runs.plan["steps"][0]
    names = {int(a["index"]): str(a.get("name") or "") for a in step["args"]}
    out: list[tuple[Target, str, int]] = []
    for c in runs.checks:
        x, y = first.data.get(c["mem"]), other.data.get(c["mem"])
        args = [int(a) for a in c.get("args") or []]
        if x is None or y is None or x.size != y.size or not args or not names.get(args[0]):
            continue
        vx, _ = scalars(x, make_dtype(c.get("dtype")))
        vy, _ = scalars(y, make_dtype(c.get("dtype")))
        size = vx.dtype.itemsize
        u = f"u{size}" if size in (1, 2, 4, 8) else None
        diff = (vx.view(u) != vy.view(u)) if u else (vx != vy)
        for i in np.flatnonzero(diff)[: MAX_ELEMENTS - len(out)]:
            base = Base(names[args[0]], args[0], None)
            out.append((Target(base, int(i) * size), c["label"], int(i)))
    return out


def _group(item: tuple[int, int, int], runs: Runs) -> tuple[int, int, int]:
    step = runs.plan["steps"][0]
    local = [int(x) for x in (step.get("local") or [])] + [1, 1, 1]
    off = [int(x) for x in (step.get("offset") or [])] + [0, 0, 0]
    return (item[0] - off[0]) // max(local[0], 1), (item[1] - off[1]) // max(local[1], 1), (
        item[2] - off[2]) // max(local[2], 1)


def _write(a: Access, runs: Runs, sites: list[Any], lines: list[str]) -> dict[str, Any]:
    s = sites[a.site]
    v = value(s.kind, a.lo, a.hi) if s.lanes == 1 or a.offset == 0 else None
    return {"item": list(a.item), "group": list(_group(a.item, runs)), "site": s.to_dict(),
            "line": s.line, "statement": f"{s.target} = {s.expr}",
            "source_line": lines[s.line - 1] if 0 < s.line <= len(lines) else "",
            "value": v, "value_text": value_text(v, _DTYPES.get(s.kind, s.kind)),
            "epoch": a.epoch}  # fmt: skip


def _unordered(x: dict[str, Any], y: dict[str, Any]) -> bool:
    """Whether nothing orders two stores of other work-items: other work-groups, or the same
    work-group between the same barriers."""
    return bool(x["item"] != y["item"] and (x["group"] != y["group"] or x["epoch"] == y["epoch"]))


def _element(t: Target, label: str, index: int, stores: list[Access], runs: Runs,
             sites: list[Any], lines: list[str]) -> dict[str, Any]:  # fmt: skip
    writes: list[dict[str, Any]] = []
    seen: set[tuple[tuple[int, int, int], int]] = set()
    for a in stores:
        if (a.item, a.site) not in seen:
            seen.add((a.item, a.site))
            writes.append(_write(a, runs, sites, lines))
    racing = any(_unordered(x, y) for x in writes for y in writes)
    where = label.replace(" (", ", ").removesuffix(")") if label.startswith("arg ") else label
    what = f"element {index} of {t.base.name} ({where})"
    if racing:
        by = "; ".join(f"work-item {item_text(w['item'])} (work-group {item_text(w['group'])}) "
                       f"on line {w['line']}: {w['statement']} ({w['value_text']})"
                       for w in writes[:SHOWN])  # fmt: skip
        if len(writes) > SHOWN:
            more = sorted({w["line"] for w in writes[SHOWN:]})
            by += (f"; and {len(writes) - SHOWN} more on line"
                   f"{'s' if len(more) > 1 else ''} {', '.join(str(x) for x in more)}")
        groups = {tuple(w["group"]) for w in writes}
        why = ("other work-groups: nothing orders them" if len(groups) > 1 else
               "one work-group with no barrier between the stores")  # fmt: skip
        text = f"{what} is written by {len({tuple(w['item']) for w in writes})} work-items " \
               f"({why}): {by}"
    elif writes:
        w = writes[0]
        text = (f"{what} is written by work-item {item_text(w['item'])} alone, on line "
                f"{w['line']}: {w['statement']}: the race is upstream (in what it read)")
    else:
        text = f"{what}: no recorded statement stores to it (an atomic, a vstore or a macro)"
    return {"output": label, "element": index, "base": t.base.name, "race": racing,
            "writes": writes, "text": text}  # fmt: skip


def _upstream(runs: Runs, dev: Device, element: dict[str, Any], timeout: float,
              cancel: CancelToken | None, progress: ProgressFn) -> dict[str, Any] | None:
    """The memory its one writer read for an element that one work-item alone writes,
    watched: its writers (None when it read no memory, or nothing was found)."""
    from cltui.analysis.explain.instrument import instrument
    from cltui.analysis.explain.trace import run_traced
    from cltui.analysis.explain.walk import arg_size, element_size, locate

    w = element["writes"][0]
    x, y, z = (int(v) for v in w["item"])
    item = (x, y, z)
    inst = instrument(runs.source or "", runs.kernel, runs.options, [item])
    traced = run_traced(runs, inst, [dev], timeout, cancel, progress)
    got = traced.addresses.get(dev["id"]) or []
    site = inst.sites[int(w["site"]["id"])]
    found: list[tuple[Target, str]] = []
    for slot, op in enumerate(site.operands, start=1):
        addr = got[0].operands.get((site.id, 0, slot)) if got and op.memory else None
        at = locate(runs, inst.bases, got[0].bases, addr, op.text) if addr is not None \
            else None
        if at is not None:
            base = inst.bases[at[0]]
            local = arg_size(runs, base)[1]
            found.append((Target(base, at[1], _group(item, runs) if local else None), op.text))
    if not found:
        return None
    watch = watch_source(runs.source or "", runs.kernel, runs.options, [t for t, _ in found])
    seen = run_watch(runs, watch, [dev], timeout, cancel, progress)
    acc = seen.accesses.get(dev["id"])
    if acc is None:
        return None
    lines = (runs.source or "").splitlines()
    for k, (t, text) in enumerate(found):
        op = next(o for o in site.operands if o.text == text)
        esize = element_size(op.kind, op.lanes)
        label = "__local, work-group " + item_text(t.group) if t.group else "global"
        e = _element(t, label, t.offset // esize, [a for a in acc if a.kind == STORE
                                                   and a.target == k], runs, inst.sites, lines)
        if e["race"]:
            e["read_by"] = {"item": list(item), "line": site.line, "operand": text,
                            "for": f"element {element['element']} of {element['base']}"}
            e["text"] = (f"work-item {item_text(item)} reads {text} on line {site.line} for "
                         f"element {element['element']} of {element['base']}: " + e["text"])
            return e
    return None


def name_race(runs: Runs, *, timeout: float = 60.0, cancel: CancelToken | None = None,
              progress: ProgressFn | None = None) -> dict[str, Any] | None:  # fmt: skip
    """The ``race`` section (see the module doc); None when the runs show no order
    dependence."""
    order, how = order_runs(runs)
    key = next((k for k in ("a", "b") if order.get(k)), None)
    if key is None or runs.source is None:
        return None
    pid = AGAIN if how[key] == "a second run" else REVERSED
    targets = _targets(runs, key, pid)
    if not targets:
        return {"status": "not-run", "text": "the differing elements are not in a kernel "
                "argument's buffer", "elements": []}  # fmt: skip
    try:
        inst = watch_source(runs.source, runs.kernel, runs.options, [t for t, _l, _i in targets])
    except InstrumentError as exc:
        return {"status": "not-run", "text": f"not instrumented: {exc}", "elements": []}
    dev = runs.devices[0 if key == "a" else 1]
    try:
        got: Watched = run_watch(runs, inst, [dev], timeout, cancel, progress or no_progress)
    except CltuiError as exc:
        return {"status": "not-run", "text": str(exc), "elements": []}
    if dev["id"] not in got.accesses:
        return {"status": "not-run", "text": f"the watch run did not run on {dev['name']}: "
                f"{got.errors.get(dev['id'], 'not run')}", "elements": []}  # fmt: skip
    lines = runs.source.splitlines()
    acc = got.accesses[dev["id"]]
    elements = [_element(t, label, i, [a for a in acc if a.kind == STORE and a.target == k],
                         runs, inst.sites, lines)
                for k, (t, label, i) in enumerate(targets)]  # fmt: skip
    racing = [e for e in elements if e["race"]]
    single = [e for e in elements if e["writes"] and not e["race"]]
    if not racing and single:  # the race is in what the one writer read
        try:
            up = _upstream(runs, dev, single[0], timeout, cancel, progress or no_progress)
        except CltuiError:
            up = None
        if up is not None:
            elements.append(up)
            racing = [up]
    status = "write-write" if racing else "upstream"
    head = ("a write-write race: " if racing else "no two work-items write one of the "
            "differing elements: ")  # fmt: skip
    text = head + "; ".join(e["text"] for e in (racing or elements))
    return {"status": status, "device": dev["name"], "text": text, "elements": elements,
            "dropped": got.dropped.get(dev["id"], 0), "watched": len(targets)}  # fmt: skip


def with_race(report: dict[str, Any], runs: Runs, **kw: Any) -> dict[str, Any]:
    """The report with its race named when its outputs differ between runs on one device:
    ``why.race``, the cause's text, and (when the devices agree) the ``line`` section."""
    why = report.get("why") or {}
    if why.get("cause") != "order dependence":
        return report
    race = name_race(runs, **kw)
    if race is None:
        return report
    why["race"] = race
    if race["status"] != "write-write":
        return report
    generic = "a data race (work-items write, or write and read, the same location without " \
              "a barrier or an atomic between them)"
    why["text"] = why["text"].replace(generic, race["text"])
    report["verdict"]["line"] = report["verdict"]["line"].replace(generic, race["text"])
    line = report.get("line")
    if line is None or line.get("status") in ("no-divergence", "no-difference"):
        writes = [{**w, "element": e["element"], "base": e["base"]}
                  for e in race["elements"] if e["race"] for w in e["writes"]]  # fmt: skip
        w = writes[0]
        items = list(dict.fromkeys(tuple(x["item"]) for x in writes))
        report["line"] = {"items": [list(i) for i in items], "chosen": "automatic",
                          "status": "race", "item": w["item"], "site": w["site"],
                          "source_line": w["source_line"], "text": race["text"],
                          "writes": writes}  # fmt: skip
    return report
