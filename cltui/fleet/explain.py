"""Explain each fleet column's first divergence (``cltui fleet ... --explain``, ``x`` in the
app's fleet results): the one explain engine (:mod:`cltui.analysis.explain.engine`), its
device runs on the columns' own hosts.

Which: a column that diverges from the reference (a ``cross`` entry ``different``: the first
column holding that output, as the matrix compares them) is explained at its first such
enqueue, on the reference column's device (A) and its own (B).  A column that differs from
the capture but not from the reference gets an entry that says so, as does one that cannot
be explained (a bundle was sent rather than a capture's range, a host that cannot be
reached again, a step that is not a kernel): nothing is left out silently.

Where: every run an explanation makes (the enqueue as captured, once more, each controlled
rebuild, the instrumented kernel) is an ordinary replay of one plan, so each plan is
exported as a bundle (:func:`cltui.export.export_plan`), sent to the column's host through
the fleet's cache (only what the host lacks: the captured inputs once, then a manifest and a
kernel source a run), replayed on the column's device by the column's runner
(:func:`cltui.fleet.device_run.replay_device`, the device lock included), and its checked
outputs (the trace buffer among them) brought back; the comparison is the local engine's.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from cltui.analysis.explain.engine import explain_with_runs
from cltui.analysis.explain.run import ExplainError, Outputs, Runs
from cltui.capture.capture import Capture
from cltui.errors import CltuiError
from cltui.export import ExportError, export_plan
from cltui.fleet.cache import BundleFiles, CacheError, bundle_files
from cltui.fleet.device_run import DeviceRun, replay_device
from cltui.fleet.host import HostFailed, HostOutcome, HostRunner, RunSettings
from cltui.fleet.inventory import Host
from cltui.fleet.job import HostProgress, fetch_output, host_session
from cltui.fleet.slurm.queue import transport_for
from cltui.fleet.transport import Transport
from cltui.process import lifecycle
from cltui.progress import CancelToken, ProgressEvent, ProgressFn
from cltui.replay.engine.schema import Device, Manifest
from cltui.replay.experiment.job import Point
from cltui.replay.experiment.worker import BASE_ID

__all__ = ["RemoteRuns", "Target", "explain_column", "explain_columns", "explain_line",
           "explain_targets", "target_of"]

EXPLAINED, INCOMPLETE, NOT_EXPLAINED = "explained", "incomplete", "not-explained"


@dataclass(frozen=True)
class Target:
    """One column to explain: at ``enqueue``, against the ``reference`` column."""

    column: str
    reference: str
    enqueue: int
    kernel: str
    label: str  # the output that differs first


def explain_targets(report: Mapping[str, Any]) -> tuple[list[Target], list[dict[str, Any]]]:
    """The columns to explain (column order), and an entry for each column that differs
    from the capture but not from the reference (nothing to compare on two devices)."""
    firsts: dict[str, Mapping[str, Any]] = {}
    for x in report.get("cross") or []:
        if x.get("status") != "different":
            continue
        cur = firsts.get(str(x["b"]))
        if cur is None or int(x["enqueue"]) < int(cur["enqueue"]):
            firsts[str(x["b"])] = x
    order = [str(c["id"]) for c in report.get("columns") or []]
    targets = [Target(col, str(x["a"]), int(x["enqueue"]), str(x.get("kernel", "")),
                      str(x.get("label", x.get("mem", ""))))
               for col in order if (x := firsts.get(col)) is not None]  # fmt: skip
    refs = {t.reference for t in targets}
    quiet: list[dict[str, Any]] = []
    for c in report.get("columns") or []:
        col, first = str(c["id"]), c.get("first_divergent")
        if first is None or col in firsts or col in refs:
            continue
        why = (f"differs from the capture at enqueue {first} but not from the reference "
               f"column {order[0]}: an explanation compares two of the fleet's devices"
               if len(order) > 1 and order[0] != col else
               f"differs from the capture at enqueue {first}, and no other column differs "
               "from it: an explanation compares two of the fleet's devices")  # fmt: skip
        quiet.append(_entry(col, None, int(first), "", NOT_EXPLAINED, why))
    return targets, quiet


def _entry(column: str, reference: str | None, enqueue: int, kernel: str, status: str,
           reason: str | None, report: dict[str, Any] | None = None) -> dict[str, Any]:
    out = {"column": column, "reference": reference, "enqueue": enqueue, "kernel": kernel,
           "status": status, "reason": reason, "report": report}  # fmt: skip
    out["line"] = explain_line(out)
    return out


def explain_line(entry: Mapping[str, Any]) -> str:
    """One entry in one line: the explanation's verdict and its line, or why there is
    none."""
    rep = entry.get("report")
    head = f"{entry['column']} at enqueue {entry['enqueue']}"
    if rep is None:
        return f"{head}: not explained: {entry['reason']}"
    said = f"{head} (against {entry['reference']}): {rep['verdict']['line']}"
    sec = rep.get("line")
    return said + (f"; which line: {sec['text']}" if sec else "")


@dataclass
class _Session:
    """One host's transport for the explanations' runs, connected by its first run."""

    t: Transport
    owner: str | None = None  # the run's keeper there once connected
    error: str | None = None  # why nothing more can run there


@dataclass
class RemoteRuns:
    """:class:`~cltui.analysis.explain.run.DeviceRuns` on the fleet's hosts: each device
    id is a column id (``host:P:D``), each plan a bundle replayed there (see the module
    doc)."""

    cap: Capture
    columns: dict[str, tuple[Host, Device]]  # column id -> its host, its device there
    settings: RunSettings
    control: Path
    transports: list[Transport | None]
    cancel: CancelToken
    say: HostProgress
    sessions: dict[str, _Session] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, base: Manifest, points: list[Point], devices: list[Device], root: str,
                 timeout: float, runs: dict[str, dict[str, Outputs]],
                 cancel: CancelToken | None, report: ProgressFn) -> bool:  # fmt: skip
        """Each plan exported once; the hosts in parallel, each host's devices in turn."""
        plans = [(BASE_ID, base), *((p.id, p.plan) for p in points)]
        for pid, _plan in plans:
            runs.setdefault(pid, {})
        hosts: dict[str, list[Device]] = {}
        for dev in devices:
            hosts.setdefault(self.columns[dev["id"]][0].name, []).append(dev)
        cpp = any((self.settings.runner or self.columns[d["id"]][0].runner) == "cpp"
                  for d in devices)  # fmt: skip
        total, done, lock = len(devices) * len(plans), [0], threading.Lock()

        def stop() -> bool:
            return self.cancel.is_set() or (cancel is not None and cancel.is_set())

        def one_host(devs: list[Device]) -> None:
            for dev in devs:
                host, device = self.columns[dev["id"]]
                for pid, _plan in plans:
                    if stop():
                        return
                    with lock:
                        report(ProgressEvent(done[0] / total, f"{pid} on {dev['id']}"))
                        done[0] += 1
                    runs[pid][dev["id"]] = self._one(host, device, bundles[pid])

        tmp = lifecycle.temp_dir("fleet-bundle")
        try:
            bundles = {pid: self._export(plan, tmp / f"b{k}", cpp)
                       for k, (pid, plan) in enumerate(plans)}  # fmt: skip
            with ThreadPoolExecutor(max_workers=max(1, len(hosts))) as ex:
                list(ex.map(one_host, hosts.values()))
        finally:
            lifecycle.remove(tmp)
        return stop()

    def _export(self, plan: Manifest, out: Path, cpp: bool) -> tuple[Manifest, BundleFiles | str]:
        """The plan's bundle (the same for every host), or why it cannot be made."""
        try:
            export_plan(self.cap, plan, out, ("python", "cpp") if cpp else ("python",))
            return plan, bundle_files(out)
        except (ExportError, CacheError) as exc:
            return plan, f"error: not sent: {exc}"

    def _session(self, host: Host) -> _Session:
        with self._lock:
            s = self.sessions.get(host.name)
            if s is None:
                try:
                    t = transport_for(host, self.control, self.settings.timeout, self.say)
                except ValueError as exc:
                    raise HostFailed("transport", str(exc)) from None
                self.transports.append(t)  # closed with the session (host_session)
                s = self.sessions[host.name] = _Session(t)
            return s

    def _one(self, host: Host, device: Device,
             made: tuple[Manifest, BundleFiles | str]) -> Outputs:  # fmt: skip
        plan, bundle = made
        if isinstance(bundle, str):
            return Outputs(error=bundle)
        try:
            s = self._session(host)
        except HostFailed as exc:
            return Outputs(error=f"{exc.status}: {exc.reason}")
        if s.error is not None:
            return Outputs(error=s.error)
        r = HostRunner(s.t, bundle, plan, self.settings, cancel=self.cancel, progress=self.say)
        if s.owner is None:  # the first run there: connect, check, send, build, list
            out = r.discover()
            if out.status != "ok":
                s.error = f"{out.status}: {out.reason}"
                return Outputs(error=s.error)
            s.owner = r.owner
        else:
            r.owner = s.owner
            try:
                r.send(HostOutcome(host, r.runner))
            except HostFailed as exc:
                return Outputs(error=f"{exc.status}: {exc.reason}")
        return _outputs(replay_device(r, device, 0, 1), s.t, self.settings.timeout)


def _outputs(run: DeviceRun, t: Transport, timeout: float) -> Outputs:
    """A remote replay's checked outputs, brought back (or why there are none: a crash is
    said ``crash: ...``, as a local run's, so that the engine runs it once more)."""
    res: Mapping[str, Any] = cast(Mapping[str, Any], run.result)
    if run.fault is not None:
        what = "crash" if run.fault in ("device-crash", "runner-crash") else run.fault
        return Outputs(error=f"{what}: {res.get('error') or 'no result'}")
    out = Outputs()
    fetched: dict[tuple[int, str], bytes | None] = {}
    for st in res.get("steps") or []:
        if st.get("status") == "cannot-run":
            why = next((c.get("summary") for c in st.get("checks", [])), None)
            return Outputs(error=f"refused: cannot run there: {why or 'the pre-flight'}")
        for c in st.get("checks", []):
            name = Path(str(c.get("output") or "")).name
            if not name:
                continue
            data = fetch_output(fetched, run, t, name, timeout)
            if data is None:
                out.error = f"output of {c['mem']} not brought back from the host"
                continue
            out.data[str(c["mem"])] = np.frombuffer(data, dtype=np.uint8).copy()
    if not out.data and out.error is None:
        out.error = "no output was read back"
    return out


def _column_device(col: Mapping[str, Any]) -> Device:
    """A column as the engine's device: its id the column's, its name host and device."""
    dev = col["device"]
    return cast(Device, {"id": str(col["id"]), "name": f"{col['host']}: {dev['name']}",
                         "platform": str(dev.get("platform", "")),
                         "version": str(dev.get("driver", ""))})  # fmt: skip


def explain_columns(report: Mapping[str, Any], cap: Capture | None, hosts: Sequence[Host],
                    settings: RunSettings, *, cancel: CancelToken | None = None,
                    progress: ProgressFn | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """The ``explain`` section of a fleet report: one entry per column that diverges from
    the reference (explained, or why not) and per column that differs from the capture
    alone (see the module doc).  ``cap``: the capture the range came from (None: the fleet
    sent a bundle)."""
    targets, quiet = explain_targets(report)
    token = cancel or CancelToken()
    with host_session(1) as (control, transports):
        remote = RemoteRuns(cap, {}, settings, control, transports, token,
                            _say(progress)) if cap is not None else None  # fmt: skip
        out = [_explain_one(t, remote, report, hosts, settings, token, progress)[1]
               for t in targets]  # fmt: skip
    return out + quiet


def target_of(report: Mapping[str, Any], column: str) -> Target:
    """``column``'s target, or :class:`ExplainError` saying why it has none."""
    targets, quiet = explain_targets(report)
    t = next((t for t in targets if t.column == column), None)
    if t is None:
        said = next((q["reason"] for q in quiet if q["column"] == column), None)
        raise ExplainError(f"{column} {said}" if said else f"{column} does not diverge from "
                           "the reference column: nothing to explain")  # fmt: skip
    return t


def explain_column(report: Mapping[str, Any], column: str, cap: Capture, hosts: Sequence[Host],
                   settings: RunSettings, *, cancel: CancelToken | None = None,
                   progress: ProgressFn | None = None,
                   ) -> tuple[Runs | None, dict[str, Any]]:  # fmt: skip
    """One column's entry (the app's ``e``) with the explanation's runs (None when it was
    not explained), or :class:`ExplainError` when the column does not diverge from the
    reference (why, in one line)."""
    t = target_of(report, column)
    token = cancel or CancelToken()
    with host_session(1) as (control, transports):
        remote = RemoteRuns(cap, {}, settings, control, transports, token, _say(progress))
        return _explain_one(t, remote, report, hosts, settings, token, progress)


def _say(progress: ProgressFn | None) -> HostProgress:
    def say(host: str, ev: ProgressEvent) -> None:
        if progress is not None:
            progress(ProgressEvent(ev.fraction, f"explain: {host}: {ev.what}"))

    return say


def _explain_one(t: Target, remote: RemoteRuns | None, report: Mapping[str, Any],
                 hosts: Sequence[Host], settings: RunSettings, token: CancelToken,
                 progress: ProgressFn | None) -> tuple[Runs | None, dict[str, Any]]:  # fmt: skip
    def no(reason: str) -> tuple[None, dict[str, Any]]:
        return None, _entry(t.column, t.reference, t.enqueue, t.kernel, NOT_EXPLAINED, reason)

    if remote is None:
        return no("the fleet sent a bundle: an explanation replays the enqueue from its "
                  "capture's inputs (give DUMPDIR RANGE)")
    if token.is_set():
        return no("cancelled")
    cols = {str(c["id"]): c for c in report.get("columns") or []}
    by_name = {h.name: h for h in hosts}
    pair = [cols[t.reference], cols[t.column]]
    missing = [str(c["host"]) for c in pair if str(c["host"]) not in by_name]
    if missing:
        return no(f"host {missing[0]} is not among the fleet's hosts")
    devices = [_column_device(c) for c in pair]
    for c, d in zip(pair, devices, strict=True):
        remote.columns[d["id"]] = (by_name[str(c["host"])],
                                   cast(Device, {**c["device"], "version": ""}))  # fmt: skip

    def step(ev: ProgressEvent) -> None:
        if progress is not None:
            progress(ProgressEvent(ev.fraction, f"explain {t.column}: {ev.what}"))

    try:
        runs, rep = explain_with_runs(remote.cap, t.enqueue, devices, timeout=settings.timeout,
                                      cancel=token, progress=step, device_runs=remote)
    except CltuiError as exc:  # ExplainError among them
        return no(f"enqueue {t.enqueue} cannot be explained: {exc}")
    status = INCOMPLETE if rep["verdict"]["status"] == "incomplete" else EXPLAINED
    return runs, _entry(t.column, t.reference, t.enqueue, t.kernel, status,
                        rep["verdict"]["line"] if status == INCOMPLETE else None, rep)
