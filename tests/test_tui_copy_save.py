"""Pilot tests of y (copy) and s (save) in the browser and on the results screen (issue 17):
the clipboard text, and the files written read back (numpy.load, csv, a PNG decoder)."""

from __future__ import annotations

import csv
import json
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from cltui.tui.screens.copy_save import ChoiceScreen
from cltui.tui.screens.prompt import PromptScreen
from cltui.tui.widgets.buffer_view import BufferView
from cltui.tui.widgets.image_view import ImageView
from tests.conftest import copy_capture
from tests.said import Said
from tests.test_tui_app import SIZE, _dump, aio, jump, make_app, settle, wait_loaded

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)


def read_png(path: Path) -> npt.NDArray[np.uint8]:
    """An 8-bit RGB PNG without interlace whose rows use filter 0 (what write_png makes)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, idat, size = 8, b"", (0, 0)
    while at < len(data):
        (n,) = struct.unpack(">I", data[at : at + 4])
        tag, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + n]
        (crc,) = struct.unpack(">I", data[at + 8 + n : at + 12 + n])
        assert crc == zlib.crc32(tag + body) & 0xFFFFFFFF
        if tag == b"IHDR":
            w, h, depth, colour = struct.unpack(">IIBB", body[:10])
            assert (depth, colour) == (8, 2)
            size = (h, w)
        elif tag == b"IDAT":
            idat += body
        at += 12 + n
    h, w = size
    rows = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(h, 1 + 3 * w)
    assert not rows[:, 0].any()
    return rows[:, 1:].reshape(h, w, 3)


async def answer(pilot: Pilot[Any], key: str, path: str | None = None) -> None:
    """Pick ``key`` in the open menu, then (``path``) give the save dialog that path."""
    assert isinstance(pilot.app.screen, ChoiceScreen)
    await pilot.press(key)
    await settle(pilot)
    if path is not None:
        prompt = pilot.app.screen
        assert isinstance(prompt, PromptScreen)
        prompt.query_one(Input).value = path
        await pilot.press("enter")
        await settle(pilot)


@aio
async def test_y_copies_values_the_range_and_commands(pyocl_pocl: Path) -> None:
    said = Said()
    async with make_app(pyocl_pocl).run_test(size=SIZE, message_hook=said) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 22)
        await pilot.press("3", "y")
        await settle(pilot)
        await answer(pilot, "v")
        view = screen.query_one(BufferView)
        assert pilot.app.clipboard == view.value_text("post", 0)
        await pilot.press("y")
        await settle(pilot)
        await answer(pilot, "l")
        assert pilot.app.clipboard.split("\t") == [
            "0", view.value_text("pre", 0), view.value_text("post", 0)
        ]
        await pilot.press("y")
        await settle(pilot)
        await answer(pilot, "s")
        assert pilot.app.clipboard == f"cltui show {pyocl_pocl} 22"
        await pilot.press("shift+down", "y")
        await settle(pilot)
        await answer(pilot, "r")
        assert pilot.app.clipboard == "22-23"
        await pilot.press("y")
        await settle(pilot)
        await answer(pilot, "p")
        assert pilot.app.clipboard == f"cltui replay {pyocl_pocl} 22-23"
        assert any(t.startswith("Copied replay command") for t in said.texts)
        await pilot.press("2", "full_stop", "y")  # the Args tab, argument 1 (z__offset = 0)
        await settle(pilot)
        await answer(pilot, "a")
        assert pilot.app.clipboard == "0"
        # the palette offers each copy too
        commands = [c.title for c in pilot.app.get_system_commands(screen)]
        assert "Copy replay command" in commands and "Copy" in commands


@aio
async def test_s_saves_the_buffer_as_npy_and_csv(
    pyocl_pocl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    post = np.fromfile(_dump(pyocl_pocl, "Post", 22, 0), dtype=np.float32)
    pre = np.fromfile(_dump(pyocl_pocl, "Pre", 22, 0), dtype=np.float32)
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 22)
        await pilot.press("3", "s")
        await settle(pilot)
        assert isinstance(pilot.app.screen, ChoiceScreen)
        await pilot.press("n")
        await settle(pilot)
        prompt = pilot.app.screen
        assert isinstance(prompt, PromptScreen)
        assert prompt.query_one(Input).value == "enqueue22_arg0_post.npy"  # in the cwd
        await pilot.press("enter")
        await settle(pilot)
        saved = np.load(tmp_path / "enqueue22_arg0_post.npy")
        assert saved.dtype == np.float32 and np.array_equal(saved, post)
        # the element format in use types the file
        screen.query_one("BufferPane").apply_format("uint2")
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        await answer(pilot, "N", str(tmp_path / "pairs.npy"))
        pairs = np.load(tmp_path / "pairs.npy")
        assert pairs.shape == (4096, 2) and np.array_equal(pairs.reshape(-1), pre.view(np.uint32))
        screen.query_one("BufferPane").apply_format("float")
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        await answer(pilot, "c", "both.csv")
        view = screen.query_one(BufferView)
        with (tmp_path / "both.csv").open() as f:
            rows = list(csv.reader(f))
        assert rows[0] == ["index", "pre (float)", "post (float)"]
        assert len(rows) == 1 + len(post)
        assert rows[100] == ["99", view.value_text("pre", 99), view.value_text("post", 99)]
        assert np.float32(rows[8192][2]) == post[8191]


@aio
async def test_save_refuses_the_capture_and_asks_before_overwriting(
    pyocl_pocl: Path, tmp_path: Path
) -> None:
    cap = copy_capture(pyocl_pocl, tmp_path / "cap")
    target = tmp_path / "out.npy"
    target.write_bytes(b"keep")
    said = Said()
    async with make_app(cap).run_test(size=SIZE, message_hook=said) as pilot:
        await wait_loaded(pilot)
        await jump(pilot, 22)
        await pilot.press("3", "s")
        await settle(pilot)
        await answer(pilot, "n", str(cap / "memDumpPostEnqueue" / "x.npy"))
        assert not (cap / "memDumpPostEnqueue" / "x.npy").exists()
        assert any("inside the capture folder" in t for t in said.texts)
        await pilot.press("s")
        await settle(pilot)
        await answer(pilot, "n", str(target))
        assert isinstance(pilot.app.screen, ChoiceScreen)  # "out.npy exists: overwrite it?"
        await pilot.press("n")
        await settle(pilot)
        assert target.read_bytes() == b"keep"
        await pilot.press("s")
        await settle(pilot)
        await answer(pilot, "n", str(target))
        await pilot.press("y")
        await settle(pilot)
        assert np.load(target).dtype == np.float32


@aio
async def test_s_saves_an_image_as_png(images_svm: Path, tmp_path: Path) -> None:
    async with make_app(images_svm).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 0)
        await pilot.press("4", "s")
        await settle(pilot)
        await answer(pilot, "p", str(tmp_path / "post.png"))
        images = dict(screen.query_one(ImageView).images)
        png = read_png(tmp_path / "post.png")
        assert png.shape == images["post"].shape and np.array_equal(png, images["post"])


@pytest.mark.device
@aio
async def test_results_table_saved_as_csv_and_json(images_svm: Path, tmp_path: Path) -> None:
    from tests.test_tui_replay import device_id, loaded, open_dialog, results_screen, select

    async with make_app(images_svm).run_test(size=SIZE) as pilot:
        main = await loaded(pilot)
        await select(pilot, main, 0, 3)
        dialog = await open_dialog(pilot)
        dialog.select_devices([device_id(dialog, "pthread")])
        dialog.action_accept()
        results = await results_screen(pilot)
        await pilot.press("s")
        await settle(pilot)
        prompt = pilot.app.screen
        assert isinstance(prompt, PromptScreen)
        assert prompt.query_one(Input).value == "replay_0-3.csv"
        prompt.query_one(Input).value = str(tmp_path / "r.csv")
        await pilot.press("enter")
        await settle(pilot)
        with (tmp_path / "r.csv").open() as f:
            rows = list(csv.reader(f))
        assert rows[0][:5] == ["enqueue", "kernel", "argument", "device", "status"]
        assert len(rows) == 1 + len(results.rows)
        assert {r[4] for r in rows[1:]} == {"equal"}
        await pilot.press("s")
        await settle(pilot)
        pilot.app.screen.query_one(Input).value = str(tmp_path / "r.json")
        await pilot.press("enter")
        await settle(pilot)
        report = json.loads((tmp_path / "r.json").read_text())
        assert report["range"] == "0-3" and report["report"]["ok"] is True
