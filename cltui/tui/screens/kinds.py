"""Pick the enqueue kinds the list shows: ``ModalScreen[set[EnqueueKind] | None]``."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, SelectionList
from textual.widgets.selection_list import Selection

from cltui.capture.model import EnqueueKind
from cltui.tui.widgets.tick_list import TickList

__all__ = ["KindScreen"]


class KindScreen(ModalScreen[set[EnqueueKind] | None]):
    """A checklist of the kinds present in the capture, with their counts."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("enter", "accept", "Apply", priority=True),
        Binding("a", "all", "All"),
    ]

    def __init__(self, counts: dict[EnqueueKind, int], chosen: set[EnqueueKind]) -> None:
        super().__init__()
        self.counts = counts
        self.chosen = chosen

    def compose(self) -> ComposeResult:
        with Vertical(id="kinds-box"):
            yield Label("Show enqueue kinds (space toggles, enter applies)", id="kinds-title")
            yield TickList[int](
                *[
                    Selection(f"{kind.label:<8} {count:>9,}", int(kind), kind in self.chosen)
                    for kind, count in self.counts.items()
                ],
                id="kinds-list",
            )

    def action_all(self) -> None:
        self.query_one(SelectionList).select_all()

    def action_accept(self) -> None:
        selected = self.query_one(SelectionList).selected
        self.dismiss({EnqueueKind(int(v)) for v in selected})

    def action_cancel(self) -> None:
        self.dismiss(None)
