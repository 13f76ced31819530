"""The browser's selected range as the range commands take it (:func:`selection`), and the
refusal of a range without a kernel enqueue (:func:`refuse_without_kernels`): shared by
:mod:`cltui.tui.range_commands` and the experiments of :mod:`cltui.tui.experiment`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.app import App

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.capture.ranges import EnqueueRange
    from cltui.tui.screens.main import MainScreen

__all__ = ["refuse_without_kernels", "selection", "selection_with_kernels"]

AnyApp = App[Any]


def selection(screen: MainScreen) -> tuple[Capture, EnqueueRange] | None:
    """The screen's capture and its selected range (the list's one :class:`EnqueueRange`)."""
    cap, rng = screen.capture, screen.enqueue_list.selected_range
    return None if cap is None or rng is None else (cap, rng)


def refuse_without_kernels(app: AnyApp, what: str, capture: Capture, rng: EnqueueRange) -> bool:
    """Whether the range has no kernel enqueue to work on (said at once, in a notification,
    with the plan's own words: before the dialog, not after its start)."""
    from cltui.replay.plan import PlanError, kernel_numbers

    try:
        kernel_numbers(capture, rng)
    except PlanError as exc:
        app.notify(f"{what}: {exc}", severity="warning", timeout=8)
        return True
    return False


def selection_with_kernels(app: AnyApp, what: str,
                           screen: MainScreen) -> tuple[Capture, EnqueueRange] | None:  # fmt: skip
    """:func:`selection`, None (said) when it has no kernel enqueue for ``what`` to work on."""
    picked = selection(screen)
    if picked is None or refuse_without_kernels(app, what, *picked):
        return None
    return picked
