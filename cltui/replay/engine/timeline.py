"""Timeline repetitions: the timing repetitions with every launch's host call and profiling
counters kept apart (``cltui latency``).  A mixin of :class:`.core.Engine`.

The plain repetitions (:meth:`.launch._Launches.repeat_launches`) keep per-step samples
only; these keep, per repetition, each launch's host call (start and end,
``time.perf_counter_ns``) and its four profiling counters (device clock), and the
repetition's wall time (first launch to the queue drained).  The loop is the same
one, with one more append per launch; the validation run is not in it (it waits after
every launch)."""

from __future__ import annotations

import gc
import time

from .launch import _Launches
from .schedule import profile, settle_events
from .schema import TimelineLaunch, TimelineRepetition, TimelineResult


class _Timeline(_Launches):
    """:meth:`timeline_launches` over the state of :class:`.base._EngineState`."""

    def timeline_launches(self, count: int) -> TimelineResult:
        """``count`` timing repetitions; each launch's host call and device counters."""
        import pyopencl as cl

        reps: list[TimelineRepetition] = []
        if count <= 0:
            return {"clock": "perf_counter_ns", "repetitions": reps}
        if not self._timed:
            self._prepare_timing()
        q = self.queue
        launch = cl.enqueue_nd_range_kernel
        clock = time.perf_counter_ns
        timed = self._timed
        event_lists = self._sched.events
        paused = gc.isenabled()
        gc.disable()
        try:
            settle_events(event_lists)
            for _rep in range(count):
                for restore in self._hoisted:
                    restore()
                q.finish()
                starts: list[int] = []
                mark = starts.append
                r0 = clock()
                for kern, g, lws, off, reloads, add_event, add_ns in timed:
                    if reloads:
                        for restore in reloads:
                            restore()
                    t0 = clock()
                    ev = launch(q, kern, g, lws, off)
                    add_ns(clock() - t0)
                    add_event(ev)
                    mark(t0)
                loop = clock() - r0
                q.finish()
                wall = clock() - r0
                settle_events(event_lists)
                reps.append(self._repetition(r0, loop, wall, starts))
        finally:
            if paused:
                gc.enable()
        return {"clock": "perf_counter_ns", "repetitions": reps}

    def _repetition(
        self, r0: int, loop: int, wall: int, starts: list[int]
    ) -> TimelineRepetition:
        """One repetition's launches, from the last sample each step's lists got (the
        steps launched: a step that cannot run on the device is not in the loop)."""
        sched = self._sched
        launches: list[TimelineLaunch] = []
        for i, t0 in zip(self._timed_steps, starts, strict=True):
            q, s, st, e = profile(sched.events[i][-1])
            launches.append(
                {"step": i, "host_start": t0, "host_ns": sched.host_ns[i][-1],
                 "queued": q, "submit": s, "start": st, "end": e}
            )  # fmt: skip
        return {"host_start": r0, "loop_ns": loop, "wall_ns": wall, "launches": launches}
