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
    EngineKeywords,
    EngineOptions,
    EventSink,
    HostArray,
    Loader,
    Shared,
    _cl_msg,
    _stats,
)
from .builds import Programs
from .checks import Checker
from .compare import Tolerance
from .devices import open_device
from .hashing import DeviceHash
from .launch import Launcher
from .memory import DeviceMemory
from .preflight import Preflight
from .results import step_results
from .schedule import Schedule
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
)
from .timeline import timeline_launches

if TYPE_CHECKING:
    from typing import Unpack

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


class Engine:
    """One plan on one device.  ``prepare()`` then ``run()``; see the package doc.

    The engine *has* its parts, each made with what it needs over one frozen
    :class:`.base.EngineOptions`, each the one owner of its state: :class:`.preflight.Preflight`
    (what cannot run here), :class:`.programs.Programs` (the builds), and, once the device's
    context exists, :class:`.memory.DeviceMemory` (the memory objects),
    :class:`.hashing.DeviceHash`, :class:`.checks.Checker` and :class:`.launch.Launcher` (the
    kernels and the launch loops; :mod:`.timeline` times them launch by launch).  ``notes``
    is the one list every part adds its notes to."""

    def __init__(
        self, plan: Manifest, device: Device, loader: Loader, **kw: Unpack[EngineKeywords]
    ) -> None:
        if plan.get("format") != PLAN_FORMAT or int(plan.get("version", 0)) > PLAN_VERSION:
            raise EngineError(
                f"not a replay plan this engine reads (format {plan.get('format')!r}, "
                f"version {plan.get('version')!r})"
            )
        probe, save_dir, cache = kw.get("probe", False), kw.get("save_dir"), kw.get("binary_cache")
        if probe and not save_dir:
            raise EngineError("probing outputs needs a folder to save them in")
        self.opts = EngineOptions(
            plan=plan, device=device, loader=loader,
            progress=kw.get("progress") or (lambda _e: None),
            tol=Tolerance.from_dict(plan.get("tolerance")).merged(kw.get("tolerance")),
            hasher=kw.get("hasher"), arg_tol=kw.get("arg_tolerance") or {},
            save_dir=Path(save_dir) if save_dir else None, probe=probe,
            binary_cache=Path(cache) if cache else None,
            timeline=kw.get("timeline", False) and not probe,
        )  # fmt: skip
        self.shared = kw.get("shared")
        self.notes: list[str] = []
        self.preflight = Preflight(self.opts)
        self.programs = Programs(self.opts, self.notes, self.preflight)
        self._launcher: Launcher | None = None  # made by prepare()

    # ---- what the callers read ---------------------------------------------

    @property
    def plan(self) -> Manifest:
        return self.opts.plan

    @property
    def device(self) -> Device:
        return self.opts.device

    @property
    def builds(self) -> dict[str, BuildInfo]:
        return self.programs.builds

    @property
    def build_log(self) -> str:
        return self.programs.build_log

    @property
    def launcher(self) -> Launcher:
        """The launch part (after :meth:`prepare`)."""
        if self._launcher is None:
            raise EngineError("the engine is not prepared")
        return self._launcher

    def findings(self) -> list[Finding]:
        """Every pre-flight finding, in step order."""
        return self.preflight.findings()

    def read_mem(self, mid: str) -> HostArray:
        """The current device contents of memory object ``mid`` (blocking)."""
        return self.launcher.memory.read_mem(mid)

    # ---- setup -------------------------------------------------------------

    def prepare(self) -> None:
        """The context and profiling queue (the :class:`.base.Shared` ones when given),
        every program, memory object and kernel (its arguments set); objects start zeroed."""
        programs = self.build()
        assert self.shared is not None  # build() opened it
        memory = DeviceMemory(self.opts, self.notes, self.shared)
        checker = Checker(self.opts, memory, DeviceHash(self.opts, self.shared), self.preflight)
        self._launcher = launcher = Launcher(
            self.opts, self.notes, memory, checker, self.preflight
        )
        memory.create_all(self.plan, self.preflight.bad_mems)
        failed = launcher.set_up_failed
        for i, (step, kern) in enumerate(self._checked_kernels(programs, failed)):
            launcher.kernels.append(None if kern is None else self._set_up(i, kern, step))
        self.preflight.done(failed)

    def feasibility(self) -> list[Finding]:
        """The pre-flight alone (what ``cltui feasible`` asks): the device's facts, the
        plan's findings, the builds and the kernels' findings; nothing is made or run."""
        import pyopencl as cl

        dev = open_device(self.device)
        ctx = cl.Context([dev])
        self.preflight.plan_findings(dev, ctx)
        programs = self.programs.build_all(dev, ctx)
        for _step, _kern in self._checked_kernels(programs, None, dev):
            pass
        return self.findings()

    def _checked_kernels(
        self,
        programs: dict[str, cl.Program],
        set_up_failed: dict[int, str] | None,
        dev: cl.Device | None = None,
    ) -> Iterator[tuple[StepSpec, cl.Kernel | None]]:
        """Each step and its kernel (None: it cannot run here, the pre-flight says why;
        with ``set_up_failed``: or the kernel could not be made, which it then says)."""
        if dev is None:
            assert self.shared is not None
            dev = self.shared.dev
        for i, step in enumerate(self.plan["steps"]):
            if i in self.preflight.cannot:
                yield step, None
                continue
            prg = programs.get(step["program"])
            if prg is None:
                raise EngineError(
                    f"enqueue {step['enqueue']}: program {step['program']} was not built",
                    step["enqueue"],
                )
            try:
                kern = self.preflight.checked_kernel(i, prg, step, dev)
            except EngineError as exc:
                if set_up_failed is None or exc.enqueue is None:
                    raise
                set_up_failed[i] = str(exc)  # that step's error: the others still run
                kern = None
            yield step, kern

    def build(self) -> dict[str, cl.Program]:
        """The context and queue (the shared ones when given), and the plan's programs (a
        :class:`.base.Shared` keeps them for the next engine: a sweep builds ahead)."""
        if self.shared is None:
            self.shared = open_shared(self.device)
        shared = self.shared
        self.preflight.plan_findings(shared.dev, shared.ctx)  # what cannot run here
        return self.programs.build_all(shared.dev, shared.ctx, shared)

    def _set_up(self, i: int, kern: cl.Kernel, step: StepSpec) -> cl.Kernel | None:
        """Step ``i``'s kernel with its arguments set, or None when they cannot be: that is
        the step's error (``set_up_failed``), the other steps still run and are counted."""
        try:
            return self._set_args(kern, step)
        except EngineError as exc:
            if exc.enqueue is None:
                raise
            self.launcher.set_up_failed[i] = str(exc)
            return None

    def _set_args(self, kern: cl.Kernel, step: StepSpec) -> cl.Kernel:
        """Step ``step``'s kernel with its arguments set."""
        import pyopencl as cl

        memory = self.launcher.memory
        for arg in step["args"]:
            try:
                kern.set_arg(int(arg["index"]), memory.arg_value(arg))
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
        """Per step, the device time (start to end, ns) of every launch so far (see
        :meth:`.launch.Launcher.launch_times`)."""
        return self.launcher.launch_times()

    def repeat_launches(self, count: int) -> list[int]:
        """After :meth:`run`: ``count`` more timing repetitions; the host time of each
        repetition's launch loop in ns (:meth:`.launch.Launcher.repeat_launches`)."""
        return self.launcher.repeat_launches(count)

    def timeline_launches(self, count: int) -> TimelineResult:
        """``count`` timing repetitions with every launch kept (:mod:`.timeline`)."""
        return timeline_launches(self.launcher, count)

    def run(self, repeat: int = 1) -> EngineResult:
        """The validation run, then ``repeat - 1`` timing repetitions; the device result.

        The launcher's three steps: ``schedule`` precomputes everything the launch loops
        touch, ``validate`` runs each step once with its loads, read-backs and checks (a
        wait per launch, so a fault names its enqueue), ``repeat_launches`` (or
        ``probe_repetitions``) times the launches back to back; :meth:`_results`
        assembles the result.
        """
        launcher = self.launcher
        sched = launcher.schedule()
        launcher.validate(sched)
        if repeat > 1:
            self.opts.progress({"type": "timing", "repeat": repeat})
        launcher.sched = sched
        launcher.timed = []
        probed: ProbeResult | None = None
        line: TimelineResult | None = None
        if self.opts.probe:
            loop_ns, probed = launcher.probe_repetitions(max(repeat, 1) - 1, sched.reads)
        elif self.opts.timeline:
            line = timeline_launches(launcher, max(repeat, 1) - 1)
            loop_ns = [r["loop_ns"] for r in line["repetitions"]]
        else:
            loop_ns = launcher.repeat_launches(max(repeat, 1) - 1)
        out = self._results(sched, repeat, loop_ns, probed)
        if line is not None:
            out["timeline"] = line
        return out

    def _results(
        self, sched: Schedule, repeat: int, loop_ns: list[int], probed: ProbeResult | None
    ) -> EngineResult:
        """The device result: each step's checks, loads, transfers and timing."""
        launcher = self.launcher
        failed_at = launcher.set_up_failed
        results, all_ok = step_results(sched, self.preflight.cannot, set(launcher.memory.mems))
        # a step whose kernel could not be set up did not run: no result, the run's error
        results = [r for i, r in enumerate(results) if i not in failed_at]
        launcher.checker.finish_saves()
        failed = [failed_at[i] for i in sorted(failed_at)]
        first = self.plan["steps"][min(failed_at)] if failed else None
        more = f" (and {len(failed) - 1} more enqueue{'s' if len(failed) > 2 else ''} " \
            "not set up)" if len(failed) > 1 else ""
        out: EngineResult = {
            "device": self.device,
            "ok": all_ok and not failed,
            "error": failed[0] + more if failed else None,
            "failed_enqueue": int(first["enqueue"]) if first is not None else None,
            "repeat": max(repeat, 1),
            "loop": {
                "launches": sum(k is not None for k in launcher.kernels),
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
    plan: Manifest, device: Device, loader: Loader, *, repeat: int = 1,
    **kw: Unpack[EngineKeywords],
) -> EngineResult:  # fmt: skip
    """Prepare and run ``plan`` on ``device`` (the options: :class:`.base.EngineKeywords`, as
    for :class:`Engine`); errors become ``result['error']``.

    ``probe``: every timing repetition also reads back the checked objects (see
    :meth:`Engine._probe_repetitions`; needs ``save_dir``); the result gains ``probe``.
    ``binary_cache``: a folder where programs built from source keep their device binary,
    so the next run on the same device and driver builds from it.
    ``timeline``: the timing repetitions keep every launch (the result gains ``timeline``:
    :meth:`Engine.timeline_launches`).
    """
    eng = Engine(plan, device, loader, **kw)
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
    pre = eng.preflight
    out["at_launch"] = [f for i in sorted(pre.at_launch) for f in pre.at_launch[i]]
    out["runnable"] = steps - len(pre.cannot)
    if found:
        out["status"] = "cannot-run"
    if pre.facts is not None:
        out["facts"] = dict(pre.facts)
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
