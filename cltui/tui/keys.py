"""Keys in order, however fast they come: :class:`KeyGate`.

Textual routes a key to the focused widget when the app takes it from its queue.  A key bound
to an action that moves the focus (``f`` focuses the element-format field, ``/`` opens the
filter, ``esc`` leaves a field) moves it only later: the key first travels through the focused
widget's own queue and bubbles back to the app, where the binding runs, and ``Widget.focus`` or
the pushed screen's mount then changes the focus from the app's queue.  Keys that came in the
same burst (a paste, a slow ssh link that batches keystrokes) were already routed to the old
focus by then: ``f`` ``u`` ``c`` ``h`` ``a`` ``r`` gave ``r`` to the list, which opened the replay
dialog.  A synchronous ``set_focus`` in the action does not help, for the same reason.

The gate holds every key (and paste) from the terminal and lets the next one through only when
the one before is done: every message queue of the app and of the screens on its stack is empty
(its binding ran, the focus moved, a pushed screen is mounted and focused).  A bounded wait keeps
a busy app (a worker posting progress without pause) from holding keys for more than
:data:`MAX_WAIT_S` each.  The bound counts the CPU time of the app's own thread, not the wall:
on a loaded machine (other processes on every core) a pushed screen may need a second of wall
to mount while the app got 50 ms of CPU, and a wall bound let the keys typed behind ``:`` reach
the list before the prompt was there.  :data:`MAX_WALL_S` caps the wait for a starved app.
Between two polls the app may run one long handler (the details of a decoded enqueue drawn, a
collection): it counts :data:`_STEP_S` at most, or it alone used up the wait and let ``i`` of
``f`` ``i`` ``n`` ``t`` through to the list while ``f`` was still on its way to the field.
A worker that posts without pause keeps each turn short, so its turns count in full.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Any

from textual import events
from textual.app import App
from textual.message_pump import MessagePump

__all__ = ["MAX_WAIT_S", "MAX_WALL_S", "KeyGate"]

MAX_WAIT_S = 0.25  # CPU seconds of the app's thread a key waits for the one before to be done
MAX_WALL_S = 5.0  # and the wall seconds it waits at most, however starved the app is
_SPINS = 64  # polls that only yield (the common case settles within a few) before sleeping
_STEP_S = 0.02  # the most CPU seconds one poll's turn of the loop counts against a wait


class KeyGate:
    """Lets the keys of one app through one at a time, each once the app has settled."""

    def __init__(self, app: App[Any]) -> None:
        self._app = app
        self._held: deque[events.Event] = deque()
        # keys let through that the app has not taken yet: more than one when a key's wait ran
        # out before the app even took the one before (a starved app); each is known by itself,
        # or the earlier one, not the one let through last, would be held again, behind the rest
        self._passing: list[events.Event] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def held(self) -> int:
        """Keys waiting for the ones before them."""
        return len(self._held)

    def hold(self, event: events.Event) -> bool:
        """Take a key or paste from the terminal (True: the app must not handle it now)."""
        if not isinstance(event, events.Key | events.Paste) or event.is_forwarded:
            return False
        for i, passing in enumerate(self._passing):
            if event is passing:  # let through by the gate: the app handles it now
                del self._passing[i]
                return False
        self._held.append(event)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="key-gate")
        self._wake.set()
        return True

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        self._held.clear()
        self._passing.clear()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._held:
                await self._settled()
                event = self._held.popleft()
                self._passing.append(event)
                if not self._app.post_message(event):  # the app is closing
                    self._passing.clear()
                    self._held.clear()

    async def _settled(self) -> None:
        loop = asyncio.get_running_loop()
        wall_deadline = loop.time() + MAX_WALL_S
        spent = 0.0  # CPU of the app's thread (where the gate runs) counted against the wait
        last = time.thread_time()
        spins = 0
        while self._busy() and spent < MAX_WAIT_S and loop.time() < wall_deadline:
            spins += 1
            await asyncio.sleep(0 if spins < _SPINS else 0.002)
            now = time.thread_time()
            spent += min(now - last, _STEP_S)  # one long handler elsewhere counts _STEP_S
            last = now

    def _busy(self) -> bool:
        """Whether the key before may still move the focus: a message is queued or handled
        where a key travels and a focus change is made (the focused widget and its ancestors,
        the screens on the stack, the app: bindings run there, ``Widget.focus`` queues there,
        a pushed screen mounts and focuses in its own queue).  The other widgets' work (the
        status line, the detail panes filling) never moves the focus and is not waited for."""
        app = self._app
        if not app.screen_stack:  # closing: nothing to wait for (and no focus to ask about)
            return False
        pumps: list[MessagePump] = [app, *app.screen_stack]
        focused = app.focused
        if focused is not None:
            pumps.extend(node for node in focused.ancestors_with_self if node not in pumps)
        return any(_pending(pump) for pump in pumps)


def _pending(pump: MessagePump) -> bool:
    """Messages queued on ``pump`` or being handled (asyncio counts a message as unfinished
    until its handler returned), or callbacks it runs next."""
    queue: asyncio.Queue[Any] = pump._message_queue
    unfinished: int = getattr(queue, "_unfinished_tasks", queue.qsize())
    return bool(unfinished or pump._next_callbacks)
