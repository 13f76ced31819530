"""What every part of the replay engine shares: the plan format, the error, the device memory
object, small OpenCL helpers and the run's options (standard library, numpy; pyopencl is
imported where it is used)."""

from __future__ import annotations

import os
import statistics
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
import numpy.typing as npt

from ...errors import CltuiError
from ...text.shellwords import include_option, plain_word
from .schema import (
    Device,
    Manifest,
    MemorySpec,
    Stats,
    ToleranceSpec,
    TransferSpec,
)

if TYPE_CHECKING:

    import pyopencl as cl

    from .compare import Tolerance

PLAN_FORMAT = "cltui-replay-plan"

PINNED_MIN_BYTES = 0

PLAN_VERSION = 1

_BUILDS = threading.Lock()


def build_program(prg: cl.Program, options: str = "") -> cl.Program:
    """Build ``prg`` with exactly ``options``, the text the driver gets (the captured text,
    as the C++ runner passes it; see :func:`add_bundle_includes` and
    :mod:`.builds`), one build at a time in this process, never through pyopencl's cache of
    source builds (the engine keeps its own, written atomically).

    ``Program.build`` appends pyopencl's own ``-I .../pyopencl/cl`` to every build, and
    ``-D PYOPENCL_USING_OCLGRIND`` on Oclgrind (its random123 headers then leave out 64-bit
    ``mul_hi``): a program the captured application never built, and not the one the C++
    runner builds from the same bundle.  PoCL keys its cache of builds on the options, so
    each kernel was also compiled twice, once per runner.  The program is built through the
    object ``Program`` wraps; where a pyopencl lacks that object, through ``Program.build``.

    pyopencl's cache holds a lock file while it builds.  A process killed in a build
    (Oclgrind's crash, a timeout's kill, ctrl-c) left it behind, and every later build on
    Oclgrind (PoCL caches its own builds) waited a minute and failed: a replay said "hang:
    the build did not finish within 60 s", explain ``KeyError: 'PYOPENCL_CACHE_FAILURE_FATAL'``
    (how pyopencl reports any failure of its cache).  That lock also kept two builds of one
    process apart, and Oclgrind dies of a SIGSEGV on two at once (a sweep builds its next
    programs in a thread while the base's build runs): :data:`_BUILDS` does that now."""
    raw = _wrapped_program(prg)
    with _BUILDS:
        if raw is None:
            off: Any = False  # pyopencl's "no cache" (typed str | None)
            built: cl.Program = prg.build(options=options, cache_dir=off)
            return built
        raw.build(options.encode(), None)
    return prg


def include_spelling(path: str, cwd: str | None = None) -> str:
    """How an include folder is named to the driver from the current folder (``cwd``, else
    the process's): ``path`` itself where it has no space, else the folder relative to the
    current folder where that has none, else ``path`` (quoted by :func:`include_option`).
    PoCL finds no header in an ``-I`` folder with a space in its name, quoted or not (a
    bundle under ``~/My Bundles`` failed every build with includes), and Oclgrind crashes on
    an unquoted one.  A current folder that is gone names no relative folder.  The C++
    runner spells it the same (``include_spelling`` in cpp/base.hpp;
    tests/fixtures/include_path_cases.json)."""
    if plain_word(path):
        return path
    try:
        here = os.getcwd() if cwd is None else cwd
    except OSError:  # the current folder was removed
        return path
    rel = os.path.relpath(os.path.normpath(os.path.join(here, path)), here)
    return rel if plain_word(rel) else path


def bundle_options(options: str, dirs: list[str], cwd: str | None = None) -> str:
    """What the driver gets for a bundle's program: its include folders (absolute, in order)
    as ``-I`` options, one space between, then its options as they are, after one more
    space.  The C++ runner's ``bundle_options`` (cpp/base.hpp) makes the same text
    (tests/fixtures/build_option_cases.json)."""
    words = [include_option(include_spelling(d, cwd)) for d in dirs]
    return " ".join([*words, options] if options else words)


def add_bundle_includes(plan: Manifest, root: Path, cwd: str | None = None) -> None:
    """Each program's bundled include folders (``include_dirs``, under ``root``) made
    ``-I`` options before the program's own (:func:`bundle_options`): the bundle's headers
    win over a captured folder's.  What a bundle's replay.py and ``cltui feasible`` do to a
    verified plan."""
    for prog in plan.get("programs", {}).values():
        dirs = [os.path.join(root, d) for d in prog.get("include_dirs", [])]
        if dirs:
            prog["options"] = bundle_options(prog.get("options") or "", dirs, cwd)


def _wrapped_program(prg: cl.Program) -> Any:
    """The ``_cl._Program`` a ``Program`` wraps (made from its source here, as
    ``Program.build`` does), or None where this pyopencl keeps it elsewhere."""
    import warnings

    getter = getattr(prg, "_get_prg", None)
    if getter is None:
        return None
    with warnings.catch_warnings():  # "pre-build attribute access defeats compiler caching"
        warnings.simplefilter("ignore")
        raw = getter()
    return raw if callable(getattr(raw, "build", None)) else None


Loader = Callable[[str], npt.NDArray[np.uint8]]

# What the engine tells as it runs ({"type": "build" | "step" | "timing" | ..., ...}): JSON, sent
# as it is over the runner's pipe; a runner turns it into a cltui.progress.ProgressEvent.
EngineEvent = dict[str, object]

EventSink = Callable[[EngineEvent], None]

Hasher = Callable[[bytes], int]

HostArray = npt.NDArray[np.uint8]

Restore = Callable[
    [], object
]  # a bound OpenCL call that puts an input back (or replays a transfer)

STAGES = ("queued_to_submit", "submit_to_start", "start_to_end", "host_enqueue")


class EngineError(CltuiError):
    """A specific, one-line problem (bad device, missing data, build failure...)."""

    def __init__(self, message: str, enqueue: int | None = None) -> None:
        super().__init__(message)
        self.enqueue = enqueue


def _cl_enum(group: object, name: str | int) -> int:
    """The value of an OpenCL enum named like ``CL_RGBA`` / ``RGBA`` in a pyopencl group."""
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


def _stats(values: list[int]) -> Stats | None:
    if not values:
        return None
    return {
        "min": float(min(values)),
        "median": float(statistics.median(values)),
        "max": float(max(values)),
    }


class _Mem:
    """One memory object of the plan on the device: ``obj`` is what a kernel argument gets
    (the buffer or the image; None for real SVM, whose pointer is ``svm`` over ``arr``)."""

    __slots__ = (
        "arr",
        "buf",
        "image",
        "image_region",
        "info",
        "kind",
        "obj",
        "size",
        "subs",
        "svm",
    )

    def __init__(self, info: MemorySpec) -> None:
        self.info = info
        self.kind: str = info["kind"]
        self.size: int = int(info.get("size") or 0)
        self.buf: cl.Buffer | None = None  # a buffer (or SVM emulated by one)
        self.image: cl.Image | None = None
        self.obj: cl.Buffer | cl.Image | None = None
        self.arr: HostArray | None = None  # SVM numpy array (device has SVM)
        self.svm: cl.SVM[HostArray] | None = None  # cl.SVM over arr
        self.image_region: tuple[int, int, int] = (0, 0, 0)  # an image's (w, h, d)
        self.subs: dict[int, cl.Buffer] = {}


def _image_1d(
    ctx: cl.Context,
    flags: cl.mem_flags,
    fmt: cl.ImageFormat,
    width: int,
    layers: int,
    itype: cl.mem_object_type,
) -> cl.Image:
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


def _replays(t: TransferSpec) -> bool:
    """The plan replays this host-side transfer as an operation (a fill, a copy)."""
    return t.get("replayed") == "op" and bool(t.get("op"))


def _safe(s: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in s)


def _cl_msg(exc: Exception) -> str:
    what = getattr(exc, "what", None)
    code = getattr(exc, "code", None)
    text = what() if callable(what) else str(exc)
    return f"{text}" if code is None else f"{text} ({code})"


class Shared:
    """One device's context, profiling queue and built programs, shared by several engines
    in one process (an A/B run, a sweep): each engine still has its own memory objects and
    kernels; a program built from the same source with the same options is built once."""

    def __init__(self, dev: cl.Device, ctx: cl.Context, queue: cl.CommandQueue) -> None:
        self.dev = dev
        self.ctx = ctx
        self.queue = queue
        self.programs: dict[tuple[str, str], cl.Program] = {}


@dataclass(frozen=True)
class EngineOptions:
    """What one engine run is asked to do, fixed when the engine is made: every part reads
    it, none changes it (the parts own their own state: see :class:`.core.Engine`)."""

    plan: Manifest
    device: Device
    loader: Loader
    progress: EventSink
    tol: Tolerance  # the plan's tolerance merged with the caller's
    hasher: Hasher | None = None
    arg_tol: dict[int, ToleranceSpec] = field(default_factory=dict)
    save_dir: Path | None = None
    probe: bool = False
    binary_cache: Path | None = None
    timeline: bool = False


class EngineKeywords(TypedDict, total=False):
    """The keyword options of :class:`.core.Engine` and :func:`.core.run_plan`, one list for
    both (each becomes a field of :class:`EngineOptions`)."""

    progress: EventSink | None  # every engine event (None: none is sent)
    hasher: Hasher | None  # the capture's hash of a buffer (hash-only dumps)
    tolerance: ToleranceSpec | None  # merged over the plan's
    arg_tolerance: dict[int, ToleranceSpec] | None  # per argument index
    save_dir: str | Path | None  # keep the replayed outputs here
    probe: bool  # every timing repetition reads the checked objects back (needs save_dir)
    binary_cache: str | Path | None  # programs built from source keep their binary here
    shared: Shared | None  # a context and queue several engines share
    timeline: bool  # the timing repetitions keep every launch
