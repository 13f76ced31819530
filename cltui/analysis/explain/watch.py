"""The watch run: which work-items store to a few memory elements (and, for one work-item,
when it reads one), in the order they did it, on one device.

The kernel is instrumented (the same walk as :mod:`.instrument`, so the same site ids) so
that every assignment to memory (``p[i] = ...``, ``*p += ...``) of every work-item compares
the address it stores to with the watched ones (a kernel parameter's or ``__local`` array's
address plus a byte offset, computed at the start of the kernel; a ``__local`` one only in
the work-group whose memory it is) and, on a match, appends an entry to the watch buffer
through an atomic counter: ``site, kind | watch << 8 | offset << 16, global id x, y, z,
value low and high words, barriers passed``.  ``kind`` 0 is a store, 1 the watched read of
the reader work-item.  The buffer holds :data:`CAP` entries (bounded memory); the counter
goes on, so the entries beyond it are counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from cltui.analysis.explain.instrument import Instrumented, Site, Walk, walk_all
from cltui.analysis.explain.recorder import bits
from cltui.analysis.explain.run import Runs
from cltui.analysis.explain.source import Base, finish, parse, pointer_params
from cltui.analysis.explain.trace import run_raw
from cltui.progress import CancelToken, ProgressFn
from cltui.replay.engine.schema import Device

__all__ = ["CAP", "Access", "Reader", "Target", "Watched", "run_watch", "watch_source"]

CAP = 4096  # entries
HEADER = 2
WORDS = 8  # an entry's words
STORE, READ = 0, 1
_ANY = "0xFFFFFFFFFFFFFFFFul"

Item = tuple[int, int, int]


@dataclass(frozen=True)
class Target:
    """One watched element: ``offset`` bytes into ``base`` (``group``: the work-group whose
    ``__local`` memory it is; None for global memory)."""

    base: Base
    offset: int
    group: Item | None = None


@dataclass(frozen=True)
class Reader:
    """The work-item whose read of operand ``slot`` (1-based) of ``site`` is watched."""

    item: Item
    site: int
    slot: int


@dataclass(frozen=True)
class Access:
    order: int  # the atomic counter's value: the order the accesses happened in
    kind: int  # STORE or READ
    site: int
    target: int
    offset: int  # bytes of the watched element into the stored object
    item: Item
    lo: int
    hi: int
    epoch: int  # barriers the work-item had passed


@dataclass
class Watched:
    """Per device id: its accesses in order, how many did not fit, or why it has none."""

    accesses: dict[str, list[Access]]
    dropped: dict[str, int]
    errors: dict[str, str]


def _prelude(n: int) -> str:
    return f"""void cltui_wst(__global uint *t, uint *s, uint site, uint kind, ulong a, ulong n,
               uint lo, uint hi)
{{
    if (t == 0 || s == 0) return;
    for (uint k = 0; k < {n}u; ++k) {{
        ulong w = (ulong)s[1u + 2u * k] | ((ulong)s[2u + 2u * k] << 32);
        if (w < a || w >= a + n) continue;
        uint m = atomic_inc((volatile __global uint *)t);
        if (m >= {CAP}u) continue;
        __global uint *e = t + {HEADER}u + {WORDS}u * m;
        e[0] = site; e[1] = kind | (k << 8) | ((uint)(w - a) << 16);
        e[2] = (uint)get_global_id(0); e[3] = (uint)get_global_id(1);
        e[4] = (uint)get_global_id(2); e[5] = lo; e[6] = hi; e[7] = s[0];
    }}
}}
"""


def _is(item: Item, fn: str) -> str:
    return " && ".join(f"{fn}({d}) == {v}ul" for d, v in enumerate(item))


def _setup(k: int, t: Target) -> str:
    """The watched address ``k`` into the counters (``~0`` outside its work-group)."""
    at = f"(ulong)({t.base.name}) + {t.offset}ul"
    if t.group is not None:
        at = f"({_is(t.group, 'get_group_id')}) ? {at} : {_ANY}"
    return (f" {{ ulong w = {at}; cltui_s[{1 + 2 * k}] = (uint)w; "
            f"cltui_s[{2 + 2 * k}] = (uint)(w >> 32); }}")


class _WatchWalk(Walk):
    def __init__(self, ci: Any, data: bytes, main: str, targets: list[Target],
                 reader: Reader | None) -> None:  # fmt: skip
        super().__init__(ci, data, main)
        self.targets, self.reader = targets, reader
        self.store = False  # the assignment being walked stores to memory

    def record(self, site: int, slot: int, expr: str, kind: str, lanes: int) -> str:
        if slot != 0 or not self.store:
            return ""
        lo, hi = bits(f"({expr})" if lanes == 1 else f"({expr}).s0", kind)
        return (f"cltui_wst(cltui_t, cltui_s, {site}u, {STORE}u, (ulong)&({expr}), "
                f"sizeof({expr}), {lo}, {hi});")

    def before(self, site: Site) -> str:
        r = self.reader
        if r is None or site.id != r.site or not 0 < r.slot <= len(site.operands):
            return ""
        op = site.operands[r.slot - 1]
        lo, hi = bits(f"({op.text})" if op.lanes == 1 else f"({op.text}).s0", op.kind)
        return (f"if ({_is(r.item, 'get_global_id')}) cltui_wst(cltui_t, cltui_s, {site.id}u, "
                f"{READ}u, (ulong)&({op.text}), sizeof({op.text}), {lo}, {hi});")

    def assignment(self, fn: str, c: Any) -> None:
        K = self.ci.CursorKind
        kids = list(c.get_children())
        lhs = kids[0] if kids else None
        base = list(lhs.get_children())[:1] if lhs is not None else []
        vector = bool(base) and base[0].type.get_canonical().kind.name == "EXTVECTOR"
        self.store = lhs is not None and (
            (lhs.kind == K.ARRAY_SUBSCRIPT_EXPR and not vector)  # not v[0]: no address
            or (lhs.kind == K.UNARY_OPERATOR and self.text(lhs).lstrip().startswith("*")))
        try:
            super().assignment(fn, c)
        finally:
            self.store = False

    def statement(self, fn: str, c: Any) -> None:
        K = self.ci.CursorKind
        if (self.in_main(c) and c.kind == K.CALL_EXPR
                and c.spelling in ("barrier", "work_group_barrier")):  # fmt: skip
            end = self.semicolon(c.extent.end.offset)
            if end is not None:
                self.edits.append((end, 0, " if (cltui_s != 0) cltui_s[0] += 1u;"))
        super().statement(fn, c)

    def local_array(self, fn: str, decl: Any, v: Any) -> None:
        if fn != self.kernel:
            return
        for k, t in enumerate(self.targets):
            if t.base.param is None and t.base.name == v.spelling:
                self.edits.append((decl.extent.end.offset, 0, _setup(k, t)))


def watch_source(source: str, kernel: str, options: str, targets: list[Target],
                 reader: Reader | None = None) -> Instrumented:  # fmt: skip
    """``source`` with every store to memory checked against ``targets`` (and ``reader``'s
    read recorded): the watch buffer its last argument (see the module doc)."""
    p = parse(source, kernel, options)
    walk = _WatchWalk(p.ci, p.data, p.main, targets, reader)
    walk.kernel = kernel
    walk.bases = pointer_params(p)
    walk_all(p, walk)
    n = 1 + 2 * len(targets)
    start = (f" __global uint *cltui_t = cltui_trace; uint cltui_s[{n}]; "
             f"for (uint k = 0; k < {n}u; ++k) cltui_s[k] = 0xFFFFFFFFu; cltui_s[0] = 0u;"
             + "".join(_setup(k, t) for k, t in enumerate(targets)
                       if t.base.param is not None))  # fmt: skip
    out = finish(p, walk.edits, start, _prelude(len(targets)))
    return Instrumented(out, walk.sites, [], walk.skipped, words=HEADER + WORDS * CAP)


def decode(raw: npt.NDArray[np.uint8]) -> tuple[list[Access], int]:
    """The accesses in the order they happened, and how many did not fit."""
    words = np.frombuffer(raw.tobytes(), dtype="<u4")
    count = int(words[0]) if words.size else 0
    n = min(count, CAP, max((words.size - HEADER) // WORDS, 0))
    rows = words[HEADER : HEADER + WORDS * n].reshape(n, WORDS)
    out = [Access(m, int(r[1]) & 0xFF, int(r[0]), (int(r[1]) >> 8) & 0xFF, int(r[1]) >> 16,
                  (int(r[2]), int(r[3]), int(r[4])), int(r[5]), int(r[6]), int(r[7]))
           for m, r in enumerate(rows)]  # fmt: skip
    return out, count - n


def run_watch(runs: Runs, inst: Instrumented, devices: list[Device], timeout: float,
              cancel: CancelToken | None, report: ProgressFn) -> Watched:  # fmt: skip
    """The watch run once on each device."""
    got = Watched({}, {}, {})
    for dev, (out, raw) in run_raw(runs, inst, devices, timeout, cancel, report).items():
        if raw is None:
            got.errors[dev] = out.error or "not run"
            continue
        got.accesses[dev], got.dropped[dev] = decode(raw)
    return got
