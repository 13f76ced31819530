"""A ``DataTable`` of rows: ``home`` / ``end`` go to the first / last row.

Textual's row-cursor table scrolls sideways to the leftmost / rightmost column on those keys,
which hides the first columns (the enqueue, the verdict) of a wide table.
"""

from __future__ import annotations

from typing import Any

from textual.widgets import DataTable

__all__ = ["RowTable"]


class RowTable(DataTable[Any]):
    """DataTable whose ``home`` / ``end`` move a row cursor to the first / last row."""

    def action_scroll_home(self) -> None:
        if self.cursor_type != "row":
            super().action_scroll_home()
            return
        self.move_cursor(row=0)

    def action_scroll_end(self) -> None:
        if self.cursor_type != "row":
            super().action_scroll_end()
            return
        self.move_cursor(row=max(0, self.row_count - 1))
