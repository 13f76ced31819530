"""Pilot tests of the small traps of the dialogs (issue 31, items 7 and 8): the experiment
dialog's empty fields can be seen, a long refusal wraps, ``X`` on a range without kernels is
refused at once, and the replay dialog's highlight and "ticked:" line follow the ticks."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, Label, SelectionList

from cltui.tui.app import make_app
from cltui.tui.screens.experiment_dialog import ExperimentDialog
from cltui.tui.screens.replay_dialog import ReplayDialog
from tests.said import Said
from tests.test_tui_app import settle
from tests.test_tui_replay import SIZE, aio, loaded, open_dialog, select, wait_for

pytestmark = pytest.mark.child  # make_app starts the reader child (tests/tiers.py)

DEVICES = [
    {"id": "0:0", "name": "Oclgrind Simulator", "platform": "Oclgrind"},
    {"id": "1:0", "name": "pthread-x", "platform": "Portable Computing Language"},
]


async def _experiment(pilot: object, enqueue: int) -> ExperimentDialog:
    from textual.pilot import Pilot

    assert isinstance(pilot, Pilot)
    main = await loaded(pilot)
    assert main.jump_to(enqueue)
    await pilot.pause()
    await pilot.press("X")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, ExperimentDialog))
    dialog = pilot.app.screen
    assert isinstance(dialog, ExperimentDialog)
    await pilot.pause()
    return dialog


@aio
async def test_the_experiment_dialog_s_empty_fields_stand_out_from_the_box(
    pyocl_pocl: Path,
) -> None:
    """A compact Input draws no border: an empty one on the box's own background cannot be
    seen, nor where tab goes next.  Every field (focused or not) has a background of its own."""
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        dialog = await _experiment(pilot, 22)
        box = dialog.query_one("#exp-box")
        fields = list(dialog.query(Input))
        assert len(fields) == 8
        empty = [f for f in fields if not f.value and not f.has_focus]
        assert empty, "the dialog has empty fields that have not the focus"
        for field in empty:
            assert field.background_colors[1] != box.background_colors[1], field.id


@aio
async def test_a_long_refusal_in_a_dialog_wraps_instead_of_being_cut(pyocl_pocl: Path) -> None:
    """At 50 columns the experiment dialog's refusal ("several values are listed: press Sweep
    to try each one") is wider than the box: it wraps on a second line, all of it inside."""
    async with make_app(pyocl_pocl).run_test(size=(50, 24)) as pilot:
        dialog = await _experiment(pilot, 22)
        dialog.query_one("#exp-local", Input).value = "16,32"
        dialog.query_one("#exp-local", Input).focus()
        await pilot.press("enter")
        await pilot.pause()
        error = dialog.query_one("#exp-error", Label)
        text = str(error.render())
        assert "press Sweep" in text
        assert error.size.height >= 2
        box = dialog.query_one("#exp-box")
        assert error.size.width <= box.content_region.width


@aio
async def test_x_on_a_range_without_kernels_is_refused_before_the_dialog(
    pyocl_pocl: Path,
) -> None:
    """``X`` on a transfer says at once there is no kernel (as ``r`` and ``e`` do) instead of
    opening "Experiment on 13"."""
    said = Said()
    async with make_app(pyocl_pocl).run_test(size=SIZE, message_hook=said) as pilot:
        main = await loaded(pilot)
        await select(pilot, main, 13, 13)
        await pilot.press("X")
        await pilot.pause()
        assert pilot.app.screen is main
        assert any(m.startswith("Experiment: no kernel enqueue in range 13") for m in said.texts)


@aio
async def test_replay_dialog_highlights_the_ticked_device_and_its_ticked_line_follows(
    images_svm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PoCL (listed second) is ticked: the highlight starts on it, so ``space`` unticks what
    the user sees ticked, not Oclgrind; the "ticked:" line says what is ticked after each
    change, and the rule's reason again when the rule's choice is back."""
    monkeypatch.setattr("cltui.replay.devices.list_devices", lambda: [dict(d) for d in DEVICES])
    async with make_app(images_svm).run_test(size=SIZE) as pilot:
        main = await loaded(pilot)
        await select(pilot, main, 0, 8)
        dialog = await open_dialog(pilot)
        await pilot.pause()
        lst = dialog.query_one("#replay-devices", SelectionList)
        why = dialog.query_one("#replay-device-why", Label)

        def line() -> str:
            return " ".join(str(why.render()).split())

        assert lst.selected == ["1:0"] and lst.highlighted == 1
        rule = f"ticked: {dialog.device_choice['why']}"
        assert line() == rule
        await pilot.press("up", "space")
        await pilot.pause()
        assert sorted(lst.selected) == ["0:0", "1:0"]
        assert line() == "ticked: 0:0 Oclgrind Simulator, 1:0 pthread-x (by you)"
        await pilot.press("down", "space")
        await pilot.pause()
        assert line() == "ticked: 0:0 Oclgrind Simulator (by you)"
        await pilot.press("up", "space")
        await pilot.pause()
        assert line() == "ticked: nothing"
        await pilot.press("down", "space")
        await pilot.pause()
        assert line() == rule
        assert isinstance(pilot.app.screen, ReplayDialog)


@aio
async def test_the_save_menus_of_the_buffer_and_the_image_follow_one_rule_for_the_sides(
    images_svm: Path, pyocl_pocl: Path
) -> None:
    """Both save menus: the lowercase key first (what ``enter`` saves) is Post, the uppercase
    key Pre; the image menu listed ``P pre`` first, so ``s enter`` saved Pre there and Post
    on the Buffer tab."""
    from textual.widgets import OptionList

    from cltui.tui.screens.copy_save import ChoiceScreen
    from cltui.tui.screens.prompt import PromptScreen

    async def menu(pilot: object, tab: str) -> list[str]:
        from textual.pilot import Pilot

        assert isinstance(pilot, Pilot)
        await pilot.press(tab, "s")
        await pilot.pause()
        choice = pilot.app.screen
        assert isinstance(choice, ChoiceScreen)
        options = choice.query_one(OptionList)
        shown = [str(options.get_option_at_index(i).prompt).split(":")[0]
                 for i in range(options.option_count)]  # fmt: skip
        await pilot.press("enter")
        await pilot.pause()
        prompt = pilot.app.screen
        assert isinstance(prompt, PromptScreen)
        shown.append(prompt.query_one(Input).value)
        await pilot.press("escape")
        await pilot.pause()
        return shown

    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        main = await loaded(pilot)
        assert main.jump_to(22)
        await pilot.pause()
        assert await menu(pilot, "3") == [
            "n  post as .npy (float)", "N  pre as .npy (float)", "c  pre and post as .csv (float)",
            "enqueue22_arg0_post.npy"]
    async with make_app(images_svm).run_test(size=SIZE) as pilot:
        main = await loaded(pilot)
        assert main.jump_to(0)
        await pilot.pause()
        assert await menu(pilot, "4") == [
            "p  post as .png", "P  pre as .png", "enqueue0_arg0_post.png"]


@aio
async def test_at_60_columns_the_summary_and_status_lines_end_in_an_ellipsis(
    pyocl_pocl: Path,
) -> None:
    """The enqueue's summary over the details and the status line are one line each: at 60x20
    a longer one ended cut mid-word ("... (clEnqueueNDRangeKernel) ·"), or wrapped at a word
    with the rest out of sight; now its last cell is an ellipsis."""
    from textual.widgets import Static

    from cltui.tui.widgets.status_line import StatusLine

    async with make_app(pyocl_pocl).run_test(size=(60, 20)) as pilot:
        main = await loaded(pilot)
        assert main.jump_to(14)
        await settle(pilot)
        summary = main.query_one("#enqueue-summary", Static)
        status = main.query_one(StatusLine)
        status.set_parts(range_text="r: enqueues 21-23 · 3 enq · 2 kernel (axpb, clip_by_rank, "
                                    "get_size_and_offset)")  # fmt: skip
        await pilot.pause()
        for widget in (summary, status):
            shown = widget.render_line(0).text.rstrip()
            assert shown.endswith("…"), shown
