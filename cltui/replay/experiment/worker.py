"""The child process of an experiment: the capture's plan (A) and its variants on ONE device,
in one process, through the replay engine with one shared context (``engine.Shared``).

Job (JSON file): ``device``, ``data_root``, ``base`` (the plan A, or None when a resumed sweep
needs no base run), ``points`` ([{id, plan}]), ``repeat`` (runs per plan: the first validates,
the others time), ``interleave`` (A and its points time in turns, A B B A ...: an A/B run,
a sweep's confirmation of its top few), ``tolerance``, ``arg_tolerance``, ``binary_cache``,
``save_dir`` (optional: each point's replayed outputs are saved under ``save_dir/<id>/``, its
checks' ``output`` names them), ``more`` (true: once done, it reads one more job's path on its
stdin, :func:`cltui.process.child.next_job`, and runs it in the same context: a sweep, then
its confirmation; an A/A calibration, then the A/B), ``alone_first`` (true: a sweep's first
plan runs with nothing built beside it, after a fault that a build ahead may have caused).

Events (one JSON line each, on the runner's pipe, :mod:`cltui.process.child`): ``point_start``
{id}; ``point`` {id, result (the engine's result of the validation run), times (per step,
the device time of each timing repetition, ns), refused (why the device refuses the point's
work sizes, or absent)}; ``validated`` (an A/B's A once checked, the same fields: what the
parent reports for A when B crashes or hangs the process); ``timing`` {id} (the point, or
the A/B's last, was checked and its timing runs begin); ``ahead`` and ``ahead_done`` {id}
(a sweep point's programs built ahead, in a thread); ``waiting`` {id} (nothing runs but
that point's build ahead); ``done``; and the engine's progress (``build``, ``step``,
``step_done``) while a point is checked: what names an enqueue that crashes or hangs the
process, and keeps the steps checked before it.  The id of A is ``"A"``.  A sweep's
programs are built ahead, in a thread, in the order the points run (``engine.Shared`` keeps
them).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from cltui.process.child import connect, exit_now, next_job, sender
from cltui.replay.ahead import read_job

if TYPE_CHECKING:
    from concurrent.futures import Future

BASE_ID = "A"
MODULE = "cltui.replay.experiment.worker"  # ``python -m`` this (it runs as __main__)


class _Run:
    """One child's job: its device, shared context and the engines it makes."""

    def __init__(self, job: dict[str, Any], send: Any) -> None:
        from cltui.replay import engine

        self.job = job
        self.send = send
        self.device = job["device"]
        self.shared = engine.open_shared(self.device)
        self.repeat = max(int(job.get("repeat", 1)), 1)
        self.loaded: dict[str, Any] = {}  # the capture's files, mapped once for every plan

    def again(self, job: dict[str, Any]) -> _Run:
        """The next job of this child (``more``): on the same device it keeps the context, the
        programs built and the mapped files (a sweep's confirmation of its best points)."""
        if job.get("device") != self.device or job.get("data_root") != self.job["data_root"]:
            return _Run(job, self.send)
        self.job = job
        self.repeat = max(int(job.get("repeat", 1)), 1)
        return self

    def engine(self, plan: dict[str, Any], quiet: bool = False, pid: str | None = None) -> Any:
        from pathlib import Path

        from cltui.replay import engine
        from cltui.replay.runner import _hash64, capture_loader

        job = self.job
        save = job.get("save_dir")
        return engine.Engine(
            plan,  # type: ignore[arg-type]  # the plan as JSON
            self.device,
            capture_loader(plan, job["data_root"], self.loaded),
            progress=None if quiet else self.send,
            hasher=_hash64,
            tolerance=job.get("tolerance") or None,
            arg_tolerance={int(k): v for k, v in (job.get("arg_tolerance") or {}).items()},
            binary_cache=job.get("binary_cache"),
            shared=self.shared,
            save_dir=Path(save) / pid if save and pid is not None else None,
        )

    def validate(self, pid: str, plan: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """Prepare and run once (the checks); (the engine or None, the point's event)."""
        self.send({"type": "point_start", "id": pid})
        eng = self.engine(plan, pid=pid)
        ev: dict[str, Any] = {"type": "point", "id": pid, "times": []}
        try:
            eng.prepare()  # the engine's pre-flight: what this device refuses, and why
            found = eng.findings()
            if found:
                first = found[0]
                ev["refused"] = f"enqueue {first['enqueue']} ({first['kernel']}): {first['reason']}"
                return None, ev
            ev["result"] = eng.run(1)
        except Exception as exc:  # an engine error, a driver error: this point's result
            ev["result"] = _failed(eng, exc)
            return None, ev
        return eng, ev

    def time_alone(self, eng: Any, ev: dict[str, Any]) -> None:
        if eng is not None and self.repeat > 1:
            self.send({"type": "timing", "id": ev["id"]})  # a crash from here is the timing's
            eng.repeat_launches(self.repeat - 1)
            ev["times"] = [ts[1:] for ts in eng.launch_times()]

    def ab(self) -> None:
        """A and its points (one in an A/B run; a sweep's top few when it confirms its best),
        validated, then timed in turns (A B B A A B ...: the order reverses each round)."""
        base = self.job["base"]
        a, ev_a = self.validate(BASE_ID, base)
        self.send({**ev_a, "type": "validated"})  # kept by the parent if B kills the process
        sides = [(a, ev_a)] + [self.validate(p["id"], p["plan"]) for p in self.job["points"]]
        if self.repeat > 1:
            self.send({"type": "timing", "id": sides[-1][1]["id"]})
        for r in range(self.repeat - 1):  # neither always runs first
            for eng, _ev in sides if r % 2 == 0 else sides[::-1]:
                if eng is not None:
                    eng.repeat_launches(1)
        for eng, ev in sides:
            if eng is not None and self.repeat > 1:
                ev["times"] = [ts[1:] for ts in eng.launch_times()]
        for _eng, ev in sides:
            self.send(ev)

    def sweep(self) -> None:
        """A (when asked), then each point alone; their programs built ahead (with
        ``alone_first``, only once the first of them has run with nothing beside it)."""
        from concurrent.futures import ThreadPoolExecutor

        points = self.job["points"]
        ahead = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cltui-build-ahead")
        builds: list[Future[None] | None] = [None] * len(points)

        def build_ahead(first: int) -> None:
            for i in range(first, len(points)):
                builds[i] = ahead.submit(self._build, points[i]["id"], points[i]["plan"])

        alone = bool(self.job.get("alone_first"))
        if not alone:
            build_ahead(0)
        try:
            if self.job.get("base") is not None:
                eng, ev = self.validate(BASE_ID, self.job["base"])
                self.time_alone(eng, ev)
                self.send(ev)
                del eng
                if alone:
                    build_ahead(0)
                    alone = False
            for i, point in enumerate(points):
                built = builds[i]
                if built is not None:
                    if not built.done():  # a fault from here on is that build's
                        self.send({"type": "waiting", "id": point["id"]})
                    built.result()
                eng, ev = self.validate(point["id"], point["plan"])
                self.time_alone(eng, ev)
                self.send(ev)
                del eng
                if alone:
                    build_ahead(i + 1)
                    alone = False
        finally:
            ahead.shutdown(wait=False, cancel_futures=True)

    def _build(self, pid: str, plan: dict[str, Any]) -> None:
        """Build a point's programs into the shared context (a failure is left for the
        point's own run to report); ``ahead`` and ``ahead_done`` tell the parent, which
        names a fault that comes meanwhile by both things that ran."""
        from contextlib import suppress

        self.send({"type": "ahead", "id": pid})
        with suppress(Exception):
            self.engine(plan, quiet=True).build()
        self.send({"type": "ahead_done", "id": pid})


def _failed(eng: Any, exc: Exception) -> dict[str, Any]:
    """The result of a point that stopped on an error (as ``engine.run_plan`` makes it)."""
    from cltui.replay.engine.base import EngineError, _cl_msg

    if isinstance(exc, EngineError):
        msg, enq = str(exc), exc.enqueue
    else:
        text = _cl_msg(exc) if hasattr(exc, "code") else f"{type(exc).__name__}: {exc}"
        msg, enq = f"replay failed on {eng.device['name']}: {text}", None
    return {
        "device": eng.device, "ok": False, "error": msg, "failed_enqueue": enq, "repeat": 1,
        "steps": [], "builds": eng.builds, "notes": eng.notes, "build_log": eng.build_log,
    }  # fmt: skip


def _child(job_path: str, fd: int) -> int:
    import threading

    out = connect(fd)
    send = sender(out, threading.Lock())

    job = read_job(job_path, send)
    if job is None:  # started ahead, and not needed
        out.close()
        return 0
    run = _Run(job, send)
    while True:
        if run.job.get("interleave"):
            run.ab()
        else:
            run.sweep()
        send({"type": "done"})
        nxt = next_job() if run.job.get("more") else None
        if nxt is None:
            break
        run = run.again(nxt)
    out.close()
    return 0


if __name__ == "__main__":  # pragma: no cover - the child process
    exit_now(_child(sys.argv[1], int(sys.argv[2])))
