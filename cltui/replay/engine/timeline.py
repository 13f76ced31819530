"""Timeline repetitions: the timing repetitions with every launch's host call and profiling
counters kept apart (``cltui latency``), over the :class:`.launch.Launcher` of an engine.

The plain repetitions (:meth:`.launch.Launcher.repeat_launches`) keep per-step samples
only; these keep, per repetition, each launch's host call (start and end,
``time.perf_counter_ns``) and its four profiling counters (device clock), and the
repetition's wall time (first launch to the queue drained).  The loop is the same
one, with one more append per launch; the validation run is not in it (it waits after
every launch)."""

from __future__ import annotations

import gc
import time

from .launch import Launcher
from .schedule import profile, settle_events
from .schema import TimelineLaunch, TimelineRepetition, TimelineResult


def timeline_launches(launcher: Launcher, count: int) -> TimelineResult:
    """``count`` timing repetitions; each launch's host call and device counters."""
    import pyopencl as cl

    reps: list[TimelineRepetition] = []
    if count <= 0:
        return {"clock": "perf_counter_ns", "repetitions": reps}
    if not launcher.timed:
        launcher.prepare_timing()
    q = launcher.queue
    launch = cl.enqueue_nd_range_kernel
    clock = time.perf_counter_ns
    timed = launcher.timed
    event_lists = launcher.sched.events
    paused = gc.isenabled()
    gc.disable()
    try:
        settle_events(event_lists)
        for _rep in range(count):
            for restore in launcher.hoisted:
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
            reps.append(_repetition(launcher, r0, loop, wall, starts))
    finally:
        if paused:
            gc.enable()
    return {"clock": "perf_counter_ns", "repetitions": reps}

def _repetition(
    launcher: Launcher, r0: int, loop: int, wall: int, starts: list[int]
) -> TimelineRepetition:
    """One repetition's launches, from the last sample each step's lists got (the
    steps launched: a step that cannot run on the device is not in the loop)."""
    sched = launcher.sched
    launches: list[TimelineLaunch] = []
    for i, t0 in zip(launcher.timed_steps, starts, strict=True):
        q, s, st, e = profile(sched.events[i][-1])
        launches.append(
            {"step": i, "host_start": t0, "host_ns": sched.host_ns[i][-1],
             "queued": q, "submit": s, "start": st, "end": e}
        )  # fmt: skip
    return {"host_start": r0, "loop_ns": loop, "wall_ns": wall, "launches": launches}
