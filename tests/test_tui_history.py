"""Pilot tests of the resource history in the browser (issue 17): w, W and H."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from cltui.tui.screens.history import HistoryScreen
from cltui.tui.widgets.buffer_pane import BufferPane
from cltui.tui.widgets.history_list import HistoryList
from tests.said import Said
from tests.test_tui_app import SIZE, aio, jump, make_app, settle, wait_loaded

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)


async def _wait_history(pilot, screen) -> None:  # type: ignore[no-untyped-def]
    await settle(pilot)
    for _ in range(200):
        if not any(w.group == "history" for w in screen.workers):
            break
        await pilot.pause(0.02)
    await settle(pilot)


@aio
async def test_w_and_W_follow_the_selected_buffer(pyocl_pocl: Path) -> None:
    # enqueue 22's argument 2 (y__base): written last by 5 (axpbyz, the dumps changed),
    # read next by 23 (axpb, its argument 3)
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 22)
        await pilot.press("3", "full_stop")
        await settle(pilot)
        assert screen.details.arg == 2
        await pilot.press("w")
        await _wait_history(pilot, screen)
        assert screen.state()["cursor"] == 5
        pane = screen.query_one(BufferPane)
        assert pane.arg is not None and pane.arg.index == 0  # the same object there
        await pilot.press("W")  # from 5: the next reader is 6
        await _wait_history(pilot, screen)
        assert screen.state()["cursor"] == 6
        assert screen.details.arg == 2
        await jump(pilot, 22)
        await pilot.press("full_stop")
        await settle(pilot)
        await pilot.press("W")
        await _wait_history(pilot, screen)
        assert screen.state()["cursor"] == 23
        assert screen.details.arg == 3


@aio
async def test_H_lists_the_history_and_enter_jumps(pyocl_pocl: Path) -> None:
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 22)
        await pilot.press("3", "full_stop", "H")
        await _wait_history(pilot, screen)
        modal = pilot.app.screen
        assert isinstance(modal, HistoryScreen)
        rows = modal.query_one(HistoryList)
        numbers = [e.number for e in rows.history.events]
        assert numbers == [None, 4, 5, 6, 14, 22, 23, 24, None]  # created ... released
        assert rows.history.events[-1].access == "release"
        assert rows.cursor == numbers.index(22)  # starts on the enqueue we came from
        await pilot.press("up", "up", "enter")
        await settle(pilot)
        assert not isinstance(pilot.app.screen, HistoryScreen)
        assert screen.state()["cursor"] == 6


@aio
async def test_history_of_a_scalar_says_why_not(pyocl_pocl: Path) -> None:
    said = Said()
    async with make_app(pyocl_pocl).run_test(size=SIZE, message_hook=said) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 22)
        await pilot.press("2", "full_stop")  # the Args tab: z__offset, a scalar
        await settle(pilot)
        assert screen.details.arg == 1
        await pilot.press("w")
        await _wait_history(pilot, screen)
        assert screen.state()["cursor"] == 22
        texts = list(said.texts)
        assert any("argument 1 is a scalar" in t for t in texts)


@aio
async def test_history_of_a_transfer(images_svm: Path) -> None:
    async with make_app(images_svm).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 9)  # clEnqueueReadBuffer of volume_sum's output (enqueue 3)
        await pilot.press("w")
        await _wait_history(pilot, screen)
        assert screen.state()["cursor"] == 3
        assert screen.details.arg == 1


@aio
async def test_help_and_palette_name_the_history_keys(pyocl_pocl: Path) -> None:
    from cltui.tui.screens.help import HelpScreen

    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        keys = {b.binding.key: b.binding.description for b in screen.active_bindings.values()}
        assert keys["w"] == "Last writer" and keys["W"] == "Next reader"
        assert keys["H"] == "History" and keys["y"] == "Copy" and keys["s"] == "Save"
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(pilot.app.screen, HelpScreen)
        titles = [c.title for c in pilot.app.get_system_commands(screen)]
        assert {"Last writer", "Next reader", "History", "Copy", "Save"} <= set(titles)


@aio
async def test_no_following_notice_once_the_history_is_shown(pyocl_pocl: Path) -> None:
    """The "Following the object…" notice is for a history still being worked out: a worker
    that ends only after its answer is shown (a loaded machine) let the notice's timer put it
    over the history screen (a snapshot caught it).  Here the worker's thread is held 1 s
    after the history is shown, past the notice's 0.4 s.  (On a loaded machine the work
    itself can take longer than 0.4 s: the notice is then right, given before the answer;
    what must not be is a notice given once the history is shown.)"""
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 22)
        await pilot.press("3", "full_stop")
        await settle(pilot)
        app = pilot.app
        real, notify = app.call_from_thread, app.notify
        shown = threading.Event()  # the history's answer is on the screen
        given: list[tuple[str, bool]] = []  # each notice, and whether it came after that

        def then_hold(callback, *args, **kwargs):  # type: ignore[no-untyped-def]
            out = real(callback, *args, **kwargs)
            if getattr(callback, "__name__", "") == "_act":
                shown.set()
                time.sleep(1.0)  # the history is shown; its worker is not finished yet
            return out

        def noted(message, *args, **kwargs):  # type: ignore[no-untyped-def]
            given.append((str(message), shown.is_set()))
            return notify(message, *args, **kwargs)

        app.call_from_thread = then_hold  # type: ignore[method-assign]
        app.notify = noted  # type: ignore[method-assign]
        await pilot.press("H")
        for _ in range(300):  # a hang bound
            if isinstance(app.screen, HistoryScreen):
                break
            await pilot.pause(0.02)
        assert isinstance(app.screen, HistoryScreen)
        await _wait_history(pilot, screen)
        await pilot.pause(0.6)  # past the notice's timer, had it been left running
        assert not [t for t, after in given if t.startswith("Following") and after], given
