"""``Device Time`` lines: attached to their enqueues after the scan, and the lines whose
enqueues the log lost."""

from __future__ import annotations

import mmap
from array import array

import numpy as np
import numpy.typing as npt

from cltui.capture.log.index import (
    LogIndex,
)
from cltui.capture.log.parallel import (
    CHUNK,
)
from cltui.capture.log.scan import (
    _device_quads,
    _line_aligned_cuts,
    _line_candidates,
)
from cltui.capture.model import (
    Problem,
)


class _DeviceTimes:
    """Device times, attached piece by piece while the enqueue numbers so far are strictly
    increasing (the usual log: each number is one enqueue); a line naming a number not seen
    yet waits for the end.  Otherwise (several sessions) the lines are read again at the end
    and each goes to the latest enqueue with its number."""

    def __init__(self) -> None:
        self.rows = array("q")  # (q, s, d) per enqueue, -1 = none
        self.early = True
        self.last: int | None = None
        self.waiting: list[bytes] = []

    def add_rows(self, numbers: array[int]) -> None:
        nums = np.frombuffer(numbers, dtype=np.int64)
        if len(nums) == 0:
            return
        self.rows.frombytes(np.full(3 * len(nums), -1, dtype=np.int64).tobytes())
        # (equal neighbours are a duplicated line, dropped later: a device time goes to the
        # last of them, as the searches below pick it)
        if self.early and (
            (self.last is not None and int(nums[0]) < self.last)
            or (len(nums) > 1 and not bool(np.all(nums[1:] >= nums[:-1])))
        ):
            self.early = False
            self.waiting.clear()
        self.last = int(nums[-1])
        del nums

    def add_quads(self, numbers: array[int], raw: bytes) -> None:
        if not self.early:
            return
        if not numbers:
            self.waiting.append(raw)
            return
        q = np.frombuffer(raw, dtype=np.int64).reshape(-1, 4)
        nums = np.frombuffer(numbers, dtype=np.int64)
        j = np.searchsorted(nums, q[:, 0], side="right") - 1
        ok = (j >= 0) & (nums[np.maximum(j, 0)] == q[:, 0])
        table = np.frombuffer(self.rows, dtype=np.int64).reshape(-1, 3)
        table[j[ok]] = q[ok, 1:]
        if not ok.all():
            self.waiting.append(q[~ok].tobytes())
        del nums, table

    def table(self) -> npt.NDArray[np.int64]:
        if not self.rows:
            return np.zeros((0, 3), dtype=np.int64)
        return np.frombuffer(self.rows, dtype=np.int64).reshape(-1, 3)

    def finish(self, idx: LogIndex, mm: mmap.mmap | None, size: int) -> None:
        if self.early:
            # numbers are unique: a waiting line goes to its enqueue unless a later line did
            if self.waiting:
                q = np.frombuffer(b"".join(self.waiting), dtype=np.int64).reshape(-1, 4)
                nums = idx.numbers
                j = np.searchsorted(nums, q[:, 0], side="right") - 1
                ok = (j >= 0) & (nums[np.maximum(j, 0)] == q[:, 0])
                free = ok.copy()
                free[ok] = idx.device_times[j[ok], 0] < 0
                idx.device_times[j[free]] = q[free, 1:]
                _lost_device_times(idx, int((~ok).sum()))
            return
        idx.device_times[:] = -1
        if mm is None:
            return
        blocks: list[bytes] = []
        for pos, end in _line_aligned_cuts(idx.path, size, CHUNK):
            _, dev_at = _line_candidates(mm, pos, end)
            raw = _device_quads(mm, pos, end, mm.find(b"\x00", pos, end), dev_at)
            if raw:
                blocks.append(raw)
        _attach_device_times(idx, blocks)


def _lost_device_times(idx: LogIndex, lost: int) -> None:
    if lost:
        idx.problems.append(
            Problem(
                f"{lost} Device Time lines name enqueues that have no entry line", idx.path.name
            )
        )


def _attach_device_times(idx: LogIndex, dts: list[bytes]) -> None:
    """Device-time quadruples (in file order, one block per piece) onto their enqueues."""
    nums = idx.numbers
    n = len(nums)
    lost = 0
    sorted_ok = bool(np.all(nums[1:] > nums[:-1])) if n > 1 else True
    order = None if sorted_ok else np.argsort(nums, kind="stable")
    sorted_nums = nums if order is None else nums[order]
    dts.reverse()
    while dts:
        q = np.frombuffer(dts.pop(), dtype=np.int64).reshape(-1, 4)  # freed block by block
        # with several sessions numbers repeat: a device-time line belongs to the latest
        # enqueue with that number (searchsorted side=right - 1 picks the last duplicate)
        j = np.searchsorted(sorted_nums, q[:, 0], side="right") - 1
        ok = (j >= 0) & (sorted_nums[np.maximum(j, 0)] == q[:, 0])
        pos = j[ok] if order is None else order[j[ok]]
        idx.device_times[pos] = q[ok, 1:]
        lost += int((~ok).sum())
    _lost_device_times(idx, lost)
