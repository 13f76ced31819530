"""Device discovery and ``--device`` selection (thin cltui-side wrappers over the engine)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from cltui.replay import engine


class DeviceError(ValueError):
    """A ``--device`` spec matches nothing, or there is no device at all."""


def list_devices() -> list[dict[str, Any]]:
    """Every device: ``{"id": "P:D", "name", "platform", "version", "svm", "images", ...}``."""
    try:
        return engine.list_devices()
    except ImportError as exc:  # pyopencl missing
        raise DeviceError(f"pyopencl is not available: {exc}") from None


def select_devices(specs: Sequence[str]) -> list[dict[str, Any]]:
    """``P:D`` indices or case-insensitive name substrings (``pocl``, ``oclgrind``)."""
    try:
        return engine.resolve_devices(specs)
    except engine.EngineError as exc:
        raise DeviceError(str(exc)) from None
    except ImportError as exc:
        raise DeviceError(f"pyopencl is not available: {exc}") from None


def closest_device(
    devices: Sequence[dict[str, Any]], captured: Iterable[str]
) -> tuple[dict[str, Any] | None, str]:
    """The device to replay on by default, and how it was chosen.

    A device named like one of ``captured`` (the capture's device names) is ``"captured"``.
    Otherwise the device whose name shares the longest run of leading words with one of
    them is ``"similar"``: PoCL's ``pthread-skylake-avx512-AMD EPYC`` capture replays by
    default on ``pthread-skylake-avx512-Intel(R) Xeon(R) Processor``, an ``NVIDIA H100``
    capture on an ``NVIDIA H200``.  With no word in common: the first device, ``"first"``;
    with no device at all, ``(None, "none")``.
    """
    names = [n for n in captured if n]
    for d in devices:
        if d["name"] in names:
            return d, "captured"
    mine = [str(d["name"]) for d in devices]
    best: tuple[int, int] | None = None  # (words in common, -device index)
    for n in names:
        i = engine.most_alike(mine, n)
        if i is None:
            continue
        candidate = (engine.name_likeness(mine[i], n), -i)
        if best is None or candidate > best:
            best = candidate
    if best is not None:
        return devices[-best[1]], "similar"
    if devices:
        return devices[0], "first"
    return None, "none"
