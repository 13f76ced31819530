"""A progress bar with cancel for long work (replay, export, check) run in a thread.

``ProgressScreen(title, task)`` is a ``ModalScreen[T | None]``: ``task(control)`` runs in a
Textual thread worker and reports through ``control.progress(ProgressEvent(fraction, text))``
(a :data:`cltui.progress.ProgressFn`, thread-safe; the screen shows the latest report ten times
a second); *Cancel* (or ``escape``) cancels ``control.cancel`` (a
:class:`cltui.progress.CancelToken`), which runs the hooks the task registered with
``control.cancel.on_cancel`` (e.g. killing a replay child).  The screen dismisses with
the task's result, or ``None`` when cancelled (``keep_partial``: the result the task
returns after a cancel, e.g. a replay's finished steps).  A failure stays on screen as one line (no
traceback) until *Close*.

:func:`replay_task` is the replay: a plan for the range, then :mod:`cltui.replay.runner` (one
child process per device, so a crashing or hanging kernel only ends that child).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Label, ProgressBar

from cltui.errors import CltuiError
from cltui.process import lifecycle
from cltui.progress import CancelToken, ProgressEvent
from cltui.replay.engine.schema import Manifest, Report
from cltui.tui.screens.replay_request import ReplayRequest

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.capture.ranges import EnqueueRange
    from cltui.replay.engine.schema import StepSpec
    from cltui.replay.plan import Plan
    from cltui.replay.runner import ReplayJob

__all__ = [
    "ProgressScreen",
    "ReplayOutcome",
    "TaskControl",
    "TaskFailed",
    "failure_text",
    "replay_task",
]

T = TypeVar("T")

_REFRESH = 0.1  # seconds between two looks at the task's progress


class TaskFailed(CltuiError):
    """A task's expected failure: the message is shown as it is (one line)."""


class TaskControl:
    """What a task gets: progress reporting and cancellation (usable from any thread).

    ``progress`` only records the latest state; the screen reads it a few times a second, so a
    task may report as often as it likes and the last word (e.g. the enqueue that hangs) always
    shows.
    """

    def __init__(self) -> None:
        self.cancel = CancelToken()
        self._lock = threading.Lock()
        self._state: tuple[int, float | None, str] = (0, 0.0, "starting…")

    def progress(self, event: ProgressEvent) -> None:
        """Record the task's latest progress (a :data:`cltui.progress.ProgressFn`)."""
        with self._lock:
            self._state = (self._state[0] + 1, event.fraction, event.what)

    def state(self) -> tuple[int, float | None, str]:
        """(version, fraction, text) of the latest report."""
        with self._lock:
            return self._state


class ProgressScreen(ModalScreen[T | None], Generic[T]):
    """Runs ``task`` in a thread with a progress bar; dismisses with its result."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    class Finished(Message):
        def __init__(self, result: Any, error: str | None) -> None:
            super().__init__()
            self.result = result
            self.error = error

    def __init__(
        self, title: str, task: Callable[[TaskControl], T], *, keep_partial: bool = False
    ) -> None:
        super().__init__()
        self.keep_partial = keep_partial  # a cancelled task's result (what finished) is kept
        self.title_text = title
        self.work_fn = task
        self.control = TaskControl()
        self._shown_version = -1
        self.error: str | None = None
        self.finished = False
        self.last_text = ""

    def compose(self) -> ComposeResult:
        with Vertical(id="progress-box", classes="action-box"):
            yield Label(self.title_text, id="progress-title", classes="action-title")
            yield ProgressBar(total=1.0, show_eta=False, id="progress-bar")
            yield Label("starting…", id="progress-text", markup=False)
            yield Label("", id="progress-error", classes="action-error", markup=False)
            with Horizontal(classes="action-buttons"):
                yield Button("Cancel", id="progress-cancel", compact=True)

    def on_mount(self) -> None:
        self.set_interval(_REFRESH, self._show_progress)
        self._run()

    def on_unmount(self) -> None:
        if not self.finished:  # the app is closing under us: stop the child processes
            self.control.cancel.cancel()

    @work(thread=True, exclusive=True, group="progress-task", exit_on_error=False)
    def _run(self) -> None:
        result: T | None = None
        error: str | None = None
        try:
            result = self.work_fn(self.control)
        except TaskFailed as exc:
            error = str(exc)
        except Exception as exc:  # a bug must not reach the user as a traceback
            error = failure_text(self.title_text, exc)
        self.post_message(self.Finished(result, error))

    def _show_progress(self) -> None:
        version, fraction, text = self.control.state()
        if self.finished or version == self._shown_version:
            return
        try:
            bar = self.query_one("#progress-bar", ProgressBar)
            label = self.query_one("#progress-text", Label)
        except NoMatches:  # being dismissed
            return
        self._shown_version = version
        if fraction is None:
            bar.update(total=None)
        else:
            bar.update(total=1.0, progress=max(0.0, min(1.0, fraction)))
        self.last_text = text
        label.update(text)

    @on(Finished)
    def _finished(self, message: Finished) -> None:
        if self.finished:
            return
        self.finished = True
        if self.control.cancel.is_set():
            self.notify(f"{self.title_text}: cancelled", severity="warning", timeout=4)
            self.dismiss(message.result if self.keep_partial else None)
            return
        if message.error is not None:
            self.error = message.error
            self.query_one("#progress-error", Label).update(message.error)
            self.query_one("#progress-text", Label).update("")
            button = self.query_one("#progress-cancel", Button)
            button.label = "Close"
            button.focus()
            return
        self.dismiss(message.result)

    def action_cancel(self) -> None:
        if self.finished:
            self.dismiss(None)
            return
        self.query_one("#progress-text", Label).update("cancelling…")
        self.control.cancel.cancel()

    @on(Button.Pressed, "#progress-cancel")
    def _cancel_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_cancel()


def failure_text(what: str, exc: BaseException) -> str:
    detail = str(exc).strip().splitlines()
    return f"{what} failed: {type(exc).__name__}" + (f": {detail[0]}" if detail else "")


# ------------------------------------------------------------------------------------ replay


@dataclass
class ReplayOutcome:
    """A finished replay: the runner's report and the plan's manifest it ran."""

    report: Report
    manifest: Manifest
    request: ReplayRequest
    range_text: str
    save_dir: Path  # replayed outputs (removed when the results screen closes)

    def step(self, enqueue: int) -> dict[str, Any] | None:
        for st in self.manifest.get("steps", []):
            if int(st["enqueue"]) == enqueue:
                return dict(st)
        return None

    def kernel_of(self, enqueue: int | None) -> str | None:
        if enqueue is None:
            return None
        st = self.step(int(enqueue))
        return str(st["kernel"]) if st is not None else None

    def cleanup(self) -> None:
        lifecycle.remove(self.save_dir)


def replay_task(
    capture: Capture, rng: EnqueueRange, request: ReplayRequest, plan: Plan | None = None
) -> Callable[[TaskControl], ReplayOutcome]:
    """The replay of ``rng`` as a :class:`ProgressScreen` task.  ``plan``: the range's plan
    in the request's mode when it is built already (the replay dialog's pre-flight built it),
    else it is built here; the tolerances go to the runner with the job (the engine lays them
    over the plan's, which are none), so that one plan serves whatever the dialog's fields say."""

    def run(control: TaskControl) -> ReplayOutcome:
        from cltui.replay import runner
        from cltui.replay.plan import PlanError, build_plan

        control.progress(ProgressEvent(0.0, "planning"))
        try:
            planned = plan or build_plan(capture, rng, request.mode)
        except PlanError as exc:
            raise TaskFailed(str(exc)) from None
        if control.cancel.is_set():
            raise TaskFailed("replay cancelled")
        manifest = planned.to_manifest()
        save_dir = lifecycle.temp_dir("replay")
        job = runner.start(
            manifest,
            request.devices,
            data_root=planned.capture_path,
            repeat=request.repeat,
            tolerance=request.tolerance.to_dict(),
            arg_tolerance=request.arg_tolerance,
            timeout=request.timeout,
            save_dir=save_dir,
        )
        control.cancel.on_cancel(job.cancel)
        try:
            _follow(job, control, manifest["steps"], len(request.devices), request.repeat)
        finally:
            if not job.done:  # the iterator was left early: stop the child
                job.cancel()
        report = job.report
        if report is None:
            lifecycle.remove(save_dir)
            raise TaskFailed("the replay ended without a report")
        # cancelled: the steps that finished keep their checks; the verdict says INCOMPLETE
        return ReplayOutcome(report, manifest, request, str(rng), save_dir)

    return run


def _follow(
    job: ReplayJob, control: TaskControl, steps: list[StepSpec], n_dev: int, repeat: int
) -> None:
    """The runner's events as progress: the device, its builds, each enqueue, the timing."""
    units = max(1, n_dev * len(steps))

    def say(fraction: float | None, what: str) -> None:
        control.progress(ProgressEvent(fraction, what))

    dev_index = -1
    dev_name = ""
    for ev in job.events():
        et = ev.get("type")
        if et == "device":
            dev_index += 1
            dev_name = f"{ev['device']} {ev.get('name', '')}"
            say(dev_index * len(steps) / units, f"{dev_name}: starting")
        elif et == "build":
            say(None if dev_index < 0 else dev_index * len(steps) / units,
                f"{dev_name}: building {ev.get('label', '')}")
        elif et == "step":
            i = int(ev.get("i", 0))
            kernel = steps[i]["kernel"] if i < len(steps) else ""
            say(
                (dev_index * len(steps) + i) / units,
                f"{dev_name}: enqueue {ev.get('enqueue')} ({kernel}) "
                f"{i + 1}/{len(steps)}",
            )
        elif et == "timing":
            say((dev_index + 1) * len(steps) / units, f"{dev_name}: timing {repeat} repetitions")
        elif et == "device_done":
            say((dev_index + 1) * len(steps) / units,
                f"{dev_name}: {ev['result'].get('status', 'done')}")
