"""The detail panes and the layout of the browser screen: tabs (``1``-``5``), arguments
(``,`` ``.``), the visible tab's keys, the format field (``f``), focus (``tab``), the split
(``+`` ``-``) and zoom (``z``).  :class:`MainScreen` is the one subclass (it declares the
keys, and hands history, copy and save to their modules)."""

from __future__ import annotations

from textual import events

from cltui.tui.layout import Split
from cltui.tui.screens.filtering import FilteringScreen
from cltui.tui.widgets.buffer_pane import BufferPane
from cltui.tui.widgets.detail_panes import DetailPanes

__all__ = ["PanesScreen"]


class PanesScreen(FilteringScreen):
    """The detail panes' actions and the list/details layout."""

    split: Split  # list and details: side by side when wide, else stacked
    _dragging = False  # the divider is being dragged with the mouse

    @property
    def details(self) -> DetailPanes:
        return self.query_one(DetailPanes)

    def action_tab(self, pane: str) -> None:
        self.details.activate(pane)

    def action_arg(self, delta: int) -> None:
        self.details.action_arg(delta)

    def action_pane_key(self, key: str) -> None:
        self.details.pane_key(key)

    def action_format(self) -> None:
        if self.capture is None:
            return
        self.details.activate("buffer")
        self.query_one(BufferPane).focus_format()

    def action_focus_details(self) -> None:
        focused = self.focused
        if focused is not None and self.details in focused.ancestors:
            self.enqueue_list.focus()
        else:
            self.details.focus_pane(self.details.active)

    def on_resize(self, event: events.Resize) -> None:
        self._lay_out(event.size.width)

    def _lay_out(self, columns: int) -> None:
        self.split.apply(self.query_one("#browser"), columns, self.enqueue_list, self.details)

    # the divider (the details' top border, or left one side by side) follows a mouse drag
    def on_mouse_down(self, event: events.MouseDown) -> None:
        region = self.details.region
        on_divider = (event.screen_x == region.x and region.y <= event.screen_y < region.bottom
                      if self.split.wide else
                      event.screen_y == region.y and region.x <= event.screen_x < region.right)
        if on_divider and event.button == 1:
            self._dragging = True
            self.details.capture_mouse()
            event.stop()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        if not self._dragging:
            return
        browser = self.query_one("#browser").region
        if self.split.wide:
            share = 100 * (event.screen_x - browser.x) // max(1, browser.width)
        else:
            share = 100 * (event.screen_y - browser.y) // max(1, browser.height)
        if share != self.split.share:
            self.split.set_share(share)
            self._lay_out(self.size.width or self.app.size.width)
        event.stop()

    def on_mouse_up(self, event: events.MouseUp) -> None:
        if self._dragging:
            self._dragging = False
            self.details.release_mouse()
            event.stop()

    def action_split(self, delta: int) -> None:
        self.split.move(delta)
        self._lay_out(self.size.width or self.app.size.width)

    def action_focus_list(self) -> None:
        self.enqueue_list.focus()

    def action_zoom(self) -> None:
        if self.maximized is not None:
            self.minimize()
            return
        focused = self.focused
        if focused is not None:
            self.maximize(focused, container=False)
