"""The Buffer tab: which argument, the element format input, stats and the Pre/Post view."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, Label, Static
from textual.worker import get_current_worker

from cltui.capture.cltypes import CType, TypeParseError, parse_type
from cltui.capture.elements import element_ctype
from cltui.capture.model import ArgKind, Enqueue, KernelArg
from cltui.text.escape import escape_controls
from cltui.tui.browse import arg_by_index, memory_arg_indexes
from cltui.tui.format import fmt_bytes
from cltui.tui.widgets.buffer_view import BufferStats, BufferView, buffer_stats
from cltui.tui.workers import worker_token

if TYPE_CHECKING:
    from cltui.capture.capture import Capture

__all__ = ["BufferPane"]

_BYTES = parse_type("uchar")


class BufferPane(Vertical):
    """Typed Pre/Post view of the selected buffer argument (``f`` edits the element format;
    ``esc`` leaves the field, keeping the format shown)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "leave_format", "Leave the format", show=False, key_display="esc"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: tuple[Any, ...] | None = None
        self.arg: KernelArg | None = None
        self.default_ctype: CType | None = None
        # the program's typedefs, for a format the user types: parsed only when one names a
        # type that is no OpenCL builtin (the element type itself comes decoded with the enqueue)
        self.typedefs: dict[str, CType] = {}
        self._typedefs_of: Callable[[], dict[str, CType]] | None = None
        self.stats: tuple[BufferStats | None, BufferStats | None] = (None, None)
        self._place = ""  # "2/3 " : which of the enqueue's memory arguments is shown
        # the enqueue the user looks at (the list's cursor; set by the screen), and a format
        # entered before its buffer was shown (typed ahead of its decode): applied by show()
        self.target_of: Callable[[], int | None] = lambda: None
        self.pending_format: str | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="buffer-head"):
            yield Label("", id="buffer-title", markup=False)
            yield Input(placeholder="element type", id="buffer-format")
        yield Static("", id="buffer-stats", markup=False)
        yield BufferView(id="buffer-view")

    @property
    def shown_key(self) -> tuple[Any, ...] | None:
        """(enqueue number, argument index) of what the pane shows (None: nothing yet)."""
        return self._shown[1:] if self._shown is not None else None

    @property
    def view(self) -> BufferView:
        return self.query_one(BufferView)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "leave_format":  # only from the field: esc elsewhere goes on up
            return self.query_one("#buffer-format", Input).has_focus
        return True

    def action_leave_format(self) -> None:
        """Back to the buffer view; the field shows the format in use again (what was typed
        and not entered is dropped)."""
        ctype = self.view.ctype or self.default_ctype
        self.query_one("#buffer-format", Input).value = ctype.name if ctype is not None else ""
        self.view.focus()

    def focus_format(self) -> None:
        self.pending_format = None
        self.query_one("#buffer-format", Input).focus()

    def show(self, cap: Capture, enq: Enqueue | None, arg: int | None) -> None:
        key = (id(cap), enq.number if enq else None, arg)
        if key == self._shown:
            return
        self._shown = key
        title = self.query_one("#buffer-title", Label)
        fmt_input = self.query_one("#buffer-format", Input)
        self.arg = None
        self.stats = (None, None)
        self.query_one("#buffer-stats", Static).update("")
        target = arg_by_index(enq, arg)  # the header and the body: this one argument
        self._place = _place_text(enq, target)
        if target is None or not (target.pre or target.post):
            reason = _no_buffer_reason(enq, target)
            title.update(reason)
            self.view.empty_text = reason
            self.view.set_buffers(None, None, None, None)
            if not fmt_input.has_focus:  # never under the user's typing
                fmt_input.value = ""
            if enq is None or enq.number == self.target_of():  # it has no buffer: dropped
                self.pending_format = None
            return
        self.arg = target
        ctype = element_ctype(target)
        program = enq.program if enq is not None else None
        self.typedefs = {}
        self._typedefs_of = lambda: cap.program_typedefs(program)
        self.default_ctype = ctype or _BYTES
        dump = target.pre or target.post
        assert dump is not None
        if dump.hashed:
            self._show_hashes(target)
            return
        try:
            pre = target.pre.array() if target.pre is not None else None
            post = target.post.array() if target.post is not None else None
        except OSError as exc:
            reason = f"{_arg_label(target)}: cannot read the dump: {exc.strerror or exc}"
            title.update(reason)
            self.view.empty_text = reason
            self.view.set_buffers(None, None, None, None)
            fmt_input.value = ""
            return
        if not fmt_input.has_focus:  # never under the user's typing (enter applies it here)
            fmt_input.value = self.default_ctype.name
        self.view.set_buffers(key, pre, post, self.default_ctype)
        self._update_title()
        self._compute_stats()
        looked_at = self.target_of()
        if self.pending_format is not None and enq is not None and (
            looked_at is None or enq.number == looked_at
        ):
            pending, self.pending_format = self.pending_format, None
            self.apply_format(pending)

    def _show_hashes(self, arg: KernelArg) -> None:
        lines = [f"{self._place}{_arg_label(arg)}: hashes only (DumpBufferHashes), no data"]
        for side, dump in (("pre", arg.pre), ("post", arg.post)):
            if dump is not None:
                value = dump.hash_value()
                lines.append(f"{side}: {value:016x}" if value is not None else f"{side}: ?")
        if arg.pre is not None and arg.post is not None:
            same = arg.pre.hash_value() == arg.post.hash_value()
            lines.append("unchanged by the kernel" if same else "changed by the kernel")
        self.query_one("#buffer-title", Label).update(lines[0])
        self.query_one("#buffer-stats", Static).update("\n".join(lines[1:]))
        self.view.empty_text = "Hash-only dumps hold no data to show"
        self.view.set_buffers(None, None, None, None)

    def _update_title(self) -> None:
        arg = self.arg
        if arg is None or (self.view.pre is None and self.view.post is None):
            return
        view = self.view
        ctype = view.ctype or _BYTES
        sides = "+".join(s for s, d in (("pre", arg.pre), ("post", arg.post)) if d is not None)
        elems = view.nbytes // (ctype.size or 1)
        dump = arg.pre or arg.post
        mem = f" #{dump.mem_id:04d}" if dump is not None else ""
        text = (
            f"{self._place}{_arg_label(arg)}{mem} · {sides} · {elems:,} × {ctype.name} "
            f"({fmt_bytes(view.nbytes)}) · format:"
        )
        self.query_one("#buffer-title", Label).update(text)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "buffer-format":
            return
        event.stop()
        self.apply_format(event.value)
        self.view.focus()

    def apply_format(self, text: str) -> bool:
        """Show the buffer as elements of ``text`` (``""`` goes back to the signature's type)."""
        shown = self._shown[1] if self._shown is not None else None
        target = self.target_of()
        if self.arg is None or (target is not None and shown != target):
            self.pending_format = text  # typed ahead of the target's decode: show() applies it
            return False
        if not text.strip():
            ctype = self.default_ctype or _BYTES
        else:
            try:
                try:
                    ctype = parse_type(text, self.typedefs)
                except TypeParseError:
                    if self._typedefs_of is None:
                        raise
                    self.typedefs, self._typedefs_of = self._typedefs_of(), None
                    ctype = parse_type(text, self.typedefs)
            except TypeParseError as exc:
                self.notify(f"Element format {text.strip()!r}: {exc}", severity="error")
                return False
            if not ctype.size or ctype.dtype is None:
                self.notify(f"Element format {text.strip()!r} has no size", severity="error")
                return False
        self.query_one("#buffer-format", Input).value = ctype.name
        self.view.set_ctype(ctype)
        self._update_title()
        self._compute_stats()
        return True

    @work(thread=True, exclusive=True, group="buffer-stats", exit_on_error=False)
    def _compute_stats(self) -> None:
        view = self.view
        ctype = view.ctype or _BYTES
        pre, post = view.pre, view.post
        shown = self._shown
        self.app.call_from_thread(self.query_one("#buffer-stats", Static).update, "computing…")
        worker = get_current_worker()
        cancel = worker_token(worker)
        pre_stats = buffer_stats(pre, ctype, cancel=cancel) if pre is not None else None
        post_stats = buffer_stats(post, ctype, pre, cancel=cancel) if post is not None else None
        if worker.is_cancelled:
            return
        self.app.call_from_thread(self._stats_done, shown, pre_stats, post_stats)

    def _stats_done(
        self, shown: tuple[Any, ...] | None, pre: BufferStats | None, post: BufferStats | None
    ) -> None:
        if shown != self._shown:  # another argument is shown now: its own stats follow
            return
        self.stats = (pre, post)
        self.query_one("#buffer-stats", Static).update(stats_text(pre, post))


def stats_text(pre: BufferStats | None, post: BufferStats | None) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    for i, (side, st) in enumerate((("pre ", pre), ("post", post))):
        if st is None:
            continue
        if i and pre is not None:
            text.append("\n")
        text.append(side, "bold")
        if st.minimum is not None:
            text.append(f" min {st.minimum:.6g} max {st.maximum:.6g}")
            if st.mean is not None:
                text.append(f" mean {st.mean:.6g}")
        if st.nan or st.inf:
            text.append(f" NaN {st.nan} Inf {st.inf}", "bold red")
        else:
            text.append(" NaN 0 Inf 0" if st.minimum is not None else " (no numeric lanes)")
        if st.changed is not None:
            pct = 100.0 * st.changed / st.count if st.count else 0.0
            text.append(f" │ changed {st.changed:,}/{st.count:,} ({pct:.1f}%)", "bold")
    return text


def _arg_label(arg: KernelArg) -> str:
    """``arg 2 out (__global float*)``: the index, the name and the type of an argument."""
    name = f" {escape_controls(arg.name)}" if arg.name else ""
    tname = arg.type_name or (arg.kind.value if arg.kind is not ArgKind.UNKNOWN else "")
    return f"arg {arg.index}{name}" + (f" ({escape_controls(tname)})" if tname else "")


def _place_text(enq: Enqueue | None, arg: KernelArg | None) -> str:
    """``buffer 2/3 · ``: the place of ``arg`` among the memory arguments ``.``/``,`` visit."""
    indexes = memory_arg_indexes(enq)
    if arg is None or arg.index not in indexes:
        return ""
    return f"buffer {indexes.index(arg.index) + 1}/{len(indexes)} · "


def _no_buffer_reason(enq: Enqueue | None, arg: KernelArg | None) -> str:
    if enq is None:
        return "No enqueue"
    if not enq.args:
        return "Not a kernel enqueue: no buffer arguments"
    if arg is None:
        return "No argument selected"
    if arg.kind in (ArgKind.BUFFER, ArgKind.SVM):
        return f"{_arg_label(arg)}: no Pre/Post dump (outside the dump window?)"
    return f"{_arg_label(arg)} is a {arg.kind.value} argument, not a buffer"
