"""The help screen, generated from the active bindings of the screen below it."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from cltui.tui.keynames import key_label

__all__ = ["HelpScreen", "bindings_table"]


def bindings_table(bindings: dict[str, ActiveBinding], app_keys: object) -> Table:
    """A table of key -> description grouped by the widget that owns the binding."""
    del app_keys
    groups: dict[str, list[tuple[str, str, bool]]] = {}
    seen: set[tuple[str, str]] = set()
    for key, active in bindings.items():
        binding = active.binding
        if not binding.description:
            continue
        owner = type(active.node).__name__
        display = _key_label(key)
        if (owner, binding.description) in seen:
            # several keys for one action (or for actions named alike, the quits): one row
            rows = groups[owner]
            for i, (k, d, e) in enumerate(rows):
                if d == binding.description:
                    rows[i] = (f"{k}, {display}", d, e)
            continue
        seen.add((owner, binding.description))
        groups.setdefault(owner, []).append((display, binding.description, active.enabled))
    table = Table(box=None, show_header=False, padding=(0, 1), expand=True)
    table.add_column("key", style="bold", no_wrap=True)
    table.add_column("action")
    for owner, rows in groups.items():
        table.add_row(Text(_owner_label(owner), style="underline"), "")
        for key, description, enabled in rows:
            label = Text(description)
            if not enabled:
                label.append("  (not available yet)", style="dim")
            table.add_row(key, label)
    return table


_OWNERS = {
    "EnqueueList": "Enqueue list",
    "MainScreen": "Browser",
    "CltuiApp": "Everywhere",
    "BufferView": "Buffer view",
    "SourceView": "Source view",
    "ImageView": "Image view",
    "BufferPane": "Buffer tab",
    "SourcePane": "Source tab",
    "ArgsTable": "Arguments",
    "DiffView": "Diff view",
    "DiffScreen": "Diff",
    "ReplayResultsScreen": "Replay results",
    "FleetResultsScreen": "Fleet results",
    "FindingsScreen": "Findings",
}


def _key_label(key: str) -> str:
    return key_label(key)  # one naming of keys for help and README


def _owner_label(owner: str) -> str:
    return _OWNERS.get(owner, owner)


class HelpScreen(ModalScreen[None]):
    """Keys of the screen it was opened from (taken from its bindings, never hand-written)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,f1", "close", "Close"),
    ]

    def __init__(self, bindings: dict[str, ActiveBinding], legend: str = "") -> None:
        super().__init__()
        self.bindings = bindings
        self.legend = legend

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Label("Keys (esc closes; ctrl+p lists every action)", id="help-title")
            yield Static(bindings_table(self.bindings, None), id="help-table")
            if self.legend:
                yield Static(self.legend, id="help-legend", markup=False)

    def action_close(self) -> None:
        self.dismiss(None)
