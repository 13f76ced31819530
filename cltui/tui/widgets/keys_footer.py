"""The footer of every cltui screen: Textual's, with ``? Help`` first.

A footer too narrow for its keys cuts them from the right; the help key leads, so that it is
the last to go (it lists every key of the screen, those the footer cannot show included).
Where keys are cut, the footer ends in an ellipsis instead of half a key.
"""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.geometry import Size
from textual.widget import Widget
from textual.widgets import Footer, Static

__all__ = ["KeysFooter"]

HELP_ACTION = "help"
_ANY = Size(0, 0)  # a key's width is its own text's: it depends on no container


class KeysFooter(Footer):
    """Footer with the help key first, and an ellipsis where the keys that do not fit are."""

    DEFAULT_CSS = """
    KeysFooter > .footer-more {
        width: 1;
        display: none;
    }
    """

    def compose(self) -> ComposeResult:
        keys: list[Widget] = list(super().compose())
        first = [w for w in keys if getattr(w, "action", None) == HELP_ACTION]
        yield from first
        yield from (w for w in keys if w not in first)
        # a class, not an id: the footer recomposes when the bindings change, and a second
        # recompose may mount its ellipsis before the first one's is removed (DuplicateIds)
        yield Static("…", classes="footer-more")
        self._refit()

    @property
    def fit_pending(self) -> bool:
        """Whether the keys are laid out but not fitted yet (the fit runs after a refresh)."""
        return getattr(self, "_fit_pending", False)

    def _refit(self) -> None:
        self._fit_pending = True
        self.call_after_refresh(self._fit)

    def on_resize(self, event: events.Resize) -> None:
        for key in self._keys():  # laid out again at full width, then fitted
            key.display = True
        self._refit()

    def _keys(self) -> list[Widget]:
        """The keys laid out from the left (the palette's key is docked at the right)."""
        return [w for w in self.children
                if not w.has_class("footer-more") and not w.has_class("-command-palette")]

    def _fit(self) -> None:
        """Hide the keys that do not fit whole, and show the ellipsis if any is hidden."""
        self._fit_pending = False
        keys = self._keys()
        docked = sum(_width(w) for w in self.children
                     if w.has_class("-command-palette") and w.display)
        room = self.size.width - docked
        if not all(k.display for k in keys):  # fitted already (a resize shows them all again)
            self._more(True)
            return
        if not room or sum(_width(k) for k in keys) <= room:
            self._more(False)
            return
        used = 0
        for key in keys:
            width = _width(key)
            key.display = used + width <= room - 1
            used += width if key.display else room  # once one is cut, the rest are too
        self._more(True)

    def _more(self, shown: bool) -> None:
        for more in self.query(".footer-more"):
            more.display = shown


def _width(widget: Widget) -> int:
    """The width a key takes in the footer's row, measured from its text and styles: not its
    laid-out size, which a recompose's new keys do not have yet (they read 0 and so seemed to
    fit, and were then shown cut mid-key)."""
    styles = widget.styles
    return widget.get_content_width(_ANY, _ANY) + styles.gutter.width + styles.margin.width
