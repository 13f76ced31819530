"""A range of enqueues -> a :class:`Plan` (see the package doc): which enqueues the plan
walks, the builder over them, and the manifest it assembles."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cltui.capture.capture import Capture
from cltui.capture.model import EnqueueKind
from cltui.capture.ranges import EnqueueRange
from cltui.errors import CltuiError
from cltui.replay.engine import PLAN_FORMAT, PLAN_VERSION
from cltui.replay.engine.compare import Tolerance
from cltui.replay.engine.schema import (
    ArgTolerance,
    Change,
    LostRun,
    Manifest,
    Skipped,
    StepSpec,
)
from cltui.replay.modes import Mode, is_mode
from cltui.replay.plan.base import PlanState
from cltui.replay.plan.builder import add
from cltui.replay.plan.lost import lost_changes, lost_runs, lost_text
from cltui.replay.plan.transfers import transfer


class PlanError(CltuiError, ValueError):
    """Nothing in the range can be replayed (one-line message)."""


@dataclass
class Plan:
    """The plan: a thin wrapper over the manifest dict the engine reads."""

    manifest: Manifest
    capture_path: Path
    notes: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    # kernel enqueues of the range that are not replayed: {enqueue, kernel, why, recovered}
    skipped: list[Skipped] = field(default_factory=list)
    # runs of numbers inside the range that the log lost and no file names:
    # {first, last, count, why}
    lost: list[LostRun] = field(default_factory=list)

    @property
    def steps(self) -> list[StepSpec]:
        return self.manifest["steps"]

    @property
    def enqueues(self) -> list[int]:
        return [int(s["enqueue"]) for s in self.steps]

    def to_manifest(self) -> Manifest:
        """The JSON-able manifest (data paths relative to the capture directory)."""
        return self.manifest

    def data_path(self, key: str) -> Path:
        return Path(self.capture_path / str(self.manifest["data"][key]["path"]))


def build_plan(
    cap: Capture,
    rng: EnqueueRange | Sequence[int],
    mode: str = "chain",
    tolerance: Tolerance | None = None,
    arg_tolerance: ArgTolerance | None = None,
) -> Plan:
    """The plan for the kernel enqueues of ``rng`` in ``cap`` (see the package doc).

    ``rng`` is a range (with its kernel filter) or an explicit set of enqueue numbers,
    holes allowed (replayed in increasing order; an enqueue that is not a kernel launch
    becomes a note, one that is not in the capture a :class:`PlanError`).  Inputs a
    removed enqueue would have produced come from the capture, as for a range.
    """
    if not is_mode(mode):
        raise PlanError(f"unknown mode {mode!r} (chain, isolated or strict)")
    tol = tolerance or Tolerance()
    b = PlanState(cap, mode, tol, arg_tolerance or {})
    what, numbers = kernel_numbers(cap, rng)
    selected = set(numbers)
    for n in _with_transfers(cap, numbers, mode):
        enq = cap.enqueue(n)
        if n in selected:
            add(b, enq)
        else:
            transfer(b, enq)
    _keep_settled_transfers(b)
    b.lost, note = lost_runs(cap, numbers[0], numbers[-1])
    if note is not None:
        b.notes.append(note)
    for t in b.transfers.values():
        if t["replayed"] is None:
            b.notes.append(
                f"enqueue {t['enqueue']}: {t['function']} on {t['label']} is not replayed "
                f"({t['why']}): later checks of what it changed follow an unreplayed host write"
            )
    if mode != "isolated":  # isolated mode loads each kernel's inputs: no transfer counts
        for lt in lost_changes(cap, numbers[0], numbers[-1]):  # named in the lost note
            b.transfers.setdefault(lt["enqueue"], lt)
    if not b.steps:
        raise PlanError(f"nothing in {what} can be replayed: " + "; ".join(b.notes[:3]))
    manifest = _manifest(b, cap, what, mode, tol)
    return Plan(manifest, Path(cap.path), b.notes, b.changes, b.skipped, b.lost)


def kernel_numbers(cap: Capture, rng: EnqueueRange | Sequence[int]) -> tuple[str, list[int]]:
    """The range as text and the numbers of its kernel enqueues (a set: its numbers, each
    in the capture); a :class:`PlanError` when there are none."""
    if isinstance(rng, EnqueueRange):
        positions = cap.find(
            kernel=rng.kernel, kinds=[EnqueueKind.KERNEL], first=rng.first, last=rng.last
        )
        if len(positions) == 0:
            kname = f" of kernel {rng.kernel!r}" if rng.kernel else ""
            lost = lost_text(cap, rng.first, rng.last)
            raise PlanError(f"no kernel enqueue{kname} in range {rng}{lost}")
        return str(rng), [int(cap.numbers[pos]) for pos in positions]
    numbers = sorted({int(n) for n in rng})
    if not numbers:
        raise PlanError("no enqueue to replay: the set is empty")
    missing = [n for n in numbers if cap.position_of(n) is None]
    if missing:
        if cap.is_lost(missing[0]):
            raise PlanError(f"enqueue {missing[0]} was lost with the log and no dump file names it")
        raise PlanError(f"no enqueue {missing[0]} in this capture")
    return set_text(numbers), numbers


def _keep_settled_transfers(b: PlanState) -> None:
    """Each step keeps the transfers a later step depends on (each with how it is
    replayed): those settled at the next use of their object."""
    for st in b.steps:
        kept = [t for t in st.get("transfers", []) if t["enqueue"] in b.transfers]
        if kept:
            st["transfers"] = kept
        else:
            st.pop("transfers", None)


def _manifest(b: PlanState, cap: Capture, what: str, mode: Mode, tol: Tolerance) -> Manifest:
    manifest: Manifest = {
        "format": PLAN_FORMAT,
        "version": PLAN_VERSION,
        "source": {"capture": str(cap.path), "range": what, "mode": mode},
        "tolerance": tol.to_dict(),
        "data": b.data,
        "programs": b.programs,
        "memory": b.memory,
        "steps": b.steps,
        "changes": b.changes,
        "notes": b.notes,
        "scope": {
            "kernels": [k.to_json() for k in b.kernels],
            "transfers": [b.transfers[k] for k in sorted(b.transfers)],
        },
    }
    if b.skipped:
        manifest["skipped"] = b.skipped
    if b.lost:
        manifest["lost"] = b.lost
    return manifest


_CHANGES = (
    EnqueueKind.WRITE,
    EnqueueKind.COPY,
    EnqueueKind.FILL,
    EnqueueKind.MAP,
    EnqueueKind.SVM,
    EnqueueKind.USM,
)


def _with_transfers(cap: Capture, numbers: list[int], mode: Mode) -> list[int]:
    """The steps' enqueue numbers with the transfers the log shows between the first and
    the last (in log order); isolated mode loads every kernel's own inputs: none."""
    if mode == "isolated" or cap.log is None or len(numbers) < 2:
        return numbers
    kinds = [int(k) for k in _CHANGES]
    positions = cap.find(first=numbers[0] + 1, last=numbers[-1] - 1)
    mask = np.isin(np.asarray(cap.kinds)[positions], kinds)
    extra = {int(cap.numbers[p]) for p in np.asarray(positions)[mask]}
    return sorted(extra.union(numbers))


def set_text(numbers: Sequence[int]) -> str:
    """Sorted enqueue numbers as text, consecutive ones joined: ``[1, 4, 5, 6]`` -> ``1,4-6``."""
    parts: list[str] = []
    nums = sorted(set(numbers))
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        parts.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ",".join(parts)
