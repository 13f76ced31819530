"""The footer of every cltui screen: Textual's, with ``? Help`` first.

A footer too narrow for its keys cuts them from the right; the help key leads, so that it is
the last to go (it lists every key of the screen, those the footer cannot show included).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Footer

__all__ = ["KeysFooter"]

HELP_ACTION = "help"


class KeysFooter(Footer):
    """Footer with the help key first."""

    def compose(self) -> ComposeResult:
        keys: list[Widget] = list(super().compose())
        first = [w for w in keys if getattr(w, "action", None) == HELP_ACTION]
        yield from first
        yield from (w for w in keys if w not in first)
