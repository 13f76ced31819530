"""The A/B noise floor of a device: the smallest change an A/B calls ``faster`` or
``slower`` there (the minimum effect, a fraction of A's time).

It comes from an A/A calibration: the range run against itself (B = A, a no-op change)
the way an A/B runs, on that device; the floor is the farthest end of the no-op
difference's 95 % interval, as a fraction of A's median (what a change that does nothing
can seem to do), at least :data:`FLOOR_MIN`.  Each device's floor is kept in
``<cltui cache>/ab-noise.json`` (by platform, device and driver), with what it was
measured on and when; ``CLTUI_BINARY_CACHE=0`` keeps nothing (every run calibrates).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
from pathlib import Path
from typing import TypedDict, cast

from cltui.replay.engine.schema import Device
from cltui.replay.experiment.stats import Diff

__all__ = ["FLOOR_MIN", "Floor", "floor_of", "lookup", "noise_path", "store"]

FLOOR_MIN = 0.002  # 0.2 %: below it the bootstrap's own resolution
MAX_BYTES = 1 << 20  # the cache file is read with a bound


class Floor(TypedDict):
    """A device's minimum effect and where it came from."""

    min_effect: float  # a fraction of A's median
    source: str  # "calibration" (cached or measured now) or "--min-effect"
    measured: str  # when, UTC ("" for --min-effect)
    range: str  # the range it was calibrated on ("" for --min-effect)
    repeat: int


def noise_path() -> Path | None:
    """``ab-noise.json`` next to the binary cache; None when the cache is off."""
    from cltui.replay.runner import default_binary_cache

    cache = default_binary_cache()
    return None if cache is None else cache.parent / "ab-noise.json"


def device_key(dev: Device) -> str:
    return f"{dev.get('platform', '')}|{dev.get('name', '')}|{dev.get('driver', '')}"


def _read(path: Path) -> dict[str, object]:
    try:
        with path.open("rb") as fh:
            data = json.loads(fh.read(MAX_BYTES).decode("utf-8", "replace"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def lookup(dev: Device) -> Floor | None:
    """The device's cached floor, or None (none cached, or a damaged entry)."""
    path = noise_path()
    if path is None:
        return None
    got = _read(path).get(device_key(dev))
    if not isinstance(got, dict):
        return None
    value = got.get("min_effect")
    if not isinstance(value, (int, float)) or not 0.0 <= float(value) < 1.0:
        return None
    return cast(Floor, {"min_effect": float(value), "source": "calibration",
                        "measured": str(got.get("measured", "")),
                        "range": str(got.get("range", "")),
                        "repeat": int(got.get("repeat", 0) or 0)})  # fmt: skip


def floor_of(aa: Diff, rng: str, repeat: int) -> Floor | None:
    """The floor an A/A comparison gives (None without an interval)."""
    if aa["lo"] is None or aa["hi"] is None or not aa["a"]:
        return None
    reach = max(abs(aa["lo"]), abs(aa["hi"])) / aa["a"]
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return {"min_effect": max(reach, FLOOR_MIN), "source": "calibration", "measured": now,
            "range": rng, "repeat": repeat}  # fmt: skip


def store(dev: Device, floor: Floor) -> None:
    """Keep ``floor`` for ``dev`` (a write that fails keeps nothing: the next run
    calibrates again)."""
    path = noise_path()
    if path is None:
        return
    data = _read(path)
    data[device_key(dev)] = dict(floor)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
