"""The pure capture model: reading an Intercept Layer dump (stdlib, numpy, pcpp only)."""

from cltui.capture.capture import Capture, check_capture_folder, open_capture
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
