"""The pure capture model: reading an Intercept Layer dump (stdlib, numpy, pcpp only).

The names below are imported on first use (PEP 562): a module of the package that needs
none of them (``cltui.capture.safeopen`` in the replay engine's child process) costs no
more than itself, not the whole model (~40-80 ms)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.capture.model import (
        ArgKind,
        CaptureError,
        DeviceTime,
        Dump,
        Enqueue,
        EnqueueKind,
        EnqueueRow,
        ImageFormat,
        KernelArg,
        MemObject,
        NotACapture,
        Problem,
        Program,
        SamplerDesc,
    )
    from cltui.capture.opening import check_capture_folder, open_capture

_HOME = {
    "Capture": "capture",
    "check_capture_folder": "opening",
    "open_capture": "opening",
    **dict.fromkeys(
        ("ArgKind", "CaptureError", "DeviceTime", "Dump", "Enqueue", "EnqueueKind", "EnqueueRow",
         "ImageFormat", "KernelArg", "MemObject", "NotACapture", "Problem", "Program",
         "SamplerDesc"),
        "model",
    ),
}  # fmt: skip

__all__ = [
    "ArgKind",
    "Capture",
    "CaptureError",
    "DeviceTime",
    "Dump",
    "Enqueue",
    "EnqueueKind",
    "EnqueueRow",
    "ImageFormat",
    "KernelArg",
    "MemObject",
    "NotACapture",
    "Problem",
    "Program",
    "SamplerDesc",
    "check_capture_folder",
    "open_capture",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:  # a submodule (``from cltui.capture import images``) or a typo
        raise AttributeError(f"module 'cltui.capture' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"cltui.capture.{home}"), name)
    globals()[name] = value
    return value
