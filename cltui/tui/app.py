"""The cltui app and its one factory, :func:`make_app` (used by the CLI, tests and scripts)."""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.command import CommandPalette
from textual.screen import Screen
from textual.widgets import Input, TextArea

from cltui.progress import CancelToken, ProgressFn
from cltui.tui.keys import KeyGate
from cltui.tui.messages import CaptureLoaded
from cltui.tui.range_commands import RangeAction, Start, on_selection
from cltui.tui.screens.help import HelpScreen
from cltui.tui.screens.main import MainScreen
from cltui.tui.screens.reading import Opener
from cltui.tui.styles import stylesheet_paths
from cltui.tui.two_captures import Divergence, shared_opener

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.latency.measure import Options

__all__ = ["CltuiApp", "make_app"]


def _open(path: Path, progress: ProgressFn, cancel: CancelToken) -> Capture:
    """:func:`open_capture` in a child process that then decodes for the app (the app's
    event loop never waits on reading; esc or quitting kills the child at once)."""
    from cltui.capture.background import open_in_child

    return open_in_child(path, progress, cancel)


class _DaemonThreads(ThreadPoolExecutor):
    """The event loop's default executor (Textual's thread workers run in it): one daemon
    thread per job, never waited for, so that quitting never waits on a worker that is
    still decoding or waiting on a reader process (those are killed on exit)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # handed to the waiting coroutine
                future.set_exception(exc)
            else:
                future.set_result(result)

        threading.Thread(target=run, name="cltui-worker", daemon=True).start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        return None


class CltuiApp(App[None]):
    """Browses one capture, or two (``tab``-free: ``c`` switches between them)."""

    TITLE = "cltui"
    CSS_PATH = list[str | PurePath](stylesheet_paths())  # noqa: RUF012 - read by Textual
    BINDINGS: ClassVar[list[BindingType]] = [
        # before any screen's own keys: a dialog or a running replay cannot swallow it
        Binding("q", "quit_app", "Quit", show=False, priority=True,
                tooltip="Quit from any screen, a running replay too (its processes are "
                        "killed); in a text field q is typed"),
        Binding("ctrl+c", "quit_now", "Quit", show=False, priority=True),
        Binding("c", "switch_capture", "Other capture", tooltip="Switch between captures A and B"),
        Binding("d", "divergent(1)", "First divergent", tooltip="First enqueue where A and B part"),
        Binding("D", "divergent(0)", "Next divergent", show=False),
        Binding("question_mark,f1", "help", "Help", key_display="?",
                tooltip="Every key of this screen"),
    ]

    def __init__(self, screens: Sequence[MainScreen], *, ansi: bool = False) -> None:
        super().__init__(ansi_color=True if ansi else None)
        self.captures = list(screens)
        self.current = 0
        self.divergence: Divergence | None = None
        self.exit_line: str | None = None  # why the app exited 2 (see bad_input)
        self.latency_options: Options | None = None  # L's measurement (tests: fewer repeats)
        self.key_gate = KeyGate(self)  # keys in order, each once the one before is done
        if ansi:  # the terminal's own 16 colours, for basic terminals and ssh sessions
            self.theme = ANSI_THEME

    def on_load(self) -> None:
        asyncio.get_running_loop().set_default_executor(_DaemonThreads())

    async def on_event(self, event: events.Event) -> None:
        if self.key_gate.hold(event):  # a key from the terminal: handled when its turn comes
            return
        if isinstance(event, events.Key | events.Paste) and not self._screen_stacks.get(
                self._current_mode):  # closing, its screens gone: a key let through before the
            return  # close has nowhere to go (Textual would raise ScreenStackError at the user)
        await super().on_event(event)

    def on_unmount(self) -> None:
        from cltui.capture.background import close_all

        self.key_gate.close()

        close_all()  # the reader processes: killed now, not when the interpreter exits

    def bad_input(self, line: str) -> None:
        """Exit 2 with ``line`` (the path given is not a capture)."""
        self.exit_line = line
        self.exit(return_code=2)

    def action_quit_now(self) -> None:
        """ctrl+c: quit, as q and ctrl+q do (in a text field too)."""
        self.exit()

    def action_quit_app(self) -> None:
        """q: quit from every screen (a progress screen's unmount cancels its task: the
        replay's or check's children are killed); not in a text field (check_action)."""
        self.exit()

    def on_mount(self) -> None:
        for i, screen in enumerate(self.captures):
            self.install_screen(screen, name=f"capture-{i}")
        self.push_screen("capture-0")
        if len(self.captures) > 1:
            self.divergence = Divergence(self, self.captures)
            self.divergence.start()

    def on_capture_loaded(self, message: CaptureLoaded) -> None:
        if self.divergence is not None:
            self.divergence.apply()

    def action_divergent(self, first: int) -> None:
        if self.divergence is not None:
            self.divergence.jump(self.current, self.main, first=bool(first))

    def action_help(self) -> None:
        """? on a screen without a help of its own (results, diff, findings, dialogs)."""
        self.push_screen(HelpScreen(self.screen.active_bindings))

    @property
    def main(self) -> MainScreen:
        return self.captures[self.current]

    def action_switch_capture(self) -> None:
        if len(self.captures) < 2:
            return
        self.current = (self.current + 1) % len(self.captures)
        self.switch_screen(f"capture-{self.current}")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "quit_app":  # a text field types q (the binding comes first: priority)
            return not isinstance(self.focused, Input | TextArea)
        if action == "help":
            return not isinstance(self.screen, HelpScreen | CommandPalette)
        if action == "switch_capture":
            return len(self.captures) > 1
        if action == "divergent":
            if len(self.captures) < 2 or not isinstance(self.screen, MainScreen):
                return False  # a browser key: hidden on the action screens
            return None if self.divergence is None or not self.divergence.ready else True
        return True

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        # every described binding of the screen, so the palette lists its actions
        seen: set[str] = set()
        for active in screen.active_bindings.values():
            binding = active.binding
            if not binding.description or binding.action in seen or not active.enabled:
                continue
            if binding.action in ("quit", "quit_app", "command_palette"):
                continue
            seen.add(binding.action)
            node = active.node
            action = binding.action
            help_text = binding.tooltip or f"key: {binding.key_display or binding.key}"

            async def run(node: object = node, action: str = action) -> None:
                await self.run_action(action, node)  # type: ignore[arg-type]

            yield SystemCommand(binding.description, help_text, run)
        if not isinstance(screen, MainScreen):
            return
        from cltui.tui.screens.copy_save import copy_choices  # y's choices, one each

        for choice in copy_choices(screen):
            text = choice.text if len(choice.text) < 80 else choice.text[:79] + "…"
            yield SystemCommand(
                f"Copy {choice.label}", text, functools.partial(screen.action_copy, choice.key)
            )


ANSI_THEME = "ansi-dark"


def wants_ansi(environ: Mapping[str, str] | None = None) -> bool:
    """True in a terminal that announces neither 24-bit nor 256 colours (use 16 ANSI colours)."""
    env = os.environ if environ is None else environ
    if env.get("COLORTERM", "").lower() in ("truecolor", "24bit"):
        return False
    term = env.get("TERM", "")
    return not any(tag in term for tag in ("256", "truecolor", "direct", "kitty", "ghostty"))


def make_app(
    path: str | Path,
    path_b: str | Path | None = None,
    *,
    opener: Opener | None = None,
    replay: RangeAction | None = None,
    export: RangeAction | None = None,
    ansi: bool = False,
    remember: bool = True,
) -> CltuiApp:
    """The app on one capture, or on two (``c`` switches).  Opening happens in a worker.

    ``opener(path, progress, cancel)`` replaces :func:`open_capture` (tests, benchmarks);
    ``replay``/``export`` receive ``(capture, first_number, last_number)`` for the selected
    range instead of the replay and export dialogs of :mod:`cltui.tui.range_commands` (whose
    keys are greyed out until the capture is loaded).  ``ansi`` uses the terminal's 16 ANSI colours
    (see :func:`wants_ansi`).  ``remember`` keeps bookmarks, filters, the position and the
    replay settings per capture in the user's state folder (:mod:`cltui.tui.capture_state`).
    """
    open_fn = opener or _open
    paths = [Path(path)] + ([Path(path_b)] if path_b is not None else [])
    if len(paths) > 1:  # the divergence worker opens both; each is indexed once
        open_fn = shared_opener(open_fn)
    hooks = {"replay": replay, "export": export}
    starts: dict[str, Start] = {k: on_selection(v) for k, v in hooks.items() if v is not None}
    screens = [
        MainScreen(
            p,
            open_fn,
            label="" if len(paths) == 1 else f"{'AB'[i]}: ",
            starts=starts,
            remember=remember,
        )
        for i, p in enumerate(paths)
    ]
    return CltuiApp(screens, ansi=ansi)
