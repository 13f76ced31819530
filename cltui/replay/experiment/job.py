"""Run an experiment: A and variants, one child process per device
(:mod:`cltui.replay.experiment.worker`), supervised by :class:`cltui.process.child.Child`.

``ExperimentJob(...).events()`` yields ``{"type": "point", "device", "id", "result",
"times", "refused"}`` as each point ends (and ``device`` when a device starts).  A child
that crashes or hangs on a point gives that point a result with status ``crash``/``hang``
(where it was, from the engine's events: the enqueue running, the steps checked before it,
the timing runs; its stderr's tail and the whole in a kept log) and, in a sweep, a new child
goes on with the points left.
``cancel()`` (any thread) kills the running child; the points done so far stay done.
``keep``: the last device's child, its job done, waits for one more (:meth:`take_kept`, then
``ahead`` of the next job: a sweep's confirmation runs in the sweep's process).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cltui.process import lifecycle
from cltui.process.child import Child, Event, Running, keep_log, use_ahead
from cltui.progress import CancelToken
from cltui.replay.engine.schema import ArgTolerance, Device, Manifest, ToleranceSpec
from cltui.replay.experiment.worker import MODULE
from cltui.replay.outcome import Progress, failed, why_ended

__all__ = ["ExperimentJob", "Point"]



@dataclass
class Point:
    """One configuration to run: its id and its (changed) plan."""

    id: str
    plan: Manifest


class ExperimentJob:
    """A (``base``, None to skip it) and ``points`` on each device (see the module doc)."""

    def __init__(
        self,
        base: Manifest | None,
        points: Sequence[Point],
        devices: Sequence[Device],
        data_root: str | Path,
        *,
        repeat: int = 10,
        interleave: bool = False,
        tolerance: ToleranceSpec | None = None,
        arg_tolerance: ArgTolerance | None = None,
        timeout: float = 60.0,
        binary_cache: str | Path | None = None,
        ahead: Child | None = None,
        save_dir: str | Path | None = None,
        keep: bool = False,
    ) -> None:
        self.base = base
        self.save_dir = str(save_dir) if save_dir else None  # per device: save_dir/<dev>/<id>/
        self.points = list(points)
        self.devices = list(devices)
        self.data_root = str(data_root)
        self.repeat = max(int(repeat), 1)
        self.interleave = interleave
        self.tolerance = tolerance or {}
        self.arg_tolerance = arg_tolerance or {}
        self.timeout = timeout
        self.binary_cache = str(binary_cache) if binary_cache else None
        self.cancel_token = CancelToken()
        self._ahead = ahead  # a child started ahead of its job: the first device's
        self.keep = keep
        self._kept: Child | None = None  # the last device's child, waiting for one more job
        self._running = Running()
        self.workdir = lifecycle.temp_dir("experiment")
        self._status = ""  # how the last child ended ("" when it ended well)
        self._stderr = ""  # the last child's stderr tail
        self._log: str | None = None  # a copy of the whole stderr of a child that crashed
        self._seen = Progress()  # what the last point's events said (its enqueue, its steps)
        self._timing = False  # the last point had been checked and was being timed
        self._building_ahead: str | None = None  # the point whose programs are built ahead
        self._waiting_for: str | None = None  # the point whose build ahead the child awaits
        self._held: str | None = None  # the point reported whose process died past it

    def cancel(self) -> None:
        self.cancel_token.cancel()
        self._running.kill()

    @property
    def cancelled(self) -> bool:
        return self.cancel_token.is_set()

    def cleanup(self) -> None:
        if self._ahead is not None:  # never used (cancelled before it ran)
            self._ahead.kill()
        if self._kept is not None:  # not taken
            self._kept.release()
            self._kept = None
        lifecycle.remove(self.workdir)

    def take_kept(self) -> Child | None:
        """The last device's child (``keep``), its job done and well, waiting for one more
        (give it as the next job's ``ahead``, or :meth:`Child.release` it); its stderr moves
        to a folder of its own (this job's goes with :meth:`cleanup`).  None when there is
        none (it crashed, hung, was cancelled, or none ran)."""
        kept, self._kept = self._kept, None
        if kept is not None:
            folder = lifecycle.temp_dir("experiment")
            try:
                os.replace(kept.err_path, folder / kept.err_path.name)  # it writes on there
            except OSError:
                kept.release()
                lifecycle.remove(folder)
                return None
            kept.err_path, kept.scratch = folder / kept.err_path.name, folder
        return kept

    def events(self) -> Iterator[Event]:
        """Every device in turn; per device, its points as they end."""
        for dev in self.devices:
            if self.cancelled:
                return
            yield {"type": "device", "device": dev["id"], "name": dev["name"]}
            yield from self._device(dev)

    def _device(self, dev: Device) -> Iterator[Event]:
        base = self.base
        left = list(self.points)
        attempt = 0
        alone_first = False  # after a fault that came while two things ran (see below)
        while not self.cancelled and (base is not None or left):
            attempt += 1
            done: set[str] = set()
            running: list[str] = []
            validated: dict[str, Event] = {}
            for ev in self._child_events(dev, base, left, attempt, running, alone_first):
                if ev.get("type") == "validated":
                    validated[str(ev["id"])] = {**ev, "type": "point", "times": []}
                elif ev.get("type") == "point":
                    done.add(str(ev["id"]))
                    yield ev
            crashed = running[-1] if running and running[-1] not in done else None
            ahead = self._building_ahead
            waited = ahead is not None and crashed is None and self._waiting_for == ahead
            left = [p for p in left if p.id not in done]
            if "A" in done:
                base = None
            alone_first = False
            if ahead is not None and not waited and self._status and not self.cancelled:
                # it ended while a point ran (or was freed) and a later point's programs were
                # built: either may be the cause; the first point left runs again with
                # nothing beside it (then the rest with their builds ahead)
                alone_first = True
                continue
            if base is not None and running and running[0] != "A":
                base = None
            if waited:  # nothing ran but that point's build
                crashed, self._seen, self._timing = ahead, Progress(building="its programs "
                                                                    "(built ahead)"), False
            if crashed is None and done and left and not self.cancelled:
                continue  # it ended between points (a crash as one was freed): a new one goes on
            if crashed is None:  # all done, or a child that ran nothing more: no retry
                why = self._not_reached(running)
                for pid in [p.id for p in left]:
                    yield self._crashed(dev, pid, why, "cancelled" if self.cancelled else "error")
                return
            yield self._crashed(dev, crashed)
            done.add(crashed)
            if crashed == "A":
                base = None
            if self.interleave:  # an A/B run is not restarted: the rest is lost with it
                why = f"not reported: the A/B process ended when {crashed} did"
                lost = ["A"] if base is not None and "A" not in done else []
                if lost and "A" in validated:  # checked before the crash: its checks stand
                    yield validated["A"]
                    lost = []
                for pid in lost + [p.id for p in left if p.id not in done]:
                    yield self._crashed(dev, pid, why, "error")
                return
            left = [p for p in left if p.id not in done]

    def _child_events(
        self, dev: Device, base: Manifest | None, left: list[Point], attempt: int,
        running: list[str], alone_first: bool = False,
    ) -> Iterator[Event]:  # fmt: skip
        tag = f"{dev['id'].replace(':', '_')}_{attempt}"
        job = {
            "device": dev, "data_root": self.data_root, "base": base,
            "points": [{"id": p.id, "plan": p.plan} for p in left], "repeat": self.repeat,
            "interleave": self.interleave, "tolerance": self.tolerance,
            "arg_tolerance": {str(k): v for k, v in self.arg_tolerance.items()},
            "binary_cache": self.binary_cache, "alone_first": alone_first,
            "save_dir": (f"{self.save_dir}/{dev['id'].replace(':', '_')}"
                         if self.save_dir else None),
        }  # fmt: skip
        more = self.keep and dev is self.devices[-1]
        job["more"] = more
        job_path = self.workdir / f"job_{tag}.json"
        job_path.write_text(json.dumps(job))
        err_path = self.workdir / f"stderr_{tag}.txt"
        self._status, self._log, self._building_ahead, self._waiting_for = "", None, None, None
        self._held = None
        proc, self._ahead = use_ahead(self._ahead, job_path, more), None
        try:
            proc = proc or Child(MODULE, job_path, err_path, more=more)
        except OSError as exc:
            self._status = f"cannot start the experiment process: {exc}"
            return
        kept = False
        held: Event | None = None  # a point reported, until its process goes on past it
        try:
            with self._running.holding(proc):
                done = False
                for ev in proc.events(self.timeout, self.cancel_token):
                    self._see(ev)
                    et = ev.get("type")
                    if held is not None and et in ("point", "point_start", "waiting", "done"):
                        yield held  # its run ended well: its memory freed, the next begun
                        held = self._held = None
                    if et == "point_start":
                        running.append(str(ev["id"]))
                    elif et in ("point", "validated"):
                        ev["device"] = dev["id"]
                        if et == "validated":
                            yield ev
                        else:
                            held, self._held = ev, str(ev["id"])
                    done = et == "done"
                    if done and more:
                        break  # it waits for one more job: its pipe stays open
                self._status = proc.status
                if done and more:  # kept for one more job, or told none comes
                    if not self._status and not self.cancelled:
                        self._kept, kept = proc, True
                    else:
                        proc.release()
                    return
                rc = proc.finish(reported=done and not self._status)
                if not self._status and rc:
                    cause, what = lifecycle.exit_cause(rc)
                    self._status = f"{cause}: {what}"
                self._stderr = proc.stderr_tail()
                if self._stderr and self._status not in ("", "cancelled"):
                    log = keep_log(proc.err_path, f"experiment-{dev.get('id', '')}-crash")
                    self._log = str(log) if log is not None else None
                if held is not None and self._status in ("", "cancelled"):
                    yield held  # else its process died past it: the point's fault (_crashed)
                    self._held = None
        finally:
            if not kept:
                proc.kill()
                proc.forget_files()

    def _see(self, ev: Event) -> None:
        """Note what a point's events say: the enqueue running, the steps checked, the
        timing begun (what a crash or a hang of its process is named by)."""
        et = ev.get("type")
        if et == "point_start":
            self._seen, self._timing, self._waiting_for = Progress(), False, None
        elif et == "waiting":
            self._waiting_for = str(ev["id"])
        elif et == "timing":
            self._timing = True
        elif et == "ahead":
            self._building_ahead = str(ev["id"])
        elif et == "ahead_done":
            self._building_ahead = None
        if et in ("step", "step_done", "build"):
            self._seen.see(ev)

    def _crashed(self, dev: Device, pid: str, why: str | None = None,
                 status: str | None = None) -> Event:  # fmt: skip
        """The result of point ``pid`` whose process crashed, hung or was cancelled (``why``
        given: a point it did not reach): what it was doing, the steps it finished."""
        if status is None:
            status = "cancelled" if self.cancelled else (
                "hang" if self._status == "hang" else "crash")
        seen = self._seen if why is None else Progress()
        if why is None:
            where = ("the end of its run (its checks done)" if pid == self._held else
                     "the timing runs" if self._timing else seen.where)  # fmt: skip
            cause, _, what = self._status.partition(": ")
            why = why_ended(status, cause, what, where, self.timeout)
        res: Any = failed(dev, status, why, seen.running, seen.finished)
        if self._stderr and status in ("crash", "hang"):  # as a replay's result has them
            res["stderr"] = self._stderr
            if self._log is not None:
                res["stderr_log"] = self._log
        return {"type": "point", "device": dev["id"], "id": pid, "result": res, "times": []}

    def _not_reached(self, running: list[str]) -> str:
        """Why the points a process never started have no result (it ended between points,
        or before its first)."""
        where = f"after {running[-1]}" if running else "before its first point"
        if self._status == "hang":
            return (f"not reached: the process made no progress {where} within "
                    f"{self.timeout:g} s and was killed")  # fmt: skip
        cause, _, what = self._status.partition(": ")
        if cause in ("fault", "killed", "exit"):
            return f"not reached: the process {'crashed' if cause == 'fault' else 'ended'} " \
                   f"{where} ({what})"
        return f"not reached: {self._status or 'the process ended before it ran'}"
