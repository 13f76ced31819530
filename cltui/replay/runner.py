"""Run a replay plan in a child process per device, with progress and a timeout.

A kernel that crashes the driver (segfault) or never terminates must not take cltui
down: each device runs in its own ``python -m cltui.replay.runner`` child.  The child
streams JSON events on a private pipe; the parent tracks which enqueue is running, so
a crash or a hang is reported as "enqueue N crashed the driver" / "did not finish".

API for the CLI and the TUI (plain dicts, no widgets)::

    job = runner.start(plan, devices, repeat=1, timeout=60.0)   # starts at once
    for event in job.events():      # blocking iterator; or start(..., callback=fn)
        ...                         # {"type": "step", "device": "1:0", "i": 3, "n": 16, ...}
    report = job.report             # also returned by job.wait()
    job.cancel()                    # from any thread: kills the running child

Event types: ``device`` (a device starts), ``build`` (a program builds), ``step`` (an
enqueue starts in the validation run), ``step_done``, ``timing`` (repetitions start),
``device_done`` (with that device's result), ``done`` (with the report).  A device that
crashes, hangs or is cancelled gets a result with ``status`` ``crash`` / ``hang`` /
``cancelled`` and ``failed_enqueue``; a child killed by a signal it did not raise itself
(SIGKILL, SIGTERM: a user, the OOM killer) gets ``killed``.  Each ``step_done`` event
carries that step's checks, so such a result keeps the ``steps`` that finished before
the fault (``partial: true``).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict, Unpack, cast

import numpy as np
import numpy.typing as npt

from cltui.process import lifecycle
from cltui.process.child import (
    Child,
    Event,
    Running,
    connect,
    exit_now,
    keep_log,
    sender,
    use_ahead,
)
from cltui.progress import CancelToken
from cltui.replay.ahead import read_job
from cltui.replay.engine.schema import (
    ArgTolerance,
    Device,
    DeviceResult,
    Manifest,
    Report,
    ToleranceSpec,
)
from cltui.replay.outcome import Progress, ended, failed, make_report

# an event (child.Event): a JSON line from a child, passed on with its device; the parent
# adds ``device``, ``device_done`` and ``done`` events of the same shape
Callback = Callable[[Event], None]

DEFAULT_TIMEOUT = 60.0  # seconds without any progress from the child


class ReplayJob:
    """One replay of a plan on one or more devices (each in its own child process)."""

    def __init__(
        self, plan: Manifest, devices: Sequence[Mapping[str, object]],
        **kw: Unpack[StartOptions],
    ) -> None:  # fmt: skip
        """The job, started at once (see :func:`start` for the options)."""
        root = kw.get("data_root")
        cache = kw.get("binary_cache", True)
        self.plan = plan
        self._ahead = kw.get("ahead")  # the first device's child, started ahead of its job
        self.timeline = kw.get("timeline", False)
        self.probe = kw.get("probe", False)
        self.binary_cache = default_binary_cache() if cache is True else (cache or None)
        self.data_root = str(root if root is not None
                             else plan.get("source", {}).get("capture", "."))  # fmt: skip
        # the devices as listed (``devices.list_devices``: pyopencl's, as the schema says)
        self.devices = [cast(Device, d) for d in devices]
        self.repeat = max(int(kw.get("repeat", 1)), 1)
        self.tolerance: ToleranceSpec = kw.get("tolerance") or {}
        self.arg_tolerance: ArgTolerance = kw.get("arg_tolerance") or {}
        self.timeout = float(kw.get("timeout", DEFAULT_TIMEOUT))
        save_dir = kw.get("save_dir")
        self.save_dir = Path(save_dir) if save_dir else lifecycle.temp_dir("replay")
        self.report: Report | None = None
        self._cancel = CancelToken()
        self._running = Running()
        self._events: Iterator[Event] | None = None
        self._done = threading.Event()
        self._pumped = False  # a callback thread consumes the events
        self._results: list[DeviceResult] = []  # the devices that ended
        self._current: tuple[Device, Progress] | None = None  # the device running, its events
        self.callback_error: Exception | None = None
        if (callback := kw.get("callback")) is not None:
            self._pumped = True
            threading.Thread(target=_pump, args=(self, callback), name="cltui-replay",
                             daemon=True).start()  # fmt: skip

    # ---- public
    def cancel(self) -> None:
        """Stop now: the running child is killed, remaining devices are skipped."""
        self._cancel.cancel()
        self._running.kill()

    @property
    def child_pid(self) -> int | None:
        """The process id of the running child (None between devices)."""
        child = self._running.child
        return None if child is None else child.proc.pid

    def cleanup(self) -> None:
        """Remove the outputs folder (replayed bytes, job files) once nothing needs them."""
        lifecycle.remove(self.save_dir)

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def partial_report(self) -> Report:
        """The report of what finished, for a replay stopped while its events were not read
        to the end (ctrl-c in the CLI): the devices that ended, the running one ``cancelled``
        with the steps it finished (and their checks), the others cancelled before they
        started."""
        if self.report is not None:
            return self.report
        results = list(self._results)
        ended_ids = {r["device"]["id"] for r in results}
        current = self._current
        for dev in self.devices:
            if dev["id"] in ended_ids:
                continue
            if current is not None and current[0]["id"] == dev["id"]:
                seen = current[1]
                results.append(failed(dev, "cancelled", f"cancelled ({seen.where})",
                                      seen.running, list(seen.finished)))
            else:
                results.append(failed(dev, "cancelled", "cancelled before it started", None))
        return make_report(
            self.plan, results, self.repeat, self.tolerance, self.arg_tolerance, self.save_dir
        )

    def events(self) -> Iterator[Event]:
        """Events as they come; the last one is ``{"type": "done", "report": ...}``."""
        if self._events is None:
            self._events = self._run()
        return self._events

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> Report:
        """The report (consumes the events unless a callback does; ``timeout`` then applies)."""
        if self._pumped:
            if not self._done.wait(timeout):
                raise TimeoutError("the replay is still running")
        else:
            for _ in self.events():
                pass
        assert self.report is not None
        return self.report

    # ---- internals
    def _run(self) -> Iterator[Event]:
        try:
            yield from self._run_devices()
        finally:
            self._done.set()

    def _run_devices(self) -> Iterator[Event]:
        results = self._results
        for dev in self.devices:
            if self._cancel.is_set():
                results.append(failed(dev, "cancelled", "cancelled before it started", None))
                continue
            yield {"type": "device", "device": dev["id"], "name": dev["name"]}
            res: DeviceResult | None = None
            for ev in self._run_device(dev):
                if ev["type"] == "device_done":
                    res = ev["result"]
                yield ev
            assert res is not None
            results.append(res)
        self.report = make_report(
            self.plan, results, self.repeat, self.tolerance, self.arg_tolerance, self.save_dir
        )
        self._done.set()
        yield {"type": "done", "report": self.report}

    def _run_device(self, dev: Device) -> Iterator[Event]:
        tag = dev["id"].replace(":", "_")
        job = {
            "plan": self.plan,
            "data_root": self.data_root,
            "device": dev,
            "repeat": self.repeat,
            "tolerance": self.tolerance,
            "arg_tolerance": {str(k): v for k, v in self.arg_tolerance.items()},
            "save_dir": str(self.save_dir / tag),
            "probe": self.probe,
            "binary_cache": str(self.binary_cache) if self.binary_cache else None,
            "timeline": self.timeline,
        }
        self.save_dir.mkdir(parents=True, exist_ok=True)
        job_path = self.save_dir / f"job_{tag}.json"
        job_path.write_text(json.dumps(job))
        err_path = self.save_dir / f"stderr_{tag}.txt"
        proc, self._ahead = use_ahead(self._ahead, job_path), None
        try:
            proc = proc or Child("cltui.replay.runner", job_path, err_path)
        except OSError as exc:
            res = failed(dev, "error", f"cannot start the replay process: {exc}", None)
            yield {"type": "device_done", "device": dev["id"], "result": res}
            return
        # also when the consumer drops the iterator: no child is left behind
        with self._running.holding(proc), proc:
            yield from self._watch(dev, proc)

    def _watch(self, dev: Device, proc: Child) -> Iterator[Event]:
        seen = Progress()
        self._current = (dev, seen)
        for ev in proc.events(self.timeout, self._cancel):
            ev["device"] = dev["id"]
            if seen.see(ev):
                yield ev
        status = proc.status
        rc = proc.finish(reported=seen.result is not None and not status)
        stderr_tail = proc.stderr_tail()
        result = ended(dev, status, rc or 0, seen, self.timeout, self._cancel.is_set())
        if result.get("status") in ("crash", "hang", "error", "killed") and stderr_tail:
            result["stderr"] = stderr_tail
            log = keep_log(proc.err_path, f"replay-{dev.get('id', '')}-{result['status']}")
            if log is not None:
                result["stderr_log"] = str(log)
        yield {"type": "device_done", "device": dev["id"], "result": result}


def default_binary_cache() -> Path | None:
    """Where replays keep built program binaries: ``$CLTUI_CACHE_DIR/binaries``, else
    ``$XDG_CACHE_HOME/cltui/binaries`` or ``~/.cache/cltui/binaries``; None when
    ``CLTUI_BINARY_CACHE=0``."""
    if os.environ.get("CLTUI_BINARY_CACHE", "1").strip() in ("0", "no", "off", "false"):
        return None
    base = os.environ.get("CLTUI_CACHE_DIR")
    if base:
        return Path(base) / "binaries"
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "cltui" / "binaries"


class StartOptions(TypedDict, total=False):
    """The keywords of :func:`start`, :func:`run` and :class:`ReplayJob`."""

    data_root: str | Path | None
    repeat: int
    tolerance: ToleranceSpec | None
    arg_tolerance: ArgTolerance | None
    timeout: float
    save_dir: str | Path | None
    callback: Callback | None
    probe: bool
    binary_cache: str | Path | bool | None
    timeline: bool
    ahead: Child | None


def start(
    plan: Manifest, devices: Sequence[Mapping[str, object]], **kw: Unpack[StartOptions]
) -> ReplayJob:
    """Start a replay; with ``callback`` the events are delivered from a background thread.

    ``plan`` is a manifest (``Plan.to_manifest()``); ``data_root`` the directory its data
    paths are relative to (default: the capture directory named in the plan).
    ``probe``: every repetition also reads back the checked outputs (each device's
    result gains ``probe``; :func:`~cltui.replay.cross.probe_runs` loads them for
    ``probe_outputs``).
    ``binary_cache``: True for :func:`default_binary_cache`, a folder, or False/None for
    none (programs built from source keep their device binary there for the next run).
    ``timeline``: each device's result gains ``timeline`` (every launch of the timing
    repetitions: ``cltui latency``).
    ``ahead``: the first device's child, started ahead of its job
    (:func:`cltui.process.child.start_ahead`).
    """
    return ReplayJob(plan, devices, **kw)


def _pump(job: ReplayJob, callback: Callback) -> None:
    """Deliver the job's events to ``callback`` (on a thread of its own)."""
    for ev in job.events():
        if job.callback_error is not None:
            continue  # drain: the children still get stopped and reported
        try:
            callback(ev)
        except Exception as exc:  # a broken callback must not leave a child behind
            job.callback_error = exc
            job.cancel()


def run(
    plan: Manifest, devices: Sequence[Mapping[str, object]], **kw: Unpack[StartOptions]
) -> Report:
    """Start and wait: the report."""
    return start(plan, devices, **kw).wait()


# --------------------------------------------------------------------------- child side


def capture_loader(
    plan: dict[str, Any], root: str | Path,
    memo: dict[str, npt.NDArray[np.uint8]] | None = None,
) -> Callable[[str], npt.NDArray[np.uint8]]:  # fmt: skip
    """``engine.dir_loader`` that refuses a file whose path leaves ``root`` through a
    symbolic link (a capture is untrusted: nothing outside it is read).  ``plan``: the
    plan as the child read it (JSON).  ``memo``: the files checked and mapped (read-only)
    by path, shared by the loaders of several plans of one capture (a sweep's points)."""
    from cltui.replay import engine

    inner = engine.dir_loader(plan, root)
    base = Path(root)
    top = base.resolve()
    table: dict[str, Any] = plan.get("data", {})
    ok: set[str] = set()
    memo = {} if memo is None else memo

    def load(key: str) -> npt.NDArray[np.uint8]:
        entry = table.get(key)
        where = str(base / str(entry["path"])) if entry is not None else ""
        if where in memo:
            return memo[where]
        if key not in ok and entry is not None:
            if entry.get("origin") != "variant":  # a variant's source: written by cltui
                path = base / str(entry["path"])
                if not path.resolve().is_relative_to(top):
                    raise engine.EngineError(
                        f"{path} is a symbolic link leading outside the capture (not followed)"
                    )
            ok.add(key)
        data = inner(key)
        if entry is not None:
            memo[where] = data
        return data

    return load


def _hash64(data: bytes) -> int:
    """The capture's 64-bit hash (imported on first use: most ranges hold no hashed dump,
    and importing ``cltui.capture`` costs the child ~0.13 s)."""
    from cltui.capture.hashing import cli_hash64

    return cli_hash64(data)


def _child(job_path: str, fd: int) -> int:
    from cltui.replay import engine

    out = connect(fd)  # a hung kernel must not outlive cltui
    send = sender(out)

    job = read_job(job_path, send)
    if job is None:  # started ahead, and not needed
        out.close()
        return 0
    plan = job["plan"]
    loader = capture_loader(plan, job["data_root"])
    result = engine.run_plan(
        plan,
        job["device"],
        loader,
        repeat=int(job.get("repeat", 1)),
        progress=send,
        hasher=_hash64,
        tolerance=job.get("tolerance") or None,
        arg_tolerance={int(k): v for k, v in (job.get("arg_tolerance") or {}).items()},
        save_dir=job.get("save_dir"),
        probe=bool(job.get("probe")),
        binary_cache=job.get("binary_cache"),
        timeline=bool(job.get("timeline")),
    )
    send({"type": "result", "result": result})
    out.close()
    return 0


if __name__ == "__main__":  # pragma: no cover - the child process
    exit_now(_child(sys.argv[1], int(sys.argv[2])))
