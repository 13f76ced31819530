"""Device discovery and ``--device`` selection (thin cltui-side wrappers over the engine)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from cltui.errors import CltuiError
from cltui.replay import engine

if TYPE_CHECKING:  # the capture package is imported when a range asks for its device
    from cltui.capture.capture import Capture


class DeviceError(CltuiError, ValueError):
    """A ``--device`` spec matches nothing, or there is no device at all."""


def list_devices() -> list[dict[str, Any]]:
    """Every device: ``{"id": "P:D", "name", "platform", "version", "svm", "images", ...}``."""
    try:
        return cast("list[dict[str, Any]]", engine.list_devices())
    except ImportError as exc:  # pyopencl missing
        raise DeviceError(f"pyopencl is not available: {exc}") from None


def select_devices(specs: Sequence[str]) -> list[dict[str, Any]]:
    """``P:D`` indices or case-insensitive name substrings (``pocl``, ``oclgrind``)."""
    try:
        return cast("list[dict[str, Any]]", engine.resolve_devices(specs))
    except engine.EngineError as exc:
        raise DeviceError(str(exc)) from None
    except ImportError as exc:
        raise DeviceError(f"pyopencl is not available: {exc}") from None


def default_device(
    devices: Sequence[dict[str, Any]], captured: Sequence[dict[str, Any] | str]
) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """The device to replay on when none is named, and ``{"rule", "why"}``: the engine's
    :func:`~cltui.replay.engine.choose_device`, the rule the exported bundles follow too.

    ``captured``: the capture's devices, most wanted first (names or identities). PoCL's
    ``pthread-skylake-avx512-AMD EPYC`` capture replays by default on that device, else on
    ``pthread-skylake-avx512-Intel(R) Xeon(R) Processor`` (``"most-alike"``), an ``NVIDIA
    H100`` capture on an ``NVIDIA H200``; with no name in common, the first device that is
    not a simulator (Oclgrind), else the first.
    """
    return engine.choose_device(devices, captured)


def range_device(
    cap: Capture, first: int | None, last: int | None, kernel: str | None = None
) -> list[dict[str, Any]]:
    """The device of the first kernel enqueue of a range, as the capture knows it (name,
    platform, type): what :func:`default_device` looks for; [] when the capture does not say."""
    from cltui.capture.devinfo import captured_devices
    from cltui.capture.model import CaptureError, EnqueueKind

    positions = cap.find(kernel, kinds=[EnqueueKind.KERNEL], first=first, last=last)
    if not len(positions):
        return []
    try:
        enq = cap.enqueue(int(cap.numbers[int(positions[0])]))
    except (CaptureError, OSError, ValueError):  # only a default: the rule goes on without
        return []
    if not enq.device:
        return []
    return [dict(i) for i in captured_devices(cap.log, [enq.device])]
