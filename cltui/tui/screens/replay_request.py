"""What the replay dialog asks for, apart from its widgets: the request it returns
(:class:`ReplayRequest`), the reading of its text fields (tolerances, repetitions, timeout,
per-argument tolerances; ``ValueError`` names the field) and the line it shows under the
device list for a device's pre-flight."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from cltui.replay import tolerance
from cltui.replay.engine.compare import Tolerance
from cltui.replay.engine.schema import ArgTolerance, Device, Feasibility

__all__ = [
    "DEFAULT_TIMEOUT",
    "MODES",
    "MODE_HELP",
    "ReplayRequest",
    "feasibility_line",
    "parse_arg_tolerances",
    "parse_replay_fields",
]

_N = TypeVar("_N", int, float)

MODES = ("chain", "isolated", "strict")
MODE_HELP = {
    "chain": "carry state through the range, reload where the host changed a buffer",
    "isolated": "every kernel from its own captured Pre dumps",
    "strict": "never reload; report where the chain departs from the capture",
}
DEFAULT_TIMEOUT = 60.0


def feasibility_line(result: Feasibility | None) -> str:
    """What the line under the device list says of one device's pre-flight."""
    if result is None:
        return "checking whether the range can run here…"
    name = f"{result['device']['id']} {result['device']['name']}"
    if result["status"] == "error":
        return f"{name}: not checked: {result['error']}"
    found = result["cannot_run"]
    if not found:
        return f"{name}: every kernel enqueue of the range can run here"
    first = found[0]
    more = result["steps"] - result["runnable"] - 1
    tail = f" (and {more} more enqueue{'s' if more != 1 else ''})" if more > 0 else ""
    return (f"{name}: enqueue {first['enqueue']} ({first['kernel']}) cannot run: "
            f"{first['reason']}{tail}")  # fmt: skip


@dataclass(frozen=True)
class ReplayRequest:
    """What the user chose: devices (``list_devices`` dicts), mode, tolerance, repetitions."""

    devices: list[Device]
    mode: str = "chain"
    tolerance: Tolerance = field(default_factory=Tolerance)
    repeat: int = 1
    timeout: float = DEFAULT_TIMEOUT
    arg_tolerance: ArgTolerance = field(default_factory=dict)
    inventory: str = ""  # an inventory file: the range runs on its hosts (cltui fleet)
    hosts: dict[str, tuple[str, ...]] = field(default_factory=dict)  # host -> ticked P:D ids


def _field(name: str, text: str, default: _N, kind: Callable[[str], _N], what: str) -> _N:
    """A text field's value (empty: ``default``); ``ValueError`` names the field."""
    text = text.strip()
    if not text:
        return default
    try:
        return kind(text)
    except ValueError:
        raise ValueError(f"{name}: {text!r} is not {what}") from None


def parse_replay_fields(
    atol: str, rtol: str, ulp: str, repeat: str, timeout: str
) -> tuple[Tolerance, int, float]:
    """The dialog's text fields -> (tolerance, repeat, timeout); ``ValueError`` names the field."""

    def number(name: str, text: str, default: float) -> float:
        value = _field(name, text, default, float, "a number")
        if not value >= 0 or value == float("inf"):
            raise ValueError(f"{name}: must be a finite number >= 0")
        return value

    def integer(name: str, text: str, default: int, low: int) -> int:
        value = _field(name, text, default, int, "a whole number")
        if value < low:
            raise ValueError(f"{name}: must be at least {low}")
        return value

    tol = Tolerance(number("atol", atol, 0.0), number("rtol", rtol, 0.0), integer("ulp", ulp, 0, 0))
    reps = integer("repeat", repeat, 1, 1)
    if reps > 100_000:
        raise ValueError("repeat: at most 100000")
    limit = number("timeout", timeout, DEFAULT_TIMEOUT)
    if limit <= 0:
        raise ValueError("timeout: must be positive")
    return tol, reps, limit


def parse_arg_tolerances(text: str) -> ArgTolerance:
    """The *per argument* field: ``"0:ulp=2; 3:atol=1e-6,rtol=1e-5"`` (specs apart by ``;``
    or spaces; the grammar of :mod:`cltui.replay.tolerance`)."""
    try:
        return tolerance.parse_arg_tolerances(text.replace(";", " ").split())
    except ValueError as exc:
        raise ValueError(f"per argument: {exc}") from None
