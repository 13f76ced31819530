"""Experiments in the app (range commands of :mod:`cltui.tui.range_commands`):

* ``E``: the focused enqueue's program in ``$VISUAL``/``$EDITOR`` (the app suspends and
  comes back), then the experiment dialog with the edited source as the change;
* ``X``: the experiment dialog (options, defines, work sizes) on the selected range;
* *Try* runs an A/B (progress with cancel, then :class:`AbResultsScreen`); *Sweep* opens
  :class:`SweepScreen` (the table grows, progress, cancel).

The work is :mod:`cltui.replay.experiment.runs`, the CLI's own (``cltui try``, ``cltui sweep``).
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import SuspendNotSupported

from cltui.capture.safeopen import MAX_SOURCE, read_limited
from cltui.process import lifecycle
from cltui.progress import CancelToken, ProgressEvent
from cltui.replay.experiment.report import AbReport
from cltui.replay.experiment.variant import ProgramChange, VariantError
from cltui.tui.screens.ab_results import AbResultsScreen
from cltui.tui.screens.experiment_dialog import ExperimentDialog, ExperimentRequest
from cltui.tui.screens.replay_progress import ProgressScreen, TaskControl, TaskFailed
from cltui.tui.screens.sweep import SweepScreen
from cltui.tui.selection import selection, selection_with_kernels

if TYPE_CHECKING:
    from textual.app import App

    from cltui.capture.capture import Capture
    from cltui.capture.ranges import EnqueueRange
    from cltui.replay.engine.schema import Device, Manifest
    from cltui.replay.experiment.sweep import Row
    from cltui.tui.screens.main import MainScreen

__all__ = ["edit_program", "start_experiment"]


def edit_program(app: App[Any], screen: MainScreen) -> None:
    """``E``: edit the focused enqueue's program, then the dialog with that change."""
    picked = selection(screen)
    enq = screen.details.enqueue
    if picked is None or enq is None:
        return
    cap = picked[0]
    prog = enq.program
    text = cap.program_source(prog) if prog is not None else ""
    if prog is None or not text:
        app.notify("Edit: this enqueue has no program source in the capture", severity="warning")
        return
    new = _edit(app, text, f"program_{prog.number:04d}.cl")
    if new is None:
        return
    change = ProgramChange(f"p{prog.number}", source=new) if new != text else None
    if change is None:
        app.notify("Edit: the source is unchanged", timeout=4)
    start_experiment(app, screen, change, kernel=enq.row.kernel)


def _edit(app: App[Any], text: str, name: str) -> str | None:
    """``text`` after ``$VISUAL``/``$EDITOR`` (``vi``) edited it (None when it failed)."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    with lifecycle.scratch("edit") as tmp:
        path = Path(tmp) / name
        path.write_text(text, encoding="utf-8")
        cmd = [*shlex.split(editor), str(path)]
        try:
            try:
                with app.suspend():  # the editor gets the terminal; the app comes back after
                    rc = subprocess.call(cmd)
            except SuspendNotSupported:  # no terminal to hand over (headless, tests)
                rc = subprocess.call(cmd, stdin=subprocess.DEVNULL)
        except (OSError, ValueError) as exc:
            app.notify(f"Edit: cannot run {editor}: {exc}", severity="error")
            return None
        if rc != 0:
            app.notify(f"Edit: {editor} exited with {rc}: nothing changed", severity="warning")
            return None
        try:
            return read_limited(path, MAX_SOURCE, follow=True).decode("utf-8", "replace")
        except OSError as exc:
            app.notify(f"Edit: cannot read {path}: {exc.strerror or exc}", severity="error")
            return None


def start_experiment(app: App[Any], screen: MainScreen, program: ProgramChange | None = None,
                     *, kernel: str | None = None) -> None:  # fmt: skip
    """``X``: the dialog, then an A/B or a sweep of the selected range."""
    picked = selection_with_kernels(app, "Experiment", screen)
    if picked is None:
        return
    cap, rng = picked

    def chosen(req: ExperimentRequest | None) -> None:
        if req is None:
            return
        if req.sweep:
            app.push_screen(SweepScreen(f"Sweep of {rng}", sweep_task(cap, rng, req)))
        else:
            app.push_screen(ProgressScreen(f"A/B of {rng}", ab_task(cap, rng, req)), done)

    def done(report: AbReport | None) -> None:
        if report is not None:
            app.push_screen(AbResultsScreen(report))

    app.push_screen(ExperimentDialog(str(rng), kernel if program is not None else None, program),
                    chosen)  # fmt: skip


def _plan_and_devices(cap: Capture, rng: EnqueueRange,
                      req: ExperimentRequest) -> tuple[Manifest, list[Device]]:  # fmt: skip
    from cltui.replay.devices import DeviceError, devices_for
    from cltui.replay.plan import PlanError, build_plan

    try:
        base = build_plan(cap, rng).to_manifest()
        devices, _why = devices_for(cap, rng, req.devices)
    except (PlanError, DeviceError) as exc:
        raise TaskFailed(str(exc)) from None
    return base, devices


def ab_task(cap: Capture, rng: EnqueueRange, req: ExperimentRequest) -> Any:
    """The A/B as a :class:`ProgressScreen` task."""

    def run(control: TaskControl) -> AbReport:
        from cltui.replay.experiment.apply import apply_variant
        from cltui.replay.experiment.runs import run_ab

        control.progress(ProgressEvent(0.0, "planning"))
        base, devices = _plan_and_devices(cap, rng, req)
        with lifecycle.scratch("variant") as tmp:
            try:
                plan = apply_variant(base, req.variant, cap.path, Path(tmp))
            except VariantError as exc:
                raise TaskFailed(str(exc)) from None
            report = run_ab(base, plan, devices, cap.path, req.repeat, cancel=control.cancel,
                            progress=control.progress)  # fmt: skip
        if report is None:
            raise TaskFailed("cancelled")
        return report

    return run


def sweep_task(cap: Capture, rng: EnqueueRange, req: ExperimentRequest) -> Any:
    """The sweep as a :class:`SweepScreen` task: (runs, the rows, the summary)."""

    def run(cancel: CancelToken) -> tuple[int, Iterator[Row], Any]:
        from cltui.replay.experiment.apply import apply_variant, changes_nothing
        from cltui.replay.experiment.runs import SweepRun, summarize
        from cltui.replay.experiment.sweep import point_id, points

        base, devices = _plan_and_devices(cap, rng, req)
        pts = points(req.spec)
        tmp = lifecycle.temp_dir("sweep")
        plans = {point_id(v): apply_variant(base, v, cap.path, tmp) for v in pts}
        pts = [v for v in pts if v.empty or not changes_nothing(base, plans[point_id(v)])]
        sweep = SweepRun(req.spec, cap.path, pts, plans, devices, [], None, repeat=req.repeat,
                         cancel=cancel)  # fmt: skip

        def rows() -> Iterator[Row]:
            ended = False
            try:
                yield from sweep.rows()
                ended = True
            finally:
                if not ended:  # no summary follows
                    sweep.close()
                    lifecycle.remove(tmp)

        def summary(done: list[Row], interrupted: bool) -> dict[str, Any]:
            # the plans' changed sources (tmp) are read again by the confirmation
            try:
                confirmed = {} if interrupted else sweep.confirm()  # the top few, paired
            finally:
                sweep.close()
                lifecycle.remove(tmp)
            return summarize(req.spec, cap.path, pts, done, [d["id"] for d in devices], None, 0,
                             None, "sweep-best", interrupted or cancel.is_set(),
                             confirmed, base)  # fmt: skip

        return sweep.total, rows(), summary

    return run
