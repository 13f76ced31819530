"""The status line's selection: what ``r`` acts on (``r: enqueues 21-23 · 3 enq · ...``) and
the bytes of dumped data it needs, counted off the UI thread for a range
(:class:`RangeStatus`)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from textual.worker import get_current_worker

from cltui.tui.browse import ReadCancelled, dumped_bytes, range_bytes, range_summary
from cltui.tui.format import fmt_bytes
from cltui.tui.workers import worker_token

if TYPE_CHECKING:
    from cltui.capture.model import Enqueue
    from cltui.tui.screens.main import MainScreen

__all__ = ["RangeStatus"]


class RangeStatus:
    """Keeps the screen's status line on its selection (the range, its data size, VISUAL)."""

    def __init__(self, screen: MainScreen) -> None:
        self.screen = screen

    def update(self) -> None:
        screen = self.screen
        cap = screen.capture
        lst = screen.enqueue_list
        if cap is None:
            return
        sel = lst.selection
        mode = "VISUAL" if lst.visual else ""
        label = screen.label
        if sel is None:
            screen.status.set_parts(
                range_text=f"{label}r: no enqueue", bytes_text="", mode_text=mode
            )
            return
        first, last = sel
        text = range_summary(cap, first, last, label)
        screen.status.set_parts(range_text=text, bytes_text="…", mode_text=mode)
        if lst.range is not None:
            screen.run_worker(partial(self._range_bytes, first, last), thread=True,
                              exclusive=True, group="range-bytes", exit_on_error=False)
        else:  # a single enqueue: its size comes with its decode (shown), or is known now
            decoded = screen.details.enqueue
            if decoded is not None and decoded.number == int(cap.numbers[first]):
                self.single(decoded)

    def shown(self, enq: Enqueue | None) -> None:
        """The details show ``enq``: its data size, when the selection is that enqueue."""
        if self.screen.enqueue_list.range is None:
            self.single(enq)

    def single(self, enq: Enqueue | None) -> None:
        seen: set[int] = set()
        total = dumped_bytes(enq.args, seen) if enq is not None else 0
        text = f"{fmt_bytes(total)} data ({len(seen)} objects)" if seen else "no dumped data"
        self.screen.status.set_parts(bytes_text=text)

    def _range_bytes(self, first: int, last: int) -> None:
        """Bytes of dumped data the range needs: each memory object's first Pre dump, once
        (a worker thread)."""
        screen = self.screen
        cap = screen.capture
        if cap is None:
            return
        worker = get_current_worker()
        try:
            counted = range_bytes(cap, first, last, worker_token(worker))
        except ReadCancelled:
            return
        except Exception as exc:  # a decoding bug must not stop the browser
            screen.app.call_from_thread(
                screen.status.set_parts, bytes_text=f"data size unknown ({type(exc).__name__})"
            )
            return
        if counted is None:
            return
        total, objects, dumped = counted
        text = f"{fmt_bytes(total)} data ({objects} objects)" if dumped else "no dumped data"
        screen.app.call_from_thread(screen.status.set_parts, bytes_text=text)
