"""The browser screen: the enqueue list, the detail panes and the status line."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, TypedDict

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Horizontal
from textual.screen import Screen
from textual.widgets import Label, ProgressBar

from cltui.capture.model import EnqueueKind
from cltui.tui.layout import SPLIT_KEYS, Split
from cltui.tui.messages import (
    CaptureFailed,
    CaptureLoaded,
    CursorMoved,
    IndexProgress,
    RangeChanged,
)
from cltui.tui.range_commands import RANGE_COMMANDS, Start, range_bindings
from cltui.tui.screens.details_reader import DetailsReader
from cltui.tui.screens.filtering import ListFilter
from cltui.tui.screens.help import HelpScreen
from cltui.tui.screens.panes import PaneLayout
from cltui.tui.screens.problems import ProblemsScreen, problems_summary
from cltui.tui.screens.range_status import RangeStatus
from cltui.tui.screens.reading import CaptureIndexer, Opener
from cltui.tui.widgets.buffer_pane import BufferPane
from cltui.tui.widgets.detail_panes import SOURCE_KEYS, DetailPanes
from cltui.tui.widgets.enqueue_list import BADGE_LEGEND, EnqueueList
from cltui.tui.widgets.keys_footer import KeysFooter
from cltui.tui.widgets.status_line import StatusLine

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.tui.screens.following import Follower
    from cltui.tui.screens.remembered_state import RememberedState

__all__ = ["MainScreen", "ScreenState"]


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


class MainScreen(Screen[None]):
    """Browses one capture.  The capture is indexed in a thread while the screen is already up.

    The screen has parts, each owning its state: :class:`CaptureIndexer` (the reading),
    :class:`ListFilter` (filter, sort, jump), :class:`DetailsReader` (the cursor's details),
    :class:`RangeStatus` (the status line's selection), :class:`PaneLayout` (the split), the
    :class:`Follower` (``F``) and :class:`RememberedState` (the capture's state kept between
    sessions).  The screen owns the capture it shows and its bookmarks' names, declares the
    keys and hands each to its part; the range commands come from
    :data:`~cltui.tui.range_commands.RANGE_COMMANDS`."""

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
        *range_bindings(),  # r e C E X L: the range commands' table
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
        starts: Mapping[str, Start] | None = None,
        remember: bool = True,
    ) -> None:
        """``starts`` replaces range commands' starts by name (``make_app``'s hooks)."""
        super().__init__()
        self.path = path
        self.opener = opener
        self.label = label
        self.starts = dict(starts or {})
        self.remember = remember  # keep bookmarks, filters, position per capture (XDG state)
        self.capture: Capture | None = None  # the capture shown (loaded, or swapped by F)
        self.bookmark_names: dict[int, str] = {}  # capture position -> the name given (M n)
        self.indexer = CaptureIndexer(self, path, opener, label)
        self.list_filter = ListFilter(self)
        self.range_status = RangeStatus(self)
        self.details_reader = DetailsReader(self, self.range_status.shown)
        self.panes_layout = PaneLayout(self)
        self.follower: Follower | None = None  # F
        self.remembered: RememberedState | None = None  # once loaded, when remember

    # ------------------------------------------------------------- the parts' state
    @property
    def reading(self) -> bool:
        return self.indexer.reading

    @property
    def stopped(self) -> bool:
        return self.indexer.stopped

    @property
    def error(self) -> str | None:
        return self.indexer.error

    @property
    def name_filter(self) -> str:
        return self.list_filter.name_filter

    @property
    def kind_filter(self) -> set[EnqueueKind] | None:
        return self.list_filter.kind_filter

    @property
    def list_sort(self) -> tuple[str, bool]:
        return self.list_filter.list_sort

    @property
    def split(self) -> Split:
        return self.panes_layout.split

    @property
    def details_current(self) -> bool:
        """Whether the details show the enqueue under the cursor (no decode is pending)."""
        return self.details_reader.current

    def set_filter(self, name: str, kinds: set[EnqueueKind] | None) -> bool:
        return self.list_filter.set_filter(name, kinds)

    def set_sort(self, key: str, descending: bool) -> None:
        self.list_filter.set_sort(key, descending)

    def jump_to(self, number: int) -> bool:
        return self.list_filter.jump_to(number)

    # ----------------------------------------------------------------- widgets
    @property
    def enqueue_list(self) -> EnqueueList:
        return self.query_one(EnqueueList)

    @property
    def details(self) -> DetailPanes:
        return self.query_one(DetailPanes)

    @property
    def status(self) -> StatusLine:
        return self.query_one(StatusLine)

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
        self.panes_layout.lay_out(self.app.size.width)
        self.enqueue_list.focus()
        self.indexer.start()

    def on_index_progress(self, message: IndexProgress) -> None:
        self.indexer.progress(message.fraction)

    def on_capture_failed(self, message: CaptureFailed) -> None:
        self.indexer.failed(message)

    def on_capture_loaded(self, message: CaptureLoaded) -> None:
        if not self.indexer.loaded(message.capture):  # stopped meanwhile: dropped
            return
        cap = message.capture
        self.capture = cap
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
        self.range_status.update()
        self.refresh_bindings()
        if self.remember:
            from cltui.tui.screens.remembered_state import SAVE_EVERY, RememberedState

            self.remembered = RememberedState(self)
            self.remembered.restore()
            self.set_interval(SAVE_EVERY, self.remembered.save)

    def on_unmount(self) -> None:
        if self.follower is not None:
            self.follower.stop()
        if self.remembered is not None:
            self.remembered.save()
        self.indexer.close(self.capture)

    @property
    def last_devices(self) -> list[str]:
        """The devices of the last replay of this capture (``-d`` of a copied command)."""
        settings = self.remembered.replay if self.remembered is not None else None
        return [d.get("name", "") for d in (settings or {}).get("devices", []) if d.get("name")]

    # ------------------------------------------------------- cursor and range
    @on(CursorMoved)
    def _cursor_moved(self, message: CursorMoved) -> None:
        if not self.enqueue_list.range:
            self.range_status.update()
        self.details_reader.cursor_moved()

    @on(RangeChanged)
    def _range_changed(self, message: RangeChanged) -> None:
        self.range_status.update()

    # ------------------------------------------------------ reading (indexer)
    def action_stop_reading(self) -> None:
        self.indexer.stop()

    def action_read_again(self) -> None:
        if self.reading or self.capture is not None:
            return
        self.indexer.start()

    # --------------------------------------------------- the list (list_filter)
    def action_filter(self) -> None:
        self.list_filter.open_filter()

    def action_kinds(self) -> None:
        self.list_filter.open_kinds()

    def action_sort(self, step: int) -> None:
        self.list_filter.sort_step(step)

    def action_jump(self) -> None:
        self.list_filter.open_jump()

    # ------------------------------------------------------ the detail panes
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

    def action_focus_list(self) -> None:
        self.enqueue_list.focus()

    def action_zoom(self) -> None:
        if self.maximized is not None:
            self.minimize()
            return
        focused = self.focused
        if focused is not None:
            self.maximize(focused, container=False)

    # ------------------------------------------------------ layout (panes_layout)
    def on_resize(self, event: events.Resize) -> None:
        self.panes_layout.lay_out(event.size.width)

    def on_mouse_down(self, event: events.MouseDown) -> None:
        self.panes_layout.mouse_down(event)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        self.panes_layout.mouse_move(event)

    def on_mouse_up(self, event: events.MouseUp) -> None:
        self.panes_layout.mouse_up(event)

    def action_split(self, delta: int) -> None:
        self.panes_layout.move(delta)

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
        if action in ("filter", "kinds", "jump", "problems", "history", "copy", "save", "sort",
                      "bookmarks", "follow", "range_command"):
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

    def action_range_command(self, name: str) -> None:
        """Run the range command ``name`` (:data:`RANGE_COMMANDS`) on the selection."""
        command = RANGE_COMMANDS.get(name)
        if command is None or self.capture is None:
            return
        self.starts.get(name, command.start)(self.app, self)

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
