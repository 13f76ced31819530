"""A synthetic capture of a CLBlast-style program (tests/fixtures/clblast/clblast_style.cl) in
the real CLIntercept formats: enqueues 0-7 upload the operands and clear a workspace, enqueue
8 is XaxpyFaster (n = 4096, alpha = 3, global 4096, local 64 = its WGS), enqueue 9 is Xgemv
(256 x 128 matrix, global 256, local 64 = its WGS1).

Values are small whole numbers, so every order of the sums is exact in float32: a tuned point
is correct exactly when it computes the same thing.  ``python -m tests.clblast_synth DIR``
writes the capture into DIR (to try ``cltui sweep DIR 8 --param WGS=64,128,256 --param
VW=1,2,4 --local WGS`` by hand).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from tests.analysis_synth import Arg, HostOp, Launch, SynthCapture, write_capture

SOURCE = Path(__file__).parent / "fixtures" / "clblast" / "clblast_style.cl"
N = 4096  # XaxpyFaster's n
M, K = 256, 128  # Xgemv's rows and columns
AXPY, GEMV = 8, 9  # their enqueue numbers


def _axpy(st: dict[str, npt.NDArray[Any]], a: list[Any]) -> None:
    st[a[3]][:] = st[a[3]] + np.float32(a[1]) * st[a[2]]


def _gemv(st: dict[str, npt.NDArray[Any]], a: list[Any]) -> None:
    m, n, alpha, beta = a[0], a[1], np.float32(a[2]), np.float32(a[3])
    mat = st[a[4]].reshape(m, a[5])[:, :n]
    st[a[7]][:] = alpha * (mat @ st[a[6]][:n]) + beta * st[a[7]]


def clblast_capture() -> SynthCapture:
    i = np.arange(N, dtype=np.float32)
    r = np.arange(M * K, dtype=np.float32)
    f32 = np.float32
    data = {"x": i % 100, "y": i % 37, "A": r % 7, "gx": np.arange(K, dtype=f32) % 5,
            "gy": np.arange(M, dtype=f32) % 3}  # fmt: skip
    # enqueues 0-7: the host uploads the five operands and clears a workspace (three fills)
    before = [HostOp("write", name, data=arr.tobytes()) for name, arr in data.items()]
    before += [HostOp("fill", "ws", pattern=b"\0\0\0\0", size=256) for _ in range(3)]
    buffers = {**{name: np.zeros_like(arr) for name, arr in data.items()},
               "ws": np.zeros(64, dtype=f32)}  # fmt: skip
    axpy = [Arg("int", N), Arg("float", 3.0), Arg("buf", "x"), Arg("buf", "y")]
    gemv = [Arg("int", M), Arg("int", K), Arg("float", 2.0), Arg("float", 1.0), Arg("buf", "A"),
            Arg("int", K), Arg("buf", "gx"), Arg("buf", "gy")]  # fmt: skip
    launches = [Launch("XaxpyFaster", axpy, N, 64, _axpy, before=before),
                Launch("Xgemv", gemv, M, 64, _gemv)]  # fmt: skip
    return SynthCapture(SOURCE.read_text(), buffers, launches)


def write_clblast_capture(root: Path) -> Path:
    return write_capture(clblast_capture(), root)


if __name__ == "__main__":
    print(write_clblast_capture(Path(sys.argv[1])))
