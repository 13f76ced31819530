"""The range commands (``r e C E X L``) come from one table: the browser's bindings, its help,
the command palette and the README's keys table are all made from it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.binding import Binding

from cltui.tui.app import CltuiApp, make_app
from cltui.tui.keys_table import key_rows
from cltui.tui.range_commands import RANGE_COMMANDS
from cltui.tui.screens.help import HelpScreen
from cltui.tui.screens.main import MainScreen
from tests.test_tui_app import SIZE, aio, settle, wait_loaded


def _bindings(cls: type[Any]) -> list[Binding]:
    return list(Binding.make_bindings(cls.__dict__.get("BINDINGS", [])))


def test_each_range_command_is_bound_once_on_the_browser_and_nowhere_else() -> None:
    assert set(RANGE_COMMANDS) == {"replay", "export", "check", "edit_program", "experiment",
                                   "latency"}  # fmt: skip
    keys = {c.key for c in RANGE_COMMANDS.values()}
    assert keys == {"r", "e", "C", "E", "X", "L"}
    browser = _bindings(MainScreen)
    for command in RANGE_COMMANDS.values():
        (bound,) = [b for b in browser if b.key == command.key]
        assert bound.action == f"range_command('{command.name}')"
        assert (bound.description, bound.tooltip, bound.show) == (
            command.word, command.description, command.show)
    app_keys = {k for b in _bindings(CltuiApp) for k in b.key.split(",")}
    assert not keys & app_keys, "a range key wired a second way (on the app)"
    rows = [r for r in key_rows() if r.where == "browser"]
    for command in RANGE_COMMANDS.values():  # the README's keys table
        assert any(r.keys == f"`{command.key}`" and r.what == command.description for r in rows)


@pytest.mark.child
@aio
async def test_the_table_feeds_help_palette_and_the_keys(pyocl_pocl: Path) -> None:
    app = make_app(pyocl_pocl, remember=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        assert screen.capture is not None
        active = screen.active_bindings
        for command in RANGE_COMMANDS.values():
            assert active[command.key].enabled, command.key
        palette = {c.title: c.help for c in app.get_system_commands(screen)}
        for command in RANGE_COMMANDS.values():
            assert palette.get(command.word) == command.description
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        words = {b.binding.description for b in app.screen.bindings.values()}
        assert {c.word for c in RANGE_COMMANDS.values()} <= words
        await pilot.press("escape")
        # a key runs its command's start (here one put in its place) on the selection
        ran: list[tuple[object, object]] = []
        screen.starts["latency"] = lambda app_, scr: ran.append((app_, scr))
        await pilot.press("L")
        await settle(pilot)
        assert ran == [(app, screen)]
