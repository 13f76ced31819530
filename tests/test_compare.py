"""cltui.replay.engine.compare: exact fast path, typed tolerance, first difference in typed
coordinates."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cltui.replay.engine.compare import (
    DIFFERENT,
    EQUAL,
    WITHIN,
    Tolerance,
    bytes_equal,
    compare_bytes,
)
from cltui.replay.engine.dtypes import dtype_spec, make_dtype


def test_equal_bytes_fast_path() -> None:
    a = np.arange(1000, dtype=np.float32)
    r = compare_bytes(a, a.copy(), "<f4")
    assert r.status == EQUAL and r.n_diff == 0 and r.first is None
    assert r.summary() == "bit-exact"
    assert bytes_equal(a.tobytes(), bytes(a.tobytes()))
    assert not bytes_equal(a.tobytes(), a.tobytes()[:-1])
    # unaligned views take the byte path
    raw = np.zeros(17, np.uint8)
    assert bytes_equal(raw[1:], np.zeros(16, np.uint8))


def test_integers_are_exact_and_first_difference_has_coords() -> None:
    e = np.arange(12, dtype=np.int32)
    a = e.copy()
    a[7] = 99
    r = compare_bytes(e, a, "<i4", Tolerance(atol=1000, ulp=1000), shape=(4, 3))
    assert r.status == DIFFERENT  # tolerances never apply to integers
    assert r.n_diff == r.n_bad == 1
    assert r.first is not None
    assert (r.first.index, r.first.expected, r.first.actual) == (7, 7, 99)
    assert r.first.coords == [3, 1]  # x fastest: 7 = 1*4 + 3
    assert r.first.where() == "(x=3, y=1)"
    assert r.max_ulp is None


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-1e30, 1e30, allow_nan=False), min_size=1, max_size=64),
    st.integers(1, 50),
    st.data(),
)
def test_ulp_distance_of_one_perturbed_element(
    values: list[float], ulps: int, data: st.DataObject
) -> None:
    e = np.array(values, dtype=np.float32)
    i = data.draw(st.integers(0, len(values) - 1))
    a = e.copy()
    for _ in range(ulps):
        a[i] = np.nextafter(a[i], np.float32(np.inf))
    r = compare_bytes(e, a, "<f4")
    assert r.status == DIFFERENT and r.n_diff == 1
    assert r.max_ulp == ulps
    assert r.first is not None and r.first.index == i
    assert compare_bytes(e, a, "<f4", Tolerance(ulp=ulps)).status == WITHIN
    assert compare_bytes(e, a, "<f4", Tolerance(ulp=ulps - 1)).status == DIFFERENT


def test_ulp_across_zero_and_signed_zero() -> None:
    e = np.array([0.0, -0.0, np.float32(1e-45)], np.float32)
    a = np.array([-0.0, 0.0, np.float32(-1e-45)], np.float32)
    r = compare_bytes(e, a, "<f4")
    assert r.n_diff == 3 and r.n_bad == 1  # +-0 are within a zero tolerance, not equal bits
    assert r.max_ulp == 2  # smallest denormal to its negative
    assert r.status == DIFFERENT


def test_nan_aware() -> None:
    e = np.array([np.nan, 1.0, np.inf, 2.0], np.float32)
    a = np.array([np.nan, np.nan, np.inf, 2.0], np.float32)
    r = compare_bytes(e, a, "<f4", Tolerance(atol=1e9, ulp=1 << 30))
    assert r.status == DIFFERENT and r.n_bad == 1
    assert r.first is not None and r.first.index == 1
    assert compare_bytes(e[[0, 2, 3]], a[[0, 2, 3]], "<f4").status == EQUAL


def test_abs_and_rel_tolerance() -> None:
    e = np.array([1.0, 100.0, 0.0], np.float64)
    a = np.array([1.001, 100.05, 0.0], np.float64)
    r = compare_bytes(e, a, "<f8")
    assert r.max_abs == pytest.approx(0.05)
    assert r.max_rel == pytest.approx(1e-3)
    assert compare_bytes(e, a, "<f8", Tolerance(atol=0.05)).status == WITHIN
    assert compare_bytes(e, a, "<f8", Tolerance(rtol=1e-3 + 1e-12)).status == WITHIN
    assert compare_bytes(e, a, "<f8", Tolerance(rtol=5e-4)).status == DIFFERENT


def test_vector_lane_and_struct_field() -> None:
    e = np.zeros(8, dtype=np.float32)
    a = e.copy()
    a[6] = 1.0  # element 1, lane 2 of a float4
    r = compare_bytes(e, a, "(4,)<f4")
    assert r.first is not None
    assert (r.first.index, r.first.lane) == (1, [2])
    assert r.first.where() == "[1] lane 2"
    sdt = np.dtype([("scale", "<f4"), ("offset", "<f4"), ("lo", "<i4"), ("hi", "<i4")])
    es = np.zeros(3, sdt)
    as_ = es.copy()
    as_[2]["lo"] = -5
    r2 = compare_bytes(es, as_, dtype_spec(sdt))
    assert r2.first is not None
    assert (r2.first.index, r2.first.field, r2.first.actual) == (2, "lo", -5)
    assert r2.first.where() == "[2].lo"
    assert r2.leaves == ["scale", "offset", "lo", "hi"]


def test_size_mismatch_and_trailing_bytes() -> None:
    e = np.arange(4, dtype=np.int32).tobytes()
    r = compare_bytes(e, e[:12], "<i4")
    assert r.status == DIFFERENT and "size differs" in r.note
    r2 = compare_bytes(e + b"\x01", e + b"\x02", "<i4")
    assert r2.status == DIFFERENT and "trailing 1 bytes differ" in r2.note


def test_dtype_specs_round_trip() -> None:
    for dt in (
        np.dtype("<f4"),
        np.dtype("(4,)<f4"),
        np.dtype({"names": ["a", "b"], "formats": ["<f4", "(2,)<i4"], "offsets": [0, 8]}),
    ):
        assert make_dtype(dtype_spec(dt)) == dt
    assert make_dtype(None) == np.dtype(np.uint8)
    with pytest.raises(ValueError):
        make_dtype(42)  # type: ignore[arg-type]


def test_tolerance_merge_per_argument() -> None:
    t = Tolerance(atol=1e-6).merged({"ulp": 3})
    assert t == Tolerance(atol=1e-6, ulp=3)
    assert Tolerance.from_dict({"rtol": "0.5"}).rtol == 0.5
    r = compare_bytes(np.zeros(2, np.float32), np.array([0, 1], np.float32), "<f4")
    d = r.to_dict()
    assert d["first"]["where"] == "[1]" and d["status"] == DIFFERENT


def test_large_buffers_are_compared_in_chunks() -> None:
    n = 5_000_000  # 20 MB of float32: three 8 MB chunks
    e = np.linspace(-1, 1, n, dtype=np.float32)
    a = e.copy()
    idx = np.array([2_500_000, 2_500_001, 4_999_999])
    a[idx] = np.nextafter(a[idx], np.float32(np.inf))
    a[4_999_999] = np.nextafter(a[4_999_999], np.float32(np.inf))  # 2 ULP
    r = compare_bytes(e, a, "<f4")
    assert r.n_diff == 3 and r.max_ulp == 2
    assert r.first is not None and r.first.index == 2_500_000
    assert compare_bytes(e, a, "<f4", Tolerance(ulp=1)).n_bad == 1


def test_scattered_float_differences_match_an_independent_analysis() -> None:
    """Only the differing lanes are analysed: figures must still cover every one of them."""
    rng = np.random.default_rng(7)
    e = rng.standard_normal((5000, 4), dtype=np.float32)
    a = e.copy()
    flat = rng.choice(e.size, 300, replace=False)
    ulps = rng.integers(1, 9, flat.size).astype(np.int32)
    a.reshape(-1).view(np.int32)[flat] += ulps
    a.reshape(-1)[flat[:3]] = np.nan  # NaN against a number: infinitely far
    e.reshape(-1)[flat[3]] = a.reshape(-1)[flat[3]] = np.nan  # both NaN: not a difference
    res = compare_bytes(e, a, "(4,)<f4", Tolerance(ulp=4))
    rows = np.unique(np.delete(flat, 3) // 4)
    assert res.n_diff == rows.size
    bad = np.unique(np.concatenate([flat[:3], flat[4:][ulps[4:] > 4]]) // 4)
    assert res.n_bad == bad.size and res.status == DIFFERENT
    assert res.max_ulp == float("inf") and res.first is not None
    assert res.first.index == bad.min()  # the first element beyond tolerance
    finite = compare_bytes(e, np.where(np.isnan(a), e, a), "(4,)<f4", Tolerance(ulp=4))
    assert finite.max_ulp == float(ulps[4:].max()) and finite.max_abs is not None
    d = np.abs(np.where(np.isnan(a), e, a).astype(np.float64) - e.astype(np.float64))
    assert finite.max_abs == pytest.approx(float(np.nanmax(d)))
