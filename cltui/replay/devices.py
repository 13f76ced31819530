"""Device discovery and ``--device`` selection (thin cltui-side wrappers over the engine)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from cltui.errors import CltuiError
from cltui.replay import engine

if TYPE_CHECKING:  # the capture package is imported when a range asks for its device
    from collections.abc import Mapping

    from cltui.capture.capture import Capture
    from cltui.capture.devinfo import DeviceIdentity
    from cltui.replay.engine.schema import Device


class DeviceError(CltuiError, ValueError):
    """A ``--device`` spec matches nothing, or there is no device at all."""


def list_devices() -> list[Device]:
    """Every device: ``{"id": "P:D", "name", "platform", "version", "svm", "images", ...}``."""
    try:
        return engine.list_devices()
    except ImportError as exc:  # pyopencl missing
        raise DeviceError(f"pyopencl is not available: {exc}") from None


def select_devices(specs: Sequence[str], listed: Sequence[Device] | None = None) -> list[Device]:
    """``P:D`` indices or case-insensitive name substrings (``pocl``, ``oclgrind``), of
    ``listed`` (a child's listing: :meth:`cltui.replay.child.Child.listed_devices`; None:
    listed here)."""
    try:
        return engine.resolve_devices(specs, listed)
    except engine.EngineError as exc:
        raise DeviceError(str(exc)) from None
    except ImportError as exc:
        raise DeviceError(f"pyopencl is not available: {exc}") from None


def default_device(
    devices: Sequence[Device], captured: Sequence[Mapping[str, object] | str]
) -> tuple[Device | None, dict[str, str]]:
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
) -> list[DeviceIdentity]:
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
    return captured_devices(cap.log, [enq.device])
