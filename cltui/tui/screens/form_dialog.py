"""``FormDialog``: what the replay and export dialogs share.

A modal form whose :meth:`request` validates the fields and returns the answer (or
shows an error and returns ``None``).  ``enter`` in a field or the ``#<prefix>-go``
button accepts, ``escape`` or ``#<prefix>-cancel`` closes with ``None``.
"""

from __future__ import annotations

from typing import ClassVar, Generic, TypeVar

from textual import on
from textual.screen import ModalScreen
from textual.widgets import Button, Input

R = TypeVar("R")


class FormDialog(ModalScreen[R | None], Generic[R]):
    """Subclasses set ``ID_PREFIX`` (their buttons' id prefix) and implement ``request``."""

    ID_PREFIX: ClassVar[str] = ""

    def request(self) -> R | None:
        raise NotImplementedError

    def action_accept(self) -> None:
        req = self.request()
        if req is not None:
            self.dismiss(req)

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_accept()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        if event.button.id == f"{self.ID_PREFIX}-go":
            event.stop()
            self.action_accept()
        elif event.button.id == f"{self.ID_PREFIX}-cancel":
            event.stop()
            self.action_cancel()
