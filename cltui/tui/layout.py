"""The browser's layout: the list and the details side by side on a wide terminal, stacked on
a narrow one, with a split the user moves (``+`` / ``-``, or a drag of the divider).

One rule, :func:`is_wide`, and one state per screen, :class:`Split`: the list's share of the
width (side by side) or of the height (stacked), each remembered on its own so that going back
and forth between a wide and a narrow terminal keeps both.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding
from textual.widget import Widget

__all__ = [
    "MAX_SHARE", "MIN_SHARE", "SHARE_STEP", "SPLIT_KEYS", "WIDE_COLUMNS", "Split", "is_wide",
]

WIDE_COLUMNS = 160  # from this width on, list and details sit side by side
SHARE_STEP = 5  # percent per + or -
MIN_SHARE, MAX_SHARE = 20, 80  # neither side is squeezed away
WIDE_SHARE = 45  # the list's default share of the width (its columns fit in ~72 of 160)
STACKED_SHARE = 60  # of the height: 12 list rows at 80x24, details below


SPLIT_KEYS = [  # the browser screen's (its action_split moves a Split)
    Binding("plus,equals_sign", "split(1)", "Bigger list", show=False, key_display="+",
            tooltip="Give the list more of the screen (side by side: width; else height)"),
    Binding("minus", "split(-1)", "Smaller list", show=False, key_display="-",
            tooltip="Give the details more of the screen"),
]


def is_wide(columns: int) -> bool:
    return columns >= WIDE_COLUMNS


@dataclass
class Split:
    """The list's share of the browser, in percent, for each orientation."""

    wide_share: int = WIDE_SHARE
    stacked_share: int = STACKED_SHARE
    wide: bool = False

    @property
    def share(self) -> int:
        return self.wide_share if self.wide else self.stacked_share

    def move(self, delta: int) -> int:
        """Grow (``delta`` > 0) or shrink the list by ``delta`` steps; the new share."""
        share = max(MIN_SHARE, min(MAX_SHARE, self.share + delta * SHARE_STEP))
        if self.wide:
            self.wide_share = share
        else:
            self.stacked_share = share
        return share

    def set_share(self, share: int) -> int:
        """The list's share set (a drag of the divider), within the bounds; the new share."""
        share = max(MIN_SHARE, min(MAX_SHARE, share))
        if self.wide:
            self.wide_share = share
        else:
            self.stacked_share = share
        return share

    def apply(self, browser: Widget, columns: int, first: Widget, second: Widget) -> None:
        """Lay ``first`` (the list) and ``second`` (the details) out in ``browser`` for a
        terminal ``columns`` wide."""
        self.wide = is_wide(columns)
        browser.set_class(self.wide, "-wide")
        share = f"{self.share}%"
        if self.wide:
            browser.styles.layout = "horizontal"
            first.styles.width, first.styles.height = share, "1fr"
            second.styles.width, second.styles.height = "1fr", "1fr"
        else:
            browser.styles.layout = "vertical"
            first.styles.width, first.styles.height = "1fr", share
            second.styles.width, second.styles.height = "1fr", "1fr"
