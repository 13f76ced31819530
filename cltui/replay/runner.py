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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

from cltui.replay import lifecycle
from cltui.replay.child import Child, connect
from cltui.replay.engine import combine_verdicts, verdict
from cltui.replay.engine import compare as cmp
from cltui.replay.engine.schema import CrossCheck, DeviceResult, Manifest, Report

Event = dict[str, Any]
Callback = Callable[[Event], None]

DEFAULT_TIMEOUT = 60.0  # seconds without any progress from the child


class ReplayJob:
    """One replay of a plan on one or more devices (each in its own child process)."""

    def __init__(
        self,
        plan: Manifest,
        data_root: str | Path,
        devices: list[dict[str, Any]],
        *,
        repeat: int = 1,
        tolerance: dict[str, Any] | None = None,
        arg_tolerance: dict[int, dict[str, Any]] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        save_dir: str | Path | None = None,
        probe: bool = False,
        binary_cache: str | Path | None = None,
    ) -> None:
        self.plan = plan
        self.probe = probe
        self.binary_cache = binary_cache
        self.data_root = str(data_root)
        self.devices = devices
        self.repeat = max(int(repeat), 1)
        self.tolerance = tolerance or {}
        self.arg_tolerance = arg_tolerance or {}
        self.timeout = float(timeout)
        self.save_dir = Path(save_dir) if save_dir else lifecycle.temp_dir("replay")
        self.report: Report | None = None
        self._cancel = threading.Event()
        self._child: Child | None = None
        self._lock = threading.Lock()
        self._events: Iterator[Event] | None = None
        self._done = threading.Event()
        self._pumped = False  # a callback thread consumes the events
        self.callback_error: Exception | None = None

    # ---- public
    def cancel(self) -> None:
        """Stop now: the running child is killed, remaining devices are skipped."""
        self._cancel.set()
        with self._lock:
            child = self._child
        if child is not None:
            child.kill()

    @property
    def child_pid(self) -> int | None:
        """The process id of the running child (None between devices)."""
        with self._lock:
            return None if self._child is None else self._child.proc.pid

    def cleanup(self) -> None:
        """Remove the outputs folder (replayed bytes, job files) once nothing needs them."""
        lifecycle.remove(self.save_dir)

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

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
        results: list[dict[str, Any]] = []
        for dev in self.devices:
            if self._cancel.is_set():
                results.append(_failed(dev, "cancelled", "cancelled before it started", None))
                continue
            yield {"type": "device", "device": dev["id"], "name": dev["name"]}
            res: dict[str, Any] | None = None
            for ev in self._run_device(dev):
                if ev["type"] == "device_done":
                    res = ev["result"]
                yield ev
            assert res is not None
            results.append(res)
        self.report = self._make_report(results)
        self._done.set()
        yield {"type": "done", "report": self.report}

    def _run_device(self, dev: dict[str, Any]) -> Iterator[Event]:
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
        }
        self.save_dir.mkdir(parents=True, exist_ok=True)
        job_path = self.save_dir / f"job_{tag}.json"
        job_path.write_text(json.dumps(job))
        err_path = self.save_dir / f"stderr_{tag}.txt"
        try:
            proc = Child("cltui.replay.runner", job_path, err_path)
        except OSError as exc:
            res = _failed(dev, "error", f"cannot start the replay process: {exc}", None)
            yield {"type": "device_done", "device": dev["id"], "result": res}
            return
        with self._lock:
            self._child = proc
        try:
            with proc:  # also when the consumer drops the iterator: no child is left behind
                yield from self._watch(dev, proc)
        finally:
            with self._lock:
                self._child = None

    def _watch(self, dev: dict[str, Any], proc: Child) -> Iterator[Event]:
        running: int | None = None
        building: str | None = None
        result: dict[str, Any] | None = None
        finished: list[dict[str, Any]] = []  # the steps that ended, with their checks
        for ev in proc.events(self.timeout, self._cancel):
            ev["device"] = dev["id"]
            et = ev.get("type")
            if et == "step":
                running, building = ev.get("enqueue"), None
            elif et == "step_done":
                running = None
                if isinstance(ev.get("step"), dict):
                    finished.append(_partial_step(ev.pop("step")))
            elif et == "build":
                building = ev.get("label")
            elif et == "timing":
                running = None
            if et == "result":
                result = ev["result"]
                continue
            yield ev
        status = proc.status
        rc = proc.finish()
        stderr_tail = proc.stderr_tail()
        where = _where(running, building)
        if status == "hang":
            msg = f"{where} did not finish within {self.timeout:g} s: the replay process was killed"
            result = _failed(dev, "hang", msg, running, finished)
        elif status == "cancelled" or (self._cancel.is_set() and result is None):
            result = _failed(dev, "cancelled", f"cancelled ({where})", running, finished)
        elif result is None:
            cause, how = lifecycle.exit_cause(rc)
            if cause == "fault":
                msg = f"{where} crashed the driver ({how})"
                result = _failed(dev, "crash", msg, running, finished)
            elif cause == "killed":
                msg = f"the replay process was killed ({how}) from outside while {_during(where)}"
                result = _failed(dev, "killed", msg, running, finished)
            else:
                msg = f"the replay process stopped with {how or 'no result'} ({where})"
                result = _failed(dev, "crash", msg, running, finished)
        else:
            result["status"] = (
                "error" if result.get("error") else ("ok" if result.get("ok") else "mismatch")
            )
        if result.get("status") in ("crash", "hang", "error", "killed") and stderr_tail:
            result["stderr"] = stderr_tail
        yield {"type": "device_done", "device": dev["id"], "result": result}

    def _make_report(self, raw: list[dict[str, Any]]) -> Report:
        """The report of the device results the children sent (JSON: typed here, once every
        documented field is set)."""
        for r in raw:  # every device result has the documented fields (docs/cli-json.md)
            r["runner"] = "cltui"
            r.setdefault("repeat", self.repeat)
            r.setdefault("loop", None)
            r.setdefault("failed_enqueue", None)
        results = cast(list[DeviceResult], raw)
        cross = cross_compare(self.plan, raw, self.tolerance, self.arg_tolerance)
        # devices against each other is information: floating point differs by design
        ok = all(r.get("status") == "ok" for r in results)
        for res in results:
            res["verdict"] = verdict(self.plan, res)
        names = [str(r["device"].get("id", "?")) if r.get("device") else "?" for r in results]
        plan = self.plan
        return {
            "verdict": combine_verdicts([r["verdict"] for r in results], names),
            "plan": {
                "range": plan["source"].get("range"),
                "mode": plan["source"].get("mode"),
                "steps": len(plan.get("steps", [])),
                "changes": plan.get("changes", []),
                "notes": plan.get("notes", []),
                "skipped": plan.get("skipped", []),
                "lost": plan.get("lost", []),
            },
            "repeat": self.repeat,
            "devices": results,
            "cross": cast(list[CrossCheck], cross),
            "ok": ok and bool(results),
            "outputs": str(self.save_dir),
        }


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


def _where(running: int | None, building: str | None) -> str:
    if running is not None:
        return f"enqueue {running}"
    if building is not None:
        return f"the build of {building}"
    return "the replay"


def _partial_step(step: dict[str, Any]) -> dict[str, Any]:
    """A step as ``step_done`` sent it, shaped like a finished run's (no timing yet)."""
    step.setdefault("checks", [])
    step.setdefault("prechecks", [])
    step.setdefault("loads", [])
    step.setdefault(
        "timing",
        {"queued_to_submit": None, "submit_to_start": None, "start_to_end": None,
         "host_enqueue": None, "samples": 0},
    )
    return step


def _during(where: str) -> str:
    if where.startswith("enqueue "):
        return f"{where} ran"
    if where.startswith("the build of "):
        return f"{where} ran"
    return "the replay ran"


def _failed(
    dev: dict[str, Any],
    status: str,
    msg: str,
    enqueue: int | None,
    finished: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A device result for a fault: ``steps`` are those that finished before it."""
    return {
        "device": dev,
        "ok": False,
        "status": status,
        "error": msg,
        "failed_enqueue": enqueue,
        "steps": list(finished or []),
        "partial": True,
        "builds": {},
        "notes": [],
    }


def cross_compare(
    plan: Manifest,
    results: list[dict[str, Any]],
    tolerance: dict[str, Any] | None = None,
    arg_tolerance: dict[int, dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Each further device's replayed outputs against the first device's."""
    import numpy as np

    usable = [r for r in results if r.get("steps") and not r.get("partial")]
    if len(usable) < 2:
        return []
    base = usable[0]
    tol = cmp.Tolerance.from_dict(plan.get("tolerance")).merged(tolerance)
    out: list[dict[str, Any]] = []
    base_checks = {
        (st["enqueue"], c["mem"]): c
        for st in base["steps"]
        for c in st["checks"]
        if c.get("output")
    }
    for other in usable[1:]:
        for st in other["steps"]:
            for c in st["checks"]:
                ref = base_checks.get((st["enqueue"], c["mem"]))
                if ref is None or not c.get("output"):
                    continue
                t = tol.merged(c.get("tolerance"))
                for a in c.get("args", []):
                    t = t.merged((arg_tolerance or {}).get(int(a)))
                try:
                    a_data = np.fromfile(ref["output"], dtype=np.uint8)
                    b_data = np.fromfile(c["output"], dtype=np.uint8)
                except OSError:
                    continue
                res = cmp.compare_bytes(a_data, b_data, c.get("dtype"), t, c.get("shape"))
                out.append(
                    {
                        "enqueue": st["enqueue"],
                        "kernel": st["kernel"],
                        "mem": c["mem"],
                        "label": c.get("label", c["mem"]),
                        "a": base["device"]["id"],
                        "b": other["device"]["id"],
                        "status": res.status,
                        "summary": res.summary(),
                        "result": res.to_dict(),
                    }
                )
    return out


def probe_runs(result: DeviceResult) -> list[dict[tuple[int, str], Any]]:
    """A probed device result's outputs, one mapping (enqueue, mem) -> bytes per repetition.

    Repetitions whose bytes equal repetition 0's share its file (and its array here).
    Empty when the result has no ``probe`` entry (an error, or not probed).
    """
    import numpy as np

    probe: dict[str, Any] = result.get("probe") or {}
    runs: list[dict[tuple[int, str], Any]] = [{} for _ in range(int(probe.get("runs", 0)))]
    loaded: dict[str, Any] = {}
    for o in probe.get("outputs", []):
        for rep, path in enumerate(o["files"]):
            if path not in loaded:
                try:
                    loaded[path] = np.fromfile(path, dtype=np.uint8)
                except OSError:
                    continue
            runs[rep][(int(o["enqueue"]), str(o["mem"]))] = loaded[path]
    return runs


def start(
    plan: Manifest,
    devices: list[dict[str, Any]],
    *,
    data_root: str | Path | None = None,
    repeat: int = 1,
    tolerance: dict[str, Any] | None = None,
    arg_tolerance: dict[int, dict[str, Any]] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    save_dir: str | Path | None = None,
    callback: Callback | None = None,
    probe: bool = False,
    binary_cache: str | Path | bool | None = True,
) -> ReplayJob:
    """Start a replay; with ``callback`` the events are delivered from a background thread.

    ``plan`` is a manifest (``Plan.to_manifest()``); ``data_root`` the directory its data
    paths are relative to (default: the capture directory named in the plan).
    ``probe``: every repetition also reads back the checked outputs (each device's
    result gains ``probe``; :func:`probe_runs` loads them for ``probe_outputs``).
    ``binary_cache``: True for :func:`default_binary_cache`, a folder, or False/None for
    none (programs built from source keep their device binary there for the next run).
    """
    root = data_root if data_root is not None else plan.get("source", {}).get("capture", ".")
    job = ReplayJob(
        plan,
        root,
        devices,
        repeat=repeat,
        tolerance=tolerance,
        arg_tolerance=arg_tolerance,
        timeout=timeout,
        save_dir=save_dir,
        probe=probe,
        binary_cache=default_binary_cache() if binary_cache is True else (binary_cache or None),
    )
    if callback is not None:
        job._pumped = True

        def pump() -> None:
            for ev in job.events():
                if job.callback_error is not None:
                    continue  # drain: the children still get stopped and reported
                try:
                    callback(ev)
                except Exception as exc:  # a broken callback must not leave a child behind
                    job.callback_error = exc
                    job.cancel()

        threading.Thread(target=pump, name="cltui-replay", daemon=True).start()
    return job


def run(plan: Manifest, devices: list[dict[str, Any]], **kw: Any) -> Report:
    """Start and wait: the report."""
    return start(plan, devices, **kw).wait()


# --------------------------------------------------------------------------- child side


def capture_loader(plan: dict[str, Any], root: str | Path) -> Any:
    """``engine.dir_loader`` that refuses a file whose path leaves ``root`` through a
    symbolic link (a capture is untrusted: nothing outside it is read)."""
    from cltui.replay import engine

    inner = engine.dir_loader(plan, root)
    base = Path(root)
    top = base.resolve()
    table: dict[str, Any] = plan.get("data", {})
    ok: set[str] = set()

    def load(key: str) -> Any:
        if key not in ok and key in table:
            path = base / str(table[key]["path"])
            if not path.resolve().is_relative_to(top):
                raise engine.EngineError(
                    f"{path} is a symbolic link leading outside the capture (not followed)"
                )
            ok.add(key)
        return inner(key)

    return load


def _hash64(data: bytes) -> int:
    """The capture's 64-bit hash (imported on first use: most ranges hold no hashed dump,
    and importing ``cltui.capture`` costs the child ~0.13 s)."""
    from cltui.capture.hashing import cli_hash64

    return cli_hash64(data)


def _child(job_path: str, fd: int) -> int:
    from cltui.replay import engine

    out = connect(fd)  # a hung kernel must not outlive cltui

    def send(ev: Event) -> None:
        out.write(json.dumps(ev) + "\n")
        out.flush()

    job = json.loads(Path(job_path).read_text())
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
    )
    send({"type": "result", "result": result})
    out.close()
    return 0


if __name__ == "__main__":  # pragma: no cover - the child process
    code = _child(sys.argv[1], int(sys.argv[2]))
    # the result is sent and every output file closed: skip the interpreter's and the
    # driver's teardown (0.1-0.2 s on PoCL), which the parent would wait for
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
