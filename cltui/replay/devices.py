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
    from cltui.capture.ranges import EnqueueRange
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
    ``listed`` (a child's listing: :meth:`cltui.process.child.Child.listed_devices`; None:
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


def capture_devices(
    cap: Capture, first: int | None, last: int | None, kernel: str | None = None
) -> list[DeviceIdentity]:
    """The capture's device for a range: the one definition that every command, the app and
    the bundles use.  The devices the range's kernel enqueues ran on, each once, in the order
    they first appear (the first kernel's first: "most wanted first" for :func:`default_device`),
    with the name, platform and type the log gives them; [] when the capture does not say."""
    from cltui.capture.decode.enqueue import enqueue_device
    from cltui.capture.devinfo import captured_devices
    from cltui.capture.model import EnqueueKind

    names: dict[str, None] = {}
    for pos in cap.find(kernel, kinds=[EnqueueKind.KERNEL], first=first, last=last):
        name = enqueue_device(cap, int(pos))
        if name:
            names.setdefault(name)
    return captured_devices(cap.log, list(names))


def devices_for(
    cap: Capture, rng: EnqueueRange, specs: Sequence[str], listed: Sequence[Device] | None = None
) -> tuple[list[Device], dict[str, str]]:
    """The devices to run ``rng`` of ``cap`` on, and why: the devices ``--device`` names
    (``specs``), else the one :func:`default_device` picks for the capture's device
    (:func:`capture_devices`).  ``listed``: the devices here as a child listed them (None:
    listed now).  One line in a :class:`DeviceError` when a spec names nothing or there is
    no device."""
    if specs:
        return select_devices(list(specs), listed), engine.user_choice(specs)
    here = list_devices() if listed is None else list(listed)
    dev, choice = default_device(here, capture_devices(cap, rng.first, rng.last, rng.kernel))
    if dev is None:
        raise DeviceError(choice["why"] + " (is an ICD installed?)")
    return [dev], choice
