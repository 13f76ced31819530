"""Memory per capture (issue 17): bookmarks, filters, the last position and the replay
dialog's settings come back when the capture is opened again; kept in $XDG_STATE_HOME/cltui,
never in the capture; a broken state file is ignored with a notice."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cltui.capture.model import EnqueueKind
from cltui.tui.capture_state import capture_key, load_state, state_dir
from cltui.tui.screens.replay_dialog import ReplayDialog
from tests.conftest import copy_capture
from tests.said import Said
from tests.test_tui_app import SIZE, aio, jump, make_app, settle, wait_loaded

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)


def _files(home: Path) -> list[Path]:
    return sorted((home / "cltui").glob("*.json"))


@aio
async def test_position_bookmarks_and_filter_come_back(
    pyocl_pocl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    before = sorted(p.relative_to(pyocl_pocl) for p in pyocl_pocl.rglob("*"))
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 14)
        await pilot.press("m")
        await jump(pilot, 22)
        await pilot.press("m")
        assert screen.set_filter("", {EnqueueKind.KERNEL})
        await jump(pilot, 23)
        await pilot.press("3")
        await settle(pilot)
    (state,) = _files(home)
    assert state.name == capture_key(pyocl_pocl, pyocl_pocl / "clintercept_log.txt") + ".json"
    saved = json.loads(state.read_text())
    assert saved["bookmarks"] == [14, 22] and saved["cursor"] == 23 and saved["tab"] == "buffer"
    assert saved["kinds"] == ["kernel"]
    assert sorted(p.relative_to(pyocl_pocl) for p in pyocl_pocl.rglob("*")) == before
    said = Said()
    async with make_app(pyocl_pocl).run_test(size=SIZE, message_hook=said) as pilot:
        screen = await wait_loaded(pilot)
        st = screen.state()
        assert st["cursor"] == 23 and st["bookmarks"] == [14, 22]
        assert screen.kind_filter == {EnqueueKind.KERNEL}
        assert screen.details.active == "buffer"
        assert any("Back where you were" in t for t in said.texts)
        await pilot.press("apostrophe")  # the next bookmark after 23 wraps to 14
        await settle(pilot)
        assert screen.state()["cursor"] == 14


@aio
async def test_a_corrupt_state_file_is_ignored_with_a_notice(
    pyocl_pocl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    folder = state_dir()
    folder.mkdir(parents=True)
    key = capture_key(pyocl_pocl, pyocl_pocl / "clintercept_log.txt")
    (folder / f"{key}.json").write_text('{"version": 1, "cursor": "x", "bookmarks": [3')
    said = Said()
    async with make_app(pyocl_pocl).run_test(size=SIZE, message_hook=said) as pilot:
        screen = await wait_loaded(pilot)
        assert screen.state()["cursor"] == 0
        texts = list(said.texts)
        assert any("ignored the remembered state" in t for t in texts)
    # wrong types are dropped field by field; the rest is kept
    (folder / f"{key}.json").write_text(json.dumps({"version": 1, "cursor": "x",
                                                    "bookmarks": [5], "tab": 3}))
    state, notice = load_state(folder / f"{key}.json")
    assert state.get("bookmarks") == [5] and "cursor" not in state and "tab" not in state
    assert notice is not None and "cursor" in notice and "tab" in notice
    # an unreadable file: a notice, no traceback
    (folder / f"{key}.json").chmod(0)
    if os.geteuid() != 0:
        state, notice = load_state(folder / f"{key}.json")
        assert state == {} and notice is not None and "PermissionError" in notice


@aio
async def test_a_capture_written_again_starts_afresh(
    pyocl_pocl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    cap = copy_capture(pyocl_pocl, tmp_path / "cap")
    async with make_app(cap).run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        await jump(pilot, 22)
    log = cap / "clintercept_log.txt"
    log.write_bytes(log.read_bytes() + b"\n")  # another run wrote the capture again
    async with make_app(cap).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        assert screen.state()["cursor"] == 0
    assert len(_files(tmp_path / "state")) == 2


@pytest.mark.device
@aio
async def test_the_replay_dialog_remembers_devices_and_settings(
    images_svm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_tui_replay import device_id, loaded, open_dialog, results_screen, select

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    async with make_app(images_svm).run_test(size=SIZE) as pilot:
        main = await loaded(pilot)
        await select(pilot, main, 0, 0)
        dialog = await open_dialog(pilot)
        oclgrind = device_id(dialog, "oclgrind")
        dialog.select_devices([oclgrind])
        dialog.query_one("#replay-ulp").value = "3"  # type: ignore[attr-defined]
        dialog.query_one("#mode-isolated").value = True  # type: ignore[attr-defined]
        await settle(pilot)
        assert dialog.mode == "isolated"
        dialog.action_accept()
        await results_screen(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert main.last_devices == ["Oclgrind Simulator"]
    async with make_app(images_svm).run_test(size=SIZE) as pilot:
        main = await loaded(pilot)
        await select(pilot, main, 0, 0)
        dialog = await open_dialog(pilot)
        assert isinstance(dialog, ReplayDialog)
        request = dialog.request()
        assert request is not None
        assert [d["id"] for d in request.devices] == [oclgrind]
        assert request.mode == "isolated" and request.tolerance.ulp == 3
        assert "last replay of this capture" in dialog.device_choice["why"]
