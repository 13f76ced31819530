"""Where two devices' outputs differ (pure numpy): the divergence map of one output.

Elements are the scalar components of the output's element type (a ``float4`` buffer of
1,024 items is 4,096 elements; an RGBA image's texels four each); a struct compares item
by item, as bytes.  Floats differ by ULPs (:func:`~cltui.replay.engine.compare.ulp_distance`,
the checks' rule), integers by steps of their type.  The pattern is claimed only when every
differing element shows it (:func:`pattern`).
"""

from __future__ import annotations

import math
from functools import reduce
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt

from cltui.replay.engine.compare import ulp_distance
from cltui.replay.engine.dtypes import DTypeSpec, dtype_label, make_dtype

__all__ = ["BUCKETS", "DivergenceMap", "Pattern", "divergence_map", "pattern", "scalars"]

# the histogram's buckets: (label, lowest, highest) distance, then "not finite"
BUCKETS: tuple[tuple[str, float, float], ...] = (
    ("1", 1, 1), ("2", 2, 2), ("3-4", 3, 4), ("5-16", 5, 16), ("17-256", 17, 256),
    (">256", 257, math.inf),
)  # fmt: skip
NOT_FINITE = "not finite"
WORST = 5  # the worst elements listed


class Pattern(TypedDict):
    kind: str  # none, all, one-block, one-row, edges, stride, scattered
    text: str


class Element(TypedDict):
    index: int  # the element's position (scalar components, in order)
    item: int  # the item (buffer element, texel) it belongs to
    lane: int  # its component in that item (0 for a scalar type)
    coords: list[int] | None  # an image's (x, y[, z]) of that texel
    a: Any
    b: Any
    capture: Any  # None when the capture holds no bytes of this output
    distance: float | None  # ULP (floats) or steps (integers); None: not finite or bytes


class DivergenceMap(TypedDict):
    elements: int
    differ: int
    unit: str  # "ULP", "steps" or "items" (structs: item by item)
    max: float | None  # the largest finite distance
    histogram: dict[str, int]
    worst: list[Element]
    pattern: Pattern
    dtype: str


def scalars(data: bytes | npt.NDArray[np.uint8], dt: np.dtype[Any]
             ) -> tuple[npt.NDArray[Any], int]:  # fmt: skip
    """The data as a flat array of scalars, and the scalars per item (1 for a struct:
    compared as one record each)."""
    raw = np.frombuffer(bytes(data), dtype=np.uint8)
    n = raw.size // dt.itemsize
    raw = raw[: n * dt.itemsize]
    if dt.fields:
        return raw.view(np.dtype((np.void, dt.itemsize))), 1
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        lanes = int(np.prod(shape))
        return raw.view(base), lanes
    return raw.view(dt), 1


def _py(v: Any) -> Any:
    if isinstance(v, np.floating):
        f = float(v)
        return f if math.isfinite(f) else repr(f)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.void):
        return v.tobytes().hex()
    return v


def divergence_map(a: bytes | npt.NDArray[np.uint8], b: bytes | npt.NDArray[np.uint8],
                   dtype: DTypeSpec | None, shape: list[int] | None = None,
                   capture: bytes | npt.NDArray[np.uint8] | None = None
                   ) -> DivergenceMap:  # fmt: skip
    """The map of where ``a`` and ``b`` (one output's bytes on two devices) differ;
    ``capture`` (the captured bytes, when there are any) gives each worst element's
    captured value."""
    dt = make_dtype(dtype)
    va, lanes = scalars(a, dt)
    vb, _ = scalars(b, dt)
    n = min(va.size, vb.size)
    va, vb = va[:n], vb[:n]
    vc = None
    if capture is not None:
        c, _ = scalars(capture, dt)
        vc = c if c.size >= n else None
    kind = va.dtype.kind
    if kind == "f":
        same = va.view(f"u{va.dtype.itemsize}") == vb.view(f"u{va.dtype.itemsize}")
    else:
        same = va == vb
    idx = np.flatnonzero(~same)
    hist = {label: 0 for label, _, _ in BUCKETS} | {NOT_FINITE: 0}
    dist: npt.NDArray[np.float64] = np.zeros(idx.size)
    finite = np.ones(idx.size, dtype=bool)
    if kind == "f":
        da, db = va[idx], vb[idx]
        finite = np.isfinite(da) & np.isfinite(db)
        dist = ulp_distance(da, db)
        unit = "ULP"
    elif kind in "iub":
        dist = np.abs(va[idx].astype(np.float64) - vb[idx].astype(np.float64))
        unit = "steps"
    else:
        finite[:] = False
        unit = "items"
    for label, lo, hi in BUCKETS:
        hist[label] = int(np.count_nonzero(finite & (dist >= lo) & (dist <= hi)))
    hist[NOT_FINITE] = int(np.count_nonzero(~finite)) if unit != "items" else 0
    if unit == "items":
        hist = {}
    order = np.lexsort((idx, np.where(finite, -dist, -math.inf)))[:WORST]
    worst: list[Element] = []
    for k in order:
        i = int(idx[k])
        item = i // lanes
        worst.append({
            "index": i, "item": item, "lane": i % lanes, "coords": _coords(item, shape),
            "a": _py(va[i]), "b": _py(vb[i]),
            "capture": _py(vc[i]) if vc is not None else None,
            "distance": float(dist[k]) if finite[k] and unit != "items" else None,
        })  # fmt: skip
    fin = dist[finite] if unit != "items" else dist[:0]
    return {
        "elements": int(n), "differ": int(idx.size), "unit": unit,
        "max": float(fin.max()) if fin.size else None, "histogram": hist, "worst": worst,
        "pattern": pattern(idx, int(n), lanes, shape), "dtype": dtype_label(dt),
    }  # fmt: skip


def _coords(item: int, shape: list[int] | None) -> list[int] | None:
    if not shape:
        return None
    out: list[int] = []
    for s in shape:
        s = max(int(s), 1)
        out.append(item % s)
        item //= s
    while len(out) > 2 and shape[len(out) - 1] <= 1:
        out.pop()
    return out


def pattern(idx: npt.NDArray[np.int64], n: int, lanes: int = 1,
            shape: list[int] | None = None) -> Pattern:  # fmt: skip
    """What the differing element positions ``idx`` (sorted) of ``n`` show, claimed only
    when every one of them shows it: all, one block of consecutive elements, one row or the
    edges of a 2-D image, every Nth element (all ≡ r mod N, N the gcd of their distances,
    at least 4 of them and at least half of the positions ≡ r mod N), else scattered."""
    k = int(idx.size)
    if k == 0:
        return {"kind": "none", "text": "no element differs"}
    if k == n:
        return {"kind": "all", "text": f"all {n:,} elements differ"}
    lo, hi = int(idx[0]), int(idx[-1])
    grid = [max(int(s), 1) for s in shape] if shape else []
    if len(grid) >= 2 and grid[1] > 1 and all(s == 1 for s in grid[2:]):
        w, h = grid[0], grid[1]
        items = idx // lanes
        x, y = items % w, items // w
        rows = np.unique(y)
        if rows.size == 1 and h > 1:
            return {"kind": "one-row",
                    "text": f"row y={int(rows[0])} only ({k:,} of {n:,} elements)"}
        edge = (x == 0) | (x == w - 1) | (y == 0) | (y == h - 1)
        if bool(edge.all()) and w > 2 and h > 2:
            return {"kind": "edges", "text": f"the image's edges only (border texels; "
                    f"{k:,} of {n:,} elements)"}  # fmt: skip
    if hi - lo + 1 == k and k > 1:
        return {"kind": "one-block",
                "text": f"one block of {k:,} consecutive elements ({lo}..{hi}) of {n:,}"}
    if k >= 4:  # fewer points share a gcd too easily
        step = int(reduce(math.gcd, (int(d) for d in np.diff(idx))))
        r = lo % step if step >= 2 else 0
        slots = len(range(r, n, step)) if step >= 2 else n
        if step >= 2 and 2 * k >= slots:  # and at least half of those positions differ
            what = f"lane {r} of each item" if lanes > 1 and step == lanes else (
                f"one element in every {step} (index ≡ {r} mod {step})")
            return {"kind": "stride",
                    "text": f"{what}: {k:,} of the {slots:,} such elements differ, no other"}
    return {"kind": "scattered",
            "text": f"scattered: {k:,} of {n:,} elements, between index {lo} and {hi}"}
