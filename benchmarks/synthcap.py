"""An in-memory capture of any size with the :class:`cltui.capture.capture.Capture` API.

Used by ``benchmarks/tui_bench.py`` to time the list on 10^6 enqueues without a 2 GB log:
rows are computed from numpy arrays exactly as the real index serves them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Unpack

import numpy as np
import numpy.typing as npt

from cltui.capture.model import DeviceTime, Enqueue, EnqueueKind, EnqueueRow, Problem, Program
from cltui.capture.query import FindFilters, find_positions

KERNELS = ["heat_stencil", "heat_boundary", "heat_diffnorm_stage1"]


class SyntheticCapture:
    """``n`` enqueues: stencil/boundary pairs, a reduction and a read every 50 steps."""

    def __init__(self, n: int, path: Path | None = None) -> None:
        self.path = path or Path(f"synthetic-{n}")
        self.log_path = None
        self.controls: dict[str, str] = {}
        self.problems: list[Problem] = []
        pattern = np.array([0, 1] * 24 + [2, -1], dtype=np.int32)  # 50 enqueues a cycle
        reps = -(-n // len(pattern))
        self.kernel_ids = np.tile(pattern, reps)[:n]
        self.kinds = np.where(self.kernel_ids >= 0, EnqueueKind.KERNEL, EnqueueKind.READ).astype(
            np.uint8
        )
        self.numbers = np.arange(n, dtype=np.int64)
        self.kernel_names = list(KERNELS)
        rng = np.random.default_rng(0)
        times = np.empty((n, 3), dtype=np.int64)
        times[:, 0] = rng.integers(1000, 5000, n)
        times[:, 1] = rng.integers(1000, 9000, n)
        times[:, 2] = rng.integers(2000, 40000, n)
        self.device_times = times
        self.has_pre = np.zeros(n, dtype=bool)  # the columns the list's filter reads
        self.has_post = np.zeros(n, dtype=bool)
        self.has_replay = np.zeros(n, dtype=bool)
        self.recovery = None  # nothing lost

    def __len__(self) -> int:
        return len(self.numbers)

    def position_of(self, number: int) -> int | None:
        return number if 0 <= number < len(self) else None

    def row(self, pos: int) -> EnqueueRow:
        kid = int(self.kernel_ids[pos])
        t = self.device_times[pos]
        kernel = kid >= 0
        return EnqueueRow(
            number=int(self.numbers[pos]),
            kind=EnqueueKind(int(self.kinds[pos])),
            function="clEnqueueNDRangeKernel" if kernel else "clEnqueueReadBuffer",
            kernel=self.kernel_names[kid] if kernel else None,
            global_size=(4096,) if kernel else None,
            local_size=None,
            device_time=DeviceTime(int(t[0]), int(t[1]), int(t[2])),
            has_pre=False,
            has_post=False,
            has_replay=False,
            hashes_only=False,
        )

    def rows(self, start: int, stop: int) -> list[EnqueueRow]:
        return [self.row(p) for p in range(start, min(stop, len(self)))]

    def enqueue(self, number: int) -> Enqueue:
        row = self.row(number)
        return Enqueue(row=row, line=row.function, queue=None, event=None, global_offset=None)

    def find(
        self, kernel: str | None = None, **filters: Unpack[FindFilters]
    ) -> npt.NDArray[np.int64]:
        return find_positions(self.numbers, self.kinds, self.kernel_ids, self.kernel_names,
                              kernel, **filters)  # fmt: skip

    @property
    def programs(self) -> list[Program]:
        return []

    def program_source(self, program: Program) -> str:
        return ""

    def build_log(self, program: Program) -> str:
        return ""

    def info(self) -> dict[str, Any]:
        return {"enqueues": len(self)}
