"""The layout of the browser screen: the list and the detail panes side by side when wide,
else stacked (:class:`~cltui.tui.layout.Split`), the split moved with ``+`` ``-`` or by
dragging the divider with the mouse.  :class:`PaneLayout` owns the split and the drag; the
browser screen hands it its resize and mouse events."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events

from cltui.tui.layout import Split

if TYPE_CHECKING:
    from cltui.tui.screens.main import MainScreen

__all__ = ["PaneLayout"]


class PaneLayout:
    """Where the list ends and the details begin on one browser screen."""

    def __init__(self, screen: MainScreen) -> None:
        self.screen = screen
        self.split = Split()  # list and details: side by side when wide, else stacked
        self.dragging = False  # the divider is being dragged with the mouse

    def lay_out(self, columns: int | None = None) -> None:
        """Apply the split at ``columns`` (the screen's width when not given)."""
        screen = self.screen
        width = columns if columns is not None else (screen.size.width or screen.app.size.width)
        self.split.apply(screen.query_one("#browser"), width, screen.enqueue_list, screen.details)

    def move(self, delta: int) -> None:
        self.split.move(delta)
        self.lay_out()

    # the divider (the details' top border, or left one side by side) follows a mouse drag
    def mouse_down(self, event: events.MouseDown) -> None:
        details = self.screen.details
        region = details.region
        on_divider = (event.screen_x == region.x and region.y <= event.screen_y < region.bottom
                      if self.split.wide else
                      event.screen_y == region.y and region.x <= event.screen_x < region.right)
        if on_divider and event.button == 1:
            self.dragging = True
            details.capture_mouse()
            event.stop()

    def mouse_move(self, event: events.MouseMove) -> None:
        if not self.dragging:
            return
        browser = self.screen.query_one("#browser").region
        if self.split.wide:
            share = 100 * (event.screen_x - browser.x) // max(1, browser.width)
        else:
            share = 100 * (event.screen_y - browser.y) // max(1, browser.height)
        if share != self.split.share:
            self.split.set_share(share)
            self.lay_out()
        event.stop()

    def mouse_up(self, event: events.MouseUp) -> None:
        if self.dragging:
            self.dragging = False
            self.screen.details.release_mouse()
            event.stop()
