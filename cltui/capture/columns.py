"""The enqueue index of a capture as columns (numpy arrays, one entry per enqueue, log
order), and the same columns with the enqueues that recovery found merged in."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cltui.capture import log as li
from cltui.capture.log.index import ROW_ARRAYS, take_rows
from cltui.capture.recovery import Recovery


@dataclass
class IndexColumns:
    """One entry per enqueue in each array; ``kernel_ids`` index ``kernel_names`` (-1 for
    non-kernels), ``function_ids`` index ``functions``; device times (q->s, s->st, st->e ns)
    are -1 where missing; ``offsets`` are -1 for enqueues the log does not hold."""

    numbers: npt.NDArray[np.int64]
    offsets: npt.NDArray[np.int64]
    kinds: npt.NDArray[np.uint8]
    kernel_ids: npt.NDArray[np.int32]
    kernel_names: list[str]
    device_times: npt.NDArray[np.int64]
    function_ids: npt.NDArray[np.uint16]
    functions: list[str]
    recovered: npt.NDArray[np.bool_]

    @classmethod
    def of_log(cls, log: li.LogIndex | None) -> IndexColumns:
        """The log's index (no enqueue without a log); none recovered."""
        if log is None:
            return cls(
                numbers=np.zeros(0, dtype=np.int64),
                offsets=np.zeros(0, dtype=np.int64),
                kinds=np.zeros(0, dtype=np.uint8),
                kernel_ids=np.zeros(0, dtype=np.int32),
                kernel_names=[],
                device_times=np.zeros((0, 3), dtype=np.int64),
                function_ids=np.zeros(0, dtype=np.uint16),
                functions=[],
                recovered=np.zeros(0, dtype=bool),
            )
        return cls(
            numbers=log.numbers,
            offsets=log.offsets,
            kinds=log.kinds,
            kernel_ids=log.kernel_ids,
            kernel_names=log.kernel_names,
            device_times=log.device_times,
            function_ids=log.function_ids,
            functions=log.functions,
            recovered=np.zeros(len(log.numbers), dtype=bool),
        )

    def with_recovered(self, rec: Recovery) -> IndexColumns:
        """These columns and the enqueues ``rec`` recovered (``offsets`` -1, ``recovered``
        True); in a single-session log, each recovered enqueue takes its place in number
        order, else they follow the log's."""
        extra = sorted(rec.enqueues)
        kernel_names = list(self.kernel_names)
        kmap = {k: i for i, k in enumerate(kernel_names)}
        functions = list(self.functions)
        fmap = {f: i for i, f in enumerate(functions)}
        kids: list[int] = []
        fids: list[int] = []
        kinds: list[int] = []
        times = np.full((len(extra), 3), -1, dtype=np.int64)
        for j, n in enumerate(extra):
            r = rec.enqueues[n]
            if r.kernel is not None:
                if r.kernel not in kmap:
                    kmap[r.kernel] = len(kernel_names)
                    kernel_names.append(r.kernel)
                kids.append(kmap[r.kernel])
            else:
                kids.append(-1)
            if r.function not in fmap:
                fmap[r.function] = len(functions)
                functions.append(r.function)
            fids.append(fmap[r.function])
            kinds.append(int(r.kind))
            if r.device_time is not None:
                dt = r.device_time
                times[j] = (dt.queued_to_submit, dt.submit_to_start, dt.start_to_end)
        m = len(extra)
        out = IndexColumns(
            numbers=np.concatenate([self.numbers, np.array(extra, dtype=np.int64)]),
            offsets=np.concatenate([self.offsets, np.full(m, -1, dtype=np.int64)]),
            kinds=np.concatenate([self.kinds, np.array(kinds, dtype=np.uint8)]),
            kernel_ids=np.concatenate([self.kernel_ids, np.array(kids, dtype=np.int32)]),
            kernel_names=kernel_names,
            device_times=np.concatenate([self.device_times, times]),
            function_ids=np.concatenate([self.function_ids, np.array(fids, dtype=np.uint16)]),
            functions=functions,
            recovered=np.concatenate([self.recovered, np.ones(m, dtype=bool)]),
        )
        n0 = len(self.numbers)
        if n0 < 2 or bool(np.all(np.diff(self.numbers) > 0)):
            # a single-session log: recovered enqueues take their place in number order
            out._reorder(np.argsort(out.numbers, kind="stable"))
        return out

    def _reorder(self, order: npt.NDArray[np.intp]) -> None:
        take_rows(self, order, (*ROW_ARRAYS, "recovered"))
