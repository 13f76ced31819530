"""The Source tab: the kernel's program, its signature marked, build options and build log."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from cltui.capture.spans import kernel_span, param_spans
from cltui.text.escape import escape_controls
from cltui.tui.widgets.source_view import SourceView

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.capture.model import Enqueue

__all__ = ["SourcePane"]

ExtraMarks = Callable[["Enqueue"], "list[tuple[int, int, int, int]]"]  # e.g. check findings


class SourcePane(Vertical):
    """Program source scrolled to the kernel (``o`` shows build options and the build log)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "toggle_build", "Build log", tooltip="Build options and build log"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: tuple[int | None, int | None] | None = None
        self.title_text = ""
        self.extra_marks: ExtraMarks | None = None  # more source spans to mark, per enqueue

    def set_extra_marks(self, extra: ExtraMarks | None) -> None:
        """Mark ``extra(enqueue)`` spans too (from the next :meth:`show` on)."""
        self.extra_marks = extra
        self._shown = None

    def compose(self) -> ComposeResult:
        yield Static("", id="source-title", markup=False)
        yield SourceView(id="source-view")
        with VerticalScroll(id="build-info"):
            yield Static("", id="build-text", markup=False)

    def on_mount(self) -> None:
        self.query_one("#build-info").display = False

    def action_toggle_build(self) -> None:
        info = self.query_one("#build-info")
        info.display = not info.display
        self.query_one(SourceView).display = not info.display

    def show(self, cap: Capture, enq: Enqueue | None, arg: int | None) -> None:
        key = (enq.number if enq else None, arg)
        if key == self._shown:
            return
        self._shown = key
        view = self.query_one(SourceView)
        title = self.query_one("#source-title", Static)
        build = self.query_one("#build-text", Static)
        program = enq.program if enq is not None else None
        kernel = enq.row.kernel if enq is not None else None
        if program is None or kernel is None:
            view.set_source(None, "")
            view.set_marks(None, [])
            what = "not a kernel enqueue" if enq is not None and kernel is None else "no program"
            self.title_text = f"No source: {what}"
            if enq is not None and kernel is not None:
                shown = escape_controls(kernel)
                self.title_text = f"No source: the capture has no program for kernel {shown}"
            title.update(self.title_text)
            build.update("")
            return
        source = cap.program_source(program)
        if not source:
            self.title_text = (
                f"Program {program.number} ({program.hash}): source not dumped "
                "(DumpProgramSource off, or a binary/IL program)"
            )
            view.set_source(None, "")
            view.set_marks(None, [])
        else:
            view.set_source(("program", program.number, program.hash), source)
            span = kernel_span(source, kernel)
            marks = []
            params = param_spans(source, kernel) or []
            if arg is not None and 0 <= arg < len(params):
                marks = [params[arg]]
            if self.extra_marks is not None and enq is not None:
                marks += self.extra_marks(enq)
            view.set_marks(span, marks)
            name = program.source_path.name if program.source_path else ""
            where = f"lines {span[0]}-{span[1]}" if span else "definition not found"
            shown = escape_controls(kernel)
            self.title_text = f"{escape_controls(name)} · {shown}: {where} · o: build options/log"
            view.scroll_to_kernel()
        title.update(self.title_text)
        text = Text()
        text.append("Build options: ", "bold")
        text.append(program.options or "(none)")
        text.append("\n\n")
        log = cap.build_log(program)
        text.append("Build log:\n", "bold")
        text.append(log.strip() or "(empty or not dumped)")
        build.update(text)
