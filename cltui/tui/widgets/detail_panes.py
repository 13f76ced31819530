"""The detail tabs for the enqueue under the list cursor (only the visible tab is filled)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static, TabbedContent, TabPane

from cltui.capture.model import ArgKind, Enqueue, Problem
from cltui.text.escape import escape_controls
from cltui.tui.browse import memory_arg_indexes
from cltui.tui.format import fmt_size
from cltui.tui.messages import ArgumentSelected
from cltui.tui.widgets.args_table import ArgsTable
from cltui.tui.widgets.buffer_pane import BufferPane
from cltui.tui.widgets.buffer_view import BufferView
from cltui.tui.widgets.image_view import ImageView
from cltui.tui.widgets.source_pane import SourcePane
from cltui.tui.widgets.source_view import SourceView
from cltui.tui.widgets.timing_view import TimingView

if TYPE_CHECKING:
    from cltui.capture.capture import Capture

__all__ = ["PANES", "SOURCE_KEYS", "DetailPanes"]

PANES = ("source", "args", "buffer", "image", "timing")
SOURCE_KEYS = [  # the browser screen's, for the visible Source tab (see pane_key)
    Binding("o", "pane_key('build')", "Build log", show=False,
            tooltip="Build options and build log (Source tab)"),
    Binding("k", "pane_key('kernel')", "To kernel", show=False,
            tooltip="Scroll the source back to the kernel (Source tab)"),
]
FOCUS_TARGETS = {
    "source": "#source-view",
    "args": "#args-table",
    "buffer": "#buffer-view",
    "image": "#image-view",
    "timing": "#timing-view",
}


class DetailPanes(Vertical):
    """Source, Arguments, Buffer, Image and Timing of one enqueue and one selected argument."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.capture: Capture | None = None
        self.enqueue: Enqueue | None = None
        self.arg: int | None = None
        self.error: str | None = None
        # the memory object whose argument the next enqueue shown selects (a history jump)
        self.prefer_handle: int | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="enqueue-summary", markup=False)
        yield Static("", id="enqueue-problems", markup=False)
        with TabbedContent(id="detail-tabs", initial="args"):
            with TabPane("1 Source", id="source"):
                yield SourcePane(id="source-pane")
            with TabPane("2 Args", id="args"):
                yield ArgsTable(id="args-table")
            with TabPane("3 Buffer", id="buffer"):
                yield BufferPane(id="buffer-pane")
            with TabPane("4 Image", id="image"):
                yield ImageView(id="image-view")
            with TabPane("5 Timing", id="timing"):
                yield TimingView(id="timing-view")

    def on_mount(self) -> None:
        self.query_one("#enqueue-problems").display = False

    def set_capture(self, capture: Capture) -> None:
        self.capture = capture

    @property
    def active(self) -> str:
        return self.query_one(TabbedContent).active

    def activate(self, pane: str) -> None:
        tabs = self.query_one(TabbedContent)
        focused = self.screen.focused
        was_inside = focused is not None and self in focused.ancestors
        tabs.active = pane
        self._refresh_active()
        if was_inside:  # keep the keyboard in the details: focus the new tab's main widget
            target = FOCUS_TARGETS[pane]
            self.query_one(target).focus()

    def has_pane_key(self, key: str) -> bool:
        """Whether the visible tab acts on ``key`` (``hex``: the buffer; ``next``/``prev``: the
        buffer's changes, the image's slices; ``build``/``kernel``: the source's build log and
        the way back to the kernel)."""
        if key in ("build", "kernel"):
            return self.active == "source"
        return self.active == "buffer" or (self.active == "image" and key in ("next", "prev"))

    def pane_key(self, key: str) -> None:
        """``x`` (``hex``), ``]`` (``next``), ``[`` (``prev``) of the visible tab's widget, for
        a key that reached the screen because the focus is elsewhere (e.g. on the list)."""
        if self.active == "source" and key == "build":
            self.query_one(SourcePane).action_toggle_build()
        elif self.active == "source" and key == "kernel":
            self.query_one(SourceView).action_to_kernel()
        elif self.active == "buffer" and key in ("hex", "next", "prev"):
            view = self.query_one(BufferView)
            if key == "hex":
                view.action_toggle_hex()
            else:
                view.action_change(1 if key == "next" else -1)
        elif self.active == "image" and key in ("next", "prev"):
            self.query_one(ImageView).action_slice(1 if key == "next" else -1)

    def focus_pane(self, pane: str) -> None:
        self.activate(pane)
        self.query_one(FOCUS_TARGETS[pane]).focus()

    def show_decoded(self, enq: Enqueue | None, error: str | None = None) -> None:
        """Show a decoded enqueue (``None`` with ``error``: a one-line reason instead)."""
        if self.capture is None:
            return
        summary = self.query_one("#enqueue-summary", Static)
        if enq is None:
            self.enqueue = None
            summary.update(error or "", layout=False)
            self._show_problems([])
            self._refresh_active()
            return
        if enq is not self.enqueue:
            self.enqueue = enq
            self.arg = default_arg(enq)
            handle, self.prefer_handle = self.prefer_handle, None
            same = [a.index for a in enq.args if a.mem is not None and a.mem.handle == handle]
            if same:
                self.arg = same[0]
        summary.update(enqueue_summary(enq), layout=False)
        self._show_problems(enq.problems)
        self._refresh_active()

    def _show_problems(self, problems: list[Problem]) -> None:
        box = self.query_one("#enqueue-problems", Static)
        if not problems and not box.display:
            return
        box.display = bool(problems)
        box.update("\n".join(f"⚠ {escape_controls(p.message)}" for p in problems))

    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self._refresh_active()

    @on(ArgumentSelected)
    def _argument_selected(self, message: ArgumentSelected) -> None:
        message.stop()
        self.arg = message.index
        self._refresh_active()

    def action_arg(self, delta: int) -> None:
        """``.``/``,``: the next/previous argument; on the Buffer tab only those with memory
        contents (scalars skipped), on the Image tab only images."""
        enq = self.enqueue
        if enq is None or not enq.args:
            return
        if self.active == "buffer":
            choices = memory_arg_indexes(enq)
        elif self.active == "image":
            choices = memory_arg_indexes(enq, images_only=True)
        else:
            choices = [a.index for a in enq.args]
        if not choices:
            return
        current = self.arg if self.arg is not None else -1
        if delta > 0:
            after = [i for i in choices if i > current]
            self.arg = after[0] if after else choices[-1]
        else:
            before = [i for i in choices if i < current]
            self.arg = before[-1] if before else choices[0]
        self._refresh_active()

    def _refresh_active(self) -> None:
        cap = self.capture
        if cap is None:
            return
        active = self.active
        enq, arg = self.enqueue, self.arg
        try:
            if active == "source":
                self.query_one(SourcePane).show(cap, enq, arg)
            elif active == "args":
                self.query_one(ArgsTable).show(cap, enq, arg)
            elif active == "buffer":
                self.query_one(BufferPane).show(cap, enq, arg)
            elif active == "image":
                self.query_one(ImageView).show(cap, enq, arg)
            elif active == "timing":
                self.query_one(TimingView).show(cap, enq, arg)
        except Exception as exc:  # odd data in one pane must not end the session
            where = f"enqueue {enq.number}" if enq is not None else "this enqueue"
            problem = Problem(f"the {active} tab cannot show {where}: {type(exc).__name__}: {exc}")
            self._show_problems([*(enq.problems if enq is not None else []), problem])


def default_arg(enq: Enqueue) -> int | None:
    """The first argument with dumped data (else the first buffer/image, else the first)."""
    if not enq.args:
        return None
    for a in enq.args:
        if a.pre is not None or a.post is not None:
            return a.index
    for a in enq.args:
        if a.kind in (ArgKind.BUFFER, ArgKind.IMAGE, ArgKind.SVM):
            return a.index
    return enq.args[0].index


def enqueue_summary(enq: Enqueue) -> str:
    row = enq.row
    parts = [f"enqueue {row.number}", row.function]
    if row.kernel:
        parts[1] = f"{escape_controls(row.kernel)} ({row.function})"
    if row.global_size is not None:
        geometry = f"global {fmt_size(row.global_size)} local {fmt_size(row.local_size)}"
        if enq.global_offset:
            geometry += f" offset {fmt_size(enq.global_offset)}"
        parts.append(geometry)
    if enq.program is not None:
        parts.append(f"program {enq.program.number}")
    if enq.mem is not None:
        parts.append(f"mem 0x{enq.mem.handle:x}")
    if enq.nbytes is not None:
        parts.append(f"{enq.nbytes:,} B")
    if enq.device:
        parts.append(enq.device)
    if row.recovered:
        from cltui.capture.recovery import sources_text

        parts.append(f"recovered (log lost) from {sources_text(enq.recovered_from)}")
    return " · ".join(parts)
