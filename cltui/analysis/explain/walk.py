"""The upstream walk: when the first difference of the ``line`` section (:mod:`.line`) is an
operand read from memory, follow it to where its value was produced.

Each step traces the work-item (:func:`.line.trace_section`); the differing operand's
address (recorded in the trace) is an offset into one of the kernel's memory parameters or
``__local`` arrays; a watch run (:mod:`.watch`) on both devices records every work-item's
store to that element and the work-item's read of it, in order; the last store before the
read is where the value came from.  The walk goes on in that work-item (its first
difference) until a statement parts the devices with its operands equal, or the value is
the enqueue's input (no store before the read: the capture's bytes, the same on both
devices; the earlier enqueue that wrote them is named), uninitialised ``__local`` memory,
written by other work-items on the two devices (a race), or :data:`MAX_STEPS` steps.

The section is a plain dict (``line.walk`` of the report, see ``docs/cli.schema.json``).
"""

from __future__ import annotations

import re
from typing import Any

from cltui.analysis.explain.instrument import Instrumented, InstrumentError, Site
from cltui.analysis.explain.line import Item, trace_section, value
from cltui.analysis.explain.linetext import item_text, value_text
from cltui.analysis.explain.run import Runs
from cltui.analysis.explain.source import Base
from cltui.analysis.explain.trace import Traced
from cltui.analysis.explain.watch import (
    READ,
    STORE,
    Access,
    Reader,
    Target,
    run_watch,
    watch_source,
)
from cltui.capture.capture import Capture
from cltui.errors import CltuiError
from cltui.progress import CancelToken, ProgressFn, no_progress

__all__ = ["MAX_STEPS", "arg_size", "element_size", "locate", "walk_upstream", "with_walk"]

MAX_STEPS = 4  # work-items the walk traces
_DTYPES = {"float": "float32", "double": "float64", "half": "float16"}
_ROOT = re.compile(r"[\s(*&]*([A-Za-z_]\w*)")  # the variable an operand reads through


def _vt(kind: str, lo: int, hi: int) -> str:
    return value_text(value(kind, lo, hi), _DTYPES.get(kind, kind))


def element_size(kind: str, lanes: int = 1) -> int:
    """Bytes of a value of a scalar kind and lanes (a 3-vector takes 4 lanes' room)."""
    one = {"char": 1, "uchar": 1, "short": 2, "ushort": 2, "half": 2, "long": 8, "ulong": 8,
           "double": 8}.get(kind, 4)
    return one * (4 if lanes == 3 else lanes)


def arg_size(runs: Runs, base: Base) -> tuple[int | None, bool]:
    """A base's size in bytes (None: not known) and whether it is ``__local`` memory."""
    if base.param is None:
        return base.size, True
    arg = next((a for a in runs.plan["steps"][0]["args"] if int(a["index"]) == base.param),
               None)  # fmt: skip
    if arg is None:
        return None, False
    if arg.get("kind") == "local":
        return int(arg.get("size") or 0) or None, True
    mem = runs.plan["memory"].get(str(arg.get("mem")))
    return (int(mem["size"]) if mem and mem.get("size") else None), False


def locate(runs: Runs, bases: list[Base], got: dict[int, int], addr: int,
           operand: str = "") -> tuple[int, int] | None:  # fmt: skip
    """(base, byte offset) of an address: the base it lies in (None: private memory, not a
    recorded base, or more than one base at the same distance that ``operand`` does not
    settle).  Address spaces may share numbers: Oclgrind counts each space's buffers from
    2**48, so a ``__local`` array and the first global buffer start at one address; the
    base ``operand`` names (``tile[i]``: tile) is the one it reads."""
    inside: list[tuple[int, int]] = []
    for k, b in enumerate(bases):
        at = got.get(k)
        if at is None or addr < at:
            continue
        size, _ = arg_size(runs, b)
        if size is not None and addr >= at + size:
            continue
        inside.append((k, addr - at))
    root = _ROOT.match(operand)
    named = [c for c in inside if root is not None and bases[c[0]].name == root.group(1)]
    if len(named) == 1:
        return named[0]
    nearest = sorted(inside, key=lambda c: c[1])
    if len(nearest) > 1 and nearest[0][1] == nearest[1][1]:
        return None
    return nearest[0] if nearest else None


def _group(runs: Runs, item: Item) -> Item:
    step = runs.plan["steps"][0]
    local = [int(x) for x in (step.get("local") or [])] + [1, 1, 1]
    off = [int(x) for x in (step.get("offset") or [])] + [0, 0, 0]
    g = [(item[d] - off[d]) // max(local[d], 1) for d in range(3)]
    return g[0], g[1], g[2]


def _earlier(cap: Capture | None, enqueue: int, param: int | None) -> str:
    """The enqueue that last wrote an argument's memory before ``enqueue`` (from the log)."""
    if cap is None or param is None:
        return ""
    from cltui.capture.history import HistoryUnavailable, neighbours_of

    try:
        last = neighbours_of(cap, (enqueue, param)).last_writer
    except (HistoryUnavailable, CltuiError, OSError):
        return ""
    if last is None or last.number is None:
        return "; the log shows no earlier enqueue that wrote it"
    return f"; it was last written before this enqueue by enqueue {last.number} ({last.what})"


def _read_of(acc: list[Access], iteration: int) -> Access | None:
    reads = [a for a in acc if a.kind == READ]
    return reads[min(iteration, len(reads) - 1)] if reads else None


class _Walker:
    def __init__(self, runs: Runs, cap: Capture | None, timeout: float,
                 cancel: CancelToken | None, progress: ProgressFn) -> None:  # fmt: skip
        self.runs, self.cap, self.timeout = runs, cap, timeout
        self.cancel, self.progress = cancel, progress
        self.names = ("A", "B")

    def trace(self, item: Item) -> tuple[dict[str, Any], Instrumented | None, Traced | None]:
        return trace_section(self.runs, [item], timeout=self.timeout, cancel=self.cancel,
                             progress=self.progress)  # fmt: skip

    def step(self, item: Item, sec: dict[str, Any], inst: Instrumented, traced: Traced,
             index: int = 0) -> tuple[dict[str, Any], Item | None]:  # fmt: skip
        """One upstream step from ``item``'s differing operand: the step, and the work-item
        that wrote the value (None: the walk ends here)."""
        runs, f = self.runs, sec["first"]
        site = inst.sites[f["site"]]
        slot = 1 + [o.text for o in site.operands].index(f["operand"])
        op = site.operands[slot - 1]
        head = {"kind": "read", "item": list(item), "line": site.line, "operand": op.text}
        at = f"work-item {item_text(item)} reads {op.text} on line {site.line}"
        if not op.memory:
            return {**head, "kind": "not-recorded", "text": f"{at}: a variable whose value "
                    "comes from a statement that is not recorded"}, None  # fmt: skip
        where = []
        for d in runs.devices:
            got = traced.addresses.get(d["id"], [])
            mine = got[index] if index < len(got) else None
            addr = mine.operands.get((site.id, f["iteration"], slot)) if mine else None
            where.append(None if addr is None or mine is None else
                         locate(runs, inst.bases, mine.bases, addr, op.text))  # fmt: skip
        if where[0] is None or where[0] != where[1]:
            why = ("private memory, or memory the kernel's parameters do not name"
                   if where[0] is None and where[1] is None else
                   "other addresses on the two devices")  # fmt: skip
            return {**head, "kind": "unknown-memory", "text": f"{at}: {why}"}, None
        k, offset = where[0]
        base = inst.bases[k]
        _, local = arg_size(runs, base)
        esize = element_size(op.kind, op.lanes)
        element = offset // esize
        group = _group(runs, item) if local else None
        mem = (f"element {element} of {base.name} (__local, work-group {item_text(group)})"
               if group is not None else f"element {element} of {base.name}")  # fmt: skip
        head |= {"memory": base.name, "local": local, "element": element, "offset": offset}
        at += f", {mem}"
        try:
            w = watch_source(runs.source or "", runs.kernel, runs.options,
                             [Target(base, offset, group)], Reader(item, site.id, slot))
        except InstrumentError as exc:
            return {**head, "kind": "not-run", "text": f"{at}: not watched: {exc}"}, None
        seen = run_watch(runs, w, runs.devices, self.timeout, self.cancel, self.progress)
        writers: list[Access | None] = []
        for d in runs.devices:
            acc = seen.accesses.get(d["id"])
            if acc is None:
                return {**head, "kind": "not-run", "text": f"{at}: the watch run did not run "
                        f"on {d['name']}: {seen.errors.get(d['id'])}"}, None  # fmt: skip
            read = _read_of(acc, int(f["iteration"]))
            before = [a for a in acc if a.kind == STORE and (read is None or a.order < read.order)]
            writers.append(before[-1] if before else None)
        a, b = writers
        if a is None and b is None:
            if local:
                return {**head, "kind": "uninitialised", "text": f"{at}: no work-item of its "
                        "work-group stored to it before the read: uninitialised __local "
                        "memory (its contents are undefined; each device has its own)"}, None
            return {**head, "kind": "input", "text": f"{at}: no work-item of this enqueue "
                    "stored to it before the read (no recorded statement): it holds the "
                    "enqueue's input, the captured bytes, the same on both devices"
                    + _earlier(self.cap, int(runs.plan['steps'][0]['enqueue']),
                               base.param)}, None  # fmt: skip
        if a is None or b is None or (a.item, a.site) != (b.item, b.site):
            who = "; ".join(f"on {n}: " + (f"work-item {item_text(x.item)} on line "
                                           f"{inst.sites[x.site].line}" if x else "none")
                            for n, x in zip(self.names, writers, strict=True))  # fmt: skip
            return {**head, "kind": "race", "text": f"{at}: another store wrote it last on "
                    f"each device ({who}): the order the work-items ran in decides it (a "
                    "race)"}, None  # fmt: skip
        s: Site = inst.sites[a.site]
        head |= {"writer": {"item": list(a.item), "line": s.line, "site": s.to_dict(),
                            "statement": f"{s.target} = {s.expr}",
                            "a": _vt(s.kind, a.lo, a.hi), "b": _vt(s.kind, b.lo, b.hi)}}
        text = (f"{at}: work-item {item_text(a.item)} wrote it on line {s.line}: {s.target} "
                f"= {s.expr} (A {_vt(s.kind, a.lo, a.hi)}, B {_vt(s.kind, b.lo, b.hi)})")
        if a.item == item:
            return {**head, "text": text + ": its own store"}, None
        return {**head, "text": text}, a.item

    def walk(self, item: Item, first: tuple[dict[str, Any], Instrumented, Traced] | None
             ) -> dict[str, Any]:  # fmt: skip
        steps: list[dict[str, Any]] = []
        seen: set[Item] = set()
        while len(seen) < MAX_STEPS and item not in seen:
            seen.add(item)
            index = 0
            inst: Instrumented | None
            traced: Traced | None
            if first is not None and item in first[1].items:  # the line's own traces
                (sec, inst, traced), index = first, first[1].items.index(item)
                first = None
            else:
                sec, inst, traced = self.trace(item)
            if sec["status"] != "upstream" or inst is None or traced is None:
                steps.append({"kind": sec["status"], "item": list(item),
                              "line": (sec.get("site") or {}).get("line"),
                              "text": f"work-item {item_text(item)}: {sec['text']}"})
                return _summary(steps, sec)
            step, nxt = self.step(item, sec, inst, traced, index)
            steps.append(step)
            if nxt is None:
                return _summary(steps, None)
            item = nxt
        steps.append({"kind": "bounded", "item": list(item), "line": None,
                      "text": f"the walk stops after {MAX_STEPS} work-items"})
        return _summary(steps, None)


def _summary(steps: list[dict[str, Any]], found: dict[str, Any] | None) -> dict[str, Any]:
    last = steps[-1]
    out: dict[str, Any] = {"status": last["kind"], "steps": steps,
                           "text": "; ".join(s["text"] for s in steps)}  # fmt: skip
    if found is not None and found["status"] == "found":
        out |= {"item": found["item"], "site": found["site"], "source_line": found["source_line"],
                "first": found["first"]}  # fmt: skip
    return out


def walk_upstream(runs: Runs, item: Item, cap: Capture | None = None,
                  first: tuple[dict[str, Any], Instrumented, Traced] | None = None, *,
                  timeout: float = 60.0, cancel: CancelToken | None = None,
                  progress: ProgressFn | None = None) -> dict[str, Any]:  # fmt: skip
    """The walk from ``item`` (whose first difference is an operand read from memory;
    ``first``: the section, instrumentation and traces that found it, else traced anew)."""
    return _Walker(runs, cap, timeout, cancel, progress or no_progress).walk(item, first)


def with_walk(report: dict[str, Any], runs: Runs, cap: Capture | None = None,
              traced: tuple[Instrumented, Traced] | None = None,
              **kw: Any) -> dict[str, Any]:  # fmt: skip
    """The report's ``line`` section with its walk when its first difference is upstream
    (``traced``: the instrumentation and traces of the section, reused)."""
    line = report.get("line")
    if not line or line.get("status") != "upstream" or "item" not in line:
        return report
    x, y, z = (int(v) for v in line["item"])
    first = (line, traced[0], traced[1]) if traced is not None else None
    try:
        walk = walk_upstream(runs, (x, y, z), cap, first, **kw)
    except CltuiError as exc:
        walk = {"status": "not-run", "steps": [], "text": f"the walk stopped: {exc}"}
    line["walk"] = walk
    if walk["status"] == "found":
        site = walk["site"]
        line["text"] += (f"; upstream, the devices part at line {site['line']} "
                         f"({site['function']}): {site['target']} = {site['expr']}, in "
                         f"work-item {item_text(walk['item'])}, its operands equal")
    else:
        line["text"] += f"; upstream: {walk['steps'][-1]['text'] if walk['steps'] else ''}"
    return report
