"""Per-argument tolerances as a user types them: ``INDEX:KEY=VALUE[,KEY=VALUE]``.

One grammar for ``cltui replay --arg-tol`` and the replay dialog's *per argument* field:
``2:ulp=4,atol=1e-6`` gives ``{2: {"ulp": 4, "atol": 1e-06}}``; keys are ``atol``, ``rtol``
(finite numbers >= 0) and ``ulp`` (an integer >= 0); a later spec for the same index adds to it.
"""

from __future__ import annotations

from collections.abc import Iterable

from cltui.replay.engine.schema import ArgTolerance, ToleranceSpec

__all__ = ["parse_arg_tolerance", "parse_arg_tolerances"]


def parse_arg_tolerance(spec: str) -> tuple[int, ToleranceSpec]:
    """One ``INDEX:KEY=VALUE[,KEY=VALUE]``; ``ValueError`` says what is wrong with it."""
    head, sep, body = spec.partition(":")
    shown = _shown(spec)
    if not sep or not head.strip().isdigit() or not body:
        raise ValueError(f"{shown} is not INDEX:KEY=VALUE[,KEY=VALUE]")
    if len(head.strip()) > 6:
        raise ValueError(f"{shown}: argument index {_shown(head.strip())} is too large")
    entry: ToleranceSpec = {}
    for item in body.split(","):
        key, eq, value = item.partition("=")
        key = key.strip().lower()
        if not eq or key not in ("atol", "rtol", "ulp"):
            raise ValueError(f"{shown}: the keys are atol, rtol and ulp")
        try:
            number = int(value) if key == "ulp" else float(value)
        except ValueError:
            raise ValueError(f"{shown}: {_shown(value)} is not a number") from None
        if not number >= 0 or number == float("inf"):
            raise ValueError(f"{shown}: must be a finite number >= 0")
        if key == "ulp":
            entry["ulp"] = int(number)
        elif key == "atol":
            entry["atol"] = float(number)
        else:
            entry["rtol"] = float(number)
    return int(head), entry


def _shown(text: str, limit: int = 40) -> str:
    """``text`` quoted for an error line, cut to ``limit`` characters (a spec may be huge)."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def parse_arg_tolerances(specs: Iterable[str]) -> ArgTolerance:
    """Every spec of ``specs``, merged by argument index."""
    out: ArgTolerance = {}
    for spec in specs:
        index, entry = parse_arg_tolerance(spec)
        out.setdefault(index, {}).update(entry)
    return out
