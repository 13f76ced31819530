"""Messages the TUI's workers and widgets post (the app reacts; widgets never reach up)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from cltui.capture.capture import Capture


class IndexProgress(Message):
    """The indexing worker's progress (fraction 0..1)."""

    def __init__(self, fraction: float) -> None:
        super().__init__()
        self.fraction = fraction


class CaptureLoaded(Message):
    """The capture index is complete."""

    def __init__(self, capture: Capture) -> None:
        super().__init__()
        self.capture = capture


class CaptureFailed(Message):
    """Nothing could be opened; ``message`` is one line for the user.  ``not_a_capture``:
    the path is no capture at all (the app then exits 2, as the CLI does)."""

    def __init__(self, message: str, not_a_capture: bool = False) -> None:
        super().__init__()
        self.message = message
        self.not_a_capture = not_a_capture


class CursorMoved(Message):
    """The enqueue list's cursor is on another enqueue (``pos`` in log order)."""

    def __init__(self, pos: int | None) -> None:
        super().__init__()
        self.pos = pos


class RangeChanged(Message):
    """The selected range changed: positions ``first..last`` inclusive, or ``None``."""

    def __init__(self, first: int | None, last: int | None) -> None:
        super().__init__()
        self.first = first
        self.last = last


class ArgumentSelected(Message):
    """The user picked a kernel argument (Arguments tab) for the Source/Buffer/Image panes."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index
