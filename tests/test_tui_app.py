"""Pilot tests of the browser on the real shared captures: keys in, state out."""

from __future__ import annotations

import asyncio
import functools
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Static
from textual.worker import WorkerState

from cltui.capture.opening import open_capture
from cltui.tui.app import CltuiApp, make_app
from cltui.tui.screens.help import HelpScreen
from cltui.tui.screens.kinds import KindScreen
from cltui.tui.screens.main import MainScreen
from cltui.tui.screens.problems import ProblemsScreen
from cltui.tui.screens.prompt import PromptScreen
from cltui.tui.widgets.args_table import ArgsTable
from cltui.tui.widgets.buffer_pane import BufferPane
from cltui.tui.widgets.buffer_view import BufferView
from cltui.tui.widgets.enqueue_list import EnqueueList
from cltui.tui.widgets.image_view import ImageView
from cltui.tui.widgets.source_view import SourceView
from cltui.tui.widgets.timing_view import TimingView
from tests.said import Said

SIZE = (100, 32)


def aio(fn: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test with asyncio (no async pytest plugin is installed)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        asyncio.run(fn(*args, **kwargs))

    return wrapper
_ENQ_RE = re.compile(
    rb"^>>>> .*?(clEnqueue\w+)(?:\( (\S+) \))?.*EnqueueCounter: (\d+)", re.MULTILINE
)


def log_enqueues(capture: Path) -> list[tuple[int, str, str | None]]:
    """(number, function, kernel) of every enqueue, straight from the raw log."""
    data = (capture / "clintercept_log.txt").read_bytes()
    out = []
    for m in _ENQ_RE.finditer(data):
        kernel = m.group(2).decode() if m.group(2) else None
        out.append((int(m.group(3)), m.group(1).decode(), kernel))
    return out


async def wait_loaded(pilot: Pilot[Any]) -> MainScreen:
    app = pilot.app
    assert isinstance(app, CltuiApp)
    for _ in range(500):
        screen = app.main
        if screen.is_mounted and (screen.capture is not None or screen.error is not None):
            break
        await pilot.pause(0.01)
    await settle(pilot)
    return app.main


async def settle(pilot: Pilot[Any], bound: float = 60) -> None:
    """Wait until the app is idle and the details show the enqueue under the cursor (their
    decode runs in a thread that a loaded machine may start late; ``bound`` seconds is a
    hang detector, not a timing)."""
    end = time.monotonic() + bound
    while True:
        await pilot.pause()
        running = [w for w in pilot.app.workers if w.state == WorkerState.RUNNING]
        # (a worker cancelled by a newer one of its group ends in WorkerCancelled: not an error)
        await asyncio.gather(*(w.wait() for w in running), return_exceptions=True)
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        idle = not any(w.state in (WorkerState.PENDING, WorkerState.RUNNING)
                       for w in pilot.app.workers)
        if idle and details_current(pilot.app):
            return
        assert time.monotonic() < end, (
            f"the app did not settle in {bound} s (a hang): workers "
            f"{[(w.name, w.state.name) for w in pilot.app.workers]}, "
            f"details current {details_current(pilot.app)}"
        )


def details_current(app: Any) -> bool:
    """Whether the main screen (if any) shows the details of the enqueue under its cursor."""
    if not isinstance(app, CltuiApp):
        return True
    from cltui.tui.widgets.keys_footer import KeysFooter

    if any(f.fit_pending for f in app.screen.query(KeysFooter)):
        return False  # the footer shows its keys cut mid-key until it is fitted
    main = app.main
    return not main.is_mounted or main.details_current


async def type_text(pilot: Pilot[Any], text: str) -> None:
    for ch in text:
        await pilot.press(ch if ch != " " else "space")


async def jump(pilot: Pilot[Any], number: int, *, typed: bool = False) -> None:
    """``:`` NUMBER ``enter`` (the number is pasted into the prompt unless ``typed``)."""
    await pilot.press("colon")
    prompt = pilot.app.screen
    assert isinstance(prompt, PromptScreen)
    if typed:
        await type_text(pilot, str(number))
    else:
        prompt.query_one(Input).value = str(number)
    await pilot.press("enter")
    await settle(pilot)


# ------------------------------------------------------------------------------------ list


@pytest.mark.child
@aio
async def test_loads_every_enqueue_of_the_log(pyocl_pocl: Path) -> None:
    expected = log_enqueues(pyocl_pocl)
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        state = screen.state()
        assert state["loaded"] and state["error"] is None
        assert state["rows"] == len(expected) == 123
        assert state["cursor"] == 0
        assert state["range"] == (0, 0)
        assert state["status"].startswith(
            "r: enqueue 0 · 1 enq · 1 kernel (rng_gen_philox4x32_uniform)")


@pytest.mark.child
@aio
async def test_filter_by_substring_regex_and_kind(pyocl_pocl: Path) -> None:
    enqueues = log_enqueues(pyocl_pocl)
    names = Counter(k for _n, _f, k in enqueues if k)
    substring = sum(c for k, c in names.items() if "axpb" in k)
    exact = names["axpb"]
    said = Said()
    async with make_app(pyocl_pocl).run_test(size=SIZE, message_hook=said) as pilot:
        screen = await wait_loaded(pilot)
        await pilot.press("slash")
        assert isinstance(pilot.app.screen, PromptScreen)
        await type_text(pilot, "axpb")
        await pilot.press("enter")
        await settle(pilot)
        assert screen.state()["rows"] == substring == 13
        assert "filter 'axpb': 13/123" in screen.state()["status"]
        rows = [screen.capture.row(int(p)).kernel for p in screen.enqueue_list.view]
        assert set(rows) == {"axpb", "axpbyz"}

        await pilot.press("slash")
        await pilot.press("ctrl+a", "ctrl+k")
        await type_text(pilot, "re:^axpb$")
        await pilot.press("enter")
        await settle(pilot)
        assert screen.state()["rows"] == exact == 8

        # a broken regex is refused with a message; the filter stays
        await pilot.press("slash", "ctrl+a", "ctrl+k")
        await type_text(pilot, "re:(")
        await pilot.press("enter")
        await settle(pilot)
        assert screen.state()["rows"] == 8
        assert any("Bad regular expression" in t for t in said.texts)

        # empty clears
        await pilot.press("slash", "ctrl+a", "ctrl+k", "enter")
        await settle(pilot)
        assert screen.state()["rows"] == 123

        # kinds: untick "kernel" (the first entry) -> the transfers and the marker remain
        await pilot.press("t")
        assert isinstance(pilot.app.screen, KindScreen)
        await pilot.press("space", "enter")
        await settle(pilot)
        non_kernels = sum(1 for _n, f, _k in enqueues if f != "clEnqueueNDRangeKernel")
        assert screen.state()["rows"] == non_kernels == 25


@pytest.mark.child
@aio
async def test_jump_and_same_kernel_navigation(pyocl_pocl: Path) -> None:
    enqueues = log_enqueues(pyocl_pocl)
    axpb = [n for n, _f, k in enqueues if k == "axpb"]
    said = Said()
    async with make_app(pyocl_pocl).run_test(size=SIZE, message_hook=said) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 45, typed=True)
        assert screen.state()["cursor"] == 45
        await jump(pilot, axpb[0])
        assert screen.state()["cursor"] == axpb[0]
        await pilot.press("n")
        assert screen.state()["cursor"] == axpb[1]
        await pilot.press("n", "n")
        assert screen.state()["cursor"] == axpb[3]
        await pilot.press("N")
        assert screen.state()["cursor"] == axpb[2]
        # a number that is not in the capture: message, cursor stays
        await jump(pilot, 99999)
        assert screen.state()["cursor"] == axpb[2]
        assert any("no enqueue 99999" in t for t in said.texts)
        # jumping to an enqueue hidden by the filter clears the filter
        await pilot.press("slash")
        await type_text(pilot, "scan_lev1")
        await pilot.press("enter")
        await settle(pilot)
        assert screen.state()["rows"] == 13
        await jump(pilot, 2)
        assert screen.state()["cursor"] == 2
        assert screen.state()["rows"] == 123


@pytest.mark.child
@aio
async def test_range_selection_visual_mode_and_bookmarks(pyocl_pocl: Path) -> None:
    enqueues = {n: (f, k) for n, f, k in log_enqueues(pyocl_pocl)}
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 10)
        await pilot.press("shift+down", "shift+down", "shift+down")
        await settle(pilot)
        state = screen.state()
        assert state["range"] == (10, 13)
        kernels = [enqueues[n] for n in range(10, 14) if enqueues[n][0] == "clEnqueueNDRangeKernel"]
        names = list(dict.fromkeys(k for _f, k in kernels if k))  # in order of appearance
        assert state["status"].startswith(
            f"r: enqueues 10-13 · 4 enq · {len(kernels)} kernel ({', '.join(names)})")
        assert "KiB data" in state["status"]  # the bytes the range needs, from its dumps
        # a plain move drops the range (issue 31); shift+up starts one at the cursor
        await pilot.press("up", "shift+up")
        assert screen.state()["range"] == (11, 12)
        await pilot.press("escape")
        await settle(pilot)
        assert screen.state()["range"] == (11, 11)
        # 11's own dumps: 0007 (passed twice, counted once), 0008 and 0009
        assert screen.state()["status"].endswith(" · 64.0 KiB data (3 objects)")
        # page extension
        await pilot.press("shift+pagedown")
        first, last = screen.state()["range"]
        assert first == 11 and last > 15
        await pilot.press("escape")
        await jump(pilot, 11)
        # visual mode: plain moves extend
        await pilot.press("v", "down", "down")
        state = screen.state()
        assert state["visual"] and state["range"] == (11, 13)
        assert state["status"].strip().startswith("VISUAL")
        await pilot.press("v")
        await pilot.press("escape")
        assert screen.state()["range"] == (13, 13) and not screen.state()["visual"]
        # bookmarks
        await pilot.press("m")
        await jump(pilot, 40)
        await pilot.press("m")
        await jump(pilot, 0)
        await pilot.press("apostrophe")
        assert screen.state()["cursor"] == 13
        await pilot.press("b")
        assert screen.state()["cursor"] == 40
        await pilot.press("b")
        assert screen.state()["cursor"] == 13
        assert screen.state()["bookmarks"] == [13, 40]


@aio
async def test_replay_and_export_greyed_until_loaded_then_act_on_the_range(
    pyocl_pocl: Path,
) -> None:
    release = threading.Event()

    def slow_open(path: Path, progress: Any, cancel: threading.Event) -> Any:
        release.wait(10)
        return open_capture(path, progress, cancel)

    calls: list[tuple[str, int, int]] = []
    app = make_app(
        pyocl_pocl,
        opener=slow_open,
        replay=lambda cap, rng: calls.append(("replay", rng.first, rng.last)),
        export=lambda cap, rng: calls.append(("export", rng.first, rng.last)),
    )
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.05)
        screen = app.main
        assert screen.capture is None
        bindings = screen.active_bindings
        assert bindings["r"].enabled is False and bindings["e"].enabled is False
        assert bindings["slash"].enabled is False
        titles = {c.title for c in app.get_system_commands(screen)}
        assert "Replay" not in titles and "Filter" not in titles  # greyed: not offered
        await pilot.press("r", "slash")
        assert calls == [] and app.screen is screen
        release.set()
        await wait_loaded(pilot)
        assert screen.active_bindings["r"].enabled is True
        await jump(pilot, 22)
        await pilot.press("shift+down", "shift+down", "r", "e")
        assert calls == [("replay", 22, 24), ("export", 22, 24)]


# ------------------------------------------------------------------------- detail panes


def _dump(capture: Path, side: str, number: int, arg: int) -> Path:
    folder = capture / f"memDump{side}Enqueue"
    (path,) = folder.glob(f"Enqueue_{number:04d}_Kernel_*_Arg_{arg}_*")
    return path


@pytest.mark.child
@aio
async def test_buffer_view_shows_typed_pre_and_post(pyocl_pocl: Path) -> None:
    # 22 sin_kernel: arg 0 is the float output, arg 2 the input
    pre = np.fromfile(_dump(pyocl_pocl, "Pre", 22, 0), dtype=np.float32)
    post = np.fromfile(_dump(pyocl_pocl, "Post", 22, 0), dtype=np.float32)
    changed = np.flatnonzero(pre.view(np.uint32) != post.view(np.uint32))
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        await jump(pilot, 22)
        await pilot.press("3")
        await settle(pilot)
        view = pilot.app.screen.query_one(BufferView)
        pane = pilot.app.screen.query_one(BufferPane)
        assert pane.arg is not None and pane.arg.index == 0
        assert view.ctype is not None and view.ctype.name == "float"
        assert view.row_count == len(post) == 8192
        for i in (0, 1, 100, 8191):
            assert np.float32(view.value_text("post", i)) == post[i]
            assert np.float32(view.value_text("pre", i)) == pre[i] or np.isnan(pre[i])
        pre_stats, post_stats = pane.stats
        assert post_stats is not None and pre_stats is not None
        assert post_stats.changed == len(changed)
        assert post_stats.minimum == pytest.approx(float(post.min()))
        assert post_stats.maximum == pytest.approx(float(post.max()))
        assert post_stats.mean == pytest.approx(float(post.astype(np.float64).mean()))
        # next change from the top, from the files
        view.focus()
        await pilot.press("end")
        await pilot.press("home")
        await pilot.press("right_square_bracket")
        await settle(pilot)
        first_after_0 = int(changed[changed > 0][0])
        assert view.cursor == first_after_0
        # the input argument is untouched by the kernel
        await pilot.press("full_stop", "full_stop")
        await settle(pilot)
        assert pane.arg is not None and pane.arg.index == 2
        assert pane.stats[1] is not None and pane.stats[1].changed == 0


@pytest.mark.child
@aio
async def test_buffer_element_format_struct_and_hex(pyocl_pocl: Path) -> None:
    raw = _dump(pyocl_pocl, "Post", 14, 4).read_bytes()  # rank__base: int32
    ints = np.frombuffer(raw, dtype=np.int32)
    pairs = np.frombuffer(raw, dtype=np.dtype([("x", "<f4"), ("k", "<i4")]))
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        await jump(pilot, 14)
        await pilot.press("2")
        await settle(pilot)
        table = pilot.app.screen.query_one(ArgsTable)
        table.focus()
        await pilot.press("down", "down", "down", "down")  # row 4
        await pilot.press("3")
        await settle(pilot)
        view = pilot.app.screen.query_one(BufferView)
        pane = pilot.app.screen.query_one(BufferPane)
        assert pane.arg is not None and pane.arg.index == 4
        assert view.ctype is not None and view.ctype.name == "int"
        assert [int(view.value_text("post", i)) for i in range(5)] == ints[:5].tolist()
        # type a struct as the element format
        await pilot.press("f")
        await pilot.press("ctrl+a", "ctrl+k")
        await type_text(pilot, "struct { float x; int k; }")
        await pilot.press("enter")
        await settle(pilot)
        assert view.itemsize == 8 and view.row_count == len(pairs)
        text = view.value_text("post", 3)
        assert text.startswith("{x=") and text.endswith(f", k={int(pairs[3]['k'])}}}")
        # a bad format is refused, the view keeps the struct
        assert not pane.apply_format("float5")
        assert view.itemsize == 8
        # esc leaves the field: the format in use stays, what was typed is dropped, and the
        # next key is the view's again
        await pilot.press("f", "z", "z")
        fmt = pilot.app.screen.query_one("#buffer-format", Input)
        assert fmt.has_focus and fmt.value.endswith("zz")
        await pilot.press("escape")
        assert pilot.app.focused is view and fmt.value == view.ctype.name
        assert view.itemsize == 8
        # hex view: 8 bytes per row at this width, all bytes
        view.focus()
        await pilot.press("x")
        assert view.hex_mode and view.row_count == len(raw) // 8


@pytest.mark.child
@aio
async def test_args_table_decodes_struct_by_value(pyocl_oclgrind: Path) -> None:
    raw = (pyocl_oclgrind / "Replay" / "Enqueue_14_clip_by_rank" / "Argument6.bin").read_bytes()
    scale, offset, lo, hi = np.frombuffer(raw, dtype="<f4,<f4,<i4,<i4")[0].tolist()
    async with make_app(pyocl_oclgrind).run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        await jump(pilot, 14)
        table = pilot.app.screen.query_one(ArgsTable)
        cells = table.get_row_at(6)
        assert cells[1] == "p" and cells[3] == "clip_params_t"
        assert cells[6] == f"{{scale={scale:.7g}, offset={offset:.7g}, lo={lo}, hi={hi}}}"
        assert table.get_row_at(0)[5] == "32.0 KiB"
        # local arguments of the bitonic sort
        await jump(pilot, 18)
        assert table.get_row_at(2)[6] == "__local" and table.get_row_at(2)[5] == "4.0 KiB"


@pytest.mark.child
@aio
async def test_source_pane_scrolls_to_kernel_and_marks_argument(pyocl_pocl: Path) -> None:
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        await jump(pilot, 14)
        await pilot.press("1")
        await settle(pilot)
        view = pilot.app.screen.query_one(SourceView)
        assert view.kernel_lines is not None
        first, _last = view.kernel_lines
        assert "clip_by_rank" in "".join(view.line_text(i) for i in range(first - 1, first + 2))
        assert round(view.scroll_y) <= first - 1 < round(view.scroll_y) + view.size.height
        # arg 0 is selected: its span is marked in the signature
        (line, col, _end_line, end_col) = view.marks[0]
        assert "out" in view.line_text(line - 1)[col - 1 : end_col]
        await pilot.press("full_stop", "full_stop")
        await settle(pilot)
        (line, col, _end_line, end_col) = view.marks[0]
        assert "inp" in view.line_text(line - 1)[col - 1 : end_col]
        # tab moves the keyboard into the tab, z maximises it (80x24 over ssh), z restores
        await pilot.press("tab")
        assert pilot.app.screen.focused is view
        await pilot.press("z")
        assert pilot.app.screen.maximized is view
        await pilot.press("z", "tab")
        assert pilot.app.screen.maximized is None
        assert pilot.app.screen.focused is pilot.app.screen.query_one(EnqueueList)


@pytest.mark.child
@aio
async def test_image_pane_decodes_pre_and_post(images_svm: Path) -> None:
    (pre_path,) = (images_svm / "memDumpPreEnqueue").glob("Enqueue_0000_*_Arg_0_*.raw")
    texels = np.fromfile(pre_path, dtype=np.float32).reshape(48, 64, 4)
    async with make_app(images_svm).run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        await pilot.press("4")
        await settle(pilot)
        image = pilot.app.screen.query_one(ImageView)
        assert [label for label, _img in image.images] == ["pre", "post"]
        rgb = image.images[0][1]
        assert rgb.shape == (48, 64, 3)
        expected = (np.clip(texels[:, :, :3], 0, 1) * 255 + 0.5).astype(np.uint8)
        if texels.min() >= 0 and texels.max() <= 1:
            assert np.array_equal(rgb, expected)
        # the 3-D volume: slices step with ]
        await jump(pilot, 3)
        assert image.depth == 8 and image.z == 0
        image.focus()
        await pilot.press("right_square_bracket")
        assert image.z == 1 and "slice 2/8" in image.message
        # with the list focused, [ and ] still step the visible image's slices; x (the
        # buffer's hex view) does nothing here
        screen = pilot.app.screen
        assert isinstance(screen, MainScreen)
        screen.enqueue_list.focus()
        await pilot.press("right_square_bracket", "right_square_bracket", "left_square_bracket")
        assert image.z == 2 and "slice 3/8" in image.message
        await pilot.press("x")
        assert screen.query_one(BufferView).hex_mode is False


@pytest.mark.child
@aio
async def test_buffer_keys_work_while_the_list_has_focus(pyocl_pocl: Path) -> None:
    """x, ] and [ act on the visible buffer tab whatever has focus (issue 17: they did
    nothing while the list, the default focus, had it), and ? lists them then."""
    pre = np.fromfile(_dump(pyocl_pocl, "Pre", 22, 0), dtype=np.float32)
    post = np.fromfile(_dump(pyocl_pocl, "Post", 22, 0), dtype=np.float32)
    changed = np.flatnonzero(pre.view(np.uint32) != post.view(np.uint32))
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 22)
        keys = {b.binding.key for b in screen.active_bindings.values()
                if b.binding.action.startswith("pane_key")}
        assert keys == set()  # the Args tab shows: nothing for them to act on
        await pilot.press("3")
        await settle(pilot)
        assert pilot.app.focused is screen.enqueue_list
        view = screen.query_one(BufferView)
        keys = {b.binding.key for b in screen.active_bindings.values()
                if b.binding.action.startswith("pane_key")}
        assert keys == {"x", "right_square_bracket", "left_square_bracket"}
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert view.cursor == int(changed[changed > 0][0])
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert view.cursor == int(changed[0])
        await pilot.press("x")
        assert view.hex_mode
        assert pilot.app.focused is screen.enqueue_list  # the list kept the keyboard


@pytest.mark.child
@aio
async def test_timing_pane_on_the_large_capture(heat2d: Path) -> None:
    async with make_app(heat2d).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        assert screen.state()["rows"] == 204011
        await jump(pilot, 122396)
        await pilot.press("n")
        assert screen.state()["cursor"] == 122398
        await pilot.press("5")
        await settle(pilot)
        timing = pilot.app.screen.query_one(TimingView)
        assert "heat_stencil ×100,000" in timing.summary
        await pilot.press("end")
        assert screen.state()["cursor"] == 204010


# ------------------------------------------------------------------------ errors & help


@pytest.mark.child
@aio
async def test_broken_capture_opens_with_notices(images_svm: Path, tmp_path: Path) -> None:
    from tests.conftest import copy_capture

    broken = copy_capture(images_svm, tmp_path)
    log = broken / "clintercept_log.txt"
    data = log.read_bytes()
    log.write_bytes(data[: len(data) * 2 // 3])  # truncated mid-run
    next(iter((broken / "memDumpPostEnqueue").glob("Enqueue_0002_*"))).write_bytes(b"")
    said = Said()
    async with make_app(broken).run_test(size=SIZE, message_hook=said) as pilot:
        screen = await wait_loaded(pilot)
        assert screen.capture is not None and screen.error is None
        problems = screen.capture.problems
        assert problems
        notices = [t for t in said.texts if "problem" in t]
        assert len(notices) == 1  # one notice for them all (issue 31: four toasts stacked)
        assert f"{len(problems)} problem" in notices[0] and "Press p" in notices[0]
        assert "problem" in screen.state()["status"]
        await pilot.press("p")
        assert isinstance(pilot.app.screen, ProblemsScreen)
        assert len(pilot.app.screen.problems) == len(problems)
        await pilot.press("escape")
        await pilot.press("down", "down", "3")  # browsing still works
        await settle(pilot)


@pytest.mark.child
@aio
async def test_not_a_capture_shows_one_line(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    async with make_app(tmp_path).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        assert screen.capture is None and screen.error
        assert "\n" not in screen.error
        assert screen.enqueue_list.placeholder.startswith("Cannot open")
        await pilot.press("slash", "down", "colon")  # nothing to act on: no crash
        assert not isinstance(pilot.app.screen, PromptScreen)


@pytest.mark.child
@aio
async def test_help_screen_and_palette_come_from_bindings(images_svm: Path) -> None:
    app = make_app(images_svm)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        descriptions = {b.binding.description for b in app.screen.bindings.values()}
        assert {"Filter", "Jump", "Visual", "Mark", "Replay", "Export"} <= descriptions
        await pilot.press("escape")
        titles = {c.title for c in app.get_system_commands(screen)}
        assert {"Filter", "Jump", "Visual", "Mark", "Next same"} <= titles
        assert {"Replay", "Export"} <= titles


@pytest.mark.child
@aio
async def test_two_captures_switch(pyocl_pocl: Path, pyocl_oclgrind: Path) -> None:
    app = make_app(pyocl_pocl, pyocl_oclgrind)
    async with app.run_test(size=SIZE) as pilot:
        first = await wait_loaded(pilot)
        assert first.state()["status"].startswith("A: r: enqueue 0 ·")
        await pilot.press("c")
        second = await wait_loaded(pilot)
        assert second is not first and second.path == pyocl_oclgrind
        assert second.state()["status"].startswith("B: r: enqueue 0 ·")


@pytest.mark.child
@aio
async def test_capture_without_log_browses_its_dumps(images_svm: Path, tmp_path: Path) -> None:
    from tests.conftest import copy_capture

    dumps_only = copy_capture(images_svm, tmp_path)
    (dumps_only / "clintercept_log.txt").unlink()
    numbers = sorted(
        {int(p.name.split("_")[1]) for p in (dumps_only / "memDumpPostEnqueue").iterdir()}
    )
    (pre_path,) = (dumps_only / "memDumpPreEnqueue").glob("Enqueue_0000_*_Arg_0_*.raw")
    texels = np.fromfile(pre_path, dtype=np.float32).reshape(-1, 4)
    async with make_app(dumps_only).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        assert screen.capture is not None
        assert [int(screen.capture.numbers[p]) for p in screen.enqueue_list.view] == numbers
        assert "problem" in screen.state()["status"]
        await pilot.press("3")
        await settle(pilot)
        view = pilot.app.screen.query_one(BufferView)
        assert view.ctype is not None and view.ctype.name == "float4"  # texels of the image
        first = view.value_text("pre", 0).strip("()").split(", ")
        assert [np.float32(v) for v in first] == texels[0].tolist()


@aio
async def test_a_failing_record_or_pane_shows_a_line_not_a_traceback(images_svm: Path) -> None:
    def faulty_open(path: Path, progress: Any, cancel: threading.Event) -> Any:
        cap = open_capture(path, progress, cancel)
        real_row = cap.row

        def row(pos: int) -> Any:
            if pos == 3:
                raise ValueError("bad bytes")
            return real_row(pos)

        def build_log(program: Any) -> str:
            raise OSError("disk on fire")

        cap.row = row  # type: ignore[method-assign]
        cap.build_log = build_log  # type: ignore[method-assign]
        return cap

    async with make_app(images_svm, opener=faulty_open).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        lst = screen.enqueue_list
        assert "3: unreadable record (ValueError: bad bytes)" in lst.render_line(4).text
        await pilot.press("1")
        await settle(pilot)
        box = pilot.app.screen.query_one("#enqueue-problems", Static)
        assert box.display
        assert "source tab cannot show enqueue 0: OSError: disk on fire" in str(box.render())
        await pilot.press("down", "down", "down")  # the app is still alive and browsing
        assert screen.state()["cursor"] == 3


@pytest.mark.child
@aio
async def test_a_typedef_of_the_program_as_the_buffer_format(pyocl_pocl: Path) -> None:
    """The element type comes decoded with the enqueue; the program's typedefs are parsed only
    when a typed format names one (philox4x32_ctr_t of pyopencl's RNG program: uint4)."""
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        await jump(pilot, 0)
        await pilot.press("3")  # the Buffer tab: arg 0 (the RNG's output of kind buffer)
        await settle(pilot)
        pane = pilot.app.screen.query_one(BufferPane)
        view = pilot.app.screen.query_one(BufferView)
        assert pane.arg is not None and view.ctype is not None
        assert pane.typedefs == {}  # nothing parsed for the signature's own type
        assert pane.apply_format("philox4x32_ctr_t")
        assert "philox4x32_ctr_t" in pane.typedefs
        assert view.ctype.size == 16
        assert not pane.apply_format("no_such_type_t")


@pytest.mark.child
@aio
async def test_source_tab_shown_first_time_scrolls_to_the_kernel(pyocl_pocl: Path) -> None:
    """The first time the Source tab shows, it sits at the kernel its header names (issue 17:
    it sat at line 1 under a header saying "lines 46-121")."""
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        await jump(pilot, 11)  # scan_final_update, lines 46-121 of its program
        await pilot.press("1")
        await settle(pilot)
        view = pilot.app.screen.query_one(SourceView)
        assert view.kernel_lines is not None and view.kernel_lines[0] == 46
        assert round(view.scroll_y) == 45
