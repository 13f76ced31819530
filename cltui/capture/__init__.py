"""The pure capture model: reading an Intercept Layer dump (stdlib, numpy, pcpp only)."""

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
