"""What every part of the replay engine shares: the plan format, the error, the device memory
object, small OpenCL helpers and the engine's state (standard library, numpy; pyopencl is
imported where it is used)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ...errors import CltuiError
from .schema import (
    BuildInfo,
    Device,
    Finding,
    FindingKind,
    Manifest,
    MemorySpec,
    Stats,
    ToleranceSpec,
    TransferSpec,
)

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    import pyopencl as cl

    from .compare import Tolerance
    from .feasible import DeviceFacts

PLAN_FORMAT = "cltui-replay-plan"

PINNED_MIN_BYTES = 0

PLAN_VERSION = 1

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


class _EngineState:
    """What every part of the engine reads and sets (assigned in ``Engine.__init__``); the
    parts (:mod:`.programs`, :mod:`.memory`, :mod:`.hashing`, :mod:`.checks`,
    :mod:`.launch`) are mixins of :class:`.core.Engine` over this state."""

    plan: Manifest
    device: Device
    loader: Loader
    progress: EventSink
    hasher: Hasher | None
    tol: Tolerance
    arg_tol: dict[int, ToleranceSpec]
    save_dir: Path | None
    probe: bool
    binary_cache: Path | None
    shared: Shared | None
    _stamps: dict[str, bytes]
    _writer: ThreadPoolExecutor | None  # saves outputs
    _writes: list[Future[None]]
    notes: list[str]
    builds: dict[str, BuildInfo]
    mems: dict[str, _Mem]
    kernels: list[cl.Kernel | None]  # None: the step cannot run on this device
    facts: DeviceFacts | None  # the device's facts (the pre-flight's)
    cannot: dict[int, list[Finding]]  # step index -> why it cannot run here
    set_up_failed: dict[int, str]  # step index -> why its kernel could not be set up
    at_launch: dict[int, list[Finding]]  # step -> findings its launch decides (AT_LAUNCH)
    bad_mems: dict[str, tuple[FindingKind, str]]  # objects not made here, and why
    marks: dict[int, dict[str, dict[str, int]]]  # enqueue -> pre/post -> mem -> cannot-run
    ctx: cl.Context
    queue: cl.CommandQueue
    dev: cl.Device
    has_svm: bool
    build_log: str
    _arg_refs: list[object]  # pyopencl objects kernel arguments refer to (kept alive)
    _hash_kernel: cl.Kernel | None
    _hash_error: str
