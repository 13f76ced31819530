"""A Textual worker's cancellation as the one cancellation token of :mod:`cltui.progress`.

The core takes a :class:`~cltui.progress.CancelToken`; a thread worker is cancelled by Textual
(the cursor moved on, the screen closed, the app exits) without a hook, so
:func:`worker_token` gives a token that also reads the worker's state.
"""

from __future__ import annotations

import time

from textual.worker import Worker

from cltui.progress import CancelToken

__all__ = ["worker_token"]

_POLL = 0.01  # seconds between two looks at the worker while waiting


class _WorkerToken(CancelToken):
    """Cancelled when the token itself, ``also`` or the worker is."""

    def __init__(self, worker: Worker[object], also: CancelToken | None) -> None:
        super().__init__()
        self._worker = worker
        self._also = also

    def is_set(self) -> bool:
        return (
            super().is_set()
            or self._worker.is_cancelled
            or (self._also is not None and self._also.is_set())
        )

    def wait(self, timeout: float | None = None) -> bool:
        end = None if timeout is None else time.monotonic() + timeout
        while not self.is_set():
            left = _POLL if end is None else min(_POLL, end - time.monotonic())
            if left <= 0:
                return False
            super().wait(left)
        return True


def worker_token(worker: Worker[object], also: CancelToken | None = None) -> CancelToken:
    """A token cancelled when ``worker`` is cancelled or ``also`` is (e.g. the screen's esc)."""
    return _WorkerToken(worker, also)
