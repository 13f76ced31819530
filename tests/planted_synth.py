"""Planted divergences of our own, as synthetic captures (:mod:`tests.analysis_synth`), for
the causes that ``planted_divergence_pocl`` lacks; each with its known cause on PoCL vs
Oclgrind (measured: both run work-items in order and round image writes to nearest even):

* ``image_nan``: ``write_imagef`` of a colour with NaNs (``sqrt`` of negative inputs) into a
  ``CL_RGBA``/``CL_SNORM_INT8`` image: Oclgrind stores a NaN as -128, PoCL as 0 (the
  specification's conversion: NaN converts to 0): the image format's conversion, outside
  the specification on Oclgrind;
* ``local_race``: 64 work-items write 8 ``__local`` slots (``tile[l % 8]``) before a
  barrier: whichever work-item writes last wins; both devices agree, a run with the
  work-items in reverse order does not: a data race ("differs between runs on the same
  device");
* ``group_sum``: a per-group tree reduction whose partial sums are added into one float
  with an ``atomic_cmpxchg`` loop: the sum depends on the order the work-groups finish in;
* ``local_neighbour``: each work-item puts ``mad(a, b, c)`` into a ``__local`` array and,
  after a barrier, writes twice the value of the work-item half a work-group away: the inputs
  make ``mad`` fused (Oclgrind) and not (PoCL) differ for two work-items only (5 and 202), so
  the outputs differ for the two that read theirs (37 and 234), whose own statements agree:
  the first difference is an operand read from ``__local`` memory, written by a neighbour.

Run as a script to write them: ``python -m tests.planted_synth DIR``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from tests.analysis_synth import Arg, Launch, SynthCapture, write_capture

W, H = 64, 16  # the image (texels)
N = W * H  # work-items of every case
L = 64  # the local size

IMAGE_SOURCE = """\
__kernel void shade(__global const float *in, write_only image2d_t out)
{
    int i = get_global_id(0);
    int w = get_image_width(out);
    float v = sqrt(in[i]);
    float4 c = (float4)(v, -v, in[i], 1.0f);
    write_imagef(out, (int2)(i % w, i / w), c);
}
"""

RACE_SOURCE = """\
__kernel void neighbours(__global const float *in, __global float *out, __local float *tile)
{
    int l = get_local_id(0);
    int i = get_global_id(0);
    tile[l % 8] = in[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[i] = tile[(l + 1) % 8] * 2.0f;
}
"""

SUM_SOURCE = """\
void add_float(volatile __global float *p, float v)
{
    union { uint u; float f; } was, now;
    do {
        was.f = *p;
        now.f = was.f + v;
    } while (atomic_cmpxchg((volatile __global uint *)p, was.u, now.u) != was.u);
}

__kernel void group_sum(__global const float *in, __global float *sum, __local float *part)
{
    int l = get_local_id(0);
    part[l] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = get_local_size(0) / 2; k > 0; k /= 2) {
        if (l < k)
            part[l] += part[l + k];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0)
        add_float(sum, part[0]);
}
"""

NEIGHBOUR_SOURCE = """\
__kernel void neighbour(__global const float *a, __global const float *b,
                        __global const float *c, __global float *out)
{
    __local float tile[64];
    int l = get_local_id(0);
    int i = get_global_id(0);
    tile[l] = mad(a[i], b[i], c[i]);
    barrier(CLK_LOCAL_MEM_FENCE);
    out[i] = tile[(l + 32) % 64] * 2.0f;
}
"""
NEIGHBOUR_PARTED = (5, 202)  # the work-items whose mad differs (a fused multiply-add or not)

State = dict[str, npt.NDArray[Any]]


def _inputs(seed: int) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    return rng.uniform(-0.15, 1.0, N).astype(np.float32)


def _shade(st: State, a: list[Any]) -> None:
    x = st[a[0]].astype(np.float32)
    with np.errstate(invalid="ignore"):
        v = np.sqrt(x)
    c = np.stack([v, -v, x, np.ones_like(x)], axis=1)
    q = np.rint(np.clip(np.nan_to_num(c, nan=0.0) * np.float32(127), -128, 127))
    st[a[1]][:] = q.astype(np.int8).reshape(-1)


def image_nan() -> SynthCapture:
    launch = Launch("shade", [Arg("buf", "in"), Arg("buf", "img")], N, L, _shade)
    return SynthCapture(IMAGE_SOURCE, {"in": _inputs(7), "img": np.zeros(4 * N, np.int8)},
                        [launch], images={"img": (W, H)},
                        image_formats={"img": ("CL_RGBA", "CL_SNORM_INT8")})  # fmt: skip


def _neighbours(st: State, a: list[Any]) -> None:
    x = st[a[0]]
    lid = np.arange(N) % L
    base = np.arange(N) - lid
    st[a[1]][:] = x[base + L - 8 + (lid + 1) % 8] * np.float32(2)  # the last writer wins


def local_race() -> SynthCapture:
    args = [Arg("buf", "in"), Arg("buf", "out"), Arg("local", 4 * L)]
    launch = Launch("neighbours", args, N, L, _neighbours)
    return SynthCapture(RACE_SOURCE, {"in": _inputs(11), "out": np.zeros(N, np.float32)},
                        [launch])  # fmt: skip


def _group_sum(st: State, a: list[Any]) -> None:
    total = np.float32(0)
    for g in range(N // L):
        part = st[a[0]][g * L : (g + 1) * L].copy()
        k = L // 2
        while k:
            part[:k] += part[k : 2 * k]
            k //= 2
        total = np.float32(total + part[0])
    st[a[1]][0] = total


def group_sum() -> SynthCapture:
    rng = np.random.default_rng(5)
    # one large value in the first group and small ones elsewhere: each partial sum added to
    # the large one is rounded, the small ones added first are not (the order shows)
    x = rng.uniform(0.5, 1.5, N).astype(np.float32)
    x[0] = np.float32(3e7)
    args = [Arg("buf", "in"), Arg("buf", "sum"), Arg("local", 4 * L)]
    launch = Launch("group_sum", args, N, L, _group_sum)
    return SynthCapture(SUM_SOURCE, {"in": x, "sum": np.zeros(1, np.float32)}, [launch])


def _neighbour(st: State, a: list[Any]) -> None:
    t = st[a[0]] * st[a[1]] + st[a[2]]  # a multiply then an add (float32): PoCL's mad
    lid = np.arange(N) % L
    st[a[3]][:] = t[np.arange(N) - lid + (lid + L // 2) % L] * np.float32(2)


def local_neighbour() -> SynthCapture:
    rng = np.random.default_rng(3)
    x = rng.uniform(0.5, 1.5, N).astype(np.float32)
    y = np.ones(N, np.float32)  # x * 1 + c: one rounding either way
    z = rng.uniform(-0.5, 0.5, N).astype(np.float32)
    for i in NEIGHBOUR_PARTED:  # (1 + 2^-12)^2 - 1: the product's last bit is lost unfused
        x[i] = y[i] = np.float32(1 + 2.0**-12)
        z[i] = np.float32(-1)
    args = [Arg("buf", "a"), Arg("buf", "b"), Arg("buf", "c"), Arg("buf", "out")]
    launch = Launch("neighbour", args, N, L, _neighbour)
    return SynthCapture(NEIGHBOUR_SOURCE, {"a": x, "b": y, "c": z,
                                           "out": np.zeros(N, np.float32)}, [launch])


CASES: dict[str, Callable[[], SynthCapture]] = {
    "image_nan": image_nan, "local_race": local_race, "group_sum": group_sum,
    "local_neighbour": local_neighbour,
}  # fmt: skip


def write(name: str, root: Path) -> Path:
    """Case ``name`` written as a capture folder ``root`` (its one kernel is enqueue 0)."""
    return write_capture(CASES[name](), root)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.planted_synth DIR", file=sys.stderr)
        return 2
    for name in CASES:
        print(write(name, Path(argv[0]) / name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
