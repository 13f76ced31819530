"""A one-line modal prompt (filter text, enqueue number): ``ModalScreen[str | None]``."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

__all__ = ["PromptScreen"]

ChangeFn = Callable[[str], "str | None"]  # the text as typed -> an error to show, or None


class PromptScreen(ModalScreen[str | None]):
    """Asks for one line; ``enter`` dismisses with the text, ``escape`` with ``None``.

    ``on_change`` is called with the text after every change (the list filters as you type);
    what it returns, if anything, replaces the hint until the next change.  ``up`` and
    ``down`` step through ``history`` (oldest first), the line typed so far after its end.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("up", "history(-1)", "Earlier line", tooltip="The prompt's earlier lines"),
        Binding("down", "history(1)", "Later line", tooltip="The prompt's later lines"),
    ]

    def __init__(
        self,
        title: str,
        hint: str = "",
        value: str = "",
        placeholder: str = "",
        *,
        on_change: ChangeFn | None = None,
        history: list[str] | None = None,
    ) -> None:
        super().__init__()
        self.title_text = title
        self.hint = hint
        self.value = value
        self.placeholder = placeholder
        self.on_change = on_change
        self.history = list(history or [])
        self._at = len(self.history)  # the history line shown; len: the line being typed
        self._typed = value
        self._applied = value
        self._error: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt-box"):
            yield Label(self.title_text, id="prompt-title")
            yield Input(value=self.value, placeholder=self.placeholder, id="prompt-input")
            if self.hint or self.on_change is not None:
                yield Label(self.hint, id="prompt-hint", markup=False)

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self._at == len(self.history):
            self._typed = event.value
        if self.on_change is None or event.value == self._applied:
            return  # (the field's first value is what the caller shows already)
        self._applied = event.value
        error = self.on_change(event.value)
        if error != self._error:  # a new line under the prompt only when it says more
            self._error = error
            hint = self.query_one("#prompt-hint", Label)
            hint.update(error or self.hint)
            hint.set_class(error is not None, "prompt-error")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_history(self, step: int) -> None:
        at = max(0, min(self._at + step, len(self.history)))
        if at == self._at:
            self.app.bell()
            return
        self._at = at
        field = self.query_one("#prompt-input", Input)
        field.value = self.history[at] if at < len(self.history) else self._typed
        field.cursor_position = len(field.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
