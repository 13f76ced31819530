"""What the app told the user (its notifications), read through Textual's public API: a
``message_hook`` for ``App.run_test`` that keeps the text of every ``Notify`` message."""

from __future__ import annotations

from textual.message import Message
from textual.notifications import Notify


class Said:
    """``app.run_test(..., message_hook=said)``, then ``said.texts``: every notification's
    text, in order."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, message: Message) -> None:
        if isinstance(message, Notify):
            self.texts.append(str(message.notification.message))
