"""Snapshots of the layouts of issue 17: the browser at 60x20, 80x24 (test_snapshots) and
200x50 (side by side), the split moved, the pixel cursor, and the dialogs at 60 columns."""

from __future__ import annotations

from pathlib import Path

import pytest

from cltui.tui.app import make_app
from tests.test_snapshots import Compare, _steps
from tests.test_snapshots_actions import DEVICES, _keys

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)

NARROW = (60, 20)
WIDE = (200, 50)


def test_main_narrow(snap_compare: Compare, pyocl_pocl: Path) -> None:
    assert snap_compare(make_app(pyocl_pocl), terminal_size=NARROW, run_before=_steps(jump=14))


def test_main_wide_buffer_focused(snap_compare: Compare, pyocl_pocl: Path) -> None:
    run = _steps(jump=14, keys=["3", "tab", "down", "down"])
    assert snap_compare(make_app(pyocl_pocl), terminal_size=WIDE, run_before=run)


def test_main_wide_split_moved(snap_compare: Compare, pyocl_pocl: Path) -> None:
    run = _steps(jump=22, keys=["2", "plus", "plus", "plus"])
    assert snap_compare(make_app(pyocl_pocl), terminal_size=WIDE, run_before=run)


def test_main_small_split_moved(snap_compare: Compare, pyocl_pocl: Path) -> None:
    run = _steps(jump=22, keys=["3", "minus", "minus"])
    assert snap_compare(make_app(pyocl_pocl), terminal_size=(80, 24), run_before=run)


def test_image_pixel_cursor(snap_compare: Compare, images_svm: Path) -> None:
    run = _steps(jump=0, keys=["4", "tab", "right", "right", "shift+down"])
    assert snap_compare(make_app(images_svm), terminal_size=(120, 36), run_before=run)


def test_filter_prompt_narrow(snap_compare: Compare, pyocl_pocl: Path) -> None:
    run = _steps(keys=["slash"], text="axpb")
    assert snap_compare(make_app(pyocl_pocl), terminal_size=NARROW, run_before=run)


def test_kinds_narrow(snap_compare: Compare, opencv: Path) -> None:
    run = _steps(keys=["t", "down", "space"])
    assert snap_compare(make_app(opencv), terminal_size=NARROW, run_before=run)


def test_replay_dialog_narrow(
    snap_compare: Compare, images_svm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("cltui.replay.devices.list_devices", lambda: [dict(d) for d in DEVICES])
    run = _keys(0, *["shift+down"] * 8, "r")
    assert snap_compare(make_app(images_svm), terminal_size=NARROW, run_before=run)


def test_export_dialog_narrow(
    snap_compare: Compare, images_svm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir("/tmp")
    run = _keys(3, "e")
    assert snap_compare(make_app(images_svm), terminal_size=NARROW, run_before=run)
