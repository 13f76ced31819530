"""Run a replay plan on one OpenCL device (stdlib + numpy + pyopencl only).

This module is SELF-CONTAINED on purpose: ``cltui export`` copies it verbatim (with the
standard-library modules it imports: ``compare.py``, ``choice.py``, ``verdicts.py``,
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
import os
import statistics
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

if __package__:
    from ..capture.shellwords import split_words
    from ..errors import CltuiError
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
    from errors import CltuiError  # type: ignore[no-redef, import-not-found]
    from shellwords import split_words  # type: ignore[no-redef, import-not-found]
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

PLAN_FORMAT = "cltui-replay-plan"
PINNED_MIN_BYTES = 0
PLAN_VERSION = 1

Loader = Callable[[str], npt.NDArray[np.uint8]]
Progress = Callable[[dict[str, Any]], None]
Hasher = Callable[[bytes], int]

STAGES = ("queued_to_submit", "submit_to_start", "start_to_end", "host_enqueue")


class EngineError(CltuiError):
    """A specific, one-line problem (bad device, missing data, build failure...)."""

    def __init__(self, message: str, enqueue: int | None = None) -> None:
        super().__init__(message)
        self.enqueue = enqueue


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


def _build_options(options: str) -> tuple[str, list[str]]:
    """Captured options with include paths that do not exist here mapped or dropped."""
    import shlex

    parts = split_words(options)
    out: list[str] = []
    notes: list[str] = []
    i = 0
    while i < len(parts):
        p = parts[i]
        path = None
        if p == "-I" and i + 1 < len(parts):
            path = parts[i + 1]
            i += 2
        elif p.startswith("-I") and len(p) > 2:
            path = p[2:]
            i += 1
        else:
            out.append(p)
            i += 1
            continue
        if os.path.isdir(path):
            out += ["-I", path]
            continue
        local = _local_include(path)
        if local is not None:
            out += ["-I", local]
            notes.append(f"include path {path} mapped to {local}")
        else:
            notes.append(f"include path {path} does not exist here: dropped")
    return " ".join(shlex.quote(x) for x in out), notes


def _local_include(path: str) -> str | None:
    norm = path.rstrip("/")
    if norm.endswith("pyopencl/cl"):
        try:
            import pyopencl

            cand = os.path.join(os.path.dirname(pyopencl.__file__), "cl")
            if os.path.isdir(cand):
                return cand
        except ImportError:  # pragma: no cover
            return None
    return None


def _cl_enum(group: Any, name: Any) -> int:
    if isinstance(name, int):
        return name
    key = str(name)
    for prefix in ("CL_MEM_OBJECT_", "CL_ADDRESS_", "CL_FILTER_", "CL_"):
        if key.startswith(prefix):
            key = key[len(prefix) :]
            break
    try:
        return int(getattr(group, key))
    except AttributeError:
        raise EngineError(f"unknown OpenCL enum {name!r}") from None


def _stats(values: list[int]) -> dict[str, float] | None:
    if not values:
        return None
    return {
        "min": float(min(values)),
        "median": float(statistics.median(values)),
        "max": float(max(values)),
    }


# --------------------------------------------------------------------------- engine


class _Mem:
    __slots__ = ("arr", "buf", "image_region", "info", "kind", "size", "subs", "svm")

    def __init__(self, info: dict[str, Any]) -> None:
        self.info = info
        self.kind: str = info["kind"]
        self.size: int = int(info.get("size") or 0)
        self.buf: Any = None  # cl.Buffer / cl.Image
        self.arr: Any = None  # SVM numpy array (device has SVM)
        self.svm: Any = None  # cl.SVM over arr
        self.image_region: tuple[int, int, int] | None = None
        self.subs: dict[int, Any] = {}


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


class Engine:
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

    def _build_programs(self) -> dict[str, Any]:
        import pyopencl as cl

        built: dict[str, Any] = {}
        used = {s["program"] for s in self.plan["steps"]}
        for pid, info in self.plan["programs"].items():
            if pid not in used:
                continue
            self.progress({"type": "build", "program": pid, "label": info.get("label", pid)})
            options, notes = _build_options(info.get("options") or "")
            for note in notes:  # the same include mapping for every program: say it once
                if note not in self.notes:
                    self.notes.append(note)
            t0 = time.perf_counter()
            how = ""
            try:
                if info.get("source"):
                    src = (
                        bytes(self.loader(info["source"])).rstrip(b"\0").decode("utf-8", "replace")
                    )
                    key = self._cache_key(src, options)
                    prg = self._cached_program(key, options)
                    if prg is not None:
                        self.builds[pid] = {
                            "how": "source (cached binary)",
                            "seconds": time.perf_counter() - t0,
                        }
                        built[pid] = prg
                        continue
                    prg = cl.Program(self.ctx, src)
                    how = "source"
                elif info.get("il"):
                    prg = cl.Program(self.ctx, bytes(self.loader(info["il"])))
                    how = "il"
                else:
                    chosen, how = _pick_binary(info.get("binaries", []), self.device["name"])
                    if chosen is None:
                        devs = ", ".join(b.get("device", "?") for b in info.get("binaries", []))
                        raise EngineError(
                            f"{info.get('label', pid)} has no source and no binary for "
                            f"{self.device['name']} (binaries for: {devs or 'none'})"
                        )
                    if how != "binary":
                        self.notes.append(
                            f"{info.get('label', pid)}: no source in the capture; built from "
                            f"the binary made on {chosen.get('device')}, a device named like "
                            f"{self.device['name']} (its driver decides whether it loads)"
                        )
                    prg = cl.Program(self.ctx, [self.dev], [bytes(self.loader(chosen["data"]))])
                with warnings.catch_warnings():  # compiler chatter is not a replay problem
                    warnings.simplefilter("ignore")
                    prg.build(options=options)
            except cl.Error as exc:
                log = ""
                try:
                    prg_any: Any = prg
                    log = str(prg_any.get_build_info(self.dev, cl.program_build_info.LOG))
                except Exception:
                    log = ""
                self.build_log = log
                lines = [ln.strip() for ln in log.splitlines() if "error" in ln.lower()]
                first = lines[0] if lines else _cl_msg(exc).splitlines()[0]
                if how.startswith("binary made on "):
                    raise EngineError(
                        f"{info.get('label', pid)}: the {how} (no source in the capture) "
                        f"does not load on {self.device['name']}: {first}"
                    ) from None
                raise EngineError(
                    f"{info.get('label', pid)}: build failed on {self.device['name']}: {first}"
                ) from None
            if how == "source":
                self._cache_store(key, prg)
            self.builds[pid] = {"how": how, "seconds": time.perf_counter() - t0}
            built[pid] = prg
        return built

    # ---- program binary cache (off unless ``binary_cache`` names a folder) --------------
    # Building from source costs PoCL ~45 ms a program even when its own cache hits (it
    # still preprocesses); from the binary it built, ~1.5 ms.  The key covers the source,
    # the options, the device and driver, pyopencl, and the files in every -I folder.

    def _cache_key(self, src: str, options: str) -> str | None:
        if self.binary_cache is None:
            return None
        import hashlib

        import pyopencl as cl

        h = hashlib.sha256()
        d = self.device
        for part in (d.get("name"), d.get("driver"), d.get("version"),
                     d.get("platform_version"), cl.VERSION_TEXT, options, src):
            h.update(str(part).encode("utf-8", "replace") + b"\0")
        parts = split_words(options)
        for i, part in enumerate(parts):
            folder = parts[i + 1] if part == "-I" and i + 1 < len(parts) else None
            if folder is None and part.startswith("-I") and len(part) > 2:
                folder = part[2:]
            if folder:
                h.update(self._include_stamp(folder))
        return h.hexdigest()

    def _include_stamp(self, folder: str) -> bytes:
        """Names, sizes and mtimes of the files under an include folder (once per engine)."""
        hit = self._stamps.get(folder)
        if hit is None:
            rows: list[str] = []
            for dirpath, _dirs, names in os.walk(folder):
                for name in sorted(names):
                    try:
                        st = os.stat(os.path.join(dirpath, name))
                    except OSError:
                        continue
                    rows.append(f"{dirpath}/{name}:{st.st_size}:{st.st_mtime_ns}")
            hit = self._stamps[folder] = "\n".join(sorted(rows)).encode("utf-8", "replace")
        return hit

    def _cached_program(self, key: str | None, options: str) -> Any:
        """The program built from a cached binary, or None (no cache, a miss, a failure)."""
        import pyopencl as cl

        if key is None or self.binary_cache is None:
            return None
        try:
            binary = (self.binary_cache / f"{key}.bin").read_bytes()
        except OSError:
            return None
        try:
            prg = cl.Program(self.ctx, [self.dev], [binary])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                prg.build(options=options)
        except (cl.Error, ValueError, RuntimeError):  # stale or foreign: build from source
            return None
        return prg

    def _cache_store(self, key: str | None, prg: Any) -> None:
        import pyopencl as cl

        if key is None or self.binary_cache is None:
            return
        try:
            binary = prg.get_info(cl.program_info.BINARIES)[0]
            if not binary:
                return
            self.binary_cache.mkdir(parents=True, exist_ok=True)
            tmp = self.binary_cache / f".{key}.{os.getpid()}.tmp"
            tmp.write_bytes(bytes(binary))
            os.replace(tmp, self.binary_cache / f"{key}.bin")  # atomic: readers see all or none
        except (OSError, cl.Error, IndexError, TypeError):
            return  # a cache that cannot be written is only slower

    def _create_mem(self, mid: str, info: dict[str, Any]) -> _Mem:
        import pyopencl as cl

        m = _Mem(info)
        rw = cl.mem_flags.READ_WRITE
        try:
            if m.kind == "image":
                im = info["image"]
                fmt = cl.ImageFormat(
                    _cl_enum(cl.channel_order, im["order"]), _cl_enum(cl.channel_type, im["type"])
                )
                w, h, d = (int(x) for x in im["shape"])
                itype = str(im.get("image_type", "CL_MEM_OBJECT_IMAGE2D"))
                if itype.endswith("IMAGE3D"):
                    m.buf = cl.create_image(self.ctx, rw, fmt, shape=(w, h, d))
                elif itype.endswith("IMAGE2D_ARRAY"):
                    m.buf = cl.create_image(self.ctx, rw, fmt, shape=(w, h, d), is_array=True)
                elif itype.endswith("IMAGE1D_ARRAY"):
                    m.buf = _image_1d(self.ctx, rw, fmt, w, h, cl.mem_object_type.IMAGE1D_ARRAY)
                elif itype.endswith("IMAGE1D"):
                    m.buf = _image_1d(self.ctx, rw, fmt, w, 0, cl.mem_object_type.IMAGE1D)
                else:
                    m.buf = cl.create_image(self.ctx, rw, fmt, shape=(w, h))
                m.image_region = (w, h, d)
                m.size = w * h * d * int(im["element_size"])
            elif m.kind == "svm" and self.has_svm:
                m.arr = cl.svm_empty(
                    self.ctx, cl.svm_mem_flags.READ_WRITE, max(m.size, 1), np.uint8
                )
                m.svm = cl.SVM(m.arr)
            elif m.kind == "subbuffer":
                parent = self.mems[info["parent"]]
                m.buf = parent.buf.get_sub_region(int(info.get("origin", 0)), m.size)
            else:  # buffer, or SVM emulated by a buffer
                if m.kind == "svm":
                    self.notes.append(
                        f"{info.get('label', mid)}: {self.device['name']} has no SVM: "
                        "emulated with a buffer"
                    )
                m.buf = cl.Buffer(self.ctx, rw, max(m.size, 1))
        except cl.Error as exc:
            raise EngineError(
                f"cannot create {info.get('label', mid)} on {self.device['name']}: {_cl_msg(exc)}"
            ) from None
        return m

    def _zero_fill(self) -> None:
        """Objects start zeroed (outputs that no load covers get defined contents)."""
        for m in self.mems.values():
            if m.kind == "subbuffer":
                continue
            self._write(m, np.zeros(m.size, dtype=np.uint8), blocking=False)
        self.queue.finish()

    def _arg_value(self, arg: dict[str, Any]) -> Any:
        import pyopencl as cl

        kind = arg["kind"]
        if kind in ("buffer", "image"):
            m = self.mems[arg["mem"]]
            return m.buf
        if kind == "svm":
            m = self.mems[arg["mem"]]
            off = int(arg.get("offset", 0))
            if m.svm is not None:
                if not off:
                    return m.svm
                view = cl.SVM(m.arr[off:])
                self._arg_refs.append(view)
                return view
            if not off:
                return m.buf
            if off not in m.subs:
                align = int(self.dev.mem_base_addr_align) // 8
                if align and off % align:
                    raise EngineError(
                        f"device has no SVM and the SVM offset {off} is not a multiple of its "
                        f"{align}-byte sub-buffer alignment"
                    )
                m.subs[off] = m.buf.get_sub_region(off, m.size - off)
            return m.subs[off]
        if kind == "scalar":
            raw = bytes.fromhex(arg["hex"])
            return np.frombuffer(raw, dtype=np.uint8).copy()
        if kind == "local":
            return cl.LocalMemory(max(int(arg["size"]), 1))
        if kind == "sampler":
            sampler = cl.Sampler(
                self.ctx,
                bool(arg["normalized"]),
                _cl_enum(cl.addressing_mode, arg["addressing"]),
                _cl_enum(cl.filter_mode, arg["filter"]),
            )
            self._arg_refs.append(sampler)
            return sampler
        if kind == "null":
            return None
        raise EngineError(f"argument {arg.get('index')}: cannot replay a {kind!r} argument")

    # ---- transfers ---------------------------------------------------------

    def _write(self, m: _Mem, host: npt.NDArray[np.uint8], blocking: bool = False) -> Any:
        import pyopencl as cl

        if m.image_region is not None:  # low-level call: enqueue_copy refuses 1D images
            return cl._cl._enqueue_write_image(
                self.queue, m.buf, (0, 0, 0), m.image_region, host, is_blocking=blocking
            )
        if m.svm is not None:
            return cl.enqueue_copy(self.queue, m.svm, host, is_blocking=blocking)
        return cl.enqueue_copy(self.queue, m.buf, host, is_blocking=blocking)

    def _read(self, m: _Mem, host: npt.NDArray[np.uint8]) -> Any:
        import pyopencl as cl

        if m.image_region is not None:
            return cl._cl._enqueue_read_image(
                self.queue, m.buf, (0, 0, 0), m.image_region, host, is_blocking=False
            )
        if m.svm is not None:
            return cl.enqueue_copy(self.queue, host, m.svm, is_blocking=False)
        return cl.enqueue_copy(self.queue, host, m.buf, is_blocking=False)

    def read_mem(self, mid: str) -> npt.NDArray[np.uint8]:
        """The current device contents of memory object ``mid`` (blocking)."""
        m = self.mems[mid]
        host = np.empty(m.size, np.uint8)
        self._read(m, host)
        self.queue.finish()
        return host

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

    def _restorer(self, m: _Mem, host: npt.NDArray[np.uint8]) -> Callable[[], Any]:
        """The cheapest way to put ``host`` back into ``m`` again and again: a device-side
        copy from a staged buffer (buffers, images), else a host write (SVM)."""
        import pyopencl as cl

        q = self.queue
        if m.svm is not None or m.buf is None or host.size != m.size or not m.size:
            return lambda: self._write(m, host)
        flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
        try:
            stage = cl.Buffer(self.ctx, flags, hostbuf=np.ascontiguousarray(host))
        except cl.Error:  # out of device memory: restore from the host
            return lambda: self._write(m, host)
        dst = m.buf
        if m.image_region is not None:
            region = m.image_region
            to_image = cl._cl._enqueue_copy_buffer_to_image
            return lambda: to_image(q, stage, dst, 0, (0, 0, 0), region)
        # the low-level call: enqueue_copy's argument dispatch costs ~2 us a call on PoCL
        copy_buffer = cl._cl._enqueue_copy_buffer
        return lambda: copy_buffer(q, stage, dst)

    def _host_input(self, load: dict[str, Any], m: _Mem) -> npt.NDArray[np.uint8]:
        data = self.loader(load["data"])
        if data.size == m.size:
            if m.svm is None and self._use_pinned(m.size):
                staged = self._pinned(m.size)
                staged[:] = data
                return staged
            # pyopencl wraps an SVM copy's host side in SVM(), which needs a writable array
            return data if (m.svm is None or data.flags.writeable) else np.array(data)
        fixed = self._pinned(m.size) if self._use_pinned(m.size) else np.empty(m.size, np.uint8)
        n = min(m.size, data.size)
        fixed[:n] = data[:n]
        fixed[n:] = 0
        return fixed

    def _readback(self, m: _Mem) -> npt.NDArray[np.uint8]:
        if m.svm is None and self._use_pinned(m.size):
            return self._pinned(m.size)
        return np.empty(m.size, np.uint8)

    def _use_pinned(self, nbytes: int) -> bool:
        """Transfers to and from a GPU go through pinned host memory: from pageable memory
        NVIDIA's driver reached 6 GB/s on an H200, from pinned memory 55 GB/s."""
        kind = str(self.device.get("type", ""))
        return nbytes >= PINNED_MIN_BYTES and "GPU" in kind and "CPU" not in kind

    def _pinned(self, nbytes: int) -> npt.NDArray[np.uint8]:
        """A host array in pinned (page-locked) memory, mapped for the engine's lifetime."""
        import pyopencl as cl

        try:
            buf = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR, nbytes)
            map_buffer: Any = cl.enqueue_map_buffer
            arr, _ev = map_buffer(
                self.queue, buf, cl.map_flags.READ | cl.map_flags.WRITE, 0, (nbytes,), np.uint8
            )
        except cl.Error:  # no pinned memory left: pageable memory still works
            return np.empty(nbytes, np.uint8)
        self._arg_refs.append(buf)
        return arr  # type: ignore[no-any-return]

    def _transfer_op(self, step: dict[str, Any], t: dict[str, Any]) -> Callable[[], Any]:
        """A host-side transfer of the capture (a fill, a copy) as one bound OpenCL call."""
        import pyopencl as cl

        op = t["op"]
        kind = op["op"]
        q = self.queue
        dst = self.mems[t["mem"]]
        where = f"enqueue {t['enqueue']} ({t.get('function', kind)}, before {step['enqueue']})"
        if dst.buf is None:
            raise EngineError(f"{where}: cannot replay it on an SVM allocation", t["enqueue"])
        if kind == "fill":
            pattern = np.frombuffer(bytes.fromhex(op["pattern"]), np.uint8).copy()
            return functools.partial(
                cl.enqueue_fill_buffer, q, dst.buf, pattern, int(op["offset"]), int(op["size"])
            )
        src = self.mems[op["src"]]
        if src.buf is None:
            raise EngineError(f"{where}: cannot replay it from an SVM allocation", t["enqueue"])
        if kind == "copy":
            return functools.partial(
                cl._cl._enqueue_copy_buffer, q, src.buf, dst.buf, int(op["size"]),
                int(op["src_offset"]), int(op["dst_offset"]),
            )  # fmt: skip
        if kind == "copy_rect":
            keys = ("src_row_pitch", "src_slice_pitch", "dst_row_pitch", "dst_slice_pitch")
            pitches = [int(op.get(k) or 0) for k in keys]
            return functools.partial(
                cl._cl._enqueue_copy_buffer_rect, q, src.buf, dst.buf,
                tuple(op["src_origin"] or (0, 0, 0)), tuple(op["dst_origin"] or (0, 0, 0)),
                tuple(op["region"]), tuple(pitches[:2]), tuple(pitches[2:]),
            )  # fmt: skip
        # copy_whole: the log has no image origin/region: the whole object
        zero = (0, 0, 0)
        if src.image_region is not None and dst.image_region is not None:
            return functools.partial(
                cl._cl._enqueue_copy_image, q, src.buf, dst.buf, zero, zero, src.image_region
            )
        if src.image_region is not None:
            return functools.partial(
                cl._cl._enqueue_copy_image_to_buffer, q, src.buf, dst.buf, zero,
                src.image_region, 0,
            )  # fmt: skip
        if dst.image_region is not None:
            return functools.partial(
                cl._cl._enqueue_copy_buffer_to_image, q, src.buf, dst.buf, 0, zero,
                dst.image_region,
            )  # fmt: skip
        return functools.partial(cl._cl._enqueue_copy_buffer, q, src.buf, dst.buf, dst.size)

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

    def _verify(
        self,
        step: dict[str, Any],
        m: _Mem,
        host: npt.NDArray[np.uint8],
        prereads: list[tuple[_Mem, npt.NDArray[np.uint8]]],
    ) -> bool:
        """A ``verify`` load: reload only if the replayed state differs from the captured Pre."""
        import pyopencl as cl

        mine = next((buf for pm, buf in prereads if pm is m), None)
        if mine is None:  # no pre-check of this object: read it now
            mine = np.empty(m.size, np.uint8)
            self._read(m, mine)
        try:
            self.queue.finish()
        except cl.Error as exc:
            raise EngineError(
                f"enqueue {step['enqueue']}: reading the state before it failed: {_cl_msg(exc)}",
                step["enqueue"],
            ) from None
        if _compare.bytes_equal(mine, host):
            return False
        self._write(m, host)
        return True

    def _check(
        self, step: dict[str, Any], c: dict[str, Any], host: npt.NDArray[np.uint8], when: str
    ) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mem": c["mem"],
            "args": c.get("args", []),
            "label": c.get("label", c["mem"]),
            "dtype": c.get("dtype"),
            "shape": c.get("shape"),
            "output": None,
        }
        if self.save_dir is not None and when == "post":
            self.save_dir.mkdir(parents=True, exist_ok=True)
            path = self.save_dir / f"{step['enqueue']}_{_safe(c['mem'])}.bin"
            if self._writer is None:
                from concurrent.futures import ThreadPoolExecutor

                self._writer = ThreadPoolExecutor(1, thread_name_prefix="cltui-save")
            # written while the next checks compare (creating a file costs ~1 ms here)
            self._writes.append(self._writer.submit(host.tofile, path))
            out["output"] = str(path)
        tol = self.tol.merged(c.get("tol"))
        for a in c.get("args", []):
            tol = tol.merged(self.arg_tol.get(int(a)))
        out["tolerance"] = tol.to_dict()
        out["data"] = c.get("data")
        if c.get("data"):
            res = _compare.compare_bytes(
                self.loader(c["data"]), host, c.get("dtype"), tol, c.get("shape")
            )
            out["status"] = res.status
            out["result"] = res.to_dict()
            out["summary"] = res.summary()
        elif c.get("hash64"):
            got, why = self._hash64(host, step["enqueue"])
            if got is None:
                out["status"] = "unchecked"
                out["summary"] = f"the capture holds only a hash of this object ({why})"
            else:
                want = int(str(c["hash64"]), 16)
                out["status"] = "equal" if got == want else "different"
                out["summary"] = (
                    "hash matches" if got == want else f"hash {got:x} != captured {want:x}"
                )
        else:
            out["status"] = "unchecked"
            out["summary"] = c.get("note", "no captured data to compare with")
        if c.get("after_unreplayed") is not None:
            at = int(c["after_unreplayed"])
            out["after_unreplayed"] = at
            out["summary"] = f"after unreplayed host write at {at}: {out['summary']}"
        return out

    def _hash64(
        self, host: npt.NDArray[np.uint8], enqueue: int | None = None
    ) -> tuple[int | None, str]:
        """The layer's 64-bit hash of ``host`` (to compare with a hash-only dump), and how.

        The hash is one sequential chain over 32-bit words: in Python it runs at ~4 MB/s,
        so it runs as a one-work-item kernel on this engine's device (PoCL: ~0.5 GB/s)
        unless the device is a simulator (Oclgrind interprets every operation) and a host
        ``hasher`` was given.  Without either: (None, why)."""
        simulator = "oclgrind" in str(self.device.get("platform", "")).lower()
        if self.hasher is not None and (simulator or self._hash_error):
            return self.hasher(host.tobytes()), "host"
        if not self._hash_error:
            try:
                return self._device_hash64(host, enqueue), "device"
            except Exception as exc:  # a device that cannot build or run the kernel
                self._hash_error = _cl_msg(exc) if hasattr(exc, "code") else str(exc)
            if self.hasher is not None:
                return self.hasher(host.tobytes()), "host"
        return None, f"it could not be hashed on {self.device.get('name')}: {self._hash_error}"

    def _device_hash64(self, host: npt.NDArray[np.uint8], enqueue: int | None = None) -> int:
        import pyopencl as cl

        if self._hash_kernel is None:
            with warnings.catch_warnings():  # compiler chatter is not a replay problem
                warnings.simplefilter("ignore")
                prg = cl.Program(self.ctx, HASH64_SOURCE).build()
            self._hash_kernel = cl.Kernel(prg, "cltui_hash64")
        words = (host.size + 3) // 4
        state = np.array(HASH64_SEED, dtype=np.uint32)
        if words:
            padded = np.ascontiguousarray(host)
            if host.size % 4:  # the last 1-3 bytes hash as one zero-padded word
                padded = np.zeros(words * 4, dtype=np.uint8)
                padded[: host.size] = host
            mf = cl.mem_flags
            data = cl.Buffer(self.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=padded)
            st = cl.Buffer(self.ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=state)
            k = self._hash_kernel
            k.set_arg(0, data)
            k.set_arg(3, st)
            # a launch per chunk: no single launch runs long enough to trip a GPU watchdog,
            # and a progress event after each (one GPU thread hashes ~50 MB/s: the runner
            # must not take a large object for a hang)
            for base in range(0, words, HASH64_CHUNK_WORDS):
                n = min(HASH64_CHUNK_WORDS, words - base)
                k.set_arg(1, np.uint64(base))
                k.set_arg(2, np.uint32(n))
                cl.enqueue_nd_range_kernel(self.queue, k, (1,), (1,)).wait()
                self.progress(
                    {"type": "hash", "enqueue": enqueue, "done": 4 * (base + n), "of": 4 * words}
                )
            cl.enqueue_copy(self.queue, state, st)
            self.queue.finish()
        return (int(state[1]) << 32) | int(state[2])


# The layer's hash (capture-format §5.2: Bob Jenkins' 96-bit mix over little-endian 32-bit
# words), one work-item walking the chain; ``cltui.capture.hashing.cli_hash64`` is the same
# in Python (the tests hold the two to each other).
HASH64_SEED = (0x428A2F98, 0x71374491, 0xB5C0FBCF)
HASH64_CHUNK_WORDS = 1 << 22
HASH64_SOURCE = """
__kernel void cltui_hash64(__global const uint* w, const ulong base, const uint n,
                           __global uint* state) {
    uint a = state[0], b = state[1], c = state[2];
    for (uint i = 0; i < n; i++) {
        a ^= w[base + i];
        a -= b; a -= c; a ^= c >> 13;
        b -= c; b -= a; b ^= a << 8;
        c -= a; c -= b; c ^= b >> 13;
        a -= b; a -= c; a ^= c >> 12;
        b -= c; b -= a; b ^= a << 16;
        c -= a; c -= b; c ^= b >> 5;
        a -= b; a -= c; a ^= c >> 3;
        b -= c; b -= a; b ^= a << 10;
        c -= a; c -= b; c ^= b >> 15;
    }
    state[0] = a; state[1] = b; state[2] = c;
}
"""


def _pick_binary(
    binaries: list[dict[str, Any]], device: str
) -> tuple[dict[str, Any] | None, str]:
    """The captured binary to build a program from on ``device``: the one made on it
    (``"binary"``), else the one made on the device named most like it (``"binary made on
    <name>"``: PoCL's binaries load on another CPU of the same target, NVIDIA's are PTX),
    else (None, "")."""
    made_on = [str(b.get("device", "")).strip() for b in binaries]
    if device in made_on:
        return binaries[made_on.index(device)], "binary"
    i = most_alike(made_on, device)
    if i is None:
        return None, ""
    return binaries[i], f"binary made on {made_on[i]}"


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


def _image_1d(ctx: Any, flags: Any, fmt: Any, width: int, layers: int, itype: Any) -> Any:
    """A 1D image (array) through a descriptor: pyopencl's create_image makes 2D/3D only."""
    import pyopencl as cl

    desc = cl.ImageDescriptor()
    desc.image_type = itype
    desc.shape = (width, 1, 1)
    desc.array_size = layers
    desc.pitches = (0, 0)
    desc.num_mip_levels = 0
    desc.num_samples = 0
    return cl.Image(ctx, flags, fmt, desc=desc)


def _replays(t: dict[str, Any]) -> bool:
    """The plan replays this host-side transfer as an operation (a fill, a copy)."""
    return t.get("replayed") == "op" and bool(t.get("op"))


def _safe(s: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in s)


def _cl_msg(exc: Exception) -> str:
    what = getattr(exc, "what", None)
    code = getattr(exc, "code", None)
    text = what() if callable(what) else str(exc)
    return f"{text}" if code is None else f"{text} ({code})"


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
