"""Snapshot tests of the resource history screen and the copy menu (issue 17)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from cltui.tui.app import make_app
from cltui.tui.screens.history import HistoryScreen
from tests.test_snapshots import LARGE, SMALL, Compare, _settle, _steps

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)


def _history(jump: int, keys: list[str]) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """The steps, then the history screen alone: on a loaded machine the worker may take
    over 0.4 s, and its "Following the object..." notice would sit in the frame."""
    steps = _steps(jump=jump, keys=keys)

    async def run(pilot: Pilot[Any]) -> None:
        await steps(pilot)
        for _ in range(200):
            if isinstance(pilot.app.screen, HistoryScreen):
                break
            await pilot.pause(0.05)
        assert isinstance(pilot.app.screen, HistoryScreen)
        pilot.app.clear_notifications()
        await _settle(pilot)

    return run


def test_history_screen_small(snap_compare: Compare, pyocl_pocl: Path) -> None:
    run = _history(22, ["3", "full_stop", "H"])
    assert snap_compare(make_app(pyocl_pocl), terminal_size=SMALL, run_before=run)


def test_history_screen_large(snap_compare: Compare, images_svm: Path) -> None:
    run = _history(9, ["H"])
    assert snap_compare(make_app(images_svm), terminal_size=LARGE, run_before=run)


def test_save_menu(snap_compare: Compare, pyocl_pocl: Path) -> None:
    """s's menu on the Buffer tab (y's is the same screen; its commands name the capture's
    path, which differs from machine to machine)."""
    run = _steps(jump=22, keys=["3", "s"])
    assert snap_compare(make_app(pyocl_pocl), terminal_size=SMALL, run_before=run)
