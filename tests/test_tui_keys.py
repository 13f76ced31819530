"""Keys (issue 17): none lost however fast they come (Pilot and a real pty), esc leaves every
input, and help, footer and palette list exactly the keys that work on the screen."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.command import CommandPalette
from textual.pilot import Pilot
from textual.widgets import Input
from textual.widgets._footer import FooterKey

from cltui.tui.app import CltuiApp, make_app
from cltui.tui.screens.help import HelpScreen, bindings_table
from cltui.tui.widgets.buffer_pane import BufferPane
from cltui.tui.widgets.buffer_view import BufferView
from tests.ptyterm import PtyTerm
from tests.test_tui_app import SIZE, aio, jump, settle, wait_loaded

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)

_NAMES = {"/": "slash", ":": "colon", "\r": "enter", "\x1b": "escape", " ": "space",
          "\x01": "ctrl+a", "\x0b": "ctrl+k"}


LIST_ROW = re.compile(r"^\W?\s*\d+ (kernel|read|write|copy|marker|map|unmap|fill|svm) ")


def burst(pilot: Pilot[Any], text: str) -> None:
    """Post every key of ``text`` to the app at once, as a terminal's one read would."""
    driver = pilot.app._driver
    assert driver is not None
    for ch in text:
        key = _NAMES.get(ch, ch)
        driver.send_message(events.Key(key, ch if ch.isprintable() else None))


async def settled_until(pilot: Pilot[Any], cond: Callable[[], bool], bound: float = 60,
                        notices: list[str] | None = None) -> None:
    """Settle until ``cond`` holds: a loaded machine may need more than one round for a
    burst that opens and closes dialogs (``bound`` seconds: a hang detector, no timing)."""
    end = time.monotonic() + bound
    while True:
        await settle(pilot)
        if cond():
            return
        assert time.monotonic() < end, f"the burst never settled: {_where(pilot, notices)}"


def record_notices(app: CltuiApp) -> list[str]:
    """The notices the app shows from now on (their text), for a failure's message."""
    notices: list[str] = []
    notify = app.notify

    def recording(message: str, *args: Any, **kwargs: Any) -> None:
        notices.append(str(message))
        notify(message, *args, **kwargs)

    app.notify = recording  # type: ignore[method-assign]
    return notices


def _where(pilot: Pilot[Any], notices: list[str] | None = None) -> str:
    """What the app shows, for a failure's message: its screens, focus, list and buffer view,
    the buffer's format field and what it was given, and the notices since ``notices``
    started recording (a format the field did not take says why there)."""
    app = pilot.app
    assert isinstance(app, CltuiApp)
    views = app.main.query(BufferView)
    view = views.first() if views else None
    ctype = view.ctype if view else None
    hex_mode = view.hex_mode if view else None
    panes = app.main.query(BufferPane)
    pane = panes.first() if panes else None
    field = (f", format field {pane.query_one('#buffer-format', Input).value!r} "
             f"(pending {pane.pending_format!r}, shows {pane.shown_key})" if pane else "")
    return (f"screens {[type(s).__name__ for s in app.screen_stack]}, focus {app.focused!r}, "
            f"filter {app.main.name_filter!r}, state {app.main.state()}, "
            f"buffer type {ctype.name if ctype else None}, hex {hex_mode}{field}"
            + (f", notices {notices}" if notices is not None else ""))


@aio
async def test_a_burst_after_f_lands_in_the_format_field(pyocl_pocl: Path) -> None:
    """f then uchar in one burst: every character reaches the field (the r opened the replay
    dialog: the keys were routed to the list before f had moved the focus)."""
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 14)
        burst(pilot, "3f\x01\x0buchar")
        await settle(pilot)
        assert pilot.app.screen is screen
        fmt = screen.query_one("#buffer-format", Input)
        assert fmt.has_focus and fmt.value == "uchar"
        burst(pilot, "\rx")  # enter applies, then x is the view's again (hex)
        await settle(pilot)
        view = screen.query_one(BufferView)
        assert view.ctype is not None and view.ctype.name == "uchar"
        assert view.hex_mode and pilot.app.focused is view


@aio
async def test_a_long_handler_does_not_let_the_next_key_past_a_moving_focus(
    pyocl_pocl: Path,
) -> None:
    """The app spends 0.4 CPU s in one handler while ``f`` is on its way to moving the focus
    to the format field (a decode's details drawn, a collection; under load): the keys behind
    it still wait for the focus, so ``int`` lands in the field.  (The gate counted that
    handler's CPU against the key's wait, let ``i`` through to the list while ``f`` was still
    travelling, and the field got ``nt``: the end state of a burst through dialogs that
    failed side by side.)"""
    seen: list[object] = []

    def hook(message: object) -> None:
        if isinstance(message, events.Key) and message.key == "f" and (
                not seen or message is seen[0]):
            seen.append(message)
            if len(seen) == 2:  # the gate let f through (it held it first): a long handler
                end = time.thread_time() + 0.4
                while time.thread_time() < end:
                    pass

    async with make_app(pyocl_pocl).run_test(size=SIZE, message_hook=hook) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 14)
        await pilot.press("3")
        await settle(pilot)
        assert isinstance(pilot.app, CltuiApp)
        notices = record_notices(pilot.app)
        burst(pilot, "fint\rx")
        view = screen.query_one(BufferView)
        await settled_until(
            pilot, lambda: view.ctype is not None and view.ctype.name == "int" and view.hex_mode,
            notices=notices, bound=20,
        )
        assert len(seen) >= 2


@aio
async def test_a_burst_through_dialogs(pyocl_pocl: Path) -> None:
    """Keys typed ahead into dialogs that are still opening, and past their enter."""
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        burst(pilot, "/axpb\r")
        await settled_until(
            pilot, lambda: screen.name_filter == "axpb"
            and "filter 'axpb'" in screen.state()["status"]
        )
        assert isinstance(pilot.app, CltuiApp)
        notices = record_notices(pilot.app)
        burst(pilot, "/\x01\x0b\r:14\r3fint\rx")
        view = screen.query_one(BufferView)
        await settled_until(
            pilot, lambda: screen.name_filter == "" and screen.state()["cursor"] == 14
            and view.ctype is not None and view.ctype.name == "int" and view.hex_mode,
            notices=notices,
        )


@aio
async def test_a_key_let_through_as_the_app_closes_is_dropped(pyocl_pocl: Path) -> None:
    """A key the gate posted just before the app closed reaches it with no screen left: it is
    dropped, not a ScreenStackError at exit (seen once in CI after a burst)."""
    app = make_app(pyocl_pocl)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
    assert not app.screen_stack  # closed: the screens are gone
    key = events.Key("x", "x")
    app.key_gate._passing.append(key)  # as the gate lets a held key through
    await app.on_event(key)


@aio
async def test_esc_leaves_every_input(pyocl_pocl: Path) -> None:
    """Filter, jump, kinds, replay and export dialogs, the palette and the format field:
    esc goes back to the browser, whatever was typed."""
    app = make_app(pyocl_pocl)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 14)
        await pilot.press("3")
        await settle(pilot)
        for key in ("slash", "colon", "t", "r", "e", "ctrl+p", "f"):
            await pilot.press(key)
            await settle(pilot)
            opened = app.screen
            assert opened is not screen or key == "f", key
            for field in opened.query(Input):  # a field of the dialog: focus it and type
                field.focus()
                await pilot.press("1", "2")
                break
            await pilot.press("escape")
            await settle(pilot)
            assert app.screen is screen, key
            assert not isinstance(app.focused, Input), key
        assert screen.name_filter == "" and screen.state()["cursor"] == 14


def _descriptions(screen: Any, skip: tuple[str, ...] = ()) -> set[str]:
    return {
        a.binding.description for a in screen.active_bindings.values()
        if a.enabled and a.binding.description and a.binding.action not in skip
    }


async def _check_listed(pilot: Pilot[Any], where: str) -> None:
    """Help, palette and footer list every key that works on the screen now."""
    app = pilot.app
    assert isinstance(app, CltuiApp)
    screen = app.screen
    working = _descriptions(screen)
    assert working, where
    table = bindings_table(screen.active_bindings, None)
    helped = {str(cell) for column in table.columns for cell in column._cells}
    assert working <= helped, (where, working - helped)
    palette = {c.title for c in app.get_system_commands(screen)}
    wanted = _descriptions(screen, ("quit", "command_palette"))
    assert wanted <= palette, (where, wanted - palette)
    shown = {a.binding.action for a in screen.active_bindings.values() if a.binding.show}
    footer = {k.action for k in screen.query(FooterKey)}
    assert shown <= footer, (where, shown - footer)
    await pilot.press("question_mark")
    await settle(pilot)
    assert isinstance(app.screen, HelpScreen), where
    await pilot.press("escape")
    await settle(pilot)


@aio
async def test_help_footer_and_palette_list_every_working_key(images_svm: Path) -> None:
    app = make_app(images_svm)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 3)
        for tab in "12345":
            await pilot.press(tab)
            await settle(pilot)
            await _check_listed(pilot, f"list focused, tab {tab}")
            if tab == "4":  # a 3-D image: its slice keys work with the list focused
                keys = {a.binding.key for a in screen.active_bindings.values() if a.enabled}
                assert {"right_square_bracket", "left_square_bracket"} <= keys
            await pilot.press("tab")
            await settle(pilot)
            await _check_listed(pilot, f"details focused, tab {tab}")
            await pilot.press("shift+tab")
        await pilot.press("ctrl+p")
        await settle(pilot)
        assert isinstance(app.screen, CommandPalette)
        await pilot.press("escape")


@aio
async def test_help_is_the_first_key_of_the_footer(pyocl_pocl: Path) -> None:
    """A narrow footer cuts from the right: ? Help is first, so it is the last to go."""
    async with make_app(pyocl_pocl).run_test(size=(60, 20)) as pilot:
        screen = await wait_loaded(pilot)
        keys = [k for k in screen.query(FooterKey) if "-command-palette" not in k.classes]
        assert keys[0].action == "help"
        assert keys[0].region.right <= 60


@pytest.mark.parametrize("size", [(80, 24)])
def test_a_burst_through_a_real_pty(pyocl_pocl: Path, size: tuple[int, int]) -> None:
    """The app in a real terminal: a jump and an element format typed in one write each."""
    argv = [sys.executable, "-m", "cltui", str(pyocl_pocl)]
    with PtyTerm(argv, size=size) as term:
        screen = term.wait_for(lambda s: "rng_gen" in s and "Stop reading" not in s,
                               timeout=60, quiet=0.5)
        rows = [ln for ln in screen.splitlines() if LIST_ROW.match(ln)]
        assert len(rows) >= 12, screen  # 80x24: at least 12 list rows on the real terminal
        term.send(b":14\r")
        term.wait_for("14 · 1 enq", timeout=20, quiet=0.3)
        term.send(b"3f\x01\x0buchar\r")
        screen = term.wait_for("32,768 × uch", timeout=20, quiet=0.3)  # uchar (cut at 80)
        assert "Replay enqueues" not in screen
        assert "buffer 1/3 · arg 0" in screen  # the Buffer tab's header
        term.send(b"q")
        assert term.wait_exit(20) == 0


@aio
async def test_help_footer_and_palette_on_an_action_screen(pyocl_pocl: Path) -> None:
    """? and the palette work on the screens that have no help of their own (the diff)."""
    import numpy as np

    from cltui.capture.cltypes import parse_type
    from cltui.tui.screens.diff import DiffScreen

    app = make_app(pyocl_pocl)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_loaded(pilot)
        data = np.arange(16, dtype=np.float32)
        app.push_screen(DiffScreen("t", "d", data, data, data + 1, parse_type("float"), None))
        await settle(pilot)
        assert isinstance(app.screen, DiffScreen)
        await _check_listed(pilot, "diff")
        assert isinstance(app.screen, DiffScreen)  # ? opened help, esc closed it


@aio
async def test_source_keys_work_while_the_list_has_focus(opencv: Path) -> None:
    """o (build log) and k (back to the kernel) act on the visible Source tab from the list."""
    from cltui.tui.widgets.source_view import SourceView

    async with make_app(opencv).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 31)
        await pilot.press("1")
        await settle(pilot)
        assert pilot.app.focused is screen.enqueue_list
        view = screen.query_one(SourceView)
        top = view.scroll_y
        view.scroll_to(y=0, animate=False, immediate=True)
        await pilot.press("k")
        await settle(pilot)
        assert view.scroll_y == top > 0
        await pilot.press("o")
        await settle(pilot)
        assert screen.query_one("#build-info").display and not view.display
        await pilot.press("o")
        assert view.display and pilot.app.focused is screen.enqueue_list


@aio
async def test_a_format_typed_ahead_of_the_buffer_applies_to_it(pyocl_pocl: Path) -> None:
    """A format entered while the enqueue moved to is still being decoded (no buffer shown
    yet) applies to its buffer when it arrives; the field is never rewritten under typing."""
    from cltui.tui.widgets.buffer_pane import BufferPane

    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 2)  # WriteBuffer: no buffer argument to show
        await pilot.press("3")
        await settle(pilot)
        pane = screen.query_one(BufferPane)
        assert pane.arg is None and not pane.apply_format("int")
        await jump(pilot, 14)
        view = screen.query_one(BufferView)
        assert view.ctype is not None and view.ctype.name == "int" and pane.pending_format is None
        # the list is on 22 while the details still show 14 (its decode not back yet): the
        # format waits for 22's buffer instead of going to 14's and being reset
        looked_at = pane.target_of
        pane.target_of = lambda: 22
        assert not pane.apply_format("uint") and pane.pending_format == "uint"
        assert view.ctype.name == "int"
        pane.target_of = looked_at
        assert screen.jump_to(22)
        await settle(pilot)
        assert view.ctype.name == "uint" and pane.pending_format is None
        fmt = screen.query_one("#buffer-format", Input)
        fmt.focus()
        await settle(pilot)
        fmt.value = "ush"  # being typed when another enqueue's buffer arrives
        assert screen.jump_to(23)
        await settle(pilot)
        assert screen.state()["cursor"] == 23 and fmt.value == "ush"
