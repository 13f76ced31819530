"""Snapshot tests of the resource history screen and the copy menu (issue 17)."""

from __future__ import annotations

from pathlib import Path

from cltui.tui.app import make_app
from tests.test_snapshots import LARGE, SMALL, Compare, _steps


def test_history_screen_small(snap_compare: Compare, pyocl_pocl: Path) -> None:
    run = _steps(jump=22, keys=["3", "full_stop", "H"])
    assert snap_compare(make_app(pyocl_pocl), terminal_size=SMALL, run_before=run)


def test_history_screen_large(snap_compare: Compare, images_svm: Path) -> None:
    run = _steps(jump=9, keys=["H"])
    assert snap_compare(make_app(images_svm), terminal_size=LARGE, run_before=run)


def test_save_menu(snap_compare: Compare, pyocl_pocl: Path) -> None:
    """s's menu on the Buffer tab (y's is the same screen; its commands name the capture's
    path, which differs from machine to machine)."""
    run = _steps(jump=22, keys=["3", "s"])
    assert snap_compare(make_app(pyocl_pocl), terminal_size=SMALL, run_before=run)
