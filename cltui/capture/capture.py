"""``open_capture`` and the :class:`Capture` facade (API contract; being implemented).

Positions vs numbers: the index stores enqueues in log order; ``pos`` is the
0-based position in the index, ``number`` is the layer's EnqueueCounter.  In a
normal single-session log ``number == pos`` but never rely on it: use
``position_of``/``numbers``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from cltui.capture.model import Enqueue, EnqueueKind, EnqueueRow, Problem, Program

ProgressFn = Callable[[float], None]  # fraction 0..1, called from the indexing thread


class Capture:
    """A read-only view of one dump directory.  Nothing large is read until asked."""

    path: Path
    log_path: Path | None
    controls: dict[str, str]  # "Control X is set to non-default value: V" lines
    problems: list[Problem]  # specific messages about unreadable parts

    # ---- index (numpy arrays, one entry per enqueue, log order) ----
    numbers: npt.NDArray[np.int64]
    kinds: npt.NDArray[np.uint8]  # EnqueueKind values
    kernel_ids: npt.NDArray[np.int32]  # index into kernel_names, -1 for non-kernels
    kernel_names: list[str]  # distinct short kernel names
    device_times: npt.NDArray[np.int64]  # shape (n, 3): q->s, s->st, st->e ns; -1 missing

    def __len__(self) -> int:
        raise NotImplementedError

    def position_of(self, number: int) -> int | None:
        raise NotImplementedError

    def row(self, pos: int) -> EnqueueRow:
        raise NotImplementedError

    def rows(self, start: int, stop: int) -> list[EnqueueRow]:
        raise NotImplementedError

    def enqueue(self, number: int) -> Enqueue:
        """Full decode of one enqueue (args typed by signature, dumps attached)."""
        raise NotImplementedError

    def find(
        self,
        kernel: str | None = None,
        *,
        regex: bool = False,
        kinds: Sequence[EnqueueKind] | None = None,
        first: int | None = None,
        last: int | None = None,
    ) -> npt.NDArray[np.int64]:
        """Positions of enqueues matching a kernel-name substring/regex, kinds, number range."""
        raise NotImplementedError

    @property
    def programs(self) -> list[Program]:
        raise NotImplementedError

    def program_source(self, program: Program) -> str:
        raise NotImplementedError

    def build_log(self, program: Program) -> str:
        raise NotImplementedError

    def info(self) -> dict[str, Any]:
        """JSON-able summary used by ``cltui info``."""
        raise NotImplementedError


def open_capture(
    path: str | Path,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
) -> Capture:
    raise NotImplementedError
