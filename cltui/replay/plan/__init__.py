"""A range of enqueues -> a JSON-able replay plan (the engine's and the bundle's manifest).

:func:`build_plan` reads a :class:`~cltui.capture.capture.Capture` and works out, for the
kernel enqueues of a range, in order:

* the programs to build (source + captured options, or a device binary on its own device);
* one memory object per captured object (aliasing kept: two arguments naming one object
  share it), images with their own format and size, SVM allocations with the offset of
  each argument;
* per step the arguments, the inputs to load before it, and the checks after it;
* host-side changes: where the capture's Pre dump of an object differs from what the
  range left in it (its last Post dump), something that is not a replayed kernel changed
  it (a host write, copy, fill, map, or a kernel outside the range/filter).

Modes (see the issue): ``chain`` carries state through the range and reloads at each
host-side change (reported, with a pre-check of the replayed state against the capture);
``isolated`` loads every kernel's own Pre dumps; ``strict`` never reloads and pre-checks
where the capture changed, so the report shows where the chain departs.  The rule itself is
:mod:`cltui.replay.modes`.

Missing data never raises: each gap becomes a specific note ("enqueue 41: no Pre dump of
argument 2 (buffer 0007)") and the step still runs when it can.

The parts, one job each: :mod:`.build` (which enqueues, the manifest), :mod:`.builder`
(one step), :mod:`.inputs` (loads and pre-checks before a step, by the mode's rule),
:mod:`.transfers` (host transfers inside the range), :mod:`.checks`, :mod:`.args`,
:mod:`.memory`, :mod:`.programs`, :mod:`.lost`: plain functions over one typed state
(:class:`.base.PlanState`), each module importing only those before it.
"""

from cltui.replay.plan.build import Plan, PlanError, build_plan, kernel_numbers, set_text

__all__ = ["Plan", "PlanError", "build_plan", "kernel_numbers", "set_text"]
