"""Pilot tests of ``e``: the export dialog, its checks, progress and the written bundle."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Checkbox, Input, Label

from cltui.tui.app import make_app
from cltui.tui.screens.export_dialog import ExportDialog
from cltui.tui.screens.main import MainScreen
from tests.said import Said
from tests.test_tui_replay import SIZE, aio, loaded, select, wait_for

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)


def record_notes(app: Any) -> list[str]:
    notes: list[str] = []
    original = app.notify

    def notify(message: str, *args: Any, **kwargs: Any) -> None:
        notes.append(message)
        original(message, *args, **kwargs)

    app.notify = notify
    return notes


@aio
async def test_export_range_writes_bundle(images_svm: Path, tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    async with make_app(images_svm).run_test(size=SIZE) as pilot:
        notes = record_notes(pilot.app)
        main = await loaded(pilot)
        await select(pilot, main, 0, 8)
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ExportDialog))
        dialog = pilot.app.screen
        assert isinstance(dialog, ExportDialog)
        # the default folder is named after the capture and the range
        assert dialog.query_one("#export-folder", Input).value.endswith("images_svm_pocl-0-8")
        dialog.query_one("#export-folder", Input).value = str(out)
        dialog.query_one("#export-cpp", Checkbox).value = False
        await pilot.pause()
        await pilot.press("enter")  # in the folder field
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, MainScreen), 60)
        await wait_for(pilot, lambda: any(n.startswith("Exported") for n in notes), 10)
    manifest = json.loads((out / "manifest.json").read_text())
    assert [s["enqueue"] for s in manifest["steps"]] == [0, 1, 2, 3, 6, 7, 8]
    assert (out / "replay.py").is_file()
    assert not (out / "replay.cpp").exists()  # C++ was unticked
    assert manifest["bundle"]["languages"] == ["python"]
    assert manifest["bundle"]["range"] == "0-8" and manifest["bundle"]["mode"] == "chain"
    # every listed checksum matches the file
    for line in (out / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        path = out / name.lstrip("*")
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    (note,) = [n for n in notes if n.startswith("Exported")]
    assert f"Exported 7 kernel enqueues (chain, python) to {out}" in note


@aio
async def test_export_refuses_existing_folder_until_overwrite(
    images_svm: Path, tmp_path: Path
) -> None:
    out = tmp_path / "taken"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    said = Said()
    async with make_app(images_svm).run_test(size=SIZE, message_hook=said) as pilot:
        main = await loaded(pilot)
        await select(pilot, main, 3, 3)
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ExportDialog))
        dialog = pilot.app.screen
        assert isinstance(dialog, ExportDialog)
        dialog.query_one("#export-folder", Input).value = str(out)
        dialog.action_accept()
        await pilot.pause()
        assert isinstance(pilot.app.screen, ExportDialog)
        assert "exists: tick overwrite" in str(dialog.query_one("#export-error", Label).render())
        dialog.query_one("#export-python", Checkbox).value = False
        dialog.query_one("#export-cpp", Checkbox).value = False
        dialog.query_one("#export-force", Checkbox).value = True
        dialog.action_accept()
        await pilot.pause()
        assert "at least one language" in str(dialog.query_one("#export-error", Label).render())
        dialog.query_one("#export-python", Checkbox).value = True
        dialog.action_accept()
        await pilot.pause()  # overwrite replaces only a cltui bundle or an empty folder
        assert "is not a cltui bundle: not replacing it" in str(
            dialog.query_one("#export-error", Label).render()
        )
        assert (out / "keep.txt").read_text() == "x"
        (out / "keep.txt").unlink()  # now empty: replaced
        dialog.action_accept()
        # the dialog closes before the progress screen opens: wait for the export's notice
        await wait_for(
            pilot,
            lambda: isinstance(pilot.app.screen, MainScreen)
            and any("Exported" in t for t in said.texts),
            60,
        )
    manifest = json.loads((out / "manifest.json").read_text())
    assert [s["enqueue"] for s in manifest["steps"]] == [3]
    assert (out / "manifest.json").is_file()  # the empty folder replaced as asked


@aio
async def test_export_of_a_range_without_kernels_says_why(
    pyocl_pocl: Path, tmp_path: Path
) -> None:
    """``e`` on a range with no kernel says why at once (no dialog to fill in first)."""
    said = Said()
    async with make_app(pyocl_pocl).run_test(size=SIZE, message_hook=said) as pilot:
        main = await loaded(pilot)
        await select(pilot, main, 2, 2)  # a buffer write, no kernel
        await pilot.press("e")
        await pilot.pause()
        assert pilot.app.screen is main
        assert "Export: no kernel enqueue in range 2" in said.texts
    assert list(tmp_path.iterdir()) == []
