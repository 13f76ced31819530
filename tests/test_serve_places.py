"""``cltui serve``'s session places (cltui/commands/_serve_gate.py): a tab that comes while a
closed tab's app is still ending waits for its place; at a limit with no tab closing it is
refused at once."""

from __future__ import annotations

import asyncio

import pytest

from cltui.commands import _serve_gate
from cltui.commands._serve_gate import Gate

URL = "http://localhost:8000"


async def _full_gate() -> tuple[Gate, list[_serve_gate.Place]]:
    gate = Gate(URL, "t", 2)
    places = [p for p in [await gate.enter(), await gate.enter()] if p is not None]
    assert len(places) == 2 and gate.sessions == 2
    return gate, places


def test_a_full_server_with_no_tab_closing_refuses_at_once() -> None:
    async def run() -> None:
        gate, _places = await _full_gate()
        loop = asyncio.get_running_loop()
        start = loop.time()
        assert await gate.enter() is None
        assert loop.time() - start < _serve_gate.CLOSING_WAIT_S / 2  # no wait for nothing
        assert gate.sessions == 2

    asyncio.run(run())


def test_a_tab_reloaded_while_a_closed_tab_s_app_ends_gets_its_place() -> None:
    async def run() -> None:
        gate, places = await _full_gate()
        gate.tab_gone(places[0])  # its websocket ended; its app is being stopped
        assert gate.closing == 1 and gate.sessions == 2
        waiting = asyncio.ensure_future(gate.enter())
        await asyncio.sleep(0.05)
        assert not waiting.done()  # the closing app still holds its place
        await gate.leave(places[0])  # the app has ended
        third = await asyncio.wait_for(waiting, 60)  # a hang detector, not a timing
        assert third is not None and gate.sessions == 2 and gate.closing == 0
        await gate.leave(places[1])
        await gate.leave(third)
        assert gate.sessions == 0

    asyncio.run(run())


def test_a_closing_app_that_does_not_end_in_time_leaves_the_tab_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_serve_gate, "CLOSING_WAIT_S", 0.2)

    async def run() -> None:
        gate, places = await _full_gate()
        gate.tab_gone(places[0])
        assert await gate.enter() is None
        assert gate.sessions == 2 and gate.closing == 1

    asyncio.run(run())
