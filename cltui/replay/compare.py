"""Typed comparison of two memory images (pure numpy, self-contained).

This module imports only the standard library and numpy: ``cltui export`` copies
it verbatim into a replay bundle next to ``engine.py``.

``compare_bytes(expected, actual, dtype, tol)`` compares two byte buffers:

1. exact first (a memcmp-speed fast path over the raw bytes);
2. then per element type: integers (and anything not floating point) exact;
   floating point with absolute / relative tolerance and ULP distance, NaN-aware
   (a NaN equals a NaN, never a number);
3. the result says ``equal`` / ``within`` (tolerance) / ``different``, counts
   differing elements, gives the max abs / rel / ULP error and the first differing
   element in typed coordinates (element index or image x/y/z, vector lane, struct
   field) with both values.

Element types are numpy dtypes, or JSON-able specs (see :func:`make_dtype`):
``"<f4"``, ``"(4,)<f4"`` (a float4), ``[["scale", "<f4"], ["lo", "<i4"]]`` (a struct).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

EQUAL = "equal"
WITHIN = "within"
DIFFERENT = "different"

DTypeSpec = str | list[Any]
Bytes = bytes | bytearray | memoryview | npt.NDArray[Any]


@dataclass(frozen=True)
class Tolerance:
    """An element is within tolerance if ``|a-e| <= atol + rtol*|e|`` or ``ulp(a, e) <= ulp``."""

    atol: float = 0.0
    rtol: float = 0.0
    ulp: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> Tolerance:
        d = d or {}
        return cls(float(d.get("atol", 0.0)), float(d.get("rtol", 0.0)), int(d.get("ulp", 0)))

    def merged(self, override: dict[str, Any] | None) -> Tolerance:
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
    expected: Any = None
    actual: Any = None

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
    status: str  # EQUAL | WITHIN | DIFFERENT
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

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("max_abs", "max_rel", "max_ulp"):
            v = d[k]
            if isinstance(v, float) and not math.isfinite(v):
                d[k] = str(v)
        if self.first is not None:
            d["first"]["where"] = self.first.where()
        return d

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


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if v.is_integer() and abs(v) < 1e15:
            return str(int(v))
        return f"{v:.9g}"
    return str(v)


# --------------------------------------------------------------------------- dtypes


def make_dtype(spec: DTypeSpec | np.dtype[Any] | None) -> np.dtype[Any]:
    """A numpy dtype from a JSON-able spec.

    ``"<f4"``/``"float32"``: a scalar type; ``"(4,)<f4"``: a vector; a list of
    ``[name, spec]`` or ``[name, spec, offset]``: a struct (offsets keep padding).
    ``None`` means raw bytes (``uint8``).
    """
    if spec is None:
        return np.dtype(np.uint8)
    if isinstance(spec, np.dtype):
        return spec
    if isinstance(spec, str):
        return np.dtype(spec)
    if isinstance(spec, list):
        names: list[str] = []
        formats: list[np.dtype[Any]] = []
        offsets: list[int] = []
        has_offsets = all(len(f) >= 3 for f in spec)
        for f in spec:
            names.append(str(f[0]))
            formats.append(make_dtype(f[1]))
            if has_offsets:
                offsets.append(int(f[2]))
        if has_offsets:
            return np.dtype({"names": names, "formats": formats, "offsets": offsets})
        return np.dtype({"names": names, "formats": formats})
    raise ValueError(f"not a dtype spec: {spec!r}")


def dtype_spec(dt: np.dtype[Any]) -> DTypeSpec:
    """The JSON-able spec of a dtype (inverse of :func:`make_dtype`)."""
    if dt.fields:
        return [
            [name, dtype_spec(dt.fields[name][0]), int(dt.fields[name][1])]
            for name in dt.names or ()
        ]
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        return f"({','.join(str(s) for s in shape)},){base.str}"
    return dt.str


def dtype_label(dt: np.dtype[Any]) -> str:
    if dt.fields:
        inner = ", ".join(f"{n}: {dtype_label(dt.fields[n][0])}" for n in dt.names or ())
        return "struct{" + inner + "}"
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        return f"{base.name}x{'x'.join(str(s) for s in shape)}"
    return dt.name


def _leaves(dt: np.dtype[Any], prefix: str = "") -> list[tuple[str, np.dtype[Any]]]:
    """(field path, dtype) for every non-struct leaf (subarrays kept as one leaf)."""
    if dt.fields:
        out: list[tuple[str, np.dtype[Any]]] = []
        for name in dt.names or ():
            sub = dt.fields[name][0]
            out.extend(_leaves(sub, f"{prefix}.{name}" if prefix else name))
        return out
    return [(prefix, dt)]


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


def _ordered(bits: npt.NDArray[Any], nbits: int) -> npt.NDArray[np.int64]:
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


_UINT_OF = {2: np.uint16, 4: np.uint32, 8: np.int64}
_CHUNK_BYTES = 8 << 20  # elements compared per pass beyond the exact fast path


def compare_bytes(
    expected: Bytes,
    actual: Bytes,
    dtype: DTypeSpec | np.dtype[Any] | None = None,
    tol: Tolerance | None = None,
    shape: tuple[int, ...] | list[int] | None = None,
) -> CompareResult:
    """Compare ``actual`` against ``expected``; see the module doc.

    ``shape`` (optional) is the element grid in x-fastest order, e.g. an image's
    ``(width, height, depth)``: the first difference is then given as coordinates.
    """
    tol = tol or Tolerance()
    dt = make_dtype(dtype)
    ue, ua = as_u8(expected), as_u8(actual)
    itemsize = max(dt.itemsize, 1)
    common = min(ue.size, ua.size)
    n = common // itemsize
    label = dtype_label(dt)
    result = CompareResult(EQUAL, label, n, int(ue.size), int(ua.size))
    if bytes_equal(ue, ua):
        return result
    notes: list[str] = []
    if ue.size != ua.size:
        notes.append(f"size differs: expected {ue.size} bytes, got {ua.size}")
    tail = common - n * itemsize
    ev = _view(ue[: n * itemsize], dt, n)
    av = _view(ua[: n * itemsize], dt, n)

    n_diff = n_bad = 0
    first_bad: tuple[int, str, list[int] | None, Any, Any] | None = None
    first_diff: tuple[int, str, list[int] | None, Any, Any] | None = None
    max_abs = max_rel = max_ulp = None
    leaves = _leaves(dt)
    step = max(1, _CHUNK_BYTES // itemsize)
    for s0 in range(0, n, step):  # chunks: bounded memory for any buffer size
        s1 = min(n, s0 + step)
        if bytes_equal(ue[s0 * itemsize : s1 * itemsize], ua[s0 * itemsize : s1 * itemsize]):
            continue
        nc = s1 - s0
        evc, avc = ev[s0:s1], av[s0:s1]
        diff_any = np.zeros(nc, dtype=bool)
        bad_any = np.zeros(nc, dtype=bool)
        for path, ldt in leaves:
            e = evc[path] if path else evc
            a = avc[path] if path else avc
            base = ldt.subdtype[0] if ldt.subdtype is not None else ldt
            lanes = ldt.subdtype[1] if ldt.subdtype is not None else ()
            e2: npt.NDArray[Any] = np.asarray(e).reshape(nc, -1)
            a2: npt.NDArray[Any] = np.asarray(a).reshape(nc, -1)
            if base.kind == "f" and base.itemsize in _UINT_OF:
                ibits = base.itemsize * 8
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
                if sub_diff.any():
                    with np.errstate(invalid="ignore", over="ignore"):
                        absd = np.abs(af - ef)
                        same_inf = np.isinf(ef) & (ef == af)
                        absd = np.where(same_inf, 0.0, absd)
                        absd = np.where(enan ^ anan, np.inf, absd)
                        denom = np.abs(ef)
                        rel = np.where(denom > 0, absd / np.where(denom > 0, denom, 1.0), np.inf)
                        rel = np.where(absd == 0, 0.0, rel)
                        oe, oa = _ordered(ebs, ibits), _ordered(abs_, ibits)
                        ulps = np.abs(oa.astype(np.float64) - oe.astype(np.float64))
                        ulps = np.where(enan ^ anan, np.inf, ulps)
                        ulps = np.where(both_nan, 0.0, ulps)
                    within = (absd <= tol.atol + tol.rtol * np.abs(np.nan_to_num(ef))) | (
                        ulps <= tol.ulp
                    )
                    sub_bad = sub_diff & ~within
                    lane_bad = np.zeros(bits_diff.shape, dtype=bool)
                    lane_bad.reshape(-1)[flat[sub_bad]] = True
                    ma = float(absd[sub_diff].max())
                    mr = float(rel[sub_diff].max())
                    mu = float(ulps[sub_diff].max())
                    max_abs = ma if max_abs is None else max(max_abs, ma)
                    max_rel = mr if max_rel is None else max(max_rel, mr)
                    max_ulp = mu if max_ulp is None else max(max_ulp, mu)
                else:
                    lane_bad = lane_diff
                    max_abs = max_abs if max_abs is not None else 0.0
                    max_rel = max_rel if max_rel is not None else 0.0
                    max_ulp = max_ulp if max_ulp is not None else 0.0
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
            for rows, which in ((d_rows, "diff"), (b_rows, "bad")):
                if not rows.any():
                    continue
                i = int(np.argmax(rows))
                gi = s0 + i
                prev = first_diff if which == "diff" else first_bad
                if prev is not None and prev[0] <= gi:
                    continue
                mask = lane_diff if which == "diff" else lane_bad
                lane_flat = int(np.argmax(mask[i]))
                lane = [int(x) for x in np.unravel_index(lane_flat, lanes)] if lanes else None
                ev_i = _py(np.asarray(e2[i]).reshape(-1)[lane_flat] if base.kind != "V" else e2[i])
                av_i = _py(np.asarray(a2[i]).reshape(-1)[lane_flat] if base.kind != "V" else a2[i])
                entry = (gi, path, lane, ev_i, av_i)
                if which == "diff":
                    first_diff = entry
                else:
                    first_bad = entry
        n_diff += int(np.count_nonzero(diff_any))
        n_bad += int(np.count_nonzero(bad_any))

    if tail:
        te, ta = ue[n * itemsize : common], ua[n * itemsize : common]
        if not np.array_equal(te, ta):
            notes.append(f"trailing {tail} bytes differ")
            n_bad += 1
            n_diff += 1
    result.n_diff = n_diff
    result.n_bad = n_bad
    result.max_abs, result.max_rel, result.max_ulp = max_abs, max_rel, max_ulp
    result.leaves = [p for p, _ in _leaves(dt) if p]
    chosen = first_bad if first_bad is not None else first_diff
    if chosen is not None:
        i, path, lane, ev_i, av_i = chosen
        coords = None
        if shape:
            grid = tuple(int(s) for s in shape)
            total = int(np.prod(grid))
            if total > 0 and i < total:
                # x fastest: unravel in reversed (C) order then flip back
                coords = [int(c) for c in np.unravel_index(i, grid[::-1])][::-1]
        result.first = FirstDiff(
            index=i,
            byte_offset=i * itemsize,
            coords=coords,
            lane=lane,
            field=path or None,
            expected=ev_i,
            actual=av_i,
        )
    if n_bad or ue.size != ua.size:
        result.status = DIFFERENT
    elif n_diff:
        result.status = WITHIN
    else:  # bits differ only as NaN payloads
        result.status = WITHIN
    result.note = "; ".join(notes)
    return result


def _rows(mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """Which rows (elements) have a True lane; a scalar element's one lane is a view."""
    if mask.shape[1] == 1:
        return mask[:, 0]
    rows: npt.NDArray[np.bool_] = np.any(mask, axis=1)
    return rows


def _view(u8: npt.NDArray[np.uint8], dt: np.dtype[Any], n: int) -> npt.NDArray[Any]:
    if dt.subdtype is not None and not dt.fields:
        base, lanes = dt.subdtype
        return u8.view(base).reshape((n, *lanes))
    return u8.view(dt)


def _py(v: Any) -> Any:
    """A JSON-able Python value for a numpy scalar / small array."""
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        item = v.item()
        if isinstance(item, bytes):
            return item.hex()
        if isinstance(item, float) and not math.isfinite(item):
            return str(item)
        return item
    return v
