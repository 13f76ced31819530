"""The replay engine: run a replay plan on one OpenCL device (stdlib + numpy + pyopencl only).

This package is SELF-CONTAINED on purpose: ``cltui export`` copies it whole, every file byte
for byte, into a bundle (:func:`cltui.export.exporter.engine_modules`, under
``lib/cltui/replay/engine/``), with the four standard-library modules of cltui it imports
(``cltui/errors.py``, ``cltui/text/units.py``, ``cltui/text/shellwords.py``,
``cltui/capture/safeopen.py``: a data file is opened as a regular file, never blocking); the
bundle's ``replay.py`` is this engine plus a manifest.  Its modules import each other and
those four by relative imports only, which resolve the same inside cltui and in a bundle.
Import nothing else of cltui here.

Rooms: :mod:`.base` (plan format, error, memory object, the run's frozen options), :mod:`.devices`
(listing, ``--device``), :mod:`.choice` (the default device rule), :mod:`.builds`
(builds, binary cache), :mod:`.memory` (objects, arguments, writes, restores, replayed
transfers), :mod:`.hashing` (the layer's hash on the device), :mod:`.checks` (compare,
verify), :mod:`.schedule` and :mod:`.launch` (the launch loops), :mod:`.results`,
:mod:`.core` (:class:`Engine`, :func:`run_plan`, :func:`check_feasible`), :mod:`.compare`,
:mod:`.schema` (the typed plan and results), :mod:`.verify` and :mod:`.schemacheck` (a
bundle checks itself: ``manifest.schema.json``, its paths, its sha256 sums), :mod:`.verdicts`,
:mod:`.feasible` (the feasibility rule: a plan and a device's facts in, what cannot run
there and why out), :mod:`.facts` (those facts from pyopencl) and :mod:`.preflight` (the
engine's pre-flight: an enqueue that cannot run is not launched, its checks say why, the
checks after it that depend on its outputs are marked).

A *plan* (see ``cltui.replay.plan`` and ``PLAN_FORMAT``) is a JSON-able dict
(:class:`.schema.Manifest`):

``format``/``version``  ``"cltui-replay-plan"`` / 1;  ``source`` {capture, range, mode}
``programs``  id -> {label, source: data key | None, il: data key (optional), options,
                     binaries: [{data, device name}]}  (a binary builds on its device, or
                     is tried on the device named most like it when there is no source)
``memory``    id -> {kind: buffer | subbuffer | image | svm, size, label,
                     image: {order, type, image_type, shape: [w, h, d], element_size},
                     parent, origin (sub-buffers)}
``steps``     [{enqueue, kernel, program, global, local | None, offset | None, device,
                captured_time (optional), args, loads, prechecks, checks}]
  args        {index, kind, ...}: buffer/image {mem}; svm {mem, offset}; scalar {hex, value};
              local {size}; sampler {normalized, addressing, filter}; null
  loads       {mem, data, why, note}: why = "input" (before the first use), "reload" (a
              host-side change the capture shows), "verify" (reload only if the replayed
              state differs from ``data``: the capture does not say what the range left)
  checks      {mem, args: [i...], label, data | hash64, dtype (compare.make_dtype spec),
              shape ([w, h, d] for images), tol (optional), note}; ``prechecks`` the same,
              compared with the state *before* the launch
``data``      key -> {path (relative to the data root), size}
``tolerance`` {atol, rtol, ulp};  ``changes`` [host-side changes];  ``notes`` [str]

The engine builds each program once, creates every memory object once (aliasing
kept: one memory id, one cl object), creates one kernel object per step with its
arguments set before anything runs, then runs the steps.  The first repetition is
the validation run: loads, the launch, read-backs of what is checked,
a wait per step (so a crash is attributed to the right enqueue) and the step's checks
(sent with its ``step_done`` event, so a later crash keeps them).  Further
repetitions (``repeat > 1``) restore the inputs outside the launch loop
(device-side copies from staged buffers; host writes on a CPU device) and launch
back to back.  Every launch records queued/submit/start/end (profiling queue) and
the host time of the enqueue call.

Options (all off by default, so a bundle behaves as before): ``probe`` reads the checked
objects back after every timing repetition too (nondeterminism probe; the read-backs'
host time is left out of the loop timer and the result says ``loop.probe``);
``binary_cache`` keeps the device binary of each program built from source in a folder
and builds from it next time (same source, options, device, driver and include files).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import PLAN_FORMAT, PLAN_VERSION, STAGES, EngineError, Shared, add_bundle_includes
    from .choice import (
        SIMULATORS,
        choice_line,
        choose_device,
        is_simulator,
        most_alike,
        name_likeness,
        name_tokens,
        user_choice,
    )
    from .core import Engine, check_feasible, dir_loader, open_shared, run_plan
    from .devices import list_devices, match_devices, resolve_devices
    from .verdicts import VERDICT_COUNTS, VERDICT_EXIT, combine_verdicts, verdict, verdict_exit
    from .verify import BundleRefused, verify_bundle

# name -> its module; imported on first use (PEP 562): a process that only lists the devices
# or reads verdicts does not import the launch loops, and ``engine.schema`` costs itself only
_HOME = {
    **dict.fromkeys(("PLAN_FORMAT", "PLAN_VERSION", "STAGES", "EngineError", "Shared",
                     "add_bundle_includes"), "base"),
    **dict.fromkeys(("SIMULATORS", "choice_line", "choose_device", "is_simulator", "most_alike",
                     "name_likeness", "name_tokens", "user_choice"), "choice"),
    **dict.fromkeys(("Engine", "check_feasible", "dir_loader", "open_shared", "run_plan"),
                    "core"),
    **dict.fromkeys(("list_devices", "match_devices", "resolve_devices"), "devices"),
    **dict.fromkeys(("VERDICT_COUNTS", "VERDICT_EXIT", "combine_verdicts", "verdict",
                     "verdict_exit"), "verdicts"),
    **dict.fromkeys(("BundleRefused", "verify_bundle"), "verify"),
}  # fmt: skip


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:  # a submodule (``from . import compare``) or a typo
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value

__all__ = [
    "PLAN_FORMAT",
    "PLAN_VERSION",
    "SIMULATORS",
    "STAGES",
    "VERDICT_COUNTS",
    "VERDICT_EXIT",
    "BundleRefused",
    "Engine",
    "EngineError",
    "Shared",
    "add_bundle_includes",
    "check_feasible",
    "choice_line",
    "choose_device",
    "combine_verdicts",
    "dir_loader",
    "is_simulator",
    "list_devices",
    "match_devices",
    "most_alike",
    "name_likeness",
    "name_tokens",
    "open_shared",
    "resolve_devices",
    "run_plan",
    "user_choice",
    "verdict",
    "verdict_exit",
    "verify_bundle",
]
