"""The list as you type (issue 31 item 9): the filter applies with every key and marks its
matches, the filter language over the columns, sorting by a column (stable, the cursor kept
on its enqueue, an arrow in the header), the prompts' history kept per capture, and a cleared
filter that keeps the selected enqueue."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from textual.widgets import Input, Label

from cltui.capture.query import parse_query
from cltui.tui.screens.prompt import PromptScreen
from tests.test_tui_app import SIZE, aio, jump, make_app, settle, type_text, wait_loaded

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)


@aio
async def test_the_filter_applies_as_you_type_and_marks_matches(pyocl_pocl: Path) -> None:
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 14)
        await pilot.press("slash")
        assert isinstance(pilot.app.screen, PromptScreen)
        await type_text(pilot, "axpby")
        await settle(pilot)  # no enter: the list behind the prompt is filtered already
        lst = screen.enqueue_list
        cap = screen.capture
        assert cap is not None
        assert {cap.row(int(p)).kernel for p in lst.view} == {"axpbyz"}
        strip = lst.render_line(1 + lst.cursor - round(lst.scroll_y))
        match = lst.get_component_rich_style("enqueue-list--match")
        marked = "".join(s.text for s in strip if s.style is not None and match.underline
                         and s.style.underline)
        assert marked == "axpby"
        await pilot.press("escape")  # esc: the filter as it was (none), the cursor on 14
        await settle(pilot)
        assert screen.state()["rows"] == 123 and screen.name_filter == ""
        assert lst.highlight == []


@aio
async def test_a_word_not_understood_says_why_in_the_prompt(pyocl_pocl: Path) -> None:
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await pilot.press("slash")
        field = pilot.app.screen.query_one(Input)
        field.value = "kind:kernel"  # pasted
        await settle(pilot)
        field.value = "kind:kernel time>"
        field.cursor_position = len(field.value)
        await settle(pilot)
        hint = pilot.app.screen.query_one("#prompt-hint", Label)
        assert hint.has_class("prompt-error") and "not a time" in str(hint.render())
        assert screen.state()["rows"] == 98  # the last filter understood: kind:kernel
        await type_text(pilot, "1us")
        await settle(pilot)
        assert not hint.has_class("prompt-error")
        await pilot.press("enter")
        await settle(pilot)
        cap = screen.capture
        assert cap is not None
        times = cap.device_times[screen.enqueue_list.view]
        assert len(times) and bool(np.all(times[:, 2] > 1000))
        assert "filter 'kind:kernel time>1us'" in screen.state()["status"]


def test_the_filter_language_over_the_columns(pyocl_pocl: Path) -> None:
    from cltui.capture import open_capture

    cap = open_capture(pyocl_pocl)
    kernel = np.array([k or "" for k in (cap.row(p).kernel for p in range(len(cap)))])
    dumps = cap.has_pre | cap.has_post
    timed = cap.device_times[:, 0] >= 0

    def hits(text: str) -> list[int]:
        return [int(p) for p in parse_query(text).positions(cap)]

    want = [p for p in range(len(cap)) if "axpb" in kernel[p] and dumps[p]]
    assert hits("kernel:axpb has:dumps") == want and want
    slow = [p for p in range(len(cap)) if timed[p] and cap.device_times[p, 2] >= 2000]
    assert hits("time>=2us") == slow and hits("time>=2000") == slow
    assert hits("-has:time") == [p for p in range(len(cap)) if not timed[p]]
    assert hits("#10-12 kind:kernel") == [p for p in (10, 11, 12) if kernel[p]]
    assert hits("#>120") == [121, 122]
    assert hits("re:^axpb$ !#<100") == [p for p in range(100, 123) if kernel[p] == "axpb"]
    for bad in ("has:nothing", "kind:kernl", "time>fast", "re:(", "#>x"):
        with pytest.raises(Exception, match=r"\S"):
            parse_query(bad)


@aio
async def test_sorting_by_a_column_keeps_the_cursor_on_its_enqueue(pyocl_pocl: Path) -> None:
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        cap = screen.capture
        assert cap is not None
        await jump(pilot, 40)
        await pilot.press("S")  # by device time, the slowest first
        await settle(pilot)
        lst = screen.enqueue_list
        assert screen.state()["cursor"] == 40
        view = lst.view
        assert sorted(view.tolist()) == list(range(123))
        t = np.where(cap.device_times[view, 0] >= 0, cap.device_times[view, 2], -1)
        timed = t[t >= 0]
        assert len(timed) and bool(np.all(np.diff(timed) <= 0))
        assert bool(np.all(t[len(timed):] < 0))
        ties = t[:-1] == t[1:]  # stable: ties keep the log order
        assert bool(np.all(view[:-1][ties] < view[1:][ties]))
        header = "".join(s.text for s in lst.render_line(0))
        assert "dev time▼" in header
        await pilot.press("S")  # by kernel name
        await settle(pilot)
        names = [cap.row(int(p)).kernel for p in lst.view]
        known = [n for n in names if n is not None]
        assert known == sorted(known) and all(n is None for n in names[len(known):])
        assert screen.state()["cursor"] == 40 and "kernel▲" in "".join(
            s.text for s in lst.render_line(0))
        await pilot.press("O")  # reversed
        await settle(pilot)
        names = [cap.row(int(p)).kernel for p in lst.view]
        known = [n for n in names if n is not None]
        assert known == sorted(known, reverse=True)
        await pilot.press("down")  # moves in the sorted order; r acts on that enqueue
        await settle(pilot)
        assert screen.state()["cursor"] == int(cap.numbers[lst.view[lst.cursor]])
        assert lst.cursor == list(lst.view).index(cap.position_of(40)) + 1
        screen.set_sort("number", False)  # back to the log order, the lost-free list
        await settle(pilot)
        assert lst.view.tolist() == list(range(123)) and "▲" not in "".join(
            s.text for s in lst.render_line(0))



@aio
async def test_sorting_by_size_reads_the_global_sizes_in_the_reader(pyocl_pocl: Path) -> None:
    """``S`` past kind sorts by the kernel enqueues' global work items, largest first (read
    once, off the UI thread, by the reader process); the cursor stays on its enqueue."""
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        cap = screen.capture
        assert cap is not None
        await jump(pilot, 40)
        screen.set_sort("size", True)
        lst = screen.enqueue_list
        for _ in range(600):  # the reader's answer: a hang detector, no timing
            await settle(pilot)
            if screen.list_sort == ("size", True):
                break
        assert screen.list_sort == ("size", True)
        assert screen.state()["cursor"] == 40
        sizes = []
        for p in lst.view.tolist():
            g = cap.row(int(p)).global_size
            sizes.append(int(np.prod(g)) if g else -1)
        known = [n for n in sizes if n >= 0]
        assert len(known) > 10 and known == sorted(known, reverse=True)
        assert all(n < 0 for n in sizes[len(known):])  # not kernels: last
        assert "global/local▼" in "".join(s.text for s in lst.render_line(0))

@aio
async def test_prompt_history_is_kept_per_capture_outside_it(
    pyocl_pocl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        for text in ("axpb", "kind:fill"):
            await pilot.press("slash", "ctrl+a", "ctrl+k")
            await type_text(pilot, text)
            await pilot.press("enter")
            await settle(pilot)
        await jump(pilot, 7, typed=True)
    (state,) = sorted((home / "cltui").glob("*.json"))
    assert json.loads(state.read_text())["prompts"] == {
        "filter": ["axpb", "kind:fill"], "jump": ["7"]}
    assert not any("state" in p.name for p in pyocl_pocl.rglob("*"))
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await pilot.press("slash", "ctrl+a", "ctrl+k")
        field = pilot.app.screen.query_one(Input)
        await type_text(pilot, "sc")
        await pilot.press("up")
        assert field.value == "kind:fill"
        await pilot.press("up", "up")  # the oldest stays
        assert field.value == "axpb"
        await settle(pilot)
        assert screen.name_filter == "axpb"  # a line from the history filters too
        await pilot.press("down", "down")  # past the newest: the line that was being typed
        assert field.value == "sc"
        await pilot.press("escape")
        await pilot.press("colon", "up")
        assert pilot.app.screen.query_one(Input).value == "7"


@aio
async def test_clearing_the_filter_keeps_the_selected_enqueue(pyocl_pocl: Path) -> None:
    """Even after a filter that matched nothing (the cursor on no row): not row 0."""
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        assert screen.set_filter("axpb", None)
        await settle(pilot)
        await pilot.press("end")
        await settle(pilot)
        number = screen.state()["cursor"]
        assert number is not None and number > 50
        for text in ("axpbq", ""):  # matches nothing on the way (typed), then cleared
            await pilot.press("slash", "ctrl+a", "ctrl+k")
            await type_text(pilot, text)
            await pilot.press("enter")
            await settle(pilot)
        lst = screen.enqueue_list
        assert screen.state()["cursor"] == number and screen.state()["rows"] == 123
        top = round(lst.scroll_y)
        assert top <= lst.cursor < top + lst.size.height - 1  # its row is on screen


@aio
async def test_the_split_follows_a_drag_of_the_divider(pyocl_pocl: Path) -> None:
    """Stacked (80x24): the details' top border dragged up gives the list less of the height;
    side by side (200x40): its left border dragged right gives the list more of the width."""
    from cltui.tui.widgets.detail_panes import DetailPanes

    async with make_app(pyocl_pocl).run_test(size=(80, 24)) as pilot:
        screen = await wait_loaded(pilot)
        details = screen.query_one(DetailPanes)
        top = details.region.y
        before = screen.split.share
        await pilot.mouse_down(offset=(10, top))
        await pilot.hover(offset=(10, top - 6))
        await pilot.mouse_up(offset=(10, top - 6))
        await settle(pilot)
        assert screen.split.share < before and details.region.y < top
        assert not screen.split.wide
        await pilot.hover(offset=(10, 2))  # released: moving on changes nothing
        await settle(pilot)
        assert details.region.y < top and screen.split.share < before
        await pilot.resize_terminal(200, 40)
        await settle(pilot)
        left = details.region.x
        wide_before = screen.split.share
        await pilot.mouse_down(offset=(left, 10))
        await pilot.hover(offset=(left + 30, 10))
        await pilot.mouse_up(offset=(left + 30, 10))
        await settle(pilot)
        assert screen.split.wide and screen.split.share > wide_before
        assert details.region.x > left


@aio
async def test_named_bookmarks_and_their_list(
    pyocl_pocl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """M lists the bookmarks; n names the highlighted one, enter goes there, d drops one; the
    names come back with the capture (in the state file, never in the capture)."""
    from textual.widgets import OptionList

    from cltui.tui.screens.bookmarks import BookmarksScreen

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        for n in (14, 40, 90):
            await jump(pilot, n)
            await pilot.press("m")
        await pilot.press("M")
        await settle(pilot)
        assert isinstance(pilot.app.screen, BookmarksScreen)
        options = pilot.app.screen.query_one(OptionList)
        assert options.option_count == 3
        await pilot.press("down", "n")  # name 40
        await settle(pilot)
        pilot.app.screen.query_one(Input).value = "slow sin"
        await pilot.press("enter")
        await settle(pilot)
        assert "slow sin" in str(options.get_option_at_index(1).prompt)
        await pilot.press("down", "d")  # drop 90
        await settle(pilot)
        assert options.option_count == 2
        await pilot.press("enter")  # the highlight is on 40, above the one dropped
        await settle(pilot)
        assert pilot.app.screen is screen and screen.state()["cursor"] == 40
        assert screen.state()["bookmarks"] == [14, 40]
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await pilot.press("M")
        await settle(pilot)
        options = pilot.app.screen.query_one(OptionList)
        assert options.option_count == 2
        assert "slow sin" in str(options.get_option_at_index(1).prompt)


def test_filter_as_typed_and_sort_in_a_real_pty(pyocl_pocl: Path) -> None:
    """In a real terminal, keys written at once: the list behind the / prompt is filtered
    before enter, esc puts it back, and a filter kept then S in one write sorts it."""
    import re
    import sys

    from tests.ptyterm import PtyTerm

    row = re.compile(r"^\W?\s*\d+ kernel\s+(\S+)")

    def kernels(screen: str) -> set[str]:
        return {m.group(1) for ln in screen.splitlines() if (m := row.match(ln))}

    argv = [sys.executable, "-m", "cltui", str(pyocl_pocl)]
    with PtyTerm(argv, size=(100, 30)) as term:
        term.wait_for(lambda s: "rng_gen" in s and "Stop reading" not in s, timeout=60,
                      quiet=0.5)
        term.send(b"/axpby")
        screen = term.wait_for(lambda s: kernels(s) == {"axpbyz"}, timeout=20, quiet=0.3)
        assert "Filter (as you type)" in screen
        term.send(b"\x1b")
        term.wait_for(lambda s: len(kernels(s)) > 2 and "Filter (as" not in s, timeout=20,
                      quiet=0.3)
        term.send(b"/kind:kernel has:dumps\rS")
        screen = term.wait_for("dev time▼", timeout=20, quiet=0.3)
        assert kernels(screen) and "rng_gen" not in screen  # (rng_gen has no dumps)
        term.send(b"q")
        assert term.wait_exit(20) == 0


@aio
async def test_f_follows_a_capture_whose_log_grows(pyocl_pocl: Path, tmp_path: Path) -> None:
    """F on a capture whose log is still being written (here: its first half, the rest
    appended after F): the new enqueues appear, the cursor on the last row moves on to the
    new last row, the filter stays."""
    from tests.conftest import copy_capture

    cap_dir = copy_capture(pyocl_pocl, tmp_path)
    log = cap_dir / "clintercept_log.txt"
    data = log.read_bytes()
    cut = data.index(b"EnqueueCounter: 60\n")
    cut = data.rindex(b"\n", 0, cut) + 1  # the line before enqueue 60's
    log.write_bytes(data[:cut])
    async with make_app(cap_dir).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        cap = screen.capture
        assert cap is not None
        assert int((cap.offsets >= 0).sum()) == 60  # the log's (the dumps name later ones)
        await pilot.press("end")
        await pilot.press("F")
        await settle(pilot)
        with log.open("ab") as f:
            f.write(data[cut:])
        for _ in range(600):  # a hang detector: the next look at the log is a second away
            await pilot.pause(0.05)
            if screen.capture is not None and int((screen.capture.offsets >= 0).sum()) == 123:
                break
        await settle(pilot)
        assert screen.capture is not None and int((screen.capture.offsets >= 0).sum()) == 123
        assert screen.state()["rows"] == 123
        assert screen.state()["cursor"] == 122  # it was on the last row: it follows
        await pilot.press("F")  # off: the log growing again changes nothing
        await settle(pilot)
        assert screen.follower is not None and not screen.follower.on


@pytest.mark.parametrize("name", ["opencv_tapi_pocl", "pyopencl_lib_pocl", "images_svm_pocl"])
def test_work_items_are_each_rows_global_size(name: str) -> None:
    """The one-pass read of the global sizes (sort by size) gives what each row says: 1-D
    and 2-D sizes (``256 x 96``), recovered enqueues, and -1 for what is not a kernel."""
    from cltui.capture import open_capture
    from cltui.capture.query import sort_positions, work_items_of
    from tests.conftest import capture_path

    cap = open_capture(capture_path(name))
    items = work_items_of(cap)
    want = [int(np.prod(r.global_size)) if r.global_size and r.kind.name in ("KERNEL", "TASK")
            else -1 for r in (cap.row(p) for p in range(len(cap)))]  # fmt: skip
    assert items.tolist() == want
    assert int((items >= 0).sum()) > 0
    order = sort_positions(cap, np.arange(len(cap), dtype=np.int64), "size", True, items)
    got = [want[p] for p in order.tolist()]
    known = [n for n in got if n >= 0]
    assert known == sorted(known, reverse=True) and all(n < 0 for n in got[len(known):])
