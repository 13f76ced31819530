"""Every problem found while opening the capture, one line each."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label

from cltui.capture.display import escape_controls
from cltui.capture.model import Problem

__all__ = ["ProblemsScreen"]


class ProblemsScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,p", "close", "Close"),
    ]

    def __init__(self, problems: Sequence[Problem]) -> None:
        super().__init__()
        self.problems = list(problems)

    def compose(self) -> ComposeResult:
        with Vertical(id="problems-box"):
            n = len(self.problems)
            title = f"{n} problem{'s' if n != 1 else ''} in this capture" if n else "No problems"
            yield Label(title, id="problems-title")
            table: DataTable[str] = DataTable(id="problems-table", cursor_type="row")
            table.add_columns("severity", "enqueue", "where", "message")
            for p in self.problems:
                table.add_row(
                    p.severity,
                    "" if p.enqueue is None else str(p.enqueue),
                    escape_controls(p.where),
                    escape_controls(p.message),
                )
            yield table

    def action_close(self) -> None:
        self.dismiss(None)
