"""Layouts that use the terminal (issue 17): stacked when narrow, side by side from 160 columns,
a split moved with + and -, at least 12 list rows at 80x24."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from textual.widgets import Static

from cltui.capture.cltypes import parse_type
from cltui.tui.app import make_app
from cltui.tui.layout import MAX_SHARE, MIN_SHARE, WIDE_COLUMNS
from cltui.tui.screens.diff import DiffScreen
from cltui.tui.widgets.buffer_view import BufferView
from cltui.tui.widgets.image_view import ImageView
from tests import test_tui_replay as replay
from tests.test_tui_app import aio, jump, settle, wait_loaded

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)


def _list_rows(screen: object) -> int:
    lst = screen.enqueue_list  # type: ignore[attr-defined]
    return int(lst.scrollable_content_region.height) - 1  # less the header


@aio
async def test_80x24_is_stacked_with_twelve_list_rows(pyocl_pocl: Path) -> None:
    async with make_app(pyocl_pocl).run_test(size=(80, 24)) as pilot:
        screen = await wait_loaded(pilot)
        lst, details = screen.enqueue_list, screen.details
        assert not screen.split.wide
        assert lst.region.bottom <= details.region.y  # stacked
        assert _list_rows(screen) >= 12
        assert details.region.height >= 7
        # the split moves with + and -, within bounds, and the list follows
        rows = _list_rows(screen)
        await pilot.press("minus")
        await settle(pilot)
        assert _list_rows(screen) < rows
        for _ in range(20):
            await pilot.press("plus")
        await settle(pilot)
        assert screen.split.share == MAX_SHARE and details.region.height >= 3
        for _ in range(20):
            await pilot.press("minus")
        await settle(pilot)
        assert screen.split.share == MIN_SHARE and _list_rows(screen) >= 3


@aio
async def test_200x50_is_side_by_side_and_fills_the_screen(pyocl_pocl: Path) -> None:
    async with make_app(pyocl_pocl).run_test(size=(200, 50)) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 14)
        await pilot.press("3")
        await settle(pilot)
        lst, details = screen.enqueue_list, screen.details
        assert screen.split.wide
        assert lst.region.right <= details.region.x  # side by side
        assert lst.region.height >= 46 and details.region.height >= 46
        assert lst.region.width + details.region.width >= 198
        # the list shows as many enqueues as it has rows; the buffer view fills the details
        assert _list_rows(screen) >= 45 and len(lst.view) > _list_rows(screen)
        view = screen.query_one(BufferView)
        assert view.region.height >= 40 and view.region.width >= 100
        width = lst.region.width
        await pilot.press("plus")
        await settle(pilot)
        assert lst.region.width > width  # + widens the list when side by side


@aio
async def test_resizing_switches_the_layout_and_keeps_each_split(pyocl_pocl: Path) -> None:
    app = make_app(pyocl_pocl)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await wait_loaded(pilot)
        await pilot.press("plus")
        stacked = screen.split.share
        await pilot.resize_terminal(WIDE_COLUMNS, 40)
        await settle(pilot)
        assert screen.split.wide
        assert screen.enqueue_list.region.right <= screen.details.region.x
        await pilot.resize_terminal(WIDE_COLUMNS - 1, 40)
        await settle(pilot)
        assert not screen.split.wide and screen.split.share == stacked


# ------------------------------------------------------------ pixel under the cursor


@aio
async def test_image_cursor_says_the_pixel_and_its_values(images_svm: Path) -> None:
    """Enqueue 0 downsample: arg 0 src is a 64x48 RGBA/FLOAT image."""
    (path,) = (images_svm / "memDumpPreEnqueue").glob("Enqueue_0000_Kernel_*_Arg_0_*")
    texels = np.fromfile(path, dtype=np.float32).reshape(48, 64, 4)
    async with make_app(images_svm).run_test(size=(120, 40)) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 0)
        await pilot.press("4", "tab")
        await settle(pilot)
        image = screen.query_one(ImageView)
        assert pilot.app.focused is image
        await pilot.press("right", "right", "right", "down", "shift+down")
        await settle(pilot)
        assert image.cursor == (3, 9)
        want = "(" + ", ".join(f"{float(v):.6g}" for v in texels[9, 3]) + ")"
        assert f"x 3 y 9 · pre {want} · post " in image.cursor_text()
        await pilot.press("shift+left")  # clamped at the left edge
        assert image.cursor == (0, 9)
        # the mouse: the pixel under it becomes the cursor
        placed = image._placed[1]  # the post picture
        cell = (placed.x + 6, placed.line + 3)
        await pilot.hover(image, offset=(cell[0] + 1, cell[1]))  # + the focus bar's column
        await settle(pilot)
        assert image.cursor == placed.pixel_at(*cell) and image.cursor != (0, 9)


@aio
async def test_diff_cursor_says_the_element_and_its_pixel(pyocl_pocl: Path) -> None:
    pre = np.arange(32, dtype=np.float32)
    post, replayed = pre + 1, pre + 1
    replayed[13] = -1.0
    app = make_app(pyocl_pocl)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_loaded(pilot)
        diff = DiffScreen("t", "d", pre, post, replayed, parse_type("float4"), None,
                          image=(4, 2, 1, 16))  # 4x2 texels of float4
        app.push_screen(diff)
        await settle(pilot)
        line = str(diff.query_one("#diff-cursor", Static).render())
        assert line.startswith("element 3 · pixel x 3 y 0 · captured pre")  # 1st mismatch
        assert "-1" in line.split("replayed post ")[1] and "-1" not in line.split("replayed")[0]
        await pilot.press("down", "down")
        await settle(pilot)
        line = str(diff.query_one("#diff-cursor", Static).render())
        assert line.startswith("element 5 · pixel x 1 y 1 · ")


@aio
async def test_replayed_image_diff_says_pixels_and_end_stays_left(images_svm: Path) -> None:
    """A real replay on PoCL of enqueue 0 (downsample): End in the results table goes to the
    last row without scrolling sideways; the diff of the 32x24 float4 output image says the
    pixel of the element under the cursor."""
    async with make_app(images_svm).run_test(size=(100, 30)) as pilot:
        main = await replay.loaded(pilot)
        await replay.select(pilot, main, 0, 0)
        dialog = await replay.open_dialog(pilot)
        replay.device_id(dialog, "pthread")
        await pilot.press("ctrl+r")
        results = await replay.results_screen(pilot)
        table = results.table
        table.focus()
        assert table.max_scroll_x > 0  # wider than the terminal: End could scroll sideways
        await pilot.press("end")
        await settle(pilot)
        assert table.cursor_row == table.row_count - 1 > 0 and table.scroll_x == 0
        await pilot.press("home")
        assert table.cursor_row == 0
        rows = replay.table_rows(results)
        index = next(i for i, r in enumerate(rows) if r[2].startswith("arg 1"))
        table.move_cursor(row=index)
        await pilot.press("enter")
        await replay.wait_for(pilot, lambda: isinstance(pilot.app.screen, DiffScreen))
        diff = pilot.app.screen
        assert isinstance(diff, DiffScreen)
        await settle(pilot)
        diff.view.move_cursor(100)
        await settle(pilot)
        line = str(diff.query_one("#diff-cursor", Static).render())
        assert line.startswith("element 100 · pixel x 4 y 3 · captured pre ")
