"""Boxes that say ticked or not in glyphs: ``[x]`` / ``[ ]`` (lists and check boxes), ``(•)``
/ ``( )`` (radio buttons).

Textual draws both states as the same ``▐X▌`` in two colours, which a low-contrast theme or a
16-colour terminal makes hard to tell apart.
"""

from __future__ import annotations

from typing import TypeVar

from rich.segment import Segment
from textual.content import Content
from textual.strip import Strip
from textual.widgets import Checkbox, RadioButton, SelectionList
from textual.widgets._toggle_button import ToggleButton
from textual.widgets.option_list import OptionDoesNotExist

__all__ = ["TickBox", "TickList", "TickRadio", "tick_glyphs"]

V = TypeVar("V")


def tick_glyphs(selected: bool, *, radio: bool = False) -> tuple[str, str, str]:
    if radio:
        return ("(", "•" if selected else " ", ")")
    return ("[", "x" if selected else " ", "]")


def _box(button: ToggleButton, radio: bool) -> Content:
    style = button.get_visual_style("toggle--button")
    return Content.assemble(*((g, style) for g in tick_glyphs(button.value, radio=radio)))


class TickBox(Checkbox):
    """Checkbox drawn ``[x]`` / ``[ ]``."""

    @property
    def _button(self) -> Content:
        return _box(self, radio=False)


class TickRadio(RadioButton):
    """RadioButton drawn ``(•)`` / ``( )``."""

    @property
    def _button(self) -> Content:
        return _box(self, radio=True)


class TickList(SelectionList[V]):
    """SelectionList with ``[x]`` for a ticked option and ``[ ]`` for an unticked one."""

    def render_line(self, y: int) -> Strip:
        strip = super().render_line(y)
        try:
            selection = self.get_option_at_index(self.scroll_offset.y + y)
        except OptionDoesNotExist:
            return strip
        segments = list(strip)
        if len(segments) < 3:
            return strip
        if any(len(seg.text) != 1 for seg in segments[:3]):
            return strip
        style = segments[1].style  # the button's: the box reads as one
        glyphs = tick_glyphs(selection.value in self._selected)
        segments[:3] = [Segment(g, style) for g in glyphs]
        return Strip(segments, strip.cell_length)
