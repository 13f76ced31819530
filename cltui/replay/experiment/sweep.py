"""A sweep: the points (the cross product of the values given, or a seeded random sample of
it, the capture's own configuration always first), the results file that lets a stopped
sweep resume, and the ranking of the correct points (pure).

Results file: JSON lines; the first is ``{"sweep": {range, capture, kernel, points}}``, then
one row per (point, device) as it ends.  A row that was cancelled is not written (it runs
again on resume); a row of another range or capture refuses the file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import random
from pathlib import Path
from typing import Any, TypedDict

from cltui.capture.safeopen import MAX_JSON, read_text_limited
from cltui.replay.experiment.params import check_restriction, number
from cltui.replay.experiment.stats import Diff, Interval, interval, unpaired
from cltui.replay.experiment.variant import ProgramChange, SizeChange, Variant, VariantError

__all__ = ["Row", "SweepSpec", "load_results", "point_id", "points", "rank", "row_of"]

CORRECT = "pass"
RERUN = ("cancelled",)  # rows not kept in the results file


@dataclasses.dataclass(frozen=True)
class SweepSpec:
    """The values to try per dimension (each a list of alternatives)."""

    range: str
    kernel: str | None = None
    target: str = "*"
    local: tuple[tuple[int, ...], ...] = ()
    global_: tuple[tuple[int, ...], ...] = ()
    options: tuple[str, ...] = ()
    defines: tuple[tuple[str, tuple[str, ...]], ...] = ()  # key, its values
    params: tuple[tuple[str, tuple[str, ...]], ...] = ()  # the source's #define NAME, values
    local_param: str | None = None  # the local size follows this parameter (--local WGS)
    restrict: tuple[str, ...] = ()  # constraints over the parameters (--restrict)
    programs: tuple[ProgramChange, ...] = ()  # --patch/--source: in every point but the capture's

    def dimensions(self) -> list[list[dict[str, Any]]]:
        dims: list[list[dict[str, Any]]] = []
        if self.local:
            dims.append([{"local": v} for v in self.local])
        if self.global_:
            dims.append([{"global": v} for v in self.global_])
        if self.options:  # each option list tries "no option" too (its baseline)
            dims.append([{}] + [{"options": v} for v in self.options])
        for key, values in self.defines:
            dims.append([{"define": (key, v)} for v in values])
        for key, values in self.params:
            dims.append([{"param": (key, v)} for v in values])
        return dims

    def allows(self, combo: tuple[dict[str, Any], ...]) -> bool:
        """Whether a point meets every ``--restrict`` constraint (pruned before it runs)."""
        if not self.restrict:
            return True
        values = {k: number(v) for part in combo if "param" in part
                  for k, v in [part["param"]]}  # fmt: skip
        return all(check_restriction(r, values) for r in self.restrict)


def _variant(spec: SweepSpec, combo: tuple[dict[str, Any], ...]) -> Variant:
    local = glob = None
    options: list[str] = []
    defines: list[tuple[str, str]] = []
    params: list[tuple[str, str]] = []
    for part in combo:
        local = part.get("local", local)
        glob = part.get("global", glob)
        if "options" in part:
            options.append(part["options"])
        if "define" in part:
            defines.append(part["define"])
        if "param" in part:
            params.append(part["param"])
            if part["param"][0] == spec.local_param:
                local = (int(part["param"][1]),)
    sizes = (SizeChange(spec.target, glob, local),) if local or glob else ()
    return Variant(spec.range, kernel=spec.kernel, programs=spec.programs,
                   options_add=tuple(options),
                   defines=tuple(defines), params=tuple(params), sizes=sizes)  # fmt: skip


def point_id(variant: Variant) -> str:
    """A point's stable id: a hash of its changes (the capture's own: ``capture``)."""
    if variant.empty:
        return "capture"
    text = json.dumps(variant.changes(), sort_keys=True)
    return "p" + hashlib.sha256(text.encode()).hexdigest()[:12]


def points(spec: SweepSpec, budget: int | None = None, seed: int = 0) -> list[Variant]:
    """The capture's own configuration, then the cross product of the dimensions (or a
    seeded random sample of it, ``budget`` points in all)."""
    dims = spec.dimensions()
    # no dimension: the program change alone (--patch/--source), else nothing but the capture
    combos = list(itertools.product(*dims)) if dims else [()] if spec.programs else []
    out: list[Variant] = [Variant(spec.range, kernel=spec.kernel)]
    seen = {point_id(out[0])}
    variants = []
    for combo in combos:
        if not spec.allows(combo):
            continue
        var = _variant(spec, combo)
        pid = point_id(var)
        if pid not in seen:
            seen.add(pid)
            variants.append(var)
    if budget is not None and budget - 1 < len(variants):
        variants = random.Random(seed).sample(variants, max(budget - 1, 0))
    return out + variants


class Row(TypedDict):
    """One point on one device: ``status`` pass / fail / incomplete / error / refused /
    crash / hang / cancelled; ``time`` the range's device time (median, 95 % interval);
    ``times`` the range's time per timed run."""

    id: str
    device: str
    status: str
    why: str
    label: str  # the changes in a few words
    lines: list[str]
    changes: dict[str, Any]
    time: Interval
    times: list[int]


def row_of(pid: str, variant: Variant, device: str, verdict: dict[str, Any],
           refused: str | None, times: list[int], error: str | None) -> Row:  # fmt: skip
    """A row from a point's verdict and timing."""
    status = "refused" if refused else str(verdict["status"])
    if error and any(error.startswith(w) for w in ("crash", "hang", "cancelled")):
        status = error.split(":", 1)[0]
    why = refused or (error or "") or ("" if status == CORRECT else str(verdict["line"]))
    return {
        "id": pid, "device": device, "status": status, "why": why, "label": variant.short(),
        "lines": [] if variant.empty else variant.describe(), "changes": variant.changes(),
        "time": interval(times) if status == CORRECT else interval([]), "times": times,
    }  # fmt: skip


def header(spec: SweepSpec, capture: str, n_points: int) -> dict[str, Any]:
    return {"sweep": {"range": spec.range, "capture": capture, "kernel": spec.kernel,
                      "points": n_points}}  # fmt: skip


def load_results(path: Path, spec: SweepSpec, capture: str) -> list[Row]:
    """The rows a results file holds (none when it does not exist); a file of another
    sweep (range, capture) raises."""
    if not path.exists():
        return []
    rows: list[Row] = []
    try:
        lines = read_text_limited(path, MAX_JSON, follow=True).splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise VariantError(f"cannot read the results file {path}: {exc}") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            if n == len(lines):  # a row cut short by a kill: run that point again
                break
            raise VariantError(f"{path} line {n} is not JSON: not a results file") from None
        if "sweep" in item:
            head = item["sweep"]
            if head.get("range") != spec.range or head.get("capture") != capture:
                raise VariantError(f"{path} holds the results of range {head.get('range')} of "
                                   f"{head.get('capture')}, not of this sweep")  # fmt: skip
            continue
        if isinstance(item, dict) and "id" in item and item.get("status") not in RERUN:
            rows.append(item)  # type: ignore[arg-type]  # JSON written by this module
    return rows


def append_row(path: Path, row: Row | dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")


class Ranked(TypedDict):
    id: str
    device: str
    label: str
    lines: list[str]
    changes: dict[str, Any]
    time: Interval
    vs_capture: Diff | None  # timed apart (this sweep's run, or a resumed row's)
    paired: Diff | None  # re-measured side by side with the capture's (the top few only)


def rank(rows: list[Row]) -> tuple[list[Ranked], list[Row]]:
    """The correct rows, fastest first (each against the capture's configuration on its
    device), and the others."""
    base = {r["device"]: r["times"] for r in rows if r["id"] == "capture" and
            r["status"] == CORRECT}  # fmt: skip
    good = [r for r in rows if r["status"] == CORRECT and r["time"]["median"] is not None]
    good.sort(key=lambda r: (r["time"]["median"] or 0.0, r["id"]))
    ranked: list[Ranked] = [
        {
            "id": r["id"], "device": r["device"], "label": r["label"], "lines": r["lines"],
            "changes": r["changes"],
            "time": r["time"],
            "vs_capture": unpaired(base[r["device"]], r["times"]) if r["device"] in base
            and r["id"] != "capture" else None,
            "paired": None,
        }
        for r in good
    ]  # fmt: skip
    others = [r for r in rows if not (r["status"] == CORRECT and r["time"]["median"] is not None)]
    return ranked, others
