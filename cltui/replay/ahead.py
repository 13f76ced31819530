"""What a replay child does while it waits for its job (started ahead by
:func:`cltui.process.child.start_ahead`): it lists the devices for its parent (one
``devices`` event: the parent chooses from that list, so it imports no pyopencl) and imports
the engine and pyopencl's invoker, then reads its job (:func:`read_job`)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from cltui.process import child
from cltui.process.child import Event

__all__ = ["read_job"]


def list_devices_ahead(send: Callable[[Event], None]) -> None:
    """The ``devices`` event, then the imports every job needs (a failure: the job says so)."""
    try:
        from cltui.replay.engine.devices import list_devices

        send({"type": "devices", "devices": list_devices()})
    except Exception as exc:  # no pyopencl, a broken ICD: the parent lists them itself
        send({"type": "devices", "error": f"{type(exc).__name__}: {exc}"})
    # while the parent chooses: what every job imports (a failure: the job reports it),
    # the rest of the engine and pyopencl's invoker (the first cl.Kernel's: ~15-25 ms)
    with contextlib.suppress(ImportError):
        import pyopencl.invoker  # noqa: F401

        import cltui.replay.engine.core  # noqa: F401


def read_job(arg: str, send: Callable[[Event], None]) -> Any:
    """In a replay child: its job (:func:`cltui.process.child.read_job`), the devices listed
    first when it was started ahead."""
    return child.read_job(arg, send, list_devices_ahead)
