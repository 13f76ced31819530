"""The engine: one plan on one device (:class:`Engine`, :func:`run_plan`), and the loader of
a plan's data files (:func:`dir_loader`).  See the package doc for the plan and the run."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...capture.safeopen import open_regular
from .base import (
    PLAN_FORMAT,
    PLAN_VERSION,
    EngineError,
    EventSink,
    Hasher,
    HostArray,
    Loader,
    Restore,
    Shared,
    _cl_msg,
    _Mem,
    _stats,
)
from .compare import Tolerance
from .devices import open_device
from .preflight import _Preflight
from .programs import _Programs
from .results import step_results
from .schedule import Schedule, Timed
from .schema import (
    BuildInfo,
    Device,
    EngineResult,
    Feasibility,
    Finding,
    Manifest,
    ProbeResult,
    StepSpec,
    TimelineResult,
    ToleranceSpec,
)
from .timeline import _Timeline

if TYPE_CHECKING:
    import pyopencl as cl


def dir_loader(plan: Manifest | Mapping[str, Any], root: str | Path) -> Loader:
    """Resolve data keys through ``plan['data'][key]['path']`` under ``root`` (memory-mapped)."""
    base = Path(root)
    table = plan.get("data", {})

    def load(key: str) -> HostArray:
        entry = table.get(key)
        if entry is None:
            raise EngineError(f"data {key!r} is not in the plan")
        path = base / entry["path"]
        try:
            with open_regular(path, follow=True) as f:  # never a FIFO nor a device
                if os.fstat(f.fileno()).st_size == 0:
                    return np.zeros(0, dtype=np.uint8)
                return np.memmap(f, dtype=np.uint8, mode="r")
        except OSError as exc:
            raise EngineError(f"cannot read {path}: {exc.strerror or exc}") from None

    return load


def open_shared(device: Device) -> Shared:
    """A context and a profiling queue on ``device`` (for one engine, or several)."""
    import pyopencl as cl

    dev = open_device(device)
    ctx = cl.Context([dev])
    queue = cl.CommandQueue(ctx, dev, properties=cl.command_queue_properties.PROFILING_ENABLE)
    return Shared(dev, ctx, queue)


class Engine(_Timeline, _Programs, _Preflight):
    """One plan on one device.  ``prepare()`` then ``run()``; see the package doc."""

    def __init__(
        self,
        plan: Manifest,
        device: Device,
        loader: Loader,
        *,
        progress: EventSink | None = None,
        hasher: Hasher | None = None,
        tolerance: ToleranceSpec | None = None,
        arg_tolerance: dict[int, ToleranceSpec] | None = None,
        save_dir: str | Path | None = None,
        probe: bool = False,
        binary_cache: str | Path | None = None,
        shared: Shared | None = None,
        timeline: bool = False,
    ) -> None:
        if plan.get("format") != PLAN_FORMAT or int(plan.get("version", 0)) > PLAN_VERSION:
            raise EngineError(
                f"not a replay plan this engine reads (format {plan.get('format')!r}, "
                f"version {plan.get('version')!r})"
            )
        self.plan = plan
        self.device = device
        self.loader = loader
        self.progress = progress or (lambda _e: None)
        self.hasher = hasher
        self.tol = Tolerance.from_dict(plan.get("tolerance")).merged(tolerance)
        self.arg_tol = arg_tolerance or {}
        self.save_dir = Path(save_dir) if save_dir else None
        if probe and self.save_dir is None:
            raise EngineError("probing outputs needs a folder to save them in")
        self.probe = probe
        self.binary_cache = Path(binary_cache) if binary_cache else None
        self.shared = shared
        self.timeline = timeline and not probe
        self._stamps = {}
        self._writer = None
        self._writes = []
        self.notes: list[str] = []
        self.builds: dict[str, BuildInfo] = {}
        self.mems: dict[str, _Mem] = {}
        self.kernels = []
        self.facts = None
        self.cannot = {}
        self.set_up_failed = {}
        self.at_launch = {}
        self.bad_mems = {}
        self.marks = {}
        self.has_svm = False
        self.build_log = ""
        # objects a kernel argument refers to must outlive the launches: clSetKernelArg
        # copies only the handle, and a released sampler makes NVIDIA's driver fail the
        # enqueue with CL_INVALID_KERNEL_ARGS (PoCL happens to tolerate it)
        self._arg_refs = []
        self._timed: list[Timed] = []
        self._timed_steps: list[int] = []
        self._hoisted: list[Restore] = []
        self._sched = Schedule([])  # the last run's (repeat_launches times it again)
        self._hash_kernel = None  # built on the first hash-only check
        self._hash_error = ""  # why the device could not hash (then the host hasher)

    # ---- setup -------------------------------------------------------------

    def prepare(self) -> None:
        """The context and profiling queue (the :class:`.base.Shared` ones when given),
        every program, memory object and kernel (its arguments set); objects start zeroed."""
        programs = self.build()
        for mid, info in self.plan["memory"].items():
            if mid not in self.bad_mems:
                self.mems[mid] = self._create_mem(mid, info)
        self._zero_fill()
        for i, (step, kern) in enumerate(self._checked_kernels(programs, set_up=True)):
            self.kernels.append(None if kern is None else self._set_up(i, kern, step))
        self._preflight_done()

    def feasibility(self) -> list[Finding]:
        """The pre-flight alone (what ``cltui feasible`` asks): the device's facts, the
        plan's findings, the builds and the kernels' findings; nothing is made or run."""
        import pyopencl as cl

        self.dev = open_device(self.device)
        self.ctx = cl.Context([self.dev])
        self._preflight_plan()
        for _step, _kern in self._checked_kernels(self._build_programs()):
            pass
        return self.findings()

    def _checked_kernels(
        self, programs: dict[str, cl.Program], set_up: bool = False
    ) -> Iterator[tuple[StepSpec, cl.Kernel | None]]:
        """Each step and its kernel (None: it cannot run here, the pre-flight says why;
        ``set_up``: or the kernel could not be made, ``set_up_failed`` says why)."""
        for i, step in enumerate(self.plan["steps"]):
            if i in self.cannot:
                yield step, None
                continue
            prg = programs.get(step["program"])
            if prg is None:
                raise EngineError(
                    f"enqueue {step['enqueue']}: program {step['program']} was not built",
                    step["enqueue"],
                )
            try:
                kern = self._checked_kernel(i, prg, step)
            except EngineError as exc:
                if not set_up or exc.enqueue is None:
                    raise
                self.set_up_failed[i] = str(exc)  # that step's error: the others still run
                kern = None
            yield step, kern

    def build(self) -> dict[str, cl.Program]:
        """The context and queue (the shared ones when given), and the plan's programs (a
        :class:`.base.Shared` keeps them for the next engine: a sweep builds ahead)."""
        if self.shared is None:
            self.shared = open_shared(self.device)
        self.dev, self.ctx, self.queue = self.shared.dev, self.shared.ctx, self.shared.queue
        self.has_svm = bool(self.device.get("svm"))
        self._preflight_plan()  # what cannot run here: not built, not made, not launched
        return self._build_programs()

    def _set_up(self, i: int, kern: cl.Kernel, step: StepSpec) -> cl.Kernel | None:
        """Step ``i``'s kernel with its arguments set, or None when they cannot be: that is
        the step's error (``set_up_failed``), the other steps still run and are counted."""
        try:
            return self._set_args(kern, step)
        except EngineError as exc:
            if exc.enqueue is None:
                raise
            self.set_up_failed[i] = str(exc)
            return None

    def _set_args(self, kern: cl.Kernel, step: StepSpec) -> cl.Kernel:
        """Step ``step``'s kernel with its arguments set."""
        import pyopencl as cl

        for arg in step["args"]:
            try:
                kern.set_arg(int(arg["index"]), self._arg_value(arg))
            except cl.Error as exc:
                raise EngineError(
                    f"enqueue {step['enqueue']}: cannot set argument {arg['index']} "
                    f"({arg['kind']}): {_cl_msg(exc)}",
                    step["enqueue"],
                ) from None
            except EngineError as exc:  # the enqueue that failed (failed_enqueue)
                if exc.enqueue is None:
                    exc.enqueue = step["enqueue"]
                raise
        return kern

    # ---- run ---------------------------------------------------------------

    def launch_times(self) -> list[list[int]]:
        """Per step, the device time (start to end, ns) of every launch so far: the
        validation run's first, then one per timing repetition (:meth:`repeat_launches`),
        what an A/B comparison pairs repetition by repetition."""
        from .schedule import profile

        return [[p[3] - p[2] for p in map(profile, evs)] for evs in self._sched.events]

    def run(self, repeat: int = 1) -> EngineResult:
        """The validation run, then ``repeat - 1`` timing repetitions; the device result.

        Three steps: :meth:`_schedule` precomputes everything the launch loops touch,
        :meth:`_validate` runs each step once with its loads, read-backs and checks (a wait
        per launch, so a fault names its enqueue), :meth:`repeat_launches` (or
        :meth:`_probe_repetitions`) times the launches back to back, :meth:`_results`
        assembles the result.
        """
        sched = self._schedule()
        self._validate(sched)
        if repeat > 1:
            self.progress({"type": "timing", "repeat": repeat})
        self._sched = sched
        self._timed = []
        probed: ProbeResult | None = None
        line: TimelineResult | None = None
        if self.probe:
            loop_ns, probed = self._probe_repetitions(max(repeat, 1) - 1, sched.reads)
        elif self.timeline:
            line = self.timeline_launches(max(repeat, 1) - 1)
            loop_ns = [r["loop_ns"] for r in line["repetitions"]]
        else:
            loop_ns = self.repeat_launches(max(repeat, 1) - 1)
        out = self._results(sched, repeat, loop_ns, probed)
        if line is not None:
            out["timeline"] = line
        return out

    def _results(
        self, sched: Schedule, repeat: int, loop_ns: list[int], probed: ProbeResult | None
    ) -> EngineResult:
        """The device result: each step's checks, loads, transfers and timing."""
        results, all_ok = step_results(sched, self.cannot, set(self.mems))
        # a step whose kernel could not be set up did not run: no result, the run's error
        results = [r for i, r in enumerate(results) if i not in self.set_up_failed]
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None
            for fut in self._writes:
                fut.result()  # a failed save fails the run as it did when written inline
            self._writes = []
        failed = [self.set_up_failed[i] for i in sorted(self.set_up_failed)]
        first = self.plan["steps"][min(self.set_up_failed)] if failed else None
        more = f" (and {len(failed) - 1} more enqueue{'s' if len(failed) > 2 else ''} " \
            "not set up)" if len(failed) > 1 else ""
        out: EngineResult = {
            "device": self.device,
            "ok": all_ok and not failed,
            "error": failed[0] + more if failed else None,
            "failed_enqueue": int(first["enqueue"]) if first is not None else None,
            "repeat": max(repeat, 1),
            "loop": {
                "launches": sum(k is not None for k in self.kernels),
                "host_ns_per_repetition": _stats(loop_ns),
            },
            "steps": results,
            "builds": self.builds,
            "notes": self.notes,
            "cannot_run": self.findings(),
        }
        if probed is not None:
            out["loop"]["probe"] = True
            out["probe"] = probed
        return out


def run_plan(
    plan: Manifest,
    device: Device,
    loader: Loader,
    *,
    repeat: int = 1,
    progress: EventSink | None = None,
    hasher: Hasher | None = None,
    tolerance: ToleranceSpec | None = None,
    arg_tolerance: dict[int, ToleranceSpec] | None = None,
    save_dir: str | Path | None = None,
    probe: bool = False,
    binary_cache: str | Path | None = None,
    timeline: bool = False,
) -> EngineResult:
    """Prepare and run ``plan`` on ``device``; errors become ``result['error']``.

    ``probe``: every timing repetition also reads back the checked objects (see
    :meth:`Engine._probe_repetitions`; needs ``save_dir``); the result gains ``probe``.
    ``binary_cache``: a folder where programs built from source keep their device binary,
    so the next run on the same device and driver builds from it.
    ``timeline``: the timing repetitions keep every launch (the result gains ``timeline``:
    :meth:`Engine.timeline_launches`).
    """
    eng = Engine(
        plan, device, loader, progress=progress, hasher=hasher, tolerance=tolerance,
        arg_tolerance=arg_tolerance, save_dir=save_dir, probe=probe, binary_cache=binary_cache,
        timeline=timeline,
    )  # fmt: skip
    import pyopencl as cl

    try:
        eng.prepare()
        return eng.run(repeat)
    except (cl.Error, ValueError, TypeError, RuntimeError) as exc:
        msg = _cl_msg(exc) if isinstance(exc, cl.Error) else f"{type(exc).__name__}: {exc}"
        return _failed(eng, repeat, f"replay failed on {device['name']}: {msg}", None)
    except EngineError as exc:
        out = _failed(eng, repeat, str(exc), exc.enqueue)
        out["build_log"] = eng.build_log
        return out


def check_feasible(
    plan: Manifest,
    device: Device,
    loader: Loader,
    *,
    progress: EventSink | None = None,
    binary_cache: str | Path | None = None,
) -> Feasibility:
    """Will ``plan`` run on ``device``?  The pre-flight without running anything: ``status``
    ``ok`` (every kernel enqueue can run), ``cannot-run`` (``cannot_run`` says which and
    why) or ``error`` (the check itself failed, e.g. a build the rule does not explain)."""
    import pyopencl as cl

    eng = Engine(plan, device, loader, progress=progress, binary_cache=binary_cache)
    steps = len(plan.get("steps", []))
    out: Feasibility = {"device": device, "status": "ok", "error": None, "steps": steps,
                        "runnable": steps, "cannot_run": [], "at_launch": []}  # fmt: skip
    try:
        found = eng.feasibility()
    except (cl.Error, ValueError, TypeError, RuntimeError, EngineError) as exc:
        msg = _cl_msg(exc) if isinstance(exc, cl.Error) else str(exc)
        out["status"], out["error"], out["cannot_run"] = "error", msg, eng.findings()
        return out
    out["cannot_run"] = found
    out["at_launch"] = [f for i in sorted(eng.at_launch) for f in eng.at_launch[i]]
    out["runnable"] = steps - len(eng.cannot)
    if found:
        out["status"] = "cannot-run"
    if eng.facts is not None:
        out["facts"] = dict(eng.facts)
    return out


def _failed(eng: Engine, repeat: int, error: str, enqueue: int | None) -> EngineResult:
    """The result of a run that stopped on an error (no steps)."""
    return {
        "device": eng.device,
        "ok": False,
        "error": error,
        "failed_enqueue": enqueue,
        "repeat": repeat,
        "steps": [],
        "builds": eng.builds,
        "notes": eng.notes,
        "cannot_run": eng.findings(),
    }
