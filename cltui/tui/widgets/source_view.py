"""OpenCL C source with line numbers: Line API, highlighted lazily line by line."""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from cltui.tui.highlight import LineHighlighter

__all__ = ["SourceView"]

Span = tuple[int, int, int, int]  # line, col, end_line, end_col: 1-based, end inclusive


class SourceView(ScrollView, can_focus=True):
    """A source file of any size: only visible lines are highlighted (LRU of strips)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "source-view--gutter",
        "source-view--kernel",
        "source-view--mark",
    }

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "scroll_lines(-1)", "Up", show=False),
        Binding("down", "scroll_lines(1)", "Down", show=False),
        Binding("pageup", "scroll_page(-1)", "Page up", show=False),
        Binding("pagedown", "scroll_page(1)", "Page down", show=False),
        Binding("home", "scroll_home", "Top", show=False),
        Binding("end", "scroll_end", "Bottom", show=False),
        Binding("left", "scroll_left", "Left", show=False),
        Binding("right", "scroll_right", "Right", show=False),
        Binding("k", "to_kernel", "To kernel", tooltip="Scroll back to the kernel"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._hl = LineHighlighter("")
        self._key: object = None
        self._cache: LRUCache[int, Strip] = LRUCache(512)
        self.kernel_lines: tuple[int, int] | None = None  # 1-based, inclusive
        self.marks: list[Span] = []
        self._gutter = 4
        self._empty = True

    def set_source(self, key: object, source: str) -> None:
        """Show ``source`` (``key`` identifies it so that re-showing is free)."""
        if key == self._key:
            return
        self._key = key
        self._empty = not source
        self._hl = LineHighlighter(source)
        self._cache.clear()
        self._gutter = len(str(len(self._hl))) + 1
        width = max((len(line) for line in self._hl.lines), default=0) + self._gutter + 2
        self.virtual_size = Size(width, len(self._hl))
        self.refresh()

    @property
    def line_count(self) -> int:
        return 0 if self._empty else len(self._hl)

    def line_text(self, index: int) -> str:
        return self._hl.lines[index]

    def set_marks(self, kernel_lines: tuple[int, int] | None, marks: list[Span]) -> None:
        if kernel_lines != self.kernel_lines or marks != self.marks:
            self.kernel_lines = kernel_lines
            self.marks = marks
            self._cache.clear()
            self.refresh()

    def action_to_kernel(self) -> None:
        self.scroll_to_kernel()

    def scroll_to_kernel(self) -> None:
        """Scroll to the kernel now and once more after the next refresh: a view shown for the
        first time (its tab just activated) has no height yet, and a scroll before its layout
        stops at line 1."""
        self._scroll_to_kernel()
        self.call_after_refresh(self._scroll_to_kernel)

    def _scroll_to_kernel(self) -> None:
        line = self.marks[0][0] if self.marks else self.kernel_lines[0] if self.kernel_lines else 1
        top = self.kernel_lines[0] if self.kernel_lines else line
        # the kernel's first line at the top, unless that hides the marked parameter
        target = top - 1
        if line - top >= self.scrollable_content_region.height - 1:
            target = line - 2
        self.scroll_to(x=0, y=max(0, target), animate=False, immediate=True)

    def action_scroll_lines(self, delta: int) -> None:
        self.scroll_to(y=self.scroll_y + delta, animate=False)

    def action_scroll_page(self, direction: int) -> None:
        height = max(1, self.scrollable_content_region.height - 1)
        self.scroll_to(y=self.scroll_y + direction * height, animate=False)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        index = round(self.scroll_y) + y
        if index >= self.line_count:
            return Strip.blank(width, self.rich_style)
        strip = self._cache.get(index)
        if strip is None:
            strip = self._render_source_line(index)
            self._cache[index] = strip
        x = round(self.scroll_x)
        return strip.crop_extend(x, x + width, self.rich_style)

    def _render_source_line(self, index: int) -> Strip:
        number = index + 1
        in_kernel = self.kernel_lines is not None and (
            self.kernel_lines[0] <= number <= self.kernel_lines[1]
        )
        gutter_style = self.get_component_rich_style("source-view--gutter")
        if in_kernel:
            gutter_style += self.get_component_rich_style("source-view--kernel")
        text = self._hl.highlight(index)
        mark_style = self.get_component_rich_style("source-view--mark")
        raw = self._hl.lines[index]
        for line, col, end_line, end_col in self.marks:
            if line <= number <= end_line:
                start = _cell(raw, col - 1) if number == line else 0
                end = _cell(raw, end_col) if number == end_line else len(text.plain)
                text.stylize(mark_style, start, end)
        gutter = Segment(str(number).rjust(self._gutter - 1) + " ", gutter_style)
        segments = [gutter, *text.render(self.app.console)]
        return Strip(segments).simplify().apply_style(self.rich_style or Style())


def _cell(raw: str, col: int) -> int:
    """Column in the tab-expanded text for character offset ``col`` of ``raw``."""
    return len(raw[:col].expandtabs(4))
