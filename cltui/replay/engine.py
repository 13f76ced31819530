"""Run a replay plan on one OpenCL device (stdlib + numpy + pyopencl only).

This module is SELF-CONTAINED on purpose: ``cltui export`` copies it verbatim (with its parts,
``engine_base.py``, ``engine_programs.py``, ``engine_memory.py``, ``engine_checks.py``, and
the standard-library modules it imports: ``compare.py``, ``choice.py``, ``verdicts.py``,
``schema.py``, ``errors.py``, ``shellwords.py``; :func:`cltui.export.exporter.engine_modules`)
into a bundle next to ``manifest.json`` and ``data/``; the bundle's ``replay.py`` is this engine
plus a manifest.  Import nothing else of cltui here.

A *plan* (see ``cltui.replay.plan`` and ``PLAN_FORMAT``) is a JSON-able dict:

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

import dataclasses
import functools
import gc
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

if __package__:
    from . import compare as _compare
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
    from .engine_base import (
        PLAN_FORMAT,
        PLAN_VERSION,
        STAGES,
        EngineError,
        Hasher,
        Loader,
        Progress,
        _cl_msg,
        _Mem,
        _replays,
        _safe,
        _stats,
    )
    from .engine_checks import (
        _Checks,
    )
    from .engine_programs import (
        _Programs,
    )
    from .verdicts import VERDICT_COUNTS, VERDICT_EXIT, combine_verdicts, verdict, verdict_exit
else:  # pragma: no cover - the exported bundle runs this file as a script
    import compare as _compare  # type: ignore[no-redef, import-not-found]
    from choice import (  # type: ignore[no-redef, import-not-found]
        SIMULATORS,
        choice_line,
        choose_device,
        is_simulator,
        most_alike,
        name_likeness,
        name_tokens,
        user_choice,
    )
    from engine_base import (  # type: ignore[no-redef, import-not-found]
        PLAN_FORMAT,
        PLAN_VERSION,
        STAGES,
        EngineError,
        Hasher,
        Loader,
        Progress,
        _cl_msg,
        _Mem,
        _replays,
        _safe,
        _stats,
    )
    from engine_checks import (  # type: ignore[no-redef, import-not-found]
        _Checks,
    )
    from engine_programs import (  # type: ignore[no-redef, import-not-found]
        _Programs,
    )
    from verdicts import (  # type: ignore[no-redef, import-not-found]
        VERDICT_COUNTS,
        VERDICT_EXIT,
        combine_verdicts,
        verdict,
        verdict_exit,
    )

# the device rule and the verdict live in choice.py and verdicts.py (copied beside this file
# in a bundle); they are re-exported here for the runners
__all__ = [
    "PLAN_FORMAT",
    "PLAN_VERSION",
    "SIMULATORS",
    "STAGES",
    "VERDICT_COUNTS",
    "VERDICT_EXIT",
    "Engine",
    "EngineError",
    "choice_line",
    "choose_device",
    "combine_verdicts",
    "dir_loader",
    "is_simulator",
    "list_devices",
    "most_alike",
    "name_likeness",
    "name_tokens",
    "resolve_devices",
    "run_plan",
    "user_choice",
    "verdict",
    "verdict_exit",
]


# --------------------------------------------------------------------------- devices


def list_devices() -> list[dict[str, Any]]:
    """Every OpenCL device the ICD loader shows, with what replay cares about."""
    import pyopencl as cl

    out: list[dict[str, Any]] = []
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return out
    for pi, plat in enumerate(platforms):
        try:
            devices = plat.get_devices()
        except cl.Error:
            continue
        for di, dev in enumerate(devices):
            out.append(_device_info(pi, di, plat, dev))
    return out


def _device_info(pi: int, di: int, plat: Any, dev: Any) -> dict[str, Any]:
    import pyopencl as cl

    svm = 0
    try:
        svm = int(dev.svm_capabilities)
    except (cl.Error, AttributeError, cl.LogicError):
        svm = 0
    return {
        "id": f"{pi}:{di}",
        "platform": plat.name.strip(),
        "name": dev.name.strip(),
        "version": dev.version.strip(),
        "platform_version": plat.version.strip(),
        "driver": dev.driver_version.strip(),
        "type": _device_type(int(dev.type)),
        "svm": bool(svm),
        "images": bool(dev.image_support),
        "max_work_group_size": int(dev.max_work_group_size),
        "global_mem": int(dev.global_mem_size),
    }


def _device_type(bits: int) -> str:
    names = [n for b, n in ((2, "CPU"), (4, "GPU"), (8, "ACCELERATOR"), (16, "CUSTOM")) if bits & b]
    return " | ".join(names) or "DEFAULT"


def resolve_devices(specs: Sequence[str]) -> list[dict[str, Any]]:
    """``P:D`` indices or case-insensitive name substrings -> device infos (in order).

    An empty list selects the first device.  Raises :class:`EngineError` with a
    specific message for a spec that matches nothing.
    """
    devices = list_devices()
    if not devices:
        raise EngineError("no OpenCL device found (is an ICD installed?)")
    if not specs:
        return [devices[0]]
    chosen: list[dict[str, Any]] = []
    for spec in specs:
        s = spec.strip()
        matches: list[dict[str, Any]]
        if ":" in s and all(part.isdigit() for part in s.split(":", 1)):
            matches = [d for d in devices if d["id"] == s]
        else:
            low = s.lower()
            matches = [d for d in devices if low in _haystack(d)]
        if not matches:
            known = ", ".join(f"{d['id']} {d['name']}" for d in devices)
            raise EngineError(f"no device matches {spec!r} (devices: {known})")
        for m in matches:
            if m not in chosen:
                chosen.append(m)
    return chosen


def _haystack(d: dict[str, Any]) -> str:
    """What a name substring is matched against (the platform version says "PoCL")."""
    return " ".join(
        str(d.get(k, "")) for k in ("name", "platform", "version", "platform_version")
    ).lower()


def _open_device(info: dict[str, Any]) -> tuple[Any, Any]:
    import pyopencl as cl

    pi, di = (int(x) for x in info["id"].split(":"))
    plat = cl.get_platforms()[pi]
    dev = plat.get_devices()[di]
    return plat, dev


# --------------------------------------------------------------------------- data


def dir_loader(plan: dict[str, Any], root: str | Path) -> Loader:
    """Resolve data keys through ``plan['data'][key]['path']`` under ``root`` (memory-mapped)."""
    base = Path(root)
    table: dict[str, Any] = plan.get("data", {})

    def load(key: str) -> npt.NDArray[np.uint8]:
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


# --------------------------------------------------------------------------- helpers


# --------------------------------------------------------------------------- engine


@dataclasses.dataclass
class _Schedule:
    """What :meth:`Engine.run` precomputes before any launch, per step ``i``, and what the
    validation run leaves for the timing repetitions.

    ``loads[i]``: (object, host data, why: input | reload | verify); ``hoisted``: the input
    loads of each object's first use (restored before every repetition; their positions in
    ``hoisted_at``); ``reads``/``prereads``: the read-back buffers of the checks and
    pre-checks; ``geoms``: global, local, offset; ``ops``: the host transfers replayed before
    the step (bound calls); ``events``/``host_ns``: each launch's event and host time;
    ``inloop``: the loads the validation run did inside the loop (repetitions redo them);
    ``fired``: which loads ran; ``pres``/``chks``: the step's pre-check and check results.
    """

    steps: list[dict[str, Any]]
    loads: list[list[tuple[_Mem, npt.NDArray[np.uint8], str]]] = dataclasses.field(
        default_factory=list
    )
    hoisted: list[tuple[_Mem, npt.NDArray[np.uint8]]] = dataclasses.field(default_factory=list)
    hoisted_at: set[tuple[int, int]] = dataclasses.field(default_factory=set)
    reads: list[list[tuple[_Mem, npt.NDArray[np.uint8]]]] = dataclasses.field(
        default_factory=list
    )
    prereads: list[list[tuple[_Mem, npt.NDArray[np.uint8]]]] = dataclasses.field(
        default_factory=list
    )
    geoms: list[tuple[tuple[int, ...], tuple[int, ...] | None, tuple[int, ...] | None]] = (
        dataclasses.field(default_factory=list)
    )
    ops: list[list[Callable[[], Any]]] = dataclasses.field(default_factory=list)
    events: list[list[Any]] = dataclasses.field(default_factory=list)
    host_ns: list[list[int]] = dataclasses.field(default_factory=list)
    inloop: list[list[tuple[_Mem, npt.NDArray[np.uint8]]]] = dataclasses.field(
        default_factory=list
    )
    fired: list[list[bool]] = dataclasses.field(default_factory=list)
    pres: list[list[dict[str, Any]]] = dataclasses.field(default_factory=list)
    chks: list[list[dict[str, Any]]] = dataclasses.field(default_factory=list)


class Engine(_Programs, _Checks):
    """One plan on one device.  ``prepare()`` then ``run()``; see the module doc."""

    def __init__(
        self,
        plan: dict[str, Any],
        device: dict[str, Any],
        loader: Loader,
        *,
        progress: Progress | None = None,
        hasher: Hasher | None = None,
        tolerance: dict[str, Any] | None = None,
        arg_tolerance: dict[int, dict[str, Any]] | None = None,
        save_dir: str | Path | None = None,
        probe: bool = False,
        binary_cache: str | Path | None = None,
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
        base_tol = _compare.Tolerance.from_dict(plan.get("tolerance"))
        self.tol = base_tol.merged(tolerance)
        self.arg_tol = arg_tolerance or {}
        self.save_dir = Path(save_dir) if save_dir else None
        if probe and self.save_dir is None:
            raise EngineError("probing outputs needs a folder to save them in")
        self.probe = probe
        self.binary_cache = Path(binary_cache) if binary_cache else None
        self._stamps: dict[str, bytes] = {}
        self._writer: Any = None  # a ThreadPoolExecutor saving outputs
        self._writes: list[Any] = []
        self.notes: list[str] = []
        self.builds: dict[str, dict[str, Any]] = {}
        self.mems: dict[str, _Mem] = {}
        self.kernels: list[Any] = []
        self.ctx: Any = None
        self.queue: Any = None
        self.dev: Any = None
        self.has_svm = False
        self.build_log = ""
        # objects a kernel argument refers to must outlive the launches: clSetKernelArg
        # copies only the handle, and a released sampler makes NVIDIA's driver fail the
        # enqueue with CL_INVALID_KERNEL_ARGS (PoCL happens to tolerate it)
        self._arg_refs: list[Any] = []
        self._timed: list[tuple[Any, ...]] = []
        self._hoisted: list[Callable[[], Any]] = []
        self._sched = _Schedule([])  # the last run's (repeat_launches times it again)
        self._hash_kernel: Any = None  # built on the first hash-only check
        self._hash_error = ""  # why the device could not hash (then the host hasher)

    # ---- setup -------------------------------------------------------------

    def prepare(self) -> None:
        import pyopencl as cl

        _plat, self.dev = _open_device(self.device)
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
            self.kernels.append(kern)


    # ---- program binary cache (off unless ``binary_cache`` names a folder) --------------
    # Building from source costs PoCL ~45 ms a program even when its own cache hits (it
    # still preprocesses); from the binary it built, ~1.5 ms.  The key covers the source,
    # the options, the device and driver, pyopencl, and the files in every -I folder.


    # ---- transfers ---------------------------------------------------------


    def _prepare_timing(self) -> None:
        """What timing repetitions run: reloads inside the loop are device-side copies from
        staged inputs; the restores before each repetition too, except on a CPU device."""
        sched = self._sched
        kernels, geoms, inloop, hoisted = self.kernels, sched.geoms, sched.inloop, sched.hoisted
        events, host_ns = sched.events, sched.host_ns
        staged: dict[int, Callable[[], Any]] = {}

        def restorer(m: _Mem, host: npt.NDArray[np.uint8]) -> Callable[[], Any]:
            key = id(host)
            if key not in staged:
                staged[key] = self._restorer(m, host)
            return staged[key]

        # per launch: kernel, geometry, its reloads (or None), and the bound appends of its
        # event and host-time lists (fewer lookups in the timed loop)
        self._timed = [
            (
                kernels[i],
                *geoms[i],
                [*sched.ops[i], *(restorer(m, h) for m, h in inloop[i])] or None,
                events[i].append,
                host_ns[i].append,
            )
            for i in range(len(kernels))
        ]
        # before each repetition: on a CPU device a host write (a memcpy either way); a
        # device-side copy there made the launches after it ~8 % slower on PoCL (measured by
        # benchmarks/bench_replay_vs_raw.py); on a GPU the staged device-side copy
        if "CPU" in str(self.device.get("type", "")):
            self._hoisted = [functools.partial(self._write, m, h) for m, h in hoisted]
        else:
            self._hoisted = [restorer(m, h) for m, h in hoisted]


    # ---- run ---------------------------------------------------------------

    def run(self, repeat: int = 1) -> dict[str, Any]:
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
        probed: dict[str, Any] | None = None
        if self.probe:
            loop_ns, probed = self._probe_repetitions(max(repeat, 1) - 1, sched.reads)
        else:
            loop_ns = self.repeat_launches(max(repeat, 1) - 1)
        return self._results(sched, repeat, loop_ns, probed)

    def _schedule(self) -> _Schedule:
        """Everything precomputed before the launch loops (see :class:`_Schedule`)."""
        steps: list[dict[str, Any]] = self.plan["steps"]
        first_use: dict[str, int] = {}
        for i, st in enumerate(steps):
            for arg in st["args"]:
                if arg.get("mem") is not None:
                    first_use.setdefault(arg["mem"], i)
        sched = _Schedule(steps)
        for i, st in enumerate(steps):
            row: list[tuple[_Mem, npt.NDArray[np.uint8], str]] = []
            for ld in st.get("loads", []):
                m = self.mems[ld["mem"]]
                host = self._host_input(ld, m)
                kind = str(ld.get("why", "input"))
                if kind == "input" and first_use.get(ld["mem"]) == i:
                    sched.hoisted.append((m, host))
                    sched.hoisted_at.add((i, len(row)))
                row.append((m, host, kind))
            sched.loads.append(row)
        for st in steps:
            sched.reads.append(
                [
                    (self.mems[c["mem"]], self._readback(self.mems[c["mem"]]))
                    for c in st.get("checks", [])
                ]
            )
            sched.prereads.append(
                [
                    (self.mems[c["mem"]], self._readback(self.mems[c["mem"]]))
                    for c in st.get("prechecks", [])
                ]
            )
        sched.geoms = [
            (
                tuple(int(x) for x in st["global"]),
                tuple(int(x) for x in st["local"]) if st.get("local") else None,
                tuple(int(x) for x in st["offset"]) if st.get("offset") else None,
            )
            for st in steps
        ]
        # host-side transfers the plan replays before a step (fills, copies): bound calls
        sched.ops = [
            [self._transfer_op(st, t) for t in st.get("transfers", []) if _replays(t)]
            for st in steps
        ]
        sched.events = [[] for _ in steps]
        sched.host_ns = [[] for _ in steps]
        sched.inloop = [[] for _ in steps]
        sched.fired = [[False] * len(row) for row in sched.loads]
        return sched

    def _validate(self, sched: _Schedule) -> None:
        """The validation run: loads at each step, read-backs, a wait per launch, the
        step's checks sent with its ``step_done`` (so a later crash keeps them)."""
        import pyopencl as cl

        steps, loads, fired, inloop = sched.steps, sched.loads, sched.fired, sched.inloop
        reads, prereads = sched.reads, sched.prereads
        n = len(steps)
        q = self.queue
        launch = cl.enqueue_nd_range_kernel
        clock = time.perf_counter_ns
        kernels = self.kernels
        write = self._write
        read = self._read
        for i in range(n):
            self.progress({"type": "step", "i": i, "n": n, "enqueue": steps[i]["enqueue"]})
            for op in sched.ops[i]:
                op()
            for m, host in prereads[i]:
                read(m, host)
            for j, (m, host, kind) in enumerate(loads[i]):
                if kind == "verify":
                    fired[i][j] = self._verify(steps[i], m, host, prereads[i])
                else:
                    write(m, host)
                    fired[i][j] = True
                if fired[i][j] and (i, j) not in sched.hoisted_at:
                    inloop[i].append((m, host))
            g, lws, off = sched.geoms[i]
            t0 = clock()
            try:
                ev = launch(q, kernels[i], g, lws, off)
            except cl.Error as exc:
                raise EngineError(
                    f"enqueue {steps[i]['enqueue']} ({steps[i]['kernel']}): launch failed: "
                    f"{_cl_msg(exc)}",
                    steps[i]["enqueue"],
                ) from None
            t1 = clock()
            sched.events[i].append(ev)
            sched.host_ns[i].append(t1 - t0)
            for m, host in reads[i]:
                read(m, host)
            try:
                ev.wait()
                q.finish()  # its read-backs too: the step is checked now (see below)
            except cl.Error as exc:
                raise EngineError(
                    f"enqueue {steps[i]['enqueue']} ({steps[i]['kernel']}) failed on the "
                    f"device: {_cl_msg(exc)}",
                    steps[i]["enqueue"],
                ) from None
            # checked as each step ends, and sent with its step_done: a later crash or
            # hang of the process still leaves the verdicts of the steps that finished
            sched.pres.append([
                self._check(steps[i], c, host, "pre")
                for c, (_m, host) in zip(steps[i].get("prechecks", []), prereads[i], strict=True)
            ])
            sched.chks.append([
                self._check(steps[i], c, host, "post")
                for c, (_m, host) in zip(steps[i].get("checks", []), reads[i], strict=True)
            ])
            done_ok = all(c["status"] in ("equal", "within", "unchecked") for c in sched.chks[i])
            self.progress({
                "type": "step_done", "i": i, "enqueue": steps[i]["enqueue"],
                "step": {
                    "enqueue": steps[i]["enqueue"], "kernel": steps[i]["kernel"],
                    "status": "pass" if done_ok else "fail",
                    "checks": sched.chks[i], "prechecks": sched.pres[i],
                },
            })
        q.finish()

    def _results(
        self,
        sched: _Schedule,
        repeat: int,
        loop_ns: list[int],
        probed: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """The device result: each step's checks, loads, transfers and timing."""
        results = []
        all_ok = True
        for i, st in enumerate(sched.steps):
            prof = [_profile(e) for e in sched.events[i]]
            timing = {
                "queued_to_submit": _stats([p[1] - p[0] for p in prof]),
                "submit_to_start": _stats([p[2] - p[1] for p in prof]),
                "start_to_end": _stats([p[3] - p[2] for p in prof]),
                "host_enqueue": _stats(sched.host_ns[i]),
                "samples": len(prof),
            }
            chk = sched.chks[i]
            ok = all(c["status"] in ("equal", "within", "unchecked") for c in chk)
            all_ok = all_ok and ok
            results.append(
                {
                    "enqueue": st["enqueue"],
                    "kernel": st["kernel"],
                    "status": "pass" if ok else "fail",
                    "checks": chk,
                    "prechecks": sched.pres[i],
                    "loads": [
                        {
                            "mem": ld["mem"],
                            "why": ld.get("why", "input"),
                            "note": ld.get("note", ""),
                            "done": sched.fired[i][j],
                        }
                        for j, ld in enumerate(st.get("loads", []))
                    ],
                    "timing": timing,
                    "transfers": [
                        {
                            "enqueue": t["enqueue"],
                            "function": t.get("function", ""),
                            "mem": t.get("mem"),
                            "replayed": t.get("replayed"),
                            "why": t.get("why", ""),
                            "done": _replays(t),
                        }
                        for t in st.get("transfers", [])
                    ],
                    **({"recovered": True} if st.get("recovered") else {}),
                }
            )
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None
            for fut in self._writes:
                fut.result()  # a failed save fails the run as it did when written inline
            self._writes = []
        return {
            "device": self.device,
            "ok": all_ok,
            "error": None,
            "failed_enqueue": None,
            "repeat": max(repeat, 1),
            "loop": {
                "launches": len(sched.steps),
                "host_ns_per_repetition": _stats(loop_ns),
                **({"probe": True} if probed is not None else {}),
            },
            "steps": results,
            "builds": self.builds,
            "notes": self.notes,
            **({"probe": probed} if probed is not None else {}),
        }

    def repeat_launches(self, count: int) -> list[int]:
        """After :meth:`run`: ``count`` more timing repetitions (inputs restored, then the
        launches back to back); the host time of each repetition's launch loop in ns."""
        import pyopencl as cl

        if count <= 0:
            return []
        if not self._timed:
            self._prepare_timing()
        q = self.queue
        launch = cl.enqueue_nd_range_kernel
        clock = time.perf_counter_ns
        timed = self._timed
        out: list[int] = []
        paused = gc.isenabled()
        gc.disable()  # no collector pause inside the timed loops (as timeit does)
        event_lists = self._sched.events
        try:
            _settle_events(event_lists)
            for _rep in range(count):
                for restore in self._hoisted:
                    restore()
                q.finish()  # restores happen between repetitions, not between launches
                r0 = clock()
                for kern, g, lws, off, reloads, add_event, add_ns in timed:
                    if reloads:
                        for restore in reloads:
                            restore()
                    t0 = clock()
                    ev = launch(q, kern, g, lws, off)
                    add_ns(clock() - t0)
                    add_event(ev)
                out.append(clock() - r0)
                q.finish()
                # keep the four profiling counters, not the events: thousands of live
                # events made each launch of a 35-kernel range ~3 us slower on PoCL
                _settle_events(event_lists)
        finally:
            if paused:
                gc.enable()
        return out

    def _probe_repetitions(
        self, count: int, reads: list[list[tuple[_Mem, npt.NDArray[np.uint8]]]]
    ) -> tuple[list[int], dict[str, Any]]:
        """Timing repetitions that also read back every checked object after its launch.

        The validation run's read-backs are repetition 0.  A repetition's bytes that equal
        repetition 0's are not saved again (its file is repetition 0's); others are saved
        as ``<enqueue>_<mem>.r<rep>.bin``.  The read-backs are enqueued after each launch
        (so later launches wait for them on the in-order queue); the host time of the
        read-back calls is left out of the loop timer, and the result is flagged
        ``loop.probe``.  Returns (loop ns per repetition, the ``probe`` result entry).
        """
        import pyopencl as cl

        steps: list[dict[str, Any]] = self.plan["steps"]
        assert self.save_dir is not None
        self.save_dir.mkdir(parents=True, exist_ok=True)
        files: list[list[list[str]]] = []
        for st in steps:
            row = []
            for c in st.get("checks", []):
                path = self.save_dir / f"{st['enqueue']}_{_safe(c['mem'])}.bin"
                row.append([str(path)])  # written by _check
            files.append(row)
        if count > 0 and not self._timed:
            self._prepare_timing()
        bufs = [[(m, self._readback(m)) for m, _h in reads[i]] for i in range(len(steps))]
        q = self.queue
        launch = cl.enqueue_nd_range_kernel
        clock = time.perf_counter_ns
        read = self._read
        out: list[int] = []
        for rep in range(1, count + 1):
            for restore in self._hoisted:
                restore()
            q.finish()
            r0 = clock()
            spent = 0
            for i, (kern, g, lws, off, reloads, add_event, add_ns) in enumerate(self._timed):
                for restore in reloads or ():
                    restore()
                t0 = clock()
                ev = launch(q, kern, g, lws, off)
                t1 = clock()
                add_ns(t1 - t0)
                add_event(ev)
                for m, buf in bufs[i]:
                    read(m, buf)
                spent += clock() - t1
            out.append(clock() - r0 - spent)
            q.finish()
            for i, st in enumerate(steps):
                for k, (_m, buf) in enumerate(bufs[i]):
                    if _compare.bytes_equal(buf, reads[i][k][1]):
                        files[i][k].append(files[i][k][0])
                        continue
                    mem = _safe(steps[i]["checks"][k]["mem"])
                    path = self.save_dir / f"{st['enqueue']}_{mem}.r{rep}.bin"
                    buf.tofile(path)
                    files[i][k].append(str(path))
        entry = {
            "runs": count + 1,
            "outputs": [
                {"enqueue": st["enqueue"], "mem": c["mem"], "files": files[i][k]}
                for i, st in enumerate(steps)
                for k, c in enumerate(st.get("checks", []))
            ],
        }
        return out, entry


def _profile(ev: Any) -> tuple[int, int, int, int]:
    """(queued, submit, start, end) of a profiling event, or the tuple kept in its place."""
    if isinstance(ev, tuple):
        return ev
    p = ev.profile
    return (p.queued, p.submit, p.start, p.end)


def _settle_events(event_lists: list[list[Any]]) -> None:
    """Replace each list's finished events by their profiling counters (the queue has
    been finished): the counters are all the timing needs, and the events can go."""
    for lst in event_lists:
        for k in range(len(lst) - 1, -1, -1):
            if isinstance(lst[k], tuple):
                break
            lst[k] = _profile(lst[k])


def run_plan(
    plan: dict[str, Any],
    device: dict[str, Any],
    loader: Loader,
    *,
    repeat: int = 1,
    progress: Progress | None = None,
    hasher: Hasher | None = None,
    tolerance: dict[str, Any] | None = None,
    arg_tolerance: dict[int, dict[str, Any]] | None = None,
    save_dir: str | Path | None = None,
    probe: bool = False,
    binary_cache: str | Path | None = None,
) -> dict[str, Any]:
    """Prepare and run ``plan`` on ``device``; errors become ``result['error']``.

    ``probe``: every timing repetition also reads back the checked objects (see
    :meth:`Engine._probe_repetitions`; needs ``save_dir``); the result gains ``probe``.
    ``binary_cache``: a folder where programs built from source keep their device binary,
    so the next run on the same device and driver builds from it.
    """
    eng = Engine(
        plan,
        device,
        loader,
        progress=progress,
        hasher=hasher,
        tolerance=tolerance,
        arg_tolerance=arg_tolerance,
        save_dir=save_dir,
        probe=probe,
        binary_cache=binary_cache,
    )
    import pyopencl as cl

    try:
        eng.prepare()
        return eng.run(repeat)
    except (cl.Error, ValueError, TypeError, RuntimeError) as exc:
        msg = _cl_msg(exc) if isinstance(exc, cl.Error) else f"{type(exc).__name__}: {exc}"
        return {
            "device": device,
            "ok": False,
            "error": f"replay failed on {device['name']}: {msg}",
            "failed_enqueue": None,
            "repeat": repeat,
            "steps": [],
            "builds": eng.builds,
            "notes": eng.notes,
        }
    except EngineError as exc:
        return {
            "device": device,
            "ok": False,
            "error": str(exc),
            "failed_enqueue": exc.enqueue,
            "repeat": repeat,
            "steps": [],
            "builds": eng.builds,
            "notes": eng.notes,
            "build_log": eng.build_log,
        }
