"""What the launch loops touch, precomputed: :class:`Schedule` (per step: loads, read-back
buffers, geometry, replayed transfers, events and host times) and the timed-loop rows."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from .base import HostArray, Restore, _Mem
from .schema import CheckResult, StepSpec

if TYPE_CHECKING:
    import pyopencl as cl

Geometry = tuple[tuple[int, ...], tuple[int, ...] | None, tuple[int, ...] | None]

Profile = tuple[int, int, int, int]  # queued, submit, start, end (ns)

# one launch of the timed loop: kernel, global, local, offset, its reloads (or None), and
# the bound appends of its event and host-time lists (fewer lookups in the timed loop)
Timed = tuple[
    "cl.Kernel",
    tuple[int, ...],
    tuple[int, ...] | None,
    tuple[int, ...] | None,
    list[Restore] | None,
    Callable[["cl.Event | Profile"], None],
    Callable[[int], None],
]


@dataclasses.dataclass
class Schedule:
    """What :meth:`Engine.run` precomputes before any launch, per step ``i``, and what the
    validation run leaves for the timing repetitions.

    ``loads[i]``: (object, host data, why: input | reload | verify); ``hoisted``: the input
    loads of each object's first use (restored before every repetition; their positions in
    ``hoisted_at``); ``reads``/``prereads``: the read-back buffers of the checks and
    pre-checks; ``geoms``: global, local, offset; ``ops``: the host transfers replayed before
    the step (bound calls); ``events``/``host_ns``: each launch's event (or its profiling
    counters, once settled) and host time; ``inloop``: the loads the validation run did
    inside the loop (repetitions redo them); ``fired``: which loads ran; ``pres``/``chks``:
    the step's pre-check and check results.
    """

    steps: list[StepSpec]
    loads: list[list[tuple[_Mem, HostArray, str]]] = dataclasses.field(default_factory=list)
    hoisted: list[tuple[_Mem, HostArray]] = dataclasses.field(default_factory=list)
    hoisted_at: set[tuple[int, int]] = dataclasses.field(default_factory=set)
    reads: list[list[tuple[_Mem, HostArray]]] = dataclasses.field(default_factory=list)
    prereads: list[list[tuple[_Mem, HostArray]]] = dataclasses.field(default_factory=list)
    geoms: list[Geometry] = dataclasses.field(default_factory=list)
    ops: list[list[Restore]] = dataclasses.field(default_factory=list)
    events: list[list[cl.Event | Profile]] = dataclasses.field(default_factory=list)
    host_ns: list[list[int]] = dataclasses.field(default_factory=list)
    inloop: list[list[tuple[_Mem, HostArray]]] = dataclasses.field(default_factory=list)
    fired: list[list[bool]] = dataclasses.field(default_factory=list)
    pres: list[list[CheckResult]] = dataclasses.field(default_factory=list)
    chks: list[list[CheckResult]] = dataclasses.field(default_factory=list)


def geometry(st: StepSpec) -> Geometry:
    """A step's global size, local size (or None) and offset (or None)."""
    lws, off = st.get("local"), st.get("offset")
    return (
        tuple(int(x) for x in st["global"]),
        tuple(int(x) for x in lws) if lws else None,
        tuple(int(x) for x in off) if off else None,
    )


def first_uses(steps: list[StepSpec]) -> dict[str, int]:
    """Each memory object's first step (as a kernel argument)."""
    first_use: dict[str, int] = {}
    for i, st in enumerate(steps):
        for arg in st["args"]:
            if arg.get("mem") is not None:
                first_use.setdefault(arg["mem"], i)
    return first_use


def profile(ev: cl.Event | Profile) -> Profile:
    """(queued, submit, start, end) of a profiling event, or the tuple kept in its place."""
    if isinstance(ev, tuple):
        return ev
    p = ev.profile
    return (p.queued, p.submit, p.start, p.end)


def settle_events(event_lists: list[list[cl.Event | Profile]]) -> None:
    """Replace each list's finished events by their profiling counters (the queue has
    been finished): the counters are all the timing needs, and the events can go."""
    for lst in event_lists:
        for k in range(len(lst) - 1, -1, -1):
            if isinstance(lst[k], tuple):
                break
            lst[k] = profile(lst[k])
