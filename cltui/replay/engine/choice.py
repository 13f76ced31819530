"""The device rule: which OpenCL device a replay runs on when none is named, and why.

The same rule in cltui (CLI and app), the bundle's ``replay.py`` (through the engine package it
carries) and ``replay.cpp`` (``choose_device`` there), held to the same cases by
``tests/fixtures/device_choice_cases.json``: the device the capture ran on, else the one named
most like it, else the first that is not a simulator, else the first.  Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TypeVar

D = TypeVar("D", bound=Mapping[str, object])  # a device: schema.Device, or its JSON

__all__ = [
    "SIMULATORS",
    "choice_line",
    "choose_device",
    "is_simulator",
    "most_alike",
    "name_likeness",
    "name_tokens",
    "user_choice",
]


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_WORD_GAP = re.compile(r"[\t\n\v\f\r \x1c-\x1f\-_/,]+")


def name_tokens(name: str) -> list[str]:
    """A device name's words, lower-case (``pthread-skylake-avx512-AMD EPYC`` ->
    ``pthread``, ``skylake``, ``avx512``, ``amd``, ``epyc``): split at ASCII white space,
    ``-``, ``_``, ``/`` and ``,``, ASCII letters lowered, other characters as they are (the
    rule replay.cpp follows byte for byte)."""
    return [t for t in _WORD_GAP.split(name.translate(_ASCII_LOWER)) if t]


def name_likeness(a: str, b: str) -> int:
    """How many leading words two device names share (0: none)."""
    k = 0
    for x, y in zip(name_tokens(a), name_tokens(b), strict=False):
        if x != y:
            break
        k += 1
    return k


def most_alike(names: Sequence[str], target: str) -> int | None:
    """The index of the name in ``names`` that shares the most leading words with
    ``target`` (at least one; the first of equals), or None."""
    best, score = None, 0
    for i, n in enumerate(names):
        k = name_likeness(n, target)
        if k > score:
            best, score = i, k
    return best


# Device choice without --device: the same rule in cltui (CLI and app), the bundle's replay.py
# (this file) and replay.cpp (``choose_device`` there), held to the same cases by
# tests/fixtures/device_choice_cases.json.
SIMULATORS = ("oclgrind",)


def is_simulator(device: Mapping[str, object]) -> bool:
    """A device that simulates OpenCL instead of running it (Oclgrind), by its platform or
    device name."""
    text = f"{device.get('platform') or ''} {device.get('name') or ''}".lower()
    return any(s in text for s in SIMULATORS)


def _shown(text: str) -> str:
    """A name from a capture (untrusted), with control characters escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def choose_device(
    devices: Sequence[D], captured: Sequence[Mapping[str, object] | str]
) -> tuple[D | None, dict[str, str]]:
    """The device to replay on when none is named, and ``{"rule", "why"}``.

    ``captured``: the capture's devices, most wanted first (names, or identities with
    ``name`` and ``platform``).  In order: the device the capture ran on (``"captured"``:
    the same name; the same platform too where both say it), else the device sharing the
    most leading words with a captured name (``"most-alike"``, :func:`most_alike`), else
    the first device that is not a simulator (``"real-before-simulator"``), else the first
    device (``"first"``).  ``why`` is one line saying which and why; with no device at all
    the device is None.
    """
    ids = _identities(captured)
    if not devices:
        return None, {"rule": "first", "why": "no OpenCL device found"}
    for name, plat in ids:
        same = [d for d in devices if str(d.get("name", "")).strip() == name]
        if plat:
            same.sort(key=lambda d: str(d.get("platform", "")).strip() != plat)
        if same:
            return same[0], {
                "rule": "captured",
                "why": f"{_label(same[0])} is the device the capture ran on",
            }
    gone = ", ".join(_shown(n) for n, _ in ids)
    alike = _most_alike_device(devices, ids)
    if alike is not None:
        d, words = alike
        unit = "word" if words == 1 else "words"
        return d, {
            "rule": "most-alike",
            "why": f"the capture ran on {gone}, which is not here; {_label(d)} shares the most "
            f"leading words with it ({words} {unit})",
        }
    head = (
        f"the capture ran on {gone}, which is not here and no device is named like it"
        if ids
        else "the capture does not name its device"
    )
    for d in devices:
        if not is_simulator(d):
            return d, {
                "rule": "real-before-simulator",
                "why": f"{head}; {_label(d)} is the first device that is not a simulator",
            }
    return devices[0], {
        "rule": "first",
        "why": f"{head}; every device here is a simulator: the first, {_label(devices[0])}",
    }


def _identities(captured: Sequence[Mapping[str, object] | str]) -> list[tuple[str, str | None]]:
    """The captured devices as distinct (name, platform or None), in order."""
    ids: list[tuple[str, str | None]] = []
    for c in captured:
        if isinstance(c, str):
            name, plat = c, None
        else:
            name, plat = str(c.get("name") or ""), c.get("platform")
        name = name.strip()
        if name and all(n != name for n, _ in ids):
            ids.append((name, str(plat).strip() if plat else None))
    return ids


def _most_alike_device(
    devices: Sequence[D], ids: list[tuple[str, str | None]]
) -> tuple[D, int] | None:
    """The device sharing the most leading words with a captured name (the first of equals),
    and how many words, or None."""
    mine = [str(d.get("name", "")) for d in devices]
    best: tuple[int, int] | None = None  # (words in common, -device index)
    for name, _ in ids:
        i = most_alike(mine, name)
        if i is not None:
            candidate = (name_likeness(mine[i], name), -i)
            if best is None or candidate > best:
                best = candidate
    return None if best is None else (devices[-best[1]], best[0])


def _label(d: Mapping[str, object]) -> str:
    return f"{d.get('id', '?')} {d.get('name', '?')}"


def user_choice(spec: Sequence[str]) -> dict[str, str]:
    """The ``device_choice`` of devices named with ``--device``."""
    return {"rule": "user", "why": "chosen with --device " + " --device ".join(spec)}


def choice_line(devices: Sequence[Mapping[str, object]], choice: Mapping[str, str]) -> str:
    """The devices replayed on and why, in one line (stderr of the CLI and the runners)."""
    if choice.get("rule") == "user":
        names = ", ".join(f"{d.get('id', '?')} {d.get('name', '?')}" for d in devices)
        return f"{names} ({choice['why']})"
    return f"{choice['why']} (choose with --device)"
