"""The list of bookmarks (``M``): each marked enqueue with its name, kernel and device time;
``enter`` goes to it, ``n`` names it, ``d`` drops it.  ``ModalScreen[int | None]``: the
capture position to go to."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from cltui.text.escape import escape_controls
from cltui.text.units import fmt_ns
from cltui.tui.screens.prompt import PromptScreen

if TYPE_CHECKING:
    from cltui.capture.capture import Capture

__all__ = ["BookmarksScreen"]


class BookmarksScreen(ModalScreen[int | None]):
    """Bookmarks (capture positions) and their names; names are edited in place."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,M", "cancel", "Close"),
        Binding("n", "name", "Name", tooltip="Name the highlighted bookmark"),
        Binding("d", "drop", "Drop", tooltip="Drop the highlighted bookmark"),
    ]

    def __init__(self, capture: Capture, marks: set[int], names: dict[int, str]) -> None:
        super().__init__()
        self.capture = capture
        self.marks = marks  # the list's own set: dropping here drops there
        self.names = names  # position -> name, the screen's own dict

    def compose(self) -> ComposeResult:
        with Vertical(id="bookmarks-box"):
            yield Label("Bookmarks (enter goes there, n names, d drops, esc closes)",
                        id="bookmarks-title")
            yield OptionList(*self._options(), id="bookmarks-list")

    def _options(self) -> list[Option]:
        cap = self.capture
        out = []
        for pos in sorted(self.marks):
            row = cap.row(pos)
            what = escape_controls(row.kernel or row.function.removeprefix("clEnqueue"))
            time = fmt_ns(row.device_time.start_to_end) if row.device_time else ""
            name = escape_controls(self.names.get(pos, ""))
            out.append(Option(f"{row.number:>8}  {name:<16.16} {what:<28.28} {time:>9}",
                              id=str(pos)))
        if not out:
            out.append(Option("no bookmarks yet (m on the list sets one)", disabled=True))
        return out

    def _highlighted(self) -> int | None:
        options = self.query_one(OptionList)
        if options.highlighted is None:
            return None
        option = options.get_option_at_index(options.highlighted)
        return int(option.id) if option.id is not None else None

    def _refill(self, keep: int | None) -> None:
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options(self._options())
        if keep is not None and keep < options.option_count:
            options.highlighted = keep

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.dismiss(int(event.option.id))

    def action_name(self) -> None:
        pos = self._highlighted()
        if pos is None:
            return
        index = self.query_one(OptionList).highlighted

        def named(text: str | None) -> None:
            if text is None:
                return
            if text.strip():
                self.names[pos] = text.strip()
            else:
                self.names.pop(pos, None)
            self._refill(index)

        number = int(self.capture.numbers[pos])
        self.app.push_screen(PromptScreen(f"Name bookmark {number}", "empty: no name",
                                          self.names.get(pos, ""), "name"), named)

    def action_drop(self) -> None:
        pos = self._highlighted()
        if pos is None:
            return
        index = self.query_one(OptionList).highlighted
        self.marks.discard(pos)
        self.names.pop(pos, None)
        self._refill(max(0, (index or 0) - 1))

    def action_cancel(self) -> None:
        self.dismiss(None)
