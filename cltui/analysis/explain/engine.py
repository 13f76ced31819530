"""The one explain engine that every caller uses (``cltui explain``, ``cltui diverge
--explain``, the fleet for a column's first divergence, the app's worker): the runs
(:mod:`.run`: the enqueue as captured, twice, in reverse work-item order, and each
controlled rebuild, on two devices), the report (:mod:`.analyse`) and which line
(:mod:`.line`: the kernel instrumented and traced on both devices)."""

from __future__ import annotations

from typing import Any

from cltui.analysis.explain.analyse import explain_report
from cltui.analysis.explain.line import Item, with_line
from cltui.analysis.explain.race import with_race
from cltui.analysis.explain.run import DeviceRuns, Runs, run_explain
from cltui.analysis.explain.single import single_report
from cltui.analysis.explain.walk import with_walk
from cltui.capture.capture import Capture
from cltui.progress import CancelToken, ProgressFn
from cltui.replay.engine.schema import Device

__all__ = ["explain_enqueue", "explain_first_divergence", "explain_with_runs"]


def explain_with_runs(cap: Capture, enqueue: int, devices: list[Device], *,
                      timeout: float = 60.0, cancel: CancelToken | None = None,
                      progress: ProgressFn | None = None, items: list[Item] | None = None,
                      which_line: bool = True, device_runs: DeviceRuns | None = None,
                      ) -> tuple[Runs, dict[str, Any]]:  # fmt: skip
    """The runs (each point's outputs, for a divergence map over the whole output) and the
    report of :func:`explain_enqueue`: where and why, then (``which_line``) the first
    diverging line, traced for ``items`` (None: the differing work-items and equal
    neighbours; :mod:`.line`), the upstream walk (:mod:`.walk`) and the race (:mod:`.race`).
    One device: whether its runs agree, and the race (:mod:`.single`).  ``device_runs``: where
    the devices' runs happen (None: here; a fleet ships them to its columns' hosts,
    :mod:`cltui.fleet.explain`)."""
    runs = run_explain(cap, enqueue, devices, timeout=timeout, cancel=cancel,
                       progress=progress, device_runs=device_runs)  # fmt: skip
    if len(devices) == 1:
        report = single_report(runs, str(cap.path), enqueue)
        if which_line:
            with_race(report, runs, timeout=timeout, cancel=cancel, progress=progress)
        return runs, report
    report = explain_report(runs, str(cap.path), enqueue)
    if which_line and (report["verdict"]["status"] != "incomplete" or report["where"]):
        kept: list[Any] = []  # the line's traces: the walk starts from them
        with_line(report, runs, items, kept, timeout=timeout, cancel=cancel, progress=progress)
        with_walk(report, runs, cap, kept[0] if kept else None, timeout=timeout, cancel=cancel,
                  progress=progress)  # fmt: skip
        with_race(report, runs, timeout=timeout, cancel=cancel, progress=progress)
    return runs, report


def explain_enqueue(cap: Capture, enqueue: int, devices: list[Device], *,
                    timeout: float = 60.0, cancel: CancelToken | None = None,
                    progress: ProgressFn | None = None, items: list[Item] | None = None,
                    which_line: bool = True,
                    device_runs: DeviceRuns | None = None) -> dict[str, Any]:  # fmt: skip
    """The explanation of kernel enqueue ``enqueue`` of ``cap`` on the two ``devices`` (the
    report dict of ``cltui explain --json``).  :class:`~.run.ExplainError` (one line) when
    the enqueue cannot be explained."""
    return explain_with_runs(cap, enqueue, devices, timeout=timeout, cancel=cancel,
                             progress=progress, items=items, which_line=which_line,
                             device_runs=device_runs)[1]  # fmt: skip


def explain_first_divergence(cap: Capture, first_divergent: int | None, devices: list[Device],
                             *, timeout: float = 60.0, cancel: CancelToken | None = None,
                             progress: ProgressFn | None = None,
                             device_runs: DeviceRuns | None = None,
                             ) -> dict[str, Any] | None:  # fmt: skip
    """The explanation of a first divergence that ``diverge`` or a fleet column found
    (``first_divergent``: the report's or the column's first divergent enqueue of ``cap``),
    replayed on two devices (here, or through ``device_runs``: on the fleet columns'
    hosts); None when there is none."""
    if first_divergent is None:
        return None
    return explain_enqueue(cap, first_divergent, devices, timeout=timeout, cancel=cancel,
                           progress=progress, device_runs=device_runs)  # fmt: skip
