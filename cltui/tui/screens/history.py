"""Where the selected argument's memory object was written and read: ``w`` jumps to the last
enqueue that wrote it before this one, ``W`` to the next that reads it after this one, ``H``
lists its whole history (:class:`HistoryScreen`; ``enter`` jumps to a row's enqueue).

The history (:func:`cltui.capture.history.history_of`; for ``w``/``W`` the two neighbours alone,
:func:`~cltui.capture.history.neighbours_of`) is computed by the capture's reader process, in a
worker: the browser never waits on it.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, ClassVar, Literal

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from cltui.capture.history import (
    HistoryEvent,
    HistoryUnavailable,
    Neighbours,
    ResourceHistory,
    history_of,
    neighbours_of,
)
from cltui.capture.model import Enqueue
from cltui.text.escape import escape_controls
from cltui.tui.browse import MEMORY_KINDS, ReadCancelled, arg_by_index, off_loop
from cltui.tui.widgets.history_list import ACCESS_TEXT, HistoryList
from cltui.tui.workers import worker_token

if TYPE_CHECKING:
    from cltui.tui.screens.main import MainScreen

__all__ = ["HistoryScreen", "HistoryWhat", "event_text", "history_target", "start_history"]

HistoryWhat = Literal["writer", "reader", "list"]


def history_target(enq: Enqueue | None, arg: int | None) -> tuple[int, int | None] | str:
    """``(number, argument index)`` of the selected memory object (``None`` index: the object
    a transfer names), or why there is none."""
    if enq is None:
        return "no enqueue selected"
    if not enq.args:
        return (enq.number, None) if enq.mem is not None else (
            f"enqueue {enq.number} names no memory object"
        )
    chosen = arg_by_index(enq, arg)
    if chosen is None or chosen.kind not in MEMORY_KINDS:
        what = f"argument {chosen.index} is a {chosen.kind.value}" if chosen else "no argument"
        return f"{what}: select a buffer, image or SVM argument (. and , on the Buffer tab)"
    return enq.number, chosen.index


def event_text(event: HistoryEvent) -> str:
    where = f"enqueue {event.number}" if event.number is not None else "its creation"
    return f"{where}: {ACCESS_TEXT[event.access]} · {escape_controls(event.what)}"


def start_history(screen: MainScreen, what: HistoryWhat) -> None:
    """``w``/``W``/``H`` on the browser: compute (in a worker) and act."""
    cap = screen.capture
    enq = screen.details.enqueue
    pos = screen.enqueue_list.cursor_pos
    if cap is None or pos is None:
        return
    target = history_target(enq, screen.details.arg)
    if isinstance(target, str):
        screen.notify(target, severity="warning", timeout=6)
        return
    offset = int(cap.offsets[pos])
    if offset < 0:
        screen.notify("A recovered enqueue: the log does not hold it", severity="warning")
        return

    answered = threading.Event()  # the work's answer is in (before it is shown)

    def compute() -> None:
        from textual.worker import get_current_worker

        worker = get_current_worker()
        try:
            token = worker_token(worker)
            history: ResourceHistory | Neighbours = (
                off_loop(cap, history_of, target, token) if what == "list"
                else off_loop(cap, neighbours_of, target, token)
            )
        except ReadCancelled:
            return
        except HistoryUnavailable as exc:
            screen.app.call_from_thread(screen.notify, str(exc), severity="warning", timeout=6)
            return
        finally:
            answered.set()
        if not worker.is_cancelled:
            screen.app.call_from_thread(_act, screen, what, history, offset)

    screen.run_worker(compute, thread=True, group="history", exclusive=True, exit_on_error=False)

    def slow() -> None:  # said only when it takes a while (a buffer of a long run)
        # (not the worker's state: it ends only after its answer is shown, so a timer that
        # fired in between put the notice over the history it was waiting for)
        if not answered.is_set():
            screen.notify("Following the object through the log…", timeout=3)

    screen.set_timer(0.4, slow)


def _act(
    screen: MainScreen, what: HistoryWhat, history: ResourceHistory | Neighbours, offset: int
) -> None:
    if isinstance(history, ResourceHistory):
        current = history.index_of(offset)

        def chosen(number: int | None) -> None:
            if number is not None:
                go_to(screen, history, number)

        screen.app.push_screen(HistoryScreen(history, current, offset), chosen)
        return
    event = history.last_writer if what == "writer" else history.next_reader
    name = "last writer" if what == "writer" else "next reader"
    if event is None:
        before = "before this enqueue" if what == "writer" else "after this enqueue"
        screen.notify(f"No {name}: nothing {before} {'writes' if what == 'writer' else 'reads'}"
                      f" {history.label}", timeout=6)
        return
    screen.notify(f"{name.capitalize()} of {history.label}: {event_text(event)}", timeout=8,
                  markup=False)
    if event.number is not None:
        go_to(screen, history, event.number)


def go_to(screen: MainScreen, history: ResourceHistory | Neighbours, number: int) -> None:
    """Jump to ``number`` with the same object's argument selected there."""
    screen.details.prefer_handle = history.handle
    screen.jump_to(number)


class HistoryScreen(ModalScreen[int | None]):
    """The whole history of one memory object; ``enter`` jumps to a row's enqueue."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,H", "close", "Close"),
    ]

    def __init__(self, history: ResourceHistory, current: int | None, offset: int) -> None:
        super().__init__()
        self.history = history
        self.current = current
        self.log_offset = offset

    def compose(self) -> ComposeResult:
        h = self.history
        counts = h.counts()
        parts = [f"{ACCESS_TEXT[a]} {n:,}" for a, n in counts.items() if a not in ("create",)]
        writer, reader = h.last_writer(self.log_offset), h.next_reader(self.log_offset)
        lines = [
            f"{len(h):,} events: " + " · ".join(parts),
            "last writer: " + (event_text(writer) if writer else "none"),
            "next reader: " + (event_text(reader) if reader else "none"),
            *h.notes,
        ]
        with Vertical(id="history-box"):
            yield Label(f"History of {h.label} (enter: go to the enqueue; esc closes)",
                        id="history-title", markup=False)
            yield Static("\n".join(lines), id="history-summary", markup=False)
            yield HistoryList(h, self.current, id="history-list")

    def on_mount(self) -> None:
        self.query_one(HistoryList).focus()

    @on(HistoryList.Chosen)
    def _chosen(self, message: HistoryList.Chosen) -> None:
        if message.number is None:
            self.notify("Not an enqueue (the object's creation or release)", timeout=4)
            return
        self.dismiss(message.number)

    def action_close(self) -> None:
        self.dismiss(None)
