"""Compare benchmarks: cltui's buffer comparison vs plain numpy on the same arrays.

1. Equal buffers: ``compare_bytes(expected, actual, "<f4")`` (the entry point the engine
   calls, whose exact fast path answers "equal") against ``np.array_equal`` on the same
   two float32 arrays, at 1 MB .. 256 MB.  Goal: ratio time(np) / time(cltui) >= 0.5.
2. Differing buffers: ``compare_bytes`` with a 4-ULP tolerance on float32 arrays whose
   differences are scattered (1 element in 100, 1..8 ULP apart, some beyond tolerance)
   against a hand-written numpy analysis of the same arrays (differing count, max abs
   error, max ULP distance through an int32 view, first differing index).  Informational:
   cltui computes more (relative error, NaN/inf handling, tolerance verdict).

3. Hash-only checks (captures made with ``DumpBufferHashes``): the engine's hash of the
   replayed bytes (a one-work-item kernel on PoCL, the upload included) against
   ``cli_hash64``, the same hash in Python, on the same random bytes (1 and 4 MiB).

Both sides alternate repetition by repetition; the figure is the best of N for each.

    .venv/bin/python benchmarks/bench_compare.py [--quick]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cltui.replay.engine.compare import Tolerance, compare_bytes

MB = 1 << 20
EQUAL_SIZES_MB = (1, 16, 64, 256)
DIFF_SIZES_MB = (1, 16, 64)


def best_alternating(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Best-of-``repeat`` seconds per function, the functions taking turns each round."""
    best = {k: float("inf") for k in fns}
    for r in range(repeat):
        order = list(fns.items()) if r % 2 == 0 else list(reversed(fns.items()))
        for name, fn in order:
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def _pair(size_mb: int, rng: np.random.Generator) -> tuple[npt.NDArray[np.float32], ...]:
    n = size_mb * MB // 4
    a = rng.standard_normal(n, dtype=np.float32)
    return a, a.copy()


def numpy_analysis(e: npt.NDArray[np.float32], a: npt.NDArray[np.float32]) -> dict[str, Any]:
    """The least a hand-written script does: count, max abs, max ULP, first index."""
    d = e.view(np.int32) != a.view(np.int32)
    n = int(np.count_nonzero(d))
    ed, ad = e[d], a[d]
    max_abs = float(np.abs(ad.astype(np.float64) - ed.astype(np.float64)).max()) if n else 0.0
    ei, ai = ed.view(np.int32).astype(np.int64), ad.view(np.int32).astype(np.int64)
    ei = np.where(ei < 0, -(ei & 0x7FFFFFFF), ei)
    ai = np.where(ai < 0, -(ai & 0x7FFFFFFF), ai)
    max_ulp = int(np.abs(ai - ei).max()) if n else 0
    first = int(np.argmax(d)) if n else -1
    return {"n_diff": n, "max_abs": max_abs, "max_ulp": max_ulp, "first": first}


def equal_check(sizes: tuple[int, ...], repeat: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(1)
    out: list[dict[str, Any]] = []
    for size in sizes:
        e, a = _pair(size, rng)
        assert compare_bytes(e, a, "<f4").status == "equal"
        assert np.array_equal(e, a)
        # tens of microseconds at 1 MiB: many more turns there, or the noise decides
        reps = repeat * 6 if size <= 1 else (repeat if size < 64 else max(3, repeat // 2))
        best = best_alternating(
            {
                "np.array_equal": partial(np.array_equal, e, a),
                "cltui": partial(compare_bytes, e, a, "<f4"),
            },
            reps,
        )
        out.append(
            {
                "size_mb": size,
                "cltui_s": best["cltui"],
                "numpy_s": best["np.array_equal"],
                "cltui_gb_s": size * MB / best["cltui"] / 1e9,
                "numpy_gb_s": size * MB / best["np.array_equal"] / 1e9,
                "ratio": best["np.array_equal"] / best["cltui"],
                "repeat": reps,
            }
        )
        del e, a
        gc.collect()
    return out


def differing(sizes: tuple[int, ...], repeat: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(2)
    tol = Tolerance(ulp=4)
    out: list[dict[str, Any]] = []
    for size in sizes:
        e, a = _pair(size, rng)
        idx = rng.choice(e.size, size=e.size // 100, replace=False)
        steps = rng.integers(1, 9, idx.size).astype(np.int32)
        a.view(np.int32)[idx] += steps  # 1..8 ULP away (finite normals stay finite)
        ours = compare_bytes(e, a, "<f4", tol)
        mine = numpy_analysis(e, a)
        assert ours.n_diff == mine["n_diff"] == idx.size, (ours.n_diff, mine["n_diff"])
        assert ours.max_ulp == mine["max_ulp"] == 8, (ours.max_ulp, mine["max_ulp"])
        assert ours.first is not None and ours.first.index == mine["first"]
        reps = repeat if size < 64 else max(2, repeat // 3)
        best = best_alternating(
            {
                "numpy": partial(numpy_analysis, e, a),
                "cltui": partial(compare_bytes, e, a, "<f4", tol),
            },
            reps,
        )
        out.append(
            {
                "size_mb": size,
                "n_diff": int(idx.size),
                "status": ours.status,
                "cltui_s": best["cltui"],
                "numpy_s": best["numpy"],
                "cltui_mb_s": size * MB / best["cltui"] / 1e6,
                "numpy_mb_s": size * MB / best["numpy"] / 1e6,
                "ratio": best["numpy"] / best["cltui"],
                "repeat": reps,
            }
        )
        del e, a
        gc.collect()
    return out


def hashing(sizes_mb: tuple[int, ...], repeat: int, device: str = "pocl") -> list[dict[str, Any]]:
    from cltui.capture.hashing import cli_hash64
    from cltui.replay.engine import PLAN_FORMAT, Engine, resolve_devices

    dev = resolve_devices([device])[0]
    plan = {"format": PLAN_FORMAT, "version": 1, "programs": {}, "memory": {}, "steps": []}
    eng = Engine(plan, dev, lambda _key: np.zeros(0, np.uint8))
    eng.prepare()
    eng._device_hash64(np.zeros(4, np.uint8))  # the kernel's build, outside the timing
    out = []
    for size in sizes_mb:
        data = np.random.default_rng(size).integers(0, 256, size * MB, dtype=np.uint8)
        if eng._device_hash64(data) != cli_hash64(data):
            raise SystemExit("the device hash differs from cli_hash64")
        best = best_alternating(
            {"cltui": partial(eng._device_hash64, data), "python": partial(cli_hash64, data)},
            repeat,
        )
        out.append(
            {
                "size_mb": size,
                "device": dev["name"],
                "cltui_mb_s": size * MB / best["cltui"] / 1e6,
                "python_mb_s": size * MB / best["python"] / 1e6,
                "ratio": best["python"] / best["cltui"],
            }
        )
    return out


def run(quick: bool = False, repeat: int = 7) -> dict[str, Any]:
    eq_sizes = EQUAL_SIZES_MB[:2] if quick else EQUAL_SIZES_MB
    diff_sizes = DIFF_SIZES_MB[:2] if quick else DIFF_SIZES_MB
    return {
        "equal": equal_check(eq_sizes, repeat),
        "differing": differing(diff_sizes, max(3, repeat // 2)),
        "hash": hashing((1,) if quick else (1, 4), 3),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="the small sizes only")
    ns = ap.parse_args(argv)
    print(json.dumps(run(ns.quick), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
