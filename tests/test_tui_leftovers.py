"""Issue 31 item 8 leftovers in the app: a struct of numbers has lanes for the buffer's
statistics, the footer ends in an ellipsis where it cuts keys, an image argument saved from the
Buffer tab keeps its shape."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from textual.widgets import Static

from cltui.tui.widgets.buffer_pane import BufferPane
from tests.test_tui_app import SIZE, _dump, aio, jump, make_app, settle, wait_loaded

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)


@aio
async def test_a_struct_of_uchars_has_numeric_lanes(pyocl_pocl: Path) -> None:
    """struct{uchar a; uchar b;}: min/max/mean over both fields, not '(no numeric lanes)'."""
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        await jump(pilot, 14)
        await pilot.press("3")
        await settle(pilot)
        pane = pilot.app.screen.query_one(BufferPane)
        assert pane.apply_format("struct{uchar a; uchar b;}")
        await settle(pilot)
        for _ in range(100):  # the statistics are computed in a worker
            if pane.stats is not None:
                break
            await pilot.pause(0.02)
        stats = str(pilot.app.screen.query_one("#buffer-stats", Static).render())
        assert "no numeric lanes" not in stats
        post = pane.stats[1] if pane.stats else None
        assert post is not None and post.minimum is not None
        assert pane.arg is not None
        raw = np.frombuffer(_dump(pyocl_pocl, "Post", 14, pane.arg.index).read_bytes(), np.uint8)
        assert post.maximum == float(raw[: len(raw) // 2 * 2].max())
        assert post.minimum == float(raw[: len(raw) // 2 * 2].min())


@aio
async def test_at_60_columns_the_footer_ends_in_an_ellipsis(pyocl_pocl: Path) -> None:
    """The footer's keys that do not fit whole are hidden and an ellipsis ends it (it was
    cut mid-key); at a width where they fit there is no ellipsis."""
    from cltui.tui.widgets.keys_footer import KeysFooter

    async with make_app(pyocl_pocl).run_test(size=(60, 20)) as pilot:
        screen = await wait_loaded(pilot)
        assert screen.query_one(KeysFooter).display
        await settle(pilot)
        line = _screen_line(pilot, 19).split("▏")[0].rstrip()
        assert line.endswith("…"), line
        assert "?" in line  # the help key leads and stays
        await pilot.resize_terminal(250, 20)
        await settle(pilot)
        line = _screen_line(pilot, 19).split("▏")[0].rstrip()
        assert not line.endswith("…") and "Export" in line, line


def _screen_line(pilot: object, y: int) -> str:
    app = pilot.app  # type: ignore[attr-defined]
    strips = app.screen._compositor.render_strips()
    return "".join(seg.text for seg in strips[y])


@aio
async def test_an_image_argument_saved_from_the_buffer_tab_keeps_its_shape(
    images_svm: Path, tmp_path: Path
) -> None:
    """s on the Buffer tab of an image argument: the .npy holds (height, width[, lanes]) or
    (depth, height, width[, lanes]) as the dump's name says, not a flat array."""
    from textual.widgets import Input

    from cltui.tui.screens.prompt import PromptScreen
    from cltui.tui.widgets.buffer_view import BufferView

    async with make_app(images_svm).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        shapes = []
        for number in (0, 3):  # a 2-D image and a 3-D one (tests/test_tui_app.py)
            await jump(pilot, number)
            await pilot.press("3")
            await settle(pilot)
            pane = screen.query_one(BufferPane)
            assert pane.arg is not None and pane.arg.post is not None
            region = pane.arg.post.image_region
            assert region is not None
            view = screen.query_one(BufferView)
            await pilot.press("s")
            await settle(pilot)
            await pilot.press("n")  # post as .npy
            await settle(pilot)
            prompt = pilot.app.screen
            assert isinstance(prompt, PromptScreen)
            target = tmp_path / f"e{number}.npy"
            prompt.query_one(Input).value = str(target)
            await pilot.press("enter")
            await settle(pilot)
            arr = np.load(target)
            w, h, d = region
            assert view.ctype is not None
            lead = (d, h, w) if d > 1 else (h, w)
            assert arr.shape[: len(lead)] == lead, (arr.shape, region)
            shapes.append(len(lead))
        assert shapes == [2, 3]


def test_the_ab_table_shows_the_ulp_figure_the_cli_shows() -> None:
    """Issue 31 item 7: the A/B screen's cells said 'different 3/64' where the CLI's table
    says 'different 3/64 2 ULP'; both now come from one rule (cltui/replay/check_text.py)."""
    from typing import Any

    from cltui.commands.replay_text import _short
    from cltui.tui.screens.ab_results import check_rows

    def check(status: str, **res: Any) -> dict[str, Any]:
        return {"label": "arg 0", "status": status, "summary": "", "result": res}

    a = check("equal", n_diff=0, elements=64)
    b = check("different", n_diff=3, elements=64, max_abs=0.5, max_ulp=2.0)
    dev: Any = {
        "a": {"result": {"steps": [{"enqueue": 7, "kernel": "k", "checks": [a]}]}},
        "b": {"result": {"steps": [{"enqueue": 7, "kernel": "k", "checks": [b]}]}},
    }
    ((_e, _k, _label, cell_a, cell_b),) = check_rows(dev)
    assert cell_a.plain == "equal" and cell_b.plain == "different 3/64 2 ULP" == _short(b)


@aio
async def test_the_latency_screens_scrollbar_draws_no_block_glyphs(
    pyocl_pocl: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The thumb's partial ends were eighth blocks ('▃▃' at the right of the start→end row of
    the stage table, read as a stray histogram); the thumb now ends on whole cells."""
    from typing import Any

    from textual.containers import VerticalScroll

    from cltui.tui.screens import latency

    monkeypatch.setattr(latency, "screen_lines", lambda measured, width=100: [
        f"  line {i}" for i in range(157)])
    async with make_app(pyocl_pocl).run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        measured: Any = None
        pilot.app.push_screen(latency.LatencyScreen(measured, "Launch latency"))
        await settle(pilot)
        scroll = pilot.app.screen.query_one("#latency-scroll", VerticalScroll)
        for y in (0, 13, 41):
            scroll.scroll_to(y=y, animate=False)
            await settle(pilot)
            bar = scroll.vertical_scrollbar
            glyphs = "".join(s.text for line in bar.render_lines(bar.region.reset_offset)
                             for s in line)
            assert not set(glyphs) & set("▁▂▃▄▅▆▇"), (y, glyphs)


@aio
async def test_the_footer_is_fitted_again_after_its_keys_are_recomposed(pyocl_pocl: Path) -> None:
    """A change of bindings recomposes the footer: its fit ran before the new keys were laid
    out (their widths 0 fit any room), so they were shown cut mid-key (a CI failure)."""
    from cltui.tui.widgets.keys_footer import KeysFooter

    async with make_app(pyocl_pocl).run_test(size=(60, 20)) as pilot:
        screen = await wait_loaded(pilot)
        await settle(pilot)
        assert screen.query_one(KeysFooter).display
        for i in range(3):
            screen.refresh_bindings()
            await pilot.pause()
            screen.refresh_bindings()
            await settle(pilot)
            line = _screen_line(pilot, 19).split("▏")[0].rstrip()
            assert line.endswith("…") and "?" in line, (i, line)
