"""The OpenCL devices here: listing them with what replay cares about, resolving ``--device``
specs, opening one."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .base import EngineError
from .schema import Device

if TYPE_CHECKING:
    import pyopencl as cl


def list_devices() -> list[Device]:
    """Every OpenCL device the ICD loader shows, with what replay cares about."""
    import pyopencl as cl

    out: list[Device] = []
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return out
    for pi, plat in enumerate(platforms):
        try:
            devices = plat.get_devices()
        except cl.Error:
            continue
        for di, dev in enumerate(devices):
            out.append(_device_info(pi, di, plat, dev))
    return out


def _device_info(pi: int, di: int, plat: cl.Platform, dev: cl.Device) -> Device:
    import pyopencl as cl

    svm = 0
    try:
        svm = int(dev.svm_capabilities)
    except (cl.Error, AttributeError, cl.LogicError):
        svm = 0
    return {
        "id": f"{pi}:{di}",
        "platform": plat.name.strip(),
        "name": dev.name.strip(),
        "version": dev.version.strip(),
        "platform_version": plat.version.strip(),
        "driver": dev.driver_version.strip(),
        "type": _device_type(int(dev.type)),
        "svm": bool(svm),
        "images": bool(dev.image_support),
        "max_work_group_size": int(dev.max_work_group_size),
        "global_mem": int(dev.global_mem_size),
    }


def _device_type(bits: int) -> str:
    names = [n for b, n in ((2, "CPU"), (4, "GPU"), (8, "ACCELERATOR"), (16, "CUSTOM")) if bits & b]
    return " | ".join(names) or "DEFAULT"


def resolve_devices(
    specs: Sequence[str], listed: Sequence[Device] | None = None
) -> list[Device]:
    """``P:D`` indices or case-insensitive name substrings -> device infos (in order), of
    ``listed`` (the devices as :func:`list_devices` lists them; None: listed now).

    Raises :class:`EngineError` with a specific message for a spec that matches nothing, and
    for no spec at all: the device to use when none is named is the device rule's
    (:func:`~cltui.replay.engine.choice.choose_device`), never a quiet first device.
    """
    if not specs:
        raise EngineError("no --device given (the device rule picks one when none is named)")
    devices = list(listed) if listed is not None else list_devices()
    if not devices:
        raise EngineError("no OpenCL device found (is an ICD installed?)")
    return match_devices(devices, specs)


_INDEX = re.compile(r"([0-9]+):([0-9]+)")


def match_devices(devices: Sequence[Device], specs: Sequence[str]) -> list[Device]:
    """The devices of ``devices`` that ``specs`` name, in the order named, each once; a
    :class:`EngineError` for a spec that matches none (pure: the rule of ``--device``, also
    for devices listed on another host; replay.cpp's ``match_devices`` is held to the same
    cases, tests/fixtures/device_spec_cases.json).

    A spec, without the blanks around it, is ``P:D`` (decimal digits only: the platform and
    device numbers) or else a case-insensitive substring of the device's name, platform name
    and versions; an empty spec names nothing."""
    chosen: list[Device] = []
    for spec in specs:
        s = spec.strip()
        matches: list[Device] = []
        index = _INDEX.fullmatch(s)
        if index is not None:
            want = f"{int(index[1])}:{int(index[2])}"
            matches = [d for d in devices if d["id"] == want]
        elif s:
            low = s.lower()
            matches = [d for d in devices if low in _haystack(d)]
        if not matches:
            known = ", ".join(f"{d['id']} {d['name']}" for d in devices) or "none"
            raise EngineError(f"no device matches {spec!r} (devices: {known})")
        for m in matches:
            if m not in chosen:
                chosen.append(m)
    return chosen


def _haystack(d: Device) -> str:
    """What a name substring is matched against (the platform version says "PoCL")."""
    return " ".join(
        str(d.get(k, "")) for k in ("name", "platform", "version", "platform_version")
    ).lower()


def open_device(info: Device) -> cl.Device:
    """The pyopencl device of a device info (``id`` ``P:D``)."""
    import pyopencl as cl

    pi, di = (int(x) for x in info["id"].split(":"))
    return cl.get_platforms()[pi].get_devices()[di]
