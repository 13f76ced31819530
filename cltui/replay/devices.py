"""Device discovery and ``--device`` selection (thin cltui-side wrappers over the engine)."""

from __future__ import annotations

from collections.abc import Sequence
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
