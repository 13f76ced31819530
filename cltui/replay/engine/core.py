"""The engine: one plan on one device (:class:`Engine`, :func:`run_plan`), and the loader of
a plan's data files (:func:`dir_loader`).  See the package doc for the plan and the run."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .base import (
    PLAN_FORMAT,
    PLAN_VERSION,
    EngineError,
    EventSink,
    Hasher,
    HostArray,
    Loader,
    Restore,
    _cl_msg,
    _Mem,
    _stats,
)
from .compare import Tolerance
from .devices import open_device
from .programs import _Programs
from .results import step_results
from .schedule import Schedule, Timed
from .schema import (
    BuildInfo,
    Device,
    EngineResult,
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
            if path.stat().st_size == 0:
                return np.zeros(0, dtype=np.uint8)
            return np.memmap(path, dtype=np.uint8, mode="r")
        except OSError as exc:
            raise EngineError(f"cannot read {path}: {exc.strerror or exc}") from None

    return load


class Engine(_Timeline, _Programs):
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
        self.timeline = timeline and not probe
        self._stamps = {}
        self._writer = None
        self._writes = []
        self.notes: list[str] = []
        self.builds: dict[str, BuildInfo] = {}
        self.mems: dict[str, _Mem] = {}
        self.kernels = []
        self.has_svm = False
        self.build_log = ""
        # objects a kernel argument refers to must outlive the launches: clSetKernelArg
        # copies only the handle, and a released sampler makes NVIDIA's driver fail the
        # enqueue with CL_INVALID_KERNEL_ARGS (PoCL happens to tolerate it)
        self._arg_refs = []
        self._timed: list[Timed] = []
        self._hoisted: list[Restore] = []
        self._sched = Schedule([])  # the last run's (repeat_launches times it again)
        self._hash_kernel = None  # built on the first hash-only check
        self._hash_error = ""  # why the device could not hash (then the host hasher)

    # ---- setup -------------------------------------------------------------

    def prepare(self) -> None:
        """The context and profiling queue, every program, memory object and kernel (its
        arguments set); objects start zeroed."""
        import pyopencl as cl

        self.dev = open_device(self.device)
        self.ctx = cl.Context([self.dev])
        self.queue = cl.CommandQueue(
            self.ctx, self.dev, properties=cl.command_queue_properties.PROFILING_ENABLE
        )
        self.has_svm = bool(self.device.get("svm"))
        programs = self._build_programs()
        for mid, info in self.plan["memory"].items():
            self.mems[mid] = self._create_mem(mid, info)
        self._zero_fill()
        for step in self.plan["steps"]:
            prg = programs.get(step["program"])
            if prg is None:
                raise EngineError(
                    f"enqueue {step['enqueue']}: program {step['program']} was not built",
                    step["enqueue"],
                )
            self.kernels.append(self._kernel(prg, step))

    def _kernel(self, prg: cl.Program, step: StepSpec) -> cl.Kernel:
        """Step ``step``'s kernel with its arguments set."""
        import pyopencl as cl

        try:
            kern = cl.Kernel(prg, step["kernel"])
        except cl.Error as exc:
            raise EngineError(
                f"enqueue {step['enqueue']}: kernel {step['kernel']!r} not found in program "
                f"{step['program']}: {_cl_msg(exc)}",
                step["enqueue"],
            ) from None
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
        results, all_ok = step_results(sched)
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None
            for fut in self._writes:
                fut.result()  # a failed save fails the run as it did when written inline
            self._writes = []
        out: EngineResult = {
            "device": self.device,
            "ok": all_ok,
            "error": None,
            "failed_enqueue": None,
            "repeat": max(repeat, 1),
            "loop": {"launches": len(sched.steps), "host_ns_per_repetition": _stats(loop_ns)},
            "steps": results,
            "builds": self.builds,
            "notes": self.notes,
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
    }
