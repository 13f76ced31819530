"""Every problem found while opening the capture: a table of one line each, and below it the
highlighted problem's full text, wrapped (``enter`` moves the focus there to scroll a long one)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Static

from cltui.capture.model import Problem
from cltui.text.escape import escape_controls

__all__ = ["ProblemsScreen", "problems_summary"]


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def problems_summary(problems: Sequence[Problem], width: int = 160) -> str:
    """One notice for every problem of a capture: how many, the first error (else the first
    problem) cut to ``width`` characters, and where to read them all."""
    errors = [p for p in problems if p.severity == "error"]
    head = _count(len(problems), "problem") + " in this capture"
    if errors:
        head += f" ({_count(len(errors), 'error')})"
    first = escape_controls(str((errors or list(problems))[0]))
    if len(first) > width:
        first = first[: width - 1] + "…"
    return f"{head}: {first}\nPress p to read them all."


class ProblemsScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,p", "close", "Close"),
        Binding("enter", "toggle_detail", "Detail", tooltip="Move between the table and the text"),
    ]
    DEFAULT_CSS = """
    ProblemsScreen #problems-box { height: 1fr; }
    ProblemsScreen #problems-title { height: 1; padding: 0 1; }
    ProblemsScreen #problems-table { height: auto; max-height: 12; }
    ProblemsScreen #problems-detail {
        height: 1fr; min-height: 4; border-top: solid $primary; padding: 0 1;
    }
    ProblemsScreen #problems-detail:focus { border-top: solid $accent; }
    """

    def __init__(self, problems: Sequence[Problem]) -> None:
        super().__init__()
        self.problems = list(problems)

    def compose(self) -> ComposeResult:
        with Vertical(id="problems-box"):
            n = len(self.problems)
            title = f"{_count(n, 'problem')} in this capture" if n else "No problems"
            if n:
                title += " (enter: the highlighted one's full text)"
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
            with VerticalScroll(id="problems-detail", can_focus=True):
                yield Static(self.detail_text(0), id="problems-detail-text", markup=False)

    def detail_text(self, row: int) -> str:
        """The full text of problem ``row``: its severity, where, enqueue, and message."""
        if not 0 <= row < len(self.problems):
            return ""
        p = self.problems[row]
        return f"{p.severity}: {escape_controls(str(p))}"

    @on(DataTable.RowHighlighted, "#problems-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.query_one("#problems-detail-text", Static).update(self.detail_text(event.cursor_row))
        self.query_one("#problems-detail", VerticalScroll).scroll_home(animate=False)

    @on(DataTable.RowSelected, "#problems-table")
    def _selected(self, event: DataTable.RowSelected) -> None:  # enter on the table
        self.query_one("#problems-detail", VerticalScroll).focus()

    def action_toggle_detail(self) -> None:
        detail = self.query_one("#problems-detail", VerticalScroll)
        if detail.has_focus:
            self.query_one("#problems-table", DataTable).focus()
        else:
            detail.focus()

    def action_close(self) -> None:
        self.dismiss(None)
