"""Delta debugging of a failing range: the smallest set of enqueues that still fails.

A range *fails* when, replayed on a device, some output differs beyond tolerance from
the capture's Post dump (``against="capture"``) or from the same range replayed on a
second device (``against=<device>``). :func:`shrink` removes enqueues while the range
keeps failing. Every candidate set is planned like a range of its own: in ``chain``
mode the kept kernels carry their state, and whatever a removed kernel would have
produced is loaded from the capture (the plan sees the capture's Pre dump differ from
what the kept kernels left and reloads it), so each kept kernel still gets the inputs
it needs.

1. One *isolated* run (every kernel from its own captured inputs) tests all single
   enqueues at once: if one fails on its own, it is the answer (nothing is smaller).
2. Otherwise the range is replayed as planned; if it fails, ``ddmin`` (Zeller and
   Hildebrandt) narrows it to a 1-minimal set: removing any one enqueue of the result
   makes the failure go away.

:func:`ddmin` is generic (any ``test(subset) -> bool``); :func:`shrink` wires it to the
replay runner (one child process per tested set, results cached).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from cltui.capture.capture import Capture
from cltui.capture.model import EnqueueKind
from cltui.capture.ranges import EnqueueRange
from cltui.errors import Cancelled, CltuiError
from cltui.process import lifecycle
from cltui.progress import CancelToken
from cltui.replay.engine.compare import Tolerance
from cltui.replay.engine.schema import Device, Manifest, Report

T = TypeVar("T")

AGAINST_CAPTURE = "capture"


class ShrinkError(CltuiError):
    """Bad input or nothing to shrink (one-line message)."""


class ShrinkCancelled(Cancelled, ShrinkError):
    pass


def ddmin(
    items: Sequence[T],
    test: Callable[[list[T]], bool],
    cancel: CancelToken | None = None,
    known: dict[tuple[int, ...], bool] | None = None,
) -> list[T]:
    """A 1-minimal sub-list of ``items`` for which ``test`` is still True (order kept).

    ``test(items)`` is assumed True. Each subset is tested at most once; ``known`` maps
    subsets (as tuples of positions in ``items``) to outcomes already known.
    """
    cache: dict[tuple[int, ...], bool] = dict(known or {})

    def check(sub: list[int]) -> bool:
        key = tuple(sub)
        if key not in cache:
            if cancel is not None and cancel.is_set():
                raise ShrinkCancelled("shrink cancelled")
            cache[key] = bool(test([items[i] for i in sub]))
        return cache[key]

    cur = list(range(len(items)))
    n = 2
    while len(cur) >= 2:
        size = len(cur)
        bounds = [size * k // n for k in range(n + 1)]
        chunks = [cur[bounds[k]:bounds[k + 1]] for k in range(n) if bounds[k] < bounds[k + 1]]
        for c in chunks:
            if check(c):
                cur, n = c, 2
                break
        else:
            for c in chunks:
                drop = set(c)
                comp = [i for i in cur if i not in drop]
                if comp and check(comp):
                    cur, n = comp, max(n - 1, 2)
                    break
            else:
                if n >= len(cur):
                    break
                n = min(len(cur), 2 * n)
    return [items[i] for i in cur]


@dataclass
class Trial:
    enqueues: list[int]
    failed: bool
    detail: str  # the first mismatch, or why the run did not count
    mode: str = "chain"


@dataclass
class ShrinkResult:
    capture: str
    range: str
    device: str
    against: str
    mode: str
    start: list[int]  # the kernel enqueues of the range
    result: list[int]  # the minimal failing set ([] when the range does not fail)
    method: str  # "isolated" | "ddmin" | "none"
    trials: list[Trial] = field(default_factory=list)
    mismatch: str = ""  # what fails in the result
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.result)

    @property
    def contiguous(self) -> bool:
        """The result is every kernel enqueue between its first and last."""
        if not self.result:
            return False
        inside = [e for e in self.start if self.result[0] <= e <= self.result[-1]]
        return inside == self.result

    def to_dict(self) -> dict[str, Any]:
        return {
            "capture": self.capture,
            "range": self.range,
            "device": self.device,
            "against": self.against,
            "mode": self.mode,
            "start": self.start,
            "result": self.result,
            "method": self.method,
            "mismatch": self.mismatch,
            "runs": len(self.trials),
            "trials": [{"enqueues": t.enqueues, "mode": t.mode, "failed": t.failed,
                        "detail": t.detail} for t in self.trials],
            "notes": self.notes,
        }


def plan_for(
    cap: Capture,
    enqueues: Sequence[int],
    mode: str = "chain",
    tolerance: Tolerance | None = None,
) -> Manifest:
    """The replay plan (manifest) of an arbitrary set of kernel enqueues, in order.

    :func:`cltui.replay.plan.build_plan` for a set with holes.
    """
    from cltui.replay.plan import PlanError, build_plan

    try:
        return build_plan(cap, list(enqueues), mode, tolerance or Tolerance()).to_manifest()
    except PlanError as exc:
        raise ShrinkError(str(exc)) from None


def _mismatches(report: Report, against: str) -> tuple[list[tuple[int, str]], str]:
    """((enqueue, text) of each failing output, why the run does not count or "")."""
    devices = report.get("devices", [])
    for res in devices:
        if res.get("error"):
            return [], f"{res.get('device', {}).get('name', '?')}: {res['error']}"
    out: list[tuple[int, str]] = []
    if against == AGAINST_CAPTURE:
        for st in devices[0].get("steps", []) if devices else []:
            for c in st.get("checks", []):
                if c.get("status") == "different":
                    out.append((int(st["enqueue"]), f"enqueue {st['enqueue']} {st['kernel']} "
                                f"{c.get('label', '')}: {c.get('summary', '')}"))
    else:
        for x in report.get("cross", []):
            if x.get("status") == "different":
                out.append((int(x["enqueue"]), f"enqueue {x['enqueue']} {x['kernel']} "
                            f"{x.get('label', '')}: {x.get('summary', '')}"))
    return out, ""


def shrink(
    cap: Capture,
    rng: EnqueueRange,
    device: Device,
    *,
    against: str | Device = AGAINST_CAPTURE,
    mode: str = "chain",
    tolerance: Tolerance | None = None,
    timeout: float = 60.0,
    on_trial: Callable[[Trial], None] | None = None,
    cancel: CancelToken | None = None,
    work_dir: str | Path | None = None,
) -> ShrinkResult:
    """Shrink the kernel enqueues of ``rng`` to a minimal set that still fails; see the doc.

    ``device``/``against`` are device infos from :mod:`cltui.replay.devices` (``against``
    may be ``"capture"``). Raises :class:`ShrinkError` when the range holds nothing to
    replay, :class:`ShrinkCancelled` when ``cancel`` is set.
    """

    from cltui.replay.plan import PlanError, build_plan

    tol = tolerance or Tolerance()
    try:
        full = build_plan(cap, rng, mode, tol)
    except PlanError as exc:
        raise ShrinkError(str(exc)) from None
    start = [int(s["enqueue"]) for s in full.steps]
    against_name = against if isinstance(against, str) else str(against.get("name"))
    devices = [device] if isinstance(against, str) else [device, against]
    out = ShrinkResult(str(cap.path), str(rng), str(device.get("name")), against_name, mode,
                       start, [], "none", notes=list(full.notes))
    base = Path(work_dir) if work_dir else lifecycle.temp_dir("shrink")
    try:
        trials = _Trials(cap, devices, against if isinstance(against, str) else "device", tol,
                         timeout, base, out, on_trial, cancel)
        # 1. every enqueue on its own, in one isolated run
        iso = full.to_manifest() if mode == "isolated" else plan_for(cap, start, "isolated", tol)
        bad, why = trials.run(iso, start)
        if why:
            raise ShrinkError(f"the range cannot be replayed: {why}")
        if bad:
            first = min(e for e, _ in bad)
            out.result, out.method = [first], "isolated"
            out.mismatch = next(t for e, t in bad if e == first)
            return out
        if mode == "isolated":
            return out
        # 2. the range as planned, then ddmin over its enqueues
        bad, why = trials.run(full.to_manifest(), start)
        if why:
            raise ShrinkError(f"the range cannot be replayed: {why}")
        if bad:
            _ddmin(trials, start, mode, bad[0][1])
        return out
    finally:
        if not work_dir:  # a folder of our own: remove it
            lifecycle.remove(base)


@dataclass
class _Trials:
    """Runs one tried set of enqueues on the devices and records it in the result."""

    cap: Capture
    devices: list[Device]
    against_key: str
    tol: Tolerance
    timeout: float
    base: Path
    out: ShrinkResult
    on_trial: Callable[[Trial], None] | None
    cancel: CancelToken | None
    tag: int = 0

    def run(self, manifest: Manifest, enqueues: list[int]) -> tuple[list[tuple[int, str]], str]:
        from cltui.replay import runner

        if self.cancel is not None and self.cancel.is_set():
            raise ShrinkCancelled("shrink cancelled")
        self.tag += 1
        report = runner.run(manifest, self.devices, data_root=self.cap.path,
                            timeout=self.timeout, save_dir=self.base / f"trial{self.tag}",
                            tolerance=self.tol.to_dict())
        bad, why = _mismatches(report, self.against_key)
        trial = Trial(enqueues, bool(bad), bad[0][1] if bad else (why or "no mismatch"),
                      manifest["source"]["mode"])
        self.out.trials.append(trial)
        if self.on_trial is not None:
            self.on_trial(trial)
        return bad, why


def _ddmin(trials: _Trials, start: list[int], mode: str, mismatch: str) -> None:
    """ddmin over the enqueues of a failing range; the result goes into ``trials.out``."""
    out = trials.out
    last_bad: dict[tuple[int, ...], str] = {tuple(start): mismatch}

    def test(sub: list[int]) -> bool:
        try:
            manifest = plan_for(trials.cap, sub, mode, trials.tol)
        except ShrinkError:
            return False
        found, _why = trials.run(manifest, sub)
        if found:
            last_bad[tuple(sub)] = found[0][1]
        return bool(found)

    # a set of one enqueue loads all its inputs from the capture in every mode: the
    # isolated run already tested each of them (and none failed)
    singles: dict[tuple[int, ...], bool] = {(i,): False for i in range(len(start))}
    out.result = ddmin(start, test, trials.cancel, known=singles)
    out.method = "ddmin"
    out.mismatch = last_bad.get(tuple(out.result), "")


def is_kernel_range(cap: Capture, enqueues: Sequence[int]) -> bool:
    """True when ``enqueues`` are all the kernel enqueues between the first and the last."""
    if not enqueues:
        return False
    pos = cap.find(kinds=[EnqueueKind.KERNEL], first=min(enqueues), last=max(enqueues))
    return sorted(int(cap.numbers[p]) for p in pos) == sorted(enqueues)
