"""The one-line status bar under the list: range, filter, mode and problem count."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

__all__ = ["StatusLine"]


class StatusLine(Static):
    """Shows the selected range (always), the filter, visual mode and the problem count."""

    DEFAULT_CSS = """
    StatusLine { height: 1; width: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.range_text = ""
        self.bytes_text = ""
        self.filter_text = ""
        self.mode_text = ""
        self.problems = 0

    def set_parts(
        self,
        *,
        range_text: str | None = None,
        bytes_text: str | None = None,
        filter_text: str | None = None,
        mode_text: str | None = None,
        problems: int | None = None,
    ) -> None:
        if range_text is not None:
            self.range_text = range_text
        if bytes_text is not None:
            self.bytes_text = bytes_text
        if filter_text is not None:
            self.filter_text = filter_text
        if mode_text is not None:
            self.mode_text = mode_text
        if problems is not None:
            self.problems = problems
        self.update(self.as_text(), layout=False)  # one fixed line: no layout pass

    def as_text(self) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        if self.mode_text:
            text.append(f" {self.mode_text} ", "reverse bold")
            text.append(" ")
        text.append(self.range_text, "bold")
        if self.bytes_text:
            text.append(f" · {self.bytes_text}")
        if self.filter_text:
            text.append(f" │ {self.filter_text}", "italic")
        if self.problems:
            plural = "s" if self.problems != 1 else ""
            text.append(f" │ ⚠ {self.problems} problem{plural} (p)", "bold yellow")
        return text
