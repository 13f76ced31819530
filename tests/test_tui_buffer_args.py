"""Pilot tests of the Buffer tab's argument choice (issue 17): ``.``/``,`` visit only the
arguments with memory contents, the header names the argument the body shows."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from textual.widgets import Label

from cltui.tui.widgets.buffer_pane import BufferPane
from cltui.tui.widgets.buffer_view import BufferView
from cltui.tui.widgets.detail_panes import DetailPanes
from tests.test_tui_app import SIZE, _dump, aio, jump, make_app, settle, wait_loaded

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)


def _title(pane: BufferPane) -> str:
    return str(pane.query_one("#buffer-title", Label).render())


@aio
async def test_dot_and_comma_skip_scalars_and_the_header_says_which(pyocl_pocl: Path) -> None:
    # 22 sin_kernel(z__base, z__offset, y__base, y__offset, n): buffers 0 and 2
    post2 = np.fromfile(_dump(pyocl_pocl, "Post", 22, 2), dtype=np.float32)
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 22)
        await pilot.press("3")
        await settle(pilot)
        pane = screen.query_one(BufferPane)
        assert pane.arg is not None and pane.arg.index == 0
        assert _title(pane).startswith("buffer 1/2 · arg 0 z__base (__global float *)")
        await pilot.press("full_stop")  # over the scalar z__offset
        await settle(pilot)
        assert pane.arg is not None and pane.arg.index == 2
        assert _title(pane).startswith("buffer 2/2 · arg 2 y__base (__global float *)")
        view = screen.query_one(BufferView)
        assert np.float32(view.value_text("post", 5)) == post2[5]
        await pilot.press("full_stop")  # the last one: stays
        await settle(pilot)
        assert pane.arg is not None and pane.arg.index == 2
        await pilot.press("comma")
        await settle(pilot)
        assert pane.arg is not None and pane.arg.index == 0
        # on the Args tab, . visits every argument, scalars too
        await pilot.press("2", "full_stop")
        await settle(pilot)
        assert screen.details.arg == 1


@aio
async def test_header_and_body_agree_when_an_argument_is_missing(pyocl_pocl: Path) -> None:
    """An enqueue whose argument list has a gap (a log that lost a clSetKernelArg): the
    selected argument is found by its index, not its list position (the header named one
    argument while the body, taken by position, showed another)."""
    post2 = np.fromfile(_dump(pyocl_pocl, "Post", 22, 2), dtype=np.float32)
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await jump(pilot, 22)
        await pilot.press("3")
        await settle(pilot)
        details = screen.query_one(DetailPanes)
        enq = details.enqueue
        assert enq is not None
        gap = dataclasses.replace(enq, args=[a for a in enq.args if a.index != 1])
        details.show_decoded(gap)
        details.arg = 2
        details.activate("buffer")
        await settle(pilot)
        pane = screen.query_one(BufferPane)
        assert pane.arg is not None and pane.arg.index == 2
        assert "arg 2 y__base" in _title(pane)
        view = screen.query_one(BufferView)
        assert np.float32(view.value_text("post", 7)) == post2[7]
        await pilot.press("2")
        await settle(pilot)
        table = screen.query_one("#args-table")
        assert table.cursor == 1  # the row of index 2 in the list with the gap
