"""The pure capture model: reading an Intercept Layer dump (stdlib, numpy, pcpp only)."""

from cltui.capture.capture import Capture, open_capture
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
    Problem,
    Program,
    SamplerDesc,
)

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
    "Problem",
    "Program",
    "SamplerDesc",
    "open_capture",
]
