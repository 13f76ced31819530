"""What every part of the replay engine shares: the plan format, the error, the device memory
object, small OpenCL helpers and the engine's state (standard library, numpy; pyopencl is
imported where it is used).  Copied beside ``engine.py`` in a bundle."""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

if __package__:
    from ..capture.shellwords import split_words
    from ..errors import CltuiError
    from .choice import (
        most_alike,
    )
else:  # pragma: no cover - the exported bundle runs this file as a script
    from choice import (  # type: ignore[no-redef, import-not-found]
        most_alike,
    )
    from errors import CltuiError  # type: ignore[no-redef, import-not-found]
    from shellwords import split_words  # type: ignore[no-redef, import-not-found]

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


def _pick_binary(binaries: list[dict[str, Any]], device: str) -> tuple[dict[str, Any] | None, str]:
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


class _EngineState:
    """What every part of the engine reads and sets (assigned in ``Engine.__init__``); the
    parts (:mod:`engine_programs`, :mod:`engine_memory`, :mod:`engine_checks`) are mixins of
    :class:`Engine` over this state."""

    plan: dict[str, Any]
    device: dict[str, Any]
    loader: Loader
    progress: Callable[[dict[str, Any]], None]
    hasher: Hasher | None
    tol: Any  # compare.Tolerance
    arg_tol: dict[int, dict[str, Any]]
    save_dir: Path | None
    probe: bool
    binary_cache: Path | None
    _stamps: dict[str, bytes]
    _writer: Any  # a ThreadPoolExecutor saving outputs
    _writes: list[Any]
    notes: list[str]
    builds: dict[str, dict[str, Any]]
    mems: dict[str, _Mem]
    kernels: list[Any]
    ctx: Any
    queue: Any
    dev: Any
    has_svm: bool
    build_log: str
    _arg_refs: list[Any]
    _hash_kernel: Any
    _hash_error: str
