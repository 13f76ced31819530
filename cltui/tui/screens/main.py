"""The browser screen: the enqueue list, the detail panes and the status line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, TypedDict

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Horizontal
from textual.widgets import Label, ProgressBar
from textual.worker import get_current_worker

from cltui.capture.model import Enqueue, EnqueueKind
from cltui.progress import CancelToken
from cltui.tui.browse import (
    ReadCancelled,
    decode_off_loop,
    dumped_bytes,
    range_bytes,
    range_summary,
)
from cltui.tui.format import fmt_bytes
from cltui.tui.layout import SPLIT_KEYS, Split
from cltui.tui.messages import (
    CaptureLoaded,
    CursorMoved,
    RangeChanged,
)
from cltui.tui.screens.help import HelpScreen
from cltui.tui.screens.panes import PanesScreen
from cltui.tui.screens.problems import ProblemsScreen, problems_summary
from cltui.tui.screens.reading import Opener
from cltui.tui.widgets.buffer_pane import BufferPane
from cltui.tui.widgets.detail_panes import SOURCE_KEYS, DetailPanes
from cltui.tui.widgets.enqueue_list import BADGE_LEGEND, EnqueueList
from cltui.tui.widgets.keys_footer import KeysFooter
from cltui.tui.widgets.status_line import StatusLine
from cltui.tui.workers import worker_token

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.capture.ranges import EnqueueRange
    from cltui.tui.screens.following import Follower
    from cltui.tui.screens.memory import ScreenMemory

__all__ = ["MainScreen", "RangeAction"]

RangeAction = Callable[["Capture", "EnqueueRange"], None]  # capture, the selected range



class ScreenState(TypedDict):
    """What :meth:`MainScreen.state` returns."""

    loaded: bool
    error: str | None
    rows: int
    cursor: int | None
    range: tuple[int, int] | None
    visual: bool
    bookmarks: list[int]
    status: str




class MainScreen(PanesScreen):
    """Browses one capture.  The capture is indexed in a thread while the screen is already up."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter",
                tooltip="Filter as you type (kernel:sobel time>1ms has:dumps ...; ↑ ↓ history)"),
        Binding("S", "sort(1)", "Sort", show=False,
                tooltip="Sort the list by the next column (#, dev time, kernel, kind, size)"),
        Binding("O", "sort(0)", "Reverse sort", show=False, tooltip="Reverse the list's sort"),
        Binding("t", "kinds", "Kinds", show=False, tooltip="Filter by enqueue kind"),
        Binding("colon,g", "jump", "Jump", tooltip="Jump to an enqueue number"),
        Binding("1", "tab('source')", "Source", show=False),
        Binding("2", "tab('args')", "Args", show=False),
        Binding("3", "tab('buffer')", "Buffer", show=False),
        Binding("4", "tab('image')", "Image", show=False),
        Binding("5", "tab('timing')", "Timing", show=False),
        Binding("comma", "arg(-1)", "Prev arg", show=False, key_display=","),
        Binding("full_stop", "arg(1)", "Next arg", show=False, key_display="."),
        Binding("f", "format", "Format", show=False, tooltip="Element format of the buffer view"),
        Binding(
            "w", "history('writer')", "Last writer", show=False,
            tooltip="Jump to the last enqueue before this one that wrote the selected object",
        ),
        Binding(
            "W", "history('reader')", "Next reader", show=False,
            tooltip="Jump to the next enqueue after this one that reads the selected object",
        ),
        Binding("H", "history('list')", "History", show=False,
                tooltip="Every enqueue that wrote or read the selected argument's object"),
        Binding("y", "copy", "Copy", show=False,
                tooltip="Copy a value, a row, the range or a CLI command (OSC 52)"),
        Binding("s", "save", "Save", show=False,
                tooltip="Save the buffer (.npy, .csv) or the image (.png) shown"),
        # the visible tab's keys, whatever has focus (its own widget binds them first)
        Binding("x", "pane_key('hex')", "Hex", show=False, tooltip="Toggle the buffer's hex view"),
        Binding(
            "right_square_bracket", "pane_key('next')", "Next", show=False, key_display="]",
            tooltip="Next change (buffer tab) or next slice (image tab)",
        ),
        Binding(
            "left_square_bracket", "pane_key('prev')", "Prev", show=False, key_display="[",
            tooltip="Previous change (buffer tab) or previous slice (image tab)",
        ),
        *SOURCE_KEYS,  # o, k: the visible Source tab's, whatever has focus
        Binding("tab", "focus_details", "Details", show=False, tooltip="Focus the detail tab"),
        Binding("shift+tab", "focus_list", "List", show=False, tooltip="Focus the list"),
        Binding("z", "zoom", "Zoom", show=False, tooltip="Maximise the focused pane"),
        *SPLIT_KEYS,  # + and -
        Binding("p", "problems", "Problems", show=False),
        Binding("F", "follow", "Follow", show=False,
                tooltip="Follow the capture while it is written: new enqueues appear as the "
                        "log grows"),
        Binding("M", "bookmarks", "Bookmarks", show=False,
                tooltip="The bookmarks with their names: go to one, name or drop it"),
        Binding("r", "replay", "Replay", tooltip="Replay the selected range"),
        Binding("e", "export", "Export", tooltip="Export the selected range as a bundle"),
        Binding("question_mark,f1", "help", "Help", key_display="?"),
        Binding(
            "escape",
            "stop_reading",
            "Stop reading",
            priority=True,  # before the list's own escape (clear the range)
            key_display="esc",
            tooltip="Stop reading the capture (while it is being indexed)",
        ),
        Binding("R", "read_again", "Read again", tooltip="Read the capture again"),
    ]

    def __init__(
        self,
        path: Path,
        opener: Opener,
        *,
        label: str = "",
        replay: RangeAction | None = None,
        export: RangeAction | None = None,
        remember: bool = True,
    ) -> None:
        super().__init__()
        self.remember = remember  # keep bookmarks, filters, position per capture (XDG state)
        self.memory: ScreenMemory | None = None
        self.path = path
        self.opener = opener
        self.label = label
        self.replay = replay
        self.export = export
        self.capture: Capture | None = None
        self.error: str | None = None
        self.name_filter = ""
        self.kind_filter: set[EnqueueKind] | None = None
        self.list_sort = ("number", False)
        self.prompt_history: dict[str, list[str]] = {}
        self.bookmark_names: dict[int, str] = {}  # capture position -> the name given (M n)
        self.follower: Follower | None = None  # F
        self._cancel = CancelToken()
        self._last_progress = -1.0
        self._details_pending = False
        self._details_pos: int | None = None  # the list position the details show
        self.reading = False  # the capture is being opened (indexed)
        self.stopped = False  # the user stopped the reading (esc)
        self.read_fraction = 0.0
        self._log_bytes = 0
        self.split = Split()  # list and details: side by side when wide, else stacked

    # ----------------------------------------------------------------- layout
    def compose(self) -> ComposeResult:
        with Horizontal(id="loading"):
            yield Label(f"Indexing {self.path.name}", id="loading-label")
            yield ProgressBar(total=1.0, show_eta=False, id="loading-bar")
        with Container(id="browser"):
            yield EnqueueList(id="enqueues")
            yield DetailPanes(id="details")
        yield StatusLine(id="status")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.sub_title = str(self.path)
        self.query_one(BufferPane).target_of = lambda: self.state()["cursor"]  # typed-ahead formats
        self._lay_out(self.app.size.width)
        self.enqueue_list.focus()
        self._start_reading()

    def on_capture_loaded(self, message: CaptureLoaded) -> None:
        if not self.reading:  # stopped meanwhile: drop it
            from cltui.capture.background import reader_of

            reader = reader_of(message.capture)
            if reader is not None:
                reader.close()
            return
        self.reading = False
        cap = message.capture
        self.capture = cap
        self.query_one("#loading").display = False
        self.status.set_parts(bytes_text="")
        self.enqueue_list.set_capture(cap)
        self.details.set_capture(cap)
        problems = list(cap.problems)
        self.status.set_parts(problems=len(problems))
        if problems:  # one notice for all of them: the problems screen has each one
            errors = any(p.severity == "error" for p in problems)
            self.notify(
                problems_summary(problems),
                title="Capture problems",
                severity="error" if errors else "warning",
                timeout=12,
                markup=False,
            )
        self._update_range()
        self.refresh_bindings()
        if self.remember:
            from cltui.tui.screens.memory import SAVE_EVERY, ScreenMemory

            self.memory = ScreenMemory(self)
            self.memory.restore()
            self.set_interval(SAVE_EVERY, self.memory.save)

    def on_unmount(self) -> None:
        if self.follower is not None:
            self.follower.stop()
        if self.memory is not None:
            self.memory.save()

    @property
    def last_devices(self) -> list[str]:
        """The devices of the last replay of this capture (``-d`` of a copied command)."""
        settings = self.memory.replay if self.memory is not None else None
        return [d.get("name", "") for d in (settings or {}).get("devices", []) if d.get("name")]

    # ------------------------------------------------------- cursor and range
    @on(CursorMoved)
    def _cursor_moved(self, message: CursorMoved) -> None:
        if not self.enqueue_list.range:
            self._update_range()
        if not self._details_pending:
            self._details_pending = True
            self.call_later(self._show_details)

    def _show_details(self) -> None:
        self._details_pending = False
        pos = self.enqueue_list.cursor_pos
        if self.capture is None:
            return
        if pos is None:
            self.details.show_decoded(None, None)
            self._details_pos = None
            return
        self._decode(pos)

    @property
    def details_current(self) -> bool:
        """Whether the details show the enqueue under the cursor (no decode is pending)."""
        if self.capture is None:
            return True
        return not self._details_pending and self._details_pos == self.enqueue_list.cursor_pos

    @work(thread=True, exclusive=True, group="details", exit_on_error=False)
    def _decode(self, pos: int) -> None:
        """Decode the enqueue under the cursor off the UI thread (the list repaints first)."""
        cap = self.capture
        if cap is None:
            return
        number = int(cap.numbers[pos])
        worker = get_current_worker()
        enq: Enqueue | None = None
        error = None
        try:
            enq = decode_off_loop(cap, number, worker_token(worker))
        except ReadCancelled:
            return
        except Exception as exc:  # the capture reports its own problems; this is a last guard
            error = f"enqueue {number}: cannot decode ({type(exc).__name__}: {exc})"
        if not worker.is_cancelled:
            self.app.call_from_thread(self._decoded, pos, enq, error)

    def _decoded(self, pos: int, enq: Enqueue | None, error: str | None) -> None:
        if pos != self.enqueue_list.cursor_pos:  # the cursor moved on: a newer decode runs
            return
        self.details.show_decoded(enq, error)
        self._details_pos = pos
        if self.enqueue_list.range is None:  # the selection is this enqueue: its data size
            self._single_bytes(enq)

    def _single_bytes(self, enq: Enqueue | None) -> None:
        seen: set[int] = set()
        total = dumped_bytes(enq.args, seen) if enq is not None else 0
        text = f"{fmt_bytes(total)} data ({len(seen)} objects)" if seen else "no dumped data"
        self.status.set_parts(bytes_text=text)

    @on(RangeChanged)
    def _range_changed(self, message: RangeChanged) -> None:
        self._update_range()

    def _update_range(self) -> None:
        cap = self.capture
        lst = self.enqueue_list
        if cap is None:
            return
        sel = lst.selection
        mode = "VISUAL" if lst.visual else ""
        if sel is None:
            self.status.set_parts(
                range_text=f"{self.label}r: no enqueue", bytes_text="", mode_text=mode
            )
            return
        first, last = sel
        text = range_summary(cap, first, last, self.label)
        self.status.set_parts(range_text=text, bytes_text="…", mode_text=mode)
        if lst.range is not None:
            self._range_bytes(first, last)
        else:  # a single enqueue: its size comes with its decode (_decoded), or is known now
            decoded = self.details.enqueue
            if decoded is not None and decoded.number == int(cap.numbers[first]):
                self._single_bytes(decoded)

    @work(thread=True, exclusive=True, group="range-bytes", exit_on_error=False)
    def _range_bytes(self, first: int, last: int) -> None:
        """Bytes of dumped data the range needs: each memory object's first Pre dump, once."""
        cap = self.capture
        if cap is None:
            return
        worker = get_current_worker()
        try:
            counted = range_bytes(cap, first, last, worker_token(worker))
        except ReadCancelled:
            return
        except Exception as exc:  # a decoding bug must not stop the browser
            self.app.call_from_thread(
                self.status.set_parts, bytes_text=f"data size unknown ({type(exc).__name__})"
            )
            return
        if counted is None:
            return
        total, objects, dumped = counted
        text = f"{fmt_bytes(total)} data ({objects} objects)" if dumped else "no dumped data"
        self.app.call_from_thread(self.status.set_parts, bytes_text=text)

    # -------------------------------------------------------------- the rest
    def action_history(self, what: str) -> None:
        from cltui.tui.screens.history import start_history

        if what in ("writer", "reader", "list"):
            start_history(self, what)  # type: ignore[arg-type]

    def action_copy(self, key: str = "") -> None:
        from cltui.tui.screens.copy_save import start_copy

        start_copy(self, key or None)

    def action_save(self) -> None:
        from cltui.tui.screens.copy_save import start_save

        start_save(self)

    def action_problems(self) -> None:
        problems = list(self.capture.problems) if self.capture else []
        self.app.push_screen(ProblemsScreen(problems))

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(self.active_bindings, BADGE_LEGEND))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "stop_reading":
            return self.reading  # hidden (and esc left to the list) once read
        if action == "read_again":
            return not self.reading and self.capture is None and (self.stopped or bool(self.error))
        if action == "replay":
            return True if (self.replay is not None and self.capture is not None) else None
        if action == "export":
            return True if (self.export is not None and self.capture is not None) else None
        if action in ("filter", "kinds", "jump", "problems", "history", "copy", "save", "sort",
                      "bookmarks", "follow"):
            return True if self.capture is not None else None
        if action == "pane_key":
            key = str(parameters[0]) if parameters else ""
            # hidden (not greyed) where the visible tab has nothing for it to act on
            return self.capture is not None and self.details.has_pane_key(key)
        return True

    def action_follow(self) -> None:
        from cltui.tui.screens.following import Follower

        if self.capture is None:
            return
        if self.follower is None:
            self.follower = Follower(self)
        self.follower.toggle()

    def action_bookmarks(self) -> None:
        from cltui.tui.screens.bookmarks import BookmarksScreen

        cap, lst = self.capture, self.enqueue_list
        if cap is None:
            return

        def chosen(pos: int | None) -> None:
            lst.refresh()  # (some may have been dropped)
            if pos is not None:
                self.jump_to(int(cap.numbers[pos]))

        self.app.push_screen(BookmarksScreen(cap, lst.bookmarks, self.bookmark_names), chosen)

    def action_replay(self) -> None:
        self._run_range_action(self.replay)

    def action_export(self) -> None:
        self._run_range_action(self.export)

    def _run_range_action(self, handler: RangeAction | None) -> None:
        rng = self.enqueue_list.selected_range
        if handler is None or self.capture is None or rng is None:
            return
        handler(self.capture, rng)

    def state(self) -> ScreenState:
        """A summary of what the screen shows (tests and the screenshot script read it)."""
        lst = self.enqueue_list
        cap = self.capture
        sel = lst.selection
        return {
            "loaded": cap is not None,
            "error": self.error,
            "rows": len(lst.view),
            "cursor": None if cap is None or lst.cursor_pos is None
            else int(cap.numbers[lst.cursor_pos]),
            "range": None if cap is None or sel is None
            else (int(cap.numbers[sel[0]]), int(cap.numbers[sel[1]])),
            "visual": lst.visual,
            "bookmarks": sorted(int(cap.numbers[p]) for p in lst.bookmarks) if cap else [],
            "status": self.status.as_text().plain,
        }

