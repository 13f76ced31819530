"""``L`` on a selection: the launch latency of the range (``cltui latency`` in the app).

:func:`latency_task` runs :func:`cltui.latency.measure.measure` under a
:class:`ProgressScreen` (a thread worker; the Python engine runs in its child process and the
C++ runner in its own, so the app never blocks and cancel stops both) on the device the
replay rule picks for the range.  :class:`LatencyScreen` shows, above the same report the
CLI prints (stage tables with block histograms, per kernel, outliers, the runners against the
floor, the delay ladder and the sensitivity line), a terminal timeline of one repetition of
each replay.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.scrollbar import ScrollBarRender
from textual.widgets import Footer, Static

from cltui.progress import ProgressEvent
from cltui.tui.screens.replay_progress import TaskControl, TaskFailed

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.capture.ranges import EnqueueRange
    from cltui.latency.measure import Measured, Options

__all__ = ["LatencyScreen", "latency_task"]

TIMELINE_WIDTH = 100


class WholeCellBars(ScrollBarRender):
    """A scrollbar whose thumb ends on whole cells: the eighth-block glyphs of a thumb's
    partial ends read as one more histogram beside the stage tables."""

    VERTICAL_BARS: ClassVar[list[str]] = [" "] * 8


def latency_task(
    capture: Capture, rng: EnqueueRange, options: Options | None = None
) -> Callable[[TaskControl], Measured]:
    """The latency measurement of ``rng`` as a :class:`ProgressScreen` task."""

    def run(control: TaskControl) -> Measured:
        from cltui.latency.measure import LatencyError, Options, measure

        control.progress(ProgressEvent(0.0, "planning"))
        try:
            return measure(capture, rng, (), options or Options(repeat=20),
                           control.progress, control.cancel)  # fmt: skip
        except LatencyError as exc:
            raise TaskFailed(str(exc)) from None

    return run


def screen_lines(measured: Measured, width: int = TIMELINE_WIDTH) -> list[str]:
    """What the screen shows: the report's head, the timelines, the figures."""
    from cltui.latency.text import report_lines

    return report_lines(measured.report, measured.replays, width)


class LatencyScreen(Screen[None]):
    """The latency report of a range: timelines, stage tables, runners, sensitivity."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back", tooltip="Back to the list"),
    ]
    DEFAULT_CSS = """
    LatencyScreen #latency-title { height: 1; background: $boost; padding: 0 1; }
    LatencyScreen #latency-body { padding: 0 1; }
    """

    def __init__(self, measured: Measured, title: str) -> None:
        super().__init__()
        self.measured = measured
        self.title_text = title
        self.text = ""

    def compose(self) -> ComposeResult:
        yield Static(self.title_text, id="latency-title", markup=False)
        with VerticalScroll(id="latency-scroll"):
            yield Static("", id="latency-body", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        width = max(40, (self.app.size.width or 120) - 14)
        self.text = "\n".join(screen_lines(self.measured, min(width, 160)))
        self.query_one("#latency-body", Static).update(self.text)
        scroll = self.query_one("#latency-scroll", VerticalScroll)
        # per instance, as Textual documents it (mypy sees only the class variable)
        scroll.vertical_scrollbar.renderer = WholeCellBars  # type: ignore[misc]
        scroll.focus()

    def action_close(self) -> None:
        self.dismiss(None)
