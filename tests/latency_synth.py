"""Synthetic captures with a known answer for ``cltui latency``'s sensitivity: a launch-bound
range (one-work-item launches back to back: the host loop is the wall, slope 1) and a
device-bound one (launches that each spin long enough to hide a host delay: slope 0).
Used by ``benchmarks/bench_latency.py``, ``bench_latency_coverage.py`` and the tests."""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.analysis_synth import Arg, Launch, SynthCapture

SOURCE = """\
__kernel void tiny(__global uint *a)
{
    a[get_global_id(0)] += 1u;
}

__kernel void spin(__global uint *a, int iters)
{
    uint i = get_global_id(0);
    uint x = a[i] + i;
    for (int k = 0; k < iters; ++k)
        x = x * 1103515245u + 12345u;
    a[i] = x;
}
"""


def _tiny(st: dict[str, Any], _a: list[Any]) -> None:
    st["A"][0] += np.uint32(1)


def _lcg_power(n: int) -> tuple[int, int]:
    """x -> A x + C (mod 2^32): the LCG step applied n times (by squaring)."""
    mul, add = 1, 0
    base_m, base_a = 1103515245, 12345
    while n:
        if n & 1:
            mul, add = (base_m * mul) % 2**32, (base_m * add + base_a) % 2**32
        base_m, base_a = (base_m * base_m) % 2**32, (base_m * base_a + base_a) % 2**32
        n >>= 1
    return mul, add


def _spin(st: dict[str, Any], a: list[Any]) -> None:
    mul, add = _lcg_power(int(a[1]))
    x = st["A"].astype(np.uint64) + np.arange(len(st["A"]), dtype=np.uint64)
    st["A"][:] = ((x * mul + add) % 2**32).astype(np.uint32)


def synth_launch_bound(n: int) -> SynthCapture:
    """``n`` one-work-item launches; the Post dumps as a device writes them (no reload)."""
    a = np.zeros(64, dtype=np.uint32)
    launches = [Launch("tiny", [Arg("buf", "A")], 1, None, _tiny) for _ in range(n)]
    return SynthCapture(SOURCE, {"A": a}, launches)


def synth_device_bound(n: int, width: int, iters: int) -> SynthCapture:
    """``n`` launches of ``spin`` over ``width`` work-items, ``iters`` steps each."""
    a = np.zeros(width, dtype=np.uint32)
    launches = [Launch("spin", [Arg("buf", "A"), Arg("int", iters)], width, None, _spin)
                for _ in range(n)]  # fmt: skip
    return SynthCapture(SOURCE, {"A": a}, launches)
