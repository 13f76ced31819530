"""The traps of issue 31 (items 1-5) and the selection model, in Pilot: keys in, what the
app does out.  ``q`` quits from every screen (``esc`` closes one); a plain move or jump drops
a range, in visual mode every motion extends it, and the status line says what ``r`` acts on;
a cursor restored at load is on screen; ``y``'s show command names the enqueue shown.  The
quit during a real replay is in tests/test_tui_exit.py (a pty: the children must be gone)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from cltui.tui.screens.diff import DiffScreen
from cltui.tui.screens.help import HelpScreen
from cltui.tui.screens.main import MainScreen
from cltui.tui.screens.prompt import PromptScreen
from cltui.tui.screens.replay_progress import ProgressScreen, TaskControl
from cltui.tui.widgets.enqueue_list import EnqueueList
from tests.test_tui_app import SIZE, aio, jump, make_app, settle, type_text, wait_loaded
from tests.test_tui_replay import device_id, open_dialog, results_screen, wait_for

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)

Calls = list[tuple[str, int, int]]


def recording_app(path: Path, calls: Calls, **kwargs: Any) -> Any:
    """The app with ``r`` and ``e`` recording the range they were given."""
    return make_app(
        path,
        replay=lambda cap, rng: calls.append(("replay", rng.first, rng.last)),
        export=lambda cap, rng: calls.append(("export", rng.first, rng.last)),
        **kwargs,
    )


def status(screen: MainScreen) -> str:
    return screen.state()["status"].strip()


# ------------------------------------------------------------------------ 1: q quits


@aio
async def test_q_quits_while_a_task_runs_and_cancels_it(pyocl_pocl: Path) -> None:
    """The progress screen used to swallow ``q`` (modal) and the task ran to its end."""
    started = threading.Event()
    cancelled = threading.Event()

    def slow(control: TaskControl) -> int:
        control.cancel.on_cancel(cancelled.set)  # a replay kills its children here
        started.set()
        control.cancel.wait(60)
        return 1

    app = make_app(pyocl_pocl)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        app.push_screen(ProgressScreen("Replaying 14-38", slow))
        await wait_for(pilot, started.is_set, 10)
        assert isinstance(app.screen, ProgressScreen)
        await pilot.press("q")
        await wait_for(pilot, lambda: app.return_code is not None, 10)
    assert app.return_code == 0
    assert cancelled.is_set()


@aio
async def test_q_quits_from_help_and_types_q_in_a_text_field(pyocl_pocl: Path) -> None:
    app = make_app(pyocl_pocl)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await pilot.press("slash")  # a text field: q is a letter of a kernel name
        assert isinstance(app.screen, PromptScreen)
        await type_text(pilot, "sq")
        assert app.screen.query_one(Input).value == "sq"
        await pilot.press("escape")
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")  # esc closes a screen
        await settle(pilot)
        assert app.screen is screen and app.return_code is None
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("q")  # q quits (it used to close the help)
        await wait_for(pilot, lambda: app.return_code is not None, 10)
    assert app.return_code == 0


@pytest.mark.device
@aio
async def test_esc_closes_the_diff_and_q_quits_from_the_results(images_svm: Path) -> None:
    """On the results and diff screens ``q`` meant Close: leaving took 2-3 presses."""
    app = make_app(images_svm)
    async with app.run_test(size=(140, 36)) as pilot:
        await wait_loaded(pilot)
        dialog = await open_dialog(pilot)
        dialog.select_devices([device_id(dialog, "pthread")])
        dialog.action_accept()
        results = await results_screen(pilot)
        await pilot.press("enter")  # the first row's three-way diff
        await wait_for(pilot, lambda: isinstance(app.screen, DiffScreen), 10)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is results, 10)
        await pilot.press("q")
        await wait_for(pilot, lambda: app.return_code is not None, 10)
    assert app.return_code == 0


# ------------------------------------------------------------- 2, 3: the selection model


@aio
async def test_a_plain_move_or_jump_drops_the_range(pyocl_pocl: Path) -> None:
    """``:21 shift+down shift+down``, then ``:100 down r`` replayed 21-23 with the cursor
    on 101."""
    calls: Calls = []
    async with recording_app(pyocl_pocl, calls).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 21)
        assert status(screen).startswith("r: enqueue 21 · ")
        await pilot.press("shift+down", "shift+down")
        await settle(pilot)
        assert status(screen).startswith("r: enqueues 21-23 · 3 enq · ")
        await jump(pilot, 100)
        await pilot.press("down")
        await settle(pilot)
        assert screen.state()["range"] == (101, 101)
        assert status(screen).startswith("r: enqueue 101 · ")
        await pilot.press("r", "e")
        assert calls == [("replay", 101, 101), ("export", 101, 101)]
        # an arrow drops a shift-range as well; shift starts a new one from the cursor
        await pilot.press("shift+up", "shift+up", "down")
        await settle(pilot)
        assert screen.state()["range"] == (100, 100)
        await pilot.press("shift+down", "r")
        assert calls[-1] == ("replay", 100, 101)
        await pilot.press("escape")  # esc drops it too
        await settle(pilot)
        assert screen.state()["range"] == (101, 101)
        assert status(screen).startswith("r: enqueue 101 · ")


@aio
async def test_visual_mode_extends_with_every_motion(pyocl_pocl: Path) -> None:
    """``:6 v :25 r`` replayed only 6: vim extends a visual selection with every motion."""
    calls: Calls = []
    async with recording_app(pyocl_pocl, calls).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 40)
        await pilot.press("m")  # a bookmark on 40
        await jump(pilot, 6)
        await pilot.press("v")
        await jump(pilot, 25)
        await settle(pilot)
        state = screen.state()
        assert state["visual"] and state["range"] == (6, 25)
        assert status(screen).startswith("VISUAL  r: enqueues 6-25 · 20 enq · ")
        await pilot.press("r")
        assert calls == [("replay", 6, 25)]
        await pilot.press("apostrophe")  # the next mark
        await settle(pilot)
        assert screen.state()["range"] == (6, 40)
        await pilot.press("N")  # the previous enqueue of 40's kernel: back inside the range
        await settle(pilot)
        cursor = screen.state()["cursor"]
        assert cursor is not None and 6 < cursor < 40
        assert screen.state()["range"] == (6, cursor)
        await pilot.press("g")  # a jump before the anchor: the range turns round
        prompt = pilot.app.screen
        assert isinstance(prompt, PromptScreen)
        prompt.query_one(Input).value = "2"
        await pilot.press("enter")
        await settle(pilot)
        assert screen.state()["range"] == (2, 6)
        await pilot.press("e")
        assert calls[-1] == ("export", 2, 6)
        # leaving visual mode keeps the range until the next plain move
        await pilot.press("v")
        await settle(pilot)
        assert screen.state()["range"] == (2, 6) and not screen.state()["visual"]
        await pilot.press("down")
        await settle(pilot)
        assert screen.state()["range"] == (3, 3)
        assert not status(screen).startswith("VISUAL")


@aio
async def test_a_filter_that_moves_the_cursor_moves_it_like_a_jump(pyocl_pocl: Path) -> None:
    """A filter that hides the cursor's enqueue moves the cursor to the next one shown: a
    range is dropped, unless visual mode is on (then it extends)."""
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 0)
        await pilot.press("shift+down")  # 0-1: enqueue 1 is no axpb
        await settle(pilot)
        assert screen.state()["range"] == (0, 1)
        assert screen.set_filter("axpb", None)
        await settle(pilot)
        cursor = screen.state()["cursor"]
        assert cursor is not None and cursor > 1
        assert screen.state()["range"] == (cursor, cursor)
        assert screen.set_filter("", None)
        await jump(pilot, 0)
        await pilot.press("v", "down")
        assert screen.set_filter("axpb", None)
        await settle(pilot)
        assert screen.state()["range"] == (0, cursor)


# ---------------------------------------------------------------- 4: the restored cursor


def shown_numbers(lst: EnqueueList) -> list[int]:
    """The enqueue numbers of the list rows drawn now (the header is line 0)."""
    out = []
    for y in range(1, lst.scrollable_content_region.height):
        words = lst.render_line(y).text.split()
        if words and words[0].rstrip("~").isdigit():
            out.append(int(words[0].rstrip("~")))
    return out


@pytest.mark.parametrize("size", [(120, 40), (80, 24), (200, 50)])
@aio
async def test_the_restored_cursor_is_on_screen(
    pyocl_pocl: Path, size: tuple[int, int]
) -> None:
    """At 120x40 the details showed enqueue 27 and the list rows 0-20."""
    async with make_app(pyocl_pocl).run_test(size=size) as pilot:
        await wait_loaded(pilot)
        await jump(pilot, 27)
    async with make_app(pyocl_pocl).run_test(size=size) as pilot:
        screen = await wait_loaded(pilot)
        await settle(pilot)
        assert screen.state()["cursor"] == 27
        shown = shown_numbers(screen.enqueue_list)
        assert shown and 27 in shown, shown


# -------------------------------------------------------------- 5: what y's commands name


@aio
async def test_the_copied_show_command_names_the_enqueue_shown(pyocl_pocl: Path) -> None:
    """With 23 shown (range 21-23), ``y`` offered ``cltui show ... 21``."""
    app = make_app(pyocl_pocl)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 21)
        await pilot.press("shift+down", "shift+down")
        await settle(pilot)
        assert screen.state()["cursor"] == 23 and screen.details.enqueue is not None
        assert screen.details.enqueue.number == 23
        await pilot.press("y", "s")
        await settle(pilot)
        assert app.clipboard.startswith("cltui show ") and app.clipboard.endswith(" 23")
        await pilot.press("y", "p")  # the replay command: the range
        await settle(pilot)
        assert app.clipboard.startswith("cltui replay ") and " 21-23" in app.clipboard
