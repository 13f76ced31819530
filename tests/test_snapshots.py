"""Snapshot tests (pytest-textual-snapshot): every screen and main state at a fixed size.

Update after an intended change with ``pytest tests/test_snapshots.py --snapshot-update`` and
look at the SVGs in ``tests/__snapshots__/`` before committing them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from cltui.capture.capture import Capture
from cltui.capture.model import CaptureError
from cltui.progress import CancelToken, ProgressEvent, ProgressFn
from cltui.tui.app import CltuiApp, make_app
from tests.test_tui_app import settle

SMALL = (80, 24)
LARGE = (120, 36)

Compare = Callable[..., bool]


async def _loaded(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, CltuiApp)
    for _ in range(500):
        screen = app.main
        if screen.is_mounted and (screen.capture is not None or screen.error is not None):
            break
        await pilot.pause(0.01)
    await _settle(pilot)


async def _settle(pilot: Pilot[Any]) -> None:
    await settle(pilot)


def _steps(
    jump: int | None = None, keys: Sequence[str] = (), text: str | None = None,
    after: Sequence[str] = (),
) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """Wait for the index, jump to an enqueue, press keys, type into the open input."""

    async def run(pilot: Pilot[Any]) -> None:
        await _loaded(pilot)
        app = pilot.app
        assert isinstance(app, CltuiApp)
        if jump is not None:
            app.main.jump_to(jump)
            await _settle(pilot)
        for key in keys:
            await pilot.press(key)
            await _settle(pilot)
        if text is not None:
            for ch in text:
                await pilot.press(ch if ch != " " else "space")
            await _settle(pilot)
        for key in after:
            await pilot.press(key)
            await _settle(pilot)
        for widget in app.screen.query(Input):  # a blinking cursor would make frames differ
            widget.cursor_blink = False
        await _settle(pilot)

    return run


@pytest.mark.child
def test_main_small(snap_compare: Compare, pyocl_pocl: Path) -> None:
    assert snap_compare(make_app(pyocl_pocl), terminal_size=SMALL, run_before=_steps(jump=14))


@pytest.mark.child
def test_ansi_16_colours(snap_compare: Compare, pyocl_pocl: Path) -> None:
    run = _steps(jump=22, keys=["shift+down", "3"])
    app = make_app(pyocl_pocl, ansi=True)
    assert snap_compare(app, terminal_size=SMALL, run_before=run)


def test_loading(snap_compare: Compare, pyocl_pocl: Path) -> None:
    def slow_open(path: Path, progress: ProgressFn, cancel: CancelToken) -> Capture:
        progress(ProgressEvent(0.4))
        cancel.wait(20)
        raise CaptureError("cancelled")

    async def before(pilot: Pilot[Any]) -> None:
        from cltui.tui.widgets.keys_footer import KeysFooter

        await pilot.pause(0.1)
        for _ in range(500):  # the footer fits its keys after their layout (a hang bound)
            if not any(f.fit_pending for f in pilot.app.screen.query(KeysFooter)):
                break
            await pilot.pause(0.01)

    app = make_app(pyocl_pocl, opener=slow_open)
    assert snap_compare(app, terminal_size=SMALL, run_before=before)


def test_cannot_open(snap_compare: Compare) -> None:
    """A capture that cannot be read (a path that is no capture at all exits 2 instead)."""

    def failing_open(path: Path, progress: ProgressFn, cancel: CancelToken) -> Capture:
        raise CaptureError(f"{path} contains no clintercept_log.txt and no dump folders")

    app = make_app("/nonexistent/capture", opener=failing_open)
    assert snap_compare(app, terminal_size=SMALL, run_before=_steps())


@pytest.mark.child
def test_source_tab(snap_compare: Compare, pyocl_pocl: Path) -> None:
    run = _steps(jump=14, keys=["1", "full_stop", "full_stop"])
    assert snap_compare(make_app(pyocl_pocl), terminal_size=LARGE, run_before=run)


@pytest.mark.child
def test_build_log(snap_compare: Compare, opencv: Path) -> None:
    run = _steps(jump=31, keys=["1", "tab", "o"])
    assert snap_compare(make_app(opencv), terminal_size=LARGE, run_before=run)


@pytest.mark.child
def test_args_struct(snap_compare: Compare, pyocl_oclgrind: Path) -> None:
    run = _steps(jump=14, keys=["2"])
    assert snap_compare(make_app(pyocl_oclgrind), terminal_size=LARGE, run_before=run)


@pytest.mark.child
def test_buffer_typed(snap_compare: Compare, pyocl_pocl: Path) -> None:
    run = _steps(jump=22, keys=["3", "tab", "right_square_bracket"])
    assert snap_compare(make_app(pyocl_pocl), terminal_size=LARGE, run_before=run)


@pytest.mark.child
def test_buffer_format_and_hex(snap_compare: Compare, images_svm: Path) -> None:
    run = _steps(jump=2, keys=["f", "ctrl+a", "ctrl+k"], text="float4", after=["enter", "x"])
    assert snap_compare(make_app(images_svm), terminal_size=SMALL, run_before=run)


@pytest.mark.child
def test_image_tab(snap_compare: Compare, images_svm: Path) -> None:
    run = _steps(jump=0, keys=["4"])
    assert snap_compare(make_app(images_svm), terminal_size=LARGE, run_before=run)


@pytest.mark.child
def test_timing_tab(snap_compare: Compare, pyocl_pocl: Path) -> None:
    run = _steps(jump=23, keys=["5"])
    assert snap_compare(make_app(pyocl_pocl), terminal_size=LARGE, run_before=run)


@pytest.mark.child
def test_range_visual(snap_compare: Compare, pyocl_pocl: Path) -> None:
    run = _steps(jump=9, keys=["shift+down", "shift+down", "m", "v", "down", "down"])
    assert snap_compare(make_app(pyocl_pocl), terminal_size=SMALL, run_before=run)


@pytest.mark.child
def test_filter_prompt(snap_compare: Compare, pyocl_pocl: Path) -> None:
    run = _steps(keys=["slash"], text="re:^scan")
    assert snap_compare(make_app(pyocl_pocl), terminal_size=SMALL, run_before=run)


@pytest.mark.child
def test_filtered_list(snap_compare: Compare, pyocl_pocl: Path) -> None:
    run = _steps(keys=["5", "slash"], text="scan_lev", after=["enter"])
    assert snap_compare(make_app(pyocl_pocl), terminal_size=SMALL, run_before=run)


@pytest.mark.child
def test_kinds(snap_compare: Compare, opencv: Path) -> None:
    run = _steps(keys=["t"])
    assert snap_compare(make_app(opencv), terminal_size=SMALL, run_before=run)


@pytest.mark.child
def test_help(snap_compare: Compare, images_svm: Path) -> None:
    run = _steps(keys=["question_mark"])
    assert snap_compare(make_app(images_svm), terminal_size=LARGE, run_before=run)


@pytest.fixture(scope="module")
def broken_capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.conftest import capture_path, copy_capture

    broken = copy_capture(capture_path("images_svm_pocl"), tmp_path_factory.mktemp("broken"))
    log = broken / "clintercept_log.txt"
    data = log.read_bytes()
    log.write_bytes(data[: len(data) * 2 // 3])
    return broken


@pytest.mark.child
def test_broken_capture_notices(snap_compare: Compare, broken_capture: Path) -> None:
    assert snap_compare(make_app(broken_capture), terminal_size=SMALL, run_before=_steps())


@pytest.mark.child
def test_problems_screen(snap_compare: Compare, broken_capture: Path) -> None:
    run = _steps(keys=["p"])
    assert snap_compare(make_app(broken_capture), terminal_size=LARGE, run_before=run)

