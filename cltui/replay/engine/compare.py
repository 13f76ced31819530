"""Typed comparison of two memory images (pure numpy, self-contained).

This module imports only the standard library, numpy and :mod:`.schema` (a part of the
engine package, which ``cltui export`` copies whole into a replay bundle).

``compare_bytes(expected, actual, dtype, tol)`` compares two byte buffers:

1. exact first (a memcmp-speed fast path over the raw bytes);
2. then per element type: integers (and anything not floating point) exact;
   floating point with absolute / relative tolerance and ULP distance, NaN-aware
   (a NaN equals a NaN, never a number);
3. the result says ``equal`` / ``within`` (tolerance) / ``different``, counts
   differing elements, gives the max abs / rel / ULP error and the first differing
   element in typed coordinates (element index or image x/y/z, vector lane, struct
   field) with both values.

Element types are numpy dtypes, or JSON-able specs (see :func:`.dtypes.make_dtype`):
``"<f4"``, ``"(4,)<f4"`` (a float4), ``[["scale", "<f4"], ["lo", "<i4"]]`` (a struct).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Final, cast

import numpy as np
import numpy.typing as npt

from . import schema
from .dtypes import DTypeSpec, dtype_label, dtype_leaves, make_dtype
from .schema import Status, ToleranceSpec

EQUAL: Final = "equal"
WITHIN: Final = "within"
DIFFERENT: Final = "different"

JSONValue = int | float | str | bool | None | list["JSONValue"]
Bytes = bytes | bytearray | memoryview | npt.NDArray[np.generic]


@dataclass(frozen=True)
class Tolerance:
    """An element is within tolerance if ``|a-e| <= atol + rtol*|e|`` or ``ulp(a, e) <= ulp``."""

    atol: float = 0.0
    rtol: float = 0.0
    ulp: int = 0

    def to_dict(self) -> ToleranceSpec:
        return {"atol": self.atol, "rtol": self.rtol, "ulp": self.ulp}

    @classmethod
    def from_dict(cls, d: ToleranceSpec | Mapping[str, Any] | None) -> Tolerance:
        """From JSON: ``{atol, rtol, ulp}``, each optional."""
        d = d or {}
        return cls(float(d.get("atol", 0.0)), float(d.get("rtol", 0.0)), int(d.get("ulp", 0)))

    def merged(self, override: ToleranceSpec | Mapping[str, Any] | None) -> Tolerance:
        """This tolerance with the keys present in ``override`` replaced."""
        if not override:
            return self
        return Tolerance(
            float(override.get("atol", self.atol)),
            float(override.get("rtol", self.rtol)),
            int(override.get("ulp", self.ulp)),
        )


@dataclass
class FirstDiff:
    """The first differing element, in typed coordinates."""

    index: int  # element index in the flat array
    byte_offset: int
    coords: list[int] | None = None  # image (x, y, z) or multi-dim position, when a shape is given
    lane: list[int] | None = None  # vector lane(s) inside the element
    field: str | None = None  # struct field path ("a.b")
    expected: JSONValue = None
    actual: JSONValue = None

    def where(self) -> str:
        """A short human text: ``[12].y lane 2`` / ``(x=3, y=1) lane 0``."""
        if self.coords is not None:
            names = "xyzw"
            pos = ", ".join(f"{names[i]}={c}" for i, c in enumerate(self.coords[:4]))
            text = f"({pos})"
        else:
            text = f"[{self.index}]"
        if self.field:
            text += f".{self.field}"
        if self.lane:
            text += " lane " + ",".join(str(v) for v in self.lane)
        return text


@dataclass
class CompareResult:
    status: Status  # EQUAL | WITHIN | DIFFERENT
    dtype: str
    elements: int  # elements compared
    expected_size: int
    actual_size: int
    n_diff: int = 0  # elements whose bits differ
    n_bad: int = 0  # elements outside tolerance
    max_abs: float | None = None  # floating point only
    max_rel: float | None = None
    max_ulp: float | None = None
    first: FirstDiff | None = None
    note: str = ""
    leaves: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status != DIFFERENT

    def to_dict(self) -> schema.CompareResult:
        d = asdict(self)
        for k in ("max_abs", "max_rel", "max_ulp"):
            v = d[k]
            if isinstance(v, float) and not math.isfinite(v):
                d[k] = str(v)
        if self.first is not None:
            d["first"]["where"] = self.first.where()
        return cast(schema.CompareResult, d)

    def summary(self) -> str:
        """One line for tables: ``1331/8192 differ, max 1 ULP, first [0]: -0.927 vs -0.927``."""
        if self.status == EQUAL:
            return "bit-exact"
        parts = [f"{self.n_diff}/{self.elements} differ"]
        if self.n_bad != self.n_diff:
            parts.append(f"{self.n_bad} beyond tolerance")
        if self.max_ulp is not None:
            parts.append(f"max {_fmt(self.max_ulp)} ULP")
        if self.max_abs is not None:
            parts.append(f"abs {_fmt(self.max_abs)}")
        if self.max_rel is not None:
            parts.append(f"rel {_fmt(self.max_rel)}")
        if self.first is not None:
            parts.append(
                f"first {self.first.where()}: expected {_fmt(self.first.expected)}"
                f" got {_fmt(self.first.actual)}"
            )
        if self.note:
            parts.append(self.note)
        return ", ".join(parts)


def _fmt(v: object) -> str:
    if isinstance(v, float):
        if v.is_integer() and abs(v) < 1e15:
            return str(int(v))
        return f"{v:.9g}"
    return str(v)


# --------------------------------------------------------------------------- core


def as_u8(data: Bytes) -> npt.NDArray[np.uint8]:
    """A flat uint8 view (no copy for numpy arrays, memmaps, bytes)."""
    if isinstance(data, np.ndarray):
        arr = data if data.flags.c_contiguous else np.ascontiguousarray(data)
        return arr.reshape(-1).view(np.uint8)
    return np.frombuffer(data, dtype=np.uint8)


def bytes_equal(a: Bytes, b: Bytes) -> bool:
    """The exact fast path: equal length and equal bytes."""
    ua, ub = as_u8(a), as_u8(b)
    if ua.size != ub.size:
        return False
    n8 = ua.size // 8 * 8
    if n8 and (ua.ctypes.data % 8 == 0 and ub.ctypes.data % 8 == 0):  # wide compare when aligned
        if not np.array_equal(ua[:n8].view(np.uint64), ub[:n8].view(np.uint64)):
            return False
        return bool(np.array_equal(ua[n8:], ub[n8:]))
    return bool(np.array_equal(ua, ub))


def _ordered(bits: npt.NDArray[np.generic], nbits: int) -> npt.NDArray[np.int64]:
    """Map float bit patterns to integers whose difference is the ULP distance."""
    b = bits.astype(np.int64)
    sign = np.int64(1) << np.int64(nbits - 1)
    if nbits == 64:
        # int64 view already signed: negative floats have negative bit patterns
        neg = b < 0
        mag = b & np.int64(0x7FFFFFFFFFFFFFFF)
        return np.where(neg, -mag, b)
    neg = (b & sign) != 0
    mag = b & (sign - 1)
    return np.where(neg, -mag, mag)


def _ulp_distance(
    oa: npt.NDArray[np.int64], oe: npt.NDArray[np.int64]
) -> npt.NDArray[np.float64]:
    """``|oa - oe|`` of two :func:`_ordered` arrays, exact: taken in unsigned 64-bit arithmetic
    (it may exceed 2**63) and only then made float64 (which keeps a count of 1 ULP exact)."""
    ua, ue = oa.astype(np.uint64), oe.astype(np.uint64)
    return np.where(oa >= oe, ua - ue, ue - ua).astype(np.float64)


def _field(arr: npt.NDArray[Any], path: str) -> npt.NDArray[Any]:
    """The leaf ``path`` (``"p.x"``: field ``x`` of field ``p``) of a structured array; the
    array itself for the empty path."""
    for name in path.split(".") if path else ():
        arr = arr[name]
    return arr


_UINT_OF = {2: np.uint16, 4: np.uint32, 8: np.int64}
_CHUNK_BYTES = 8 << 20  # elements compared per pass beyond the exact fast path

# the first differing element: (index, field path, lane, expected, actual)
_First = tuple[int, str, list[int] | None, JSONValue, JSONValue]


@dataclass
class _Tally:
    """What the chunks of one comparison add up to."""

    tol: Tolerance
    n_diff: int = 0
    n_bad: int = 0
    first_diff: _First | None = None
    first_bad: _First | None = None
    max_abs: float | None = None
    max_rel: float | None = None
    max_ulp: float | None = None

    def add_max(self, ma: float, mr: float, mu: float) -> None:
        self.max_abs = ma if self.max_abs is None else max(self.max_abs, ma)
        self.max_rel = mr if self.max_rel is None else max(self.max_rel, mr)
        self.max_ulp = mu if self.max_ulp is None else max(self.max_ulp, mu)


def compare_bytes(
    expected: Bytes,
    actual: Bytes,
    dtype: DTypeSpec | np.dtype[np.generic] | None = None,
    tol: Tolerance | None = None,
    shape: tuple[int, ...] | list[int] | None = None,
) -> CompareResult:
    """Compare ``actual`` against ``expected``; see the module doc.

    ``shape`` (optional) is the element grid in x-fastest order, e.g. an image's
    ``(width, height, depth)``: the first difference is then given as coordinates.
    """
    tally = _Tally(tol or Tolerance())
    dt = make_dtype(dtype)
    ue, ua = as_u8(expected), as_u8(actual)
    itemsize = max(dt.itemsize, 1)
    common = min(ue.size, ua.size)
    n = common // itemsize
    result = CompareResult(EQUAL, dtype_label(dt), n, int(ue.size), int(ua.size))
    if bytes_equal(ue, ua):
        return result
    notes: list[str] = []
    if ue.size != ua.size:
        notes.append(f"size differs: expected {ue.size} bytes, got {ua.size}")
    ev = _view(ue[: n * itemsize], dt, n)
    av = _view(ua[: n * itemsize], dt, n)
    leaves = dtype_leaves(dt)
    step = max(1, _CHUNK_BYTES // itemsize)
    for s0 in range(0, n, step):  # chunks: bounded memory for any buffer size
        s1 = min(n, s0 + step)
        if bytes_equal(ue[s0 * itemsize : s1 * itemsize], ua[s0 * itemsize : s1 * itemsize]):
            continue
        _compare_chunk(tally, ev[s0:s1], av[s0:s1], s0, leaves)
    tail = common - n * itemsize
    if tail:
        te, ta = ue[n * itemsize : common], ua[n * itemsize : common]
        if not np.array_equal(te, ta):
            notes.append(f"trailing {tail} bytes differ")
            tally.n_bad += 1
            tally.n_diff += 1
    result.n_diff, result.n_bad = tally.n_diff, tally.n_bad
    result.max_abs, result.max_rel, result.max_ulp = tally.max_abs, tally.max_rel, tally.max_ulp
    result.leaves = [p for p, _ in leaves if p]
    chosen = tally.first_bad if tally.first_bad is not None else tally.first_diff
    if chosen is not None:
        result.first = _first_diff(chosen, itemsize, shape)
    # different beyond tolerance or in size; else within (also when bits differ only as
    # NaN payloads)
    result.status = DIFFERENT if tally.n_bad or ue.size != ua.size else WITHIN
    result.note = "; ".join(notes)
    return result


def _first_diff(
    chosen: _First, itemsize: int, shape: tuple[int, ...] | list[int] | None
) -> FirstDiff:
    i, path, lane, ev_i, av_i = chosen
    coords = None
    if shape:
        grid = tuple(int(s) for s in shape)
        total = int(np.prod(grid))
        if total > 0 and i < total:
            # x fastest: unravel in reversed (C) order then flip back
            coords = [int(c) for c in np.unravel_index(i, grid[::-1])][::-1]
    return FirstDiff(
        index=i,
        byte_offset=i * itemsize,
        coords=coords,
        lane=lane,
        field=path or None,
        expected=ev_i,
        actual=av_i,
    )


def _compare_chunk(
    tally: _Tally,
    evc: npt.NDArray[Any],  # structured arrays: indexed by field name
    avc: npt.NDArray[Any],
    s0: int,
    leaves: list[tuple[str, np.dtype[np.generic]]],
) -> None:
    """Elements ``s0..`` (``evc``/``avc``, whose bytes differ somewhere) into ``tally``."""
    nc = len(evc)
    diff_any = np.zeros(nc, dtype=bool)
    bad_any = np.zeros(nc, dtype=bool)
    for path, ldt in leaves:
        e, a = _field(evc, path), _field(avc, path)
        base = ldt.subdtype[0] if ldt.subdtype is not None else ldt
        lanes = ldt.subdtype[1] if ldt.subdtype is not None else ()
        e2: npt.NDArray[np.generic] = np.asarray(e).reshape(nc, -1)
        a2: npt.NDArray[np.generic] = np.asarray(a).reshape(nc, -1)
        if base.kind == "f" and base.itemsize in _UINT_OF:
            lane_diff, lane_bad = _float_lanes(tally, e2, a2, base)
        else:
            if base.kind == "V" or base.kind == "f":  # void / long double: compare bytes
                width = base.itemsize
                e2 = np.ascontiguousarray(e2).view(np.uint8).reshape(nc, -1, width)
                a2 = np.ascontiguousarray(a2).view(np.uint8).reshape(nc, -1, width)
                lane_diff = (e2 != a2).any(axis=2)
            else:
                lane_diff = e2 != a2
            lane_bad = lane_diff
        d_rows = _rows(lane_diff)
        b_rows = d_rows if lane_bad is lane_diff else _rows(lane_bad)
        diff_any |= d_rows
        bad_any |= b_rows
        for rows, mask, bad in ((d_rows, lane_diff, False), (b_rows, lane_bad, True)):
            if not rows.any():
                continue
            i = int(np.argmax(rows))
            prev = tally.first_bad if bad else tally.first_diff
            if prev is not None and prev[0] <= s0 + i:
                continue
            lane_flat = int(np.argmax(mask[i]))
            lane = [int(x) for x in np.unravel_index(lane_flat, lanes)] if lanes else None
            ev_i = _py(np.asarray(e2[i]).reshape(-1)[lane_flat] if base.kind != "V" else e2[i])
            av_i = _py(np.asarray(a2[i]).reshape(-1)[lane_flat] if base.kind != "V" else a2[i])
            if bad:
                tally.first_bad = (s0 + i, path, lane, ev_i, av_i)
            else:
                tally.first_diff = (s0 + i, path, lane, ev_i, av_i)
    tally.n_diff += int(np.count_nonzero(diff_any))
    tally.n_bad += int(np.count_nonzero(bad_any))


def _float_lanes(
    tally: _Tally,
    e2: npt.NDArray[np.generic],
    a2: npt.NDArray[np.generic],
    base: np.dtype[np.generic],
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """The lanes of a floating-point leaf whose bits differ, and those beyond tolerance
    (NaN equals NaN, never a number); the max errors go into ``tally``."""
    ut = _UINT_OF[base.itemsize]
    eb = e2.view(ut) if e2.dtype == base else np.ascontiguousarray(e2).view(ut)
    ab = a2.view(ut) if a2.dtype == base else np.ascontiguousarray(a2).view(ut)
    bits_diff = eb != ab
    # everything past the bit comparison runs on the differing lanes only
    # (a few percent of a buffer, typically): gathered, then scattered back
    flat = np.flatnonzero(bits_diff)
    ebs = np.ascontiguousarray(eb).reshape(-1)[flat]
    abs_ = np.ascontiguousarray(ab).reshape(-1)[flat]
    with np.errstate(invalid="ignore"):  # NaN payloads of halves
        ef = ebs.view(base).astype(np.float64)
        af = abs_.view(base).astype(np.float64)
    enan, anan = np.isnan(ef), np.isnan(af)
    both_nan = enan & anan
    sub_diff = ~both_nan
    lane_diff = np.zeros(bits_diff.shape, dtype=bool)
    lane_diff.reshape(-1)[flat[sub_diff]] = True
    if not sub_diff.any():
        tally.add_max(0.0, 0.0, 0.0)
        return lane_diff, lane_diff
    with np.errstate(invalid="ignore", over="ignore"):
        absd = np.abs(af - ef)
        same_inf = np.isinf(ef) & (ef == af)
        absd = np.where(same_inf, 0.0, absd)
        absd = np.where(enan ^ anan, np.inf, absd)
        denom = np.abs(ef)
        rel = np.where(denom > 0, absd / np.where(denom > 0, denom, 1.0), np.inf)
        rel = np.where(absd == 0, 0.0, rel)
        ibits = base.itemsize * 8
        ulps = _ulp_distance(_ordered(abs_, ibits), _ordered(ebs, ibits))
        ulps = np.where(enan ^ anan, np.inf, ulps)
        ulps = np.where(both_nan, 0.0, ulps)
    tol = tally.tol
    within = (absd <= tol.atol + tol.rtol * np.abs(np.nan_to_num(ef))) | (ulps <= tol.ulp)
    sub_bad = sub_diff & ~within
    lane_bad = np.zeros(bits_diff.shape, dtype=bool)
    lane_bad.reshape(-1)[flat[sub_bad]] = True
    tally.add_max(
        float(absd[sub_diff].max()), float(rel[sub_diff].max()), float(ulps[sub_diff].max())
    )
    return lane_diff, lane_bad


def _rows(mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """Which rows (elements) have a True lane; a scalar element's one lane is a view."""
    if mask.shape[1] == 1:
        return mask[:, 0]
    rows: npt.NDArray[np.bool_] = np.any(mask, axis=1)
    return rows


def _view(u8: npt.NDArray[np.uint8], dt: np.dtype[np.generic], n: int) -> npt.NDArray[np.generic]:
    if dt.subdtype is not None and not dt.fields:
        base, lanes = dt.subdtype
        return u8.view(base).reshape((n, *lanes))
    return u8.view(dt)


def _py(v: object) -> JSONValue:
    """A JSON-able Python value for a numpy scalar / small array."""
    if isinstance(v, np.ndarray):
        return cast(JSONValue, v.tolist())
    if isinstance(v, np.generic):
        item = v.item()
        if isinstance(item, bytes):
            return item.hex()
        if isinstance(item, float) and not math.isfinite(item):
            return str(item)
        return cast(JSONValue, item)
    return cast(JSONValue, v)


def ulp_distance(a: npt.NDArray[np.floating[Any]], b: npt.NDArray[np.floating[Any]]
                 ) -> npt.NDArray[np.float64]:  # fmt: skip
    """The ULP distance of two float arrays of one dtype, element by element (the rule the
    checks use; NaN and infinities count by their bit patterns: test them apart)."""
    size = a.dtype.itemsize
    nbits = size * 8
    view = np.dtype(f"i{size}") if nbits == 64 else np.dtype(f"u{size}")
    return _ulp_distance(_ordered(a.view(view), nbits), _ordered(b.view(view), nbits))
