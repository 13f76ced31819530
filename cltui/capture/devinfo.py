"""What a capture says about the devices it ran on: name, type and platform.

The log names a device with its type flags and handle wherever a call takes one
(``device = pthread-skylake-avx512-AMD EPYC (CL_DEVICE_TYPE_CPU) (0x29089230)``, capture-format.md
§3); its platform shows in the ``clGetDeviceIDs: platform = <name> (<ptr>)`` call that listed
it, the last such call before the device's handle first appears.  The values of
``clGetDeviceInfo`` queries (driver and OpenCL versions) are not logged, so those stay unknown.

Reads are bounded: the queue creation line, and a window of at most ``WINDOW`` bytes before it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from cltui.capture.safeopen import open_regular

if TYPE_CHECKING:
    from cltui.capture.log import LogIndex

WINDOW = 4 << 20
_DEVICE_RE = re.compile(
    r"device = (.*?) \(((?:CL_DEVICE_TYPE_\w+)(?: \| CL_DEVICE_TYPE_\w+)*)\) \((0x[0-9a-fA-F]+)\)"
)
_PLATFORM_TAG = b"clGetDeviceIDs: platform = "
_PLATFORM_RE = re.compile(rb"clGetDeviceIDs: platform = ([^\n]*?) \(0x[0-9a-fA-F]+\)")


class DeviceIdentity(TypedDict):
    """A captured device as the bundle's manifest records it (None: not in the capture)."""

    name: str
    platform: str | None
    type: str | None
    version: str | None
    driver: str | None


def _type_text(flags: str) -> str:
    """``CL_DEVICE_TYPE_DEFAULT | CL_DEVICE_TYPE_CPU`` -> ``CPU`` (as ``cltui devices`` says)."""
    names = [f.strip().removeprefix("CL_DEVICE_TYPE_") for f in flags.split("|")]
    kept = [n for n in names if n and n != "DEFAULT"]
    return " | ".join(kept) or "DEFAULT"


def _platform(path: Path, offset: int, handle: bytes) -> str | None:
    """The platform of the device with ``handle``: the ``clGetDeviceIDs`` call before the
    handle's first appearance within ``WINDOW`` bytes before ``offset``."""
    start = max(0, offset - WINDOW)
    try:
        with open_regular(path, follow=True) as f:
            f.seek(start)
            data = f.read(offset - start)
    except OSError:
        return None
    first = data.find(b"(" + handle + b")")
    if first < 0:
        return None
    at = data.rfind(_PLATFORM_TAG, 0, first)
    if at < 0:
        return None
    m = _PLATFORM_RE.match(data, at, first)
    if m is None:
        return None
    name = m.group(1).decode("utf-8", "replace").replace("\x00", "").strip()
    return name or None


def device_identities(log: LogIndex | None) -> dict[str, DeviceIdentity]:
    """Every device a command queue was created on, by name (the first queue of each)."""
    out: dict[str, DeviceIdentity] = {}
    if log is None:
        return out
    records = sorted(
        (q for lst in log.queues.values() for q in lst if q.device), key=lambda q: q.offset
    )
    for q in records:
        name = str(q.device)
        if name in out:
            continue
        ident: DeviceIdentity = {
            "name": name,
            "platform": None,
            "type": None,
            "version": None,
            "driver": None,
        }
        line = log.read_line(q.offset, limit=1 << 16)
        at = line.find("device = ")  # one anchored match: linear in the line, whatever it holds
        m = _DEVICE_RE.match(line, at) if at >= 0 else None
        if m is not None and m.group(1) == name:
            ident["type"] = _type_text(m.group(2))
            ident["platform"] = _platform(log.path, q.offset, m.group(3).encode())
        out[name] = ident
    return out


def captured_devices(log: LogIndex | None, names: list[str]) -> list[DeviceIdentity]:
    """The identities of ``names`` (in that order; a name the queues do not know gets one
    with nothing but its name)."""
    known = device_identities(log)
    return [
        known.get(n)
        or DeviceIdentity(name=n, platform=None, type=None, version=None, driver=None)
        for n in names
    ]
