"""A fleet run: every host of an inventory in parallel (at most ``jobs`` at a time), each
through its own transport, then the columns' outputs against each other, then the matrix.

Outputs are compared across columns by their sha256 first (the hosts send only the sums);
only the outputs whose sums differ from the reference column's (the first column holding
that output) travel back, to be compared element by element with the house compare
(:func:`cltui.replay.engine.compare.compare_bytes`) and its tolerances.
"""

from __future__ import annotations

import shlex
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from cltui.fleet.artifacts import keep_artifacts
from cltui.fleet.baseline import Baseline
from cltui.fleet.cache import BundleFiles, CacheError, bundle_files
from cltui.fleet.flaky import retry_flaky
from cltui.fleet.host import DeviceRun, HostOutcome, HostRunner, RunSettings
from cltui.fleet.inventory import Host
from cltui.fleet.matrix import build_matrix, column_id
from cltui.fleet.slurm.queue import stage_shared, transport_for
from cltui.fleet.transport import Transport
from cltui.process import lifecycle
from cltui.progress import CancelToken, ProgressEvent, ProgressFn
from cltui.replay.engine import compare as cmp
from cltui.replay.engine.schema import ArgTolerance, CheckResult, Manifest
from cltui.replay.engine.verify import BundleRefused, verify_bundle

__all__ = ["HostProgress", "fetch_output", "fleet_progress", "host_session", "run_fleet",
           "run_hosts"]

HostProgress = Callable[[str, ProgressEvent], None]


def fleet_progress(progress: ProgressFn | None, hosts: Sequence[Host]) -> HostProgress:
    """Each host's events as one :data:`ProgressFn`: ``what`` is ``host: what``, the
    fraction the mean of the hosts'."""
    fractions = dict.fromkeys((h.name for h in hosts), 0.0)
    lock = threading.Lock()

    def say(host: str, ev: ProgressEvent) -> None:
        if progress is None:
            return
        with lock:
            if ev.fraction is not None:
                fractions[host] = ev.fraction
            total = sum(fractions.values()) / max(1, len(fractions))
        progress(ProgressEvent(total, f"{host}: {ev.what}"))

    return say


def run_fleet(
    bundle_root: Path,
    hosts: Sequence[Host],
    settings: RunSettings,
    *,
    jobs: int = 8,
    cancel: CancelToken | None = None,
    progress: ProgressFn | None = None,
    arg_tolerance: ArgTolerance | None = None,
    baseline: Baseline | None = None,
    artifacts: Path | None = None,
) -> dict[str, Any]:
    """Run the bundle at ``bundle_root`` on ``hosts``; the fleet report (see matrix.py);
    with ``artifacts``, each column's differing outputs, log and result kept there.
    ``progress`` gets ``host: what`` events (the fraction over all hosts); ``cancel`` stops
    every host (their commands killed, their scratch folders removed)."""
    token = cancel or CancelToken()
    say = fleet_progress(progress, hosts)
    try:  # refused here, before any host sees it, as its runners would refuse it there
        plan: Manifest = verify_bundle(bundle_root)
    except BundleRefused as exc:
        raise CacheError(f"{bundle_root}: {exc}") from None
    bundle = bundle_files(bundle_root)
    with host_session(jobs) as (control, transports):
        outcomes = run_hosts(bundle, plan, hosts, settings, jobs, token, say, control,
                             transports)
        fetched: dict[tuple[int, str], bytes | None] = {}
        cross = _cross(plan, outcomes, transports, settings, arg_tolerance or {}, token,
                       fetched)
        kept: set[int] = set()
        if artifacts is not None:
            kept = keep_artifacts(
                artifacts, outcomes, transports,
                lambda run, t, name: fetch_output(fetched, run, t, name, settings.timeout), token)
        for h in outcomes:  # the outputs lie on the hosts, removed at the end: only the
            for run in h.devices:  # kept ones named
                for st in run.result.get("steps") or []:
                    for c in st.get("checks", []):
                        if id(c) not in kept:
                            c["output"] = None
    info = {"id": bundle.id, "path": str(bundle_root), "files": len(bundle.files),
            "bytes": bundle.total_bytes}
    return build_matrix(plan, outcomes, cross, info, baseline)


@contextmanager
def host_session(jobs: int) -> Iterator[tuple[Path, list[Transport | None]]]:
    """A private control folder (ssh's multiplexing sockets) and the list the hosts'
    transports go into; at the end every transport closed, the folder removed."""
    control = lifecycle.temp_dir("fleet", prefix="cltui-fleet-")  # 0700: mkdtemp
    transports: list[Transport | None] = []
    try:
        yield control, transports
    finally:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
            list(ex.map(lambda t: t.close(), [t for t in transports if t is not None]))
        lifecycle.remove(control)


def run_hosts(
    bundle: BundleFiles,
    plan: Manifest,
    hosts: Sequence[Host],
    settings: RunSettings,
    jobs: int,
    token: CancelToken,
    say: HostProgress,
    control: Path,
    transports: list[Transport | None],
    *,
    discover: bool = False,
) -> list[HostOutcome]:
    """Every host's :meth:`HostRunner.run` (``discover``: its :meth:`HostRunner.discover`),
    ``jobs`` at a time; a transport that cannot be made is that host's outcome."""
    runners: list[HostRunner | HostOutcome] = []
    stage_shared(bundle, hosts, control, settings.timeout, token, say)  # Slurm kinds' once
    for h in hosts:
        try:
            t = transport_for(h, control, settings.timeout, say)  # ssh, a template, Slurm
        except ValueError as exc:
            transports.append(None)
            runners.append(HostOutcome(h, settings.runner or h.runner or "python",
                                       "transport", str(exc)))
            continue
        transports.append(t)
        runners.append(HostRunner(t, bundle, plan, settings, cancel=token, progress=say))

    def one(r: HostRunner | HostOutcome) -> HostOutcome:
        if isinstance(r, HostOutcome):
            return r
        start = time.monotonic()
        out = r.discover() if discover else r.run()
        if not discover and settings.retry_flaky:
            retry_flaky(r, out, settings.retry_flaky)
        out.seconds = time.monotonic() - start
        return out

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        return list(ex.map(one, runners))


def _cross(
    plan: Manifest,
    outcomes: Sequence[HostOutcome],
    transports: Sequence[Transport | None],
    settings: RunSettings,
    arg_tol: ArgTolerance,
    token: CancelToken,
    fetched: dict[tuple[int, str], bytes | None],
) -> list[dict[str, Any]]:
    """Every column's outputs against the first column holding the same output."""
    runs = [(h, run, t) for h, t in zip(outcomes, transports, strict=True) for run in h.devices]
    by_key: dict[tuple[int, str], list[tuple[str, DeviceRun, Transport | None, CheckResult]]] = {}
    for h, run, t in runs:
        for st in run.result.get("steps") or []:
            for c in st.get("checks", []):
                name = Path(str(c.get("output") or "")).name
                if name and name in run.sums:
                    by_key.setdefault((int(st["enqueue"]), str(c["mem"])), []).append(
                        (column_id(h, run), run, t, c))
    kernels = {int(s["enqueue"]): str(s.get("kernel", "")) for s in plan.get("steps", [])}
    specs: dict[tuple[int, str], Any] = {
        (int(s["enqueue"]), str(c["mem"])): c for s in plan.get("steps", []) for c in s["checks"]
    }
    base = cmp.Tolerance.from_dict(plan.get("tolerance")).merged(settings.tolerance)
    out: list[dict[str, Any]] = []  # fetched: (id(run), file) -> bytes
    for (enq, mem), cols in sorted(by_key.items()):
        ref_id, ref_run, ref_t, ref_c = cols[0]
        for col_id, run, t, c in cols[1:]:
            entry = {"enqueue": enq, "kernel": kernels.get(enq, ""), "mem": mem,
                     "label": str(c.get("label", mem)), "a": ref_id, "b": col_id}
            a_name, b_name = Path(str(ref_c["output"])).name, Path(str(c["output"])).name
            if ref_run.sums[a_name] == run.sums[b_name]:
                out.append(entry | {"status": "equal", "max_ulp": 0.0, "summary": "bit-exact"})
                continue
            if token.is_set():
                break
            a = fetch_output(fetched, ref_run, ref_t, a_name, settings.timeout)
            b = fetch_output(fetched, run, t, b_name, settings.timeout)
            if a is None or b is None:
                out.append(entry | {"status": "unchecked", "max_ulp": None,
                                    "summary": "the outputs could not be fetched"})
                continue
            tol = base.merged(c.get("tolerance"))
            for arg in c.get("args", []):
                tol = tol.merged(arg_tol.get(int(arg)))
            spec = specs.get((enq, mem), {})  # the plan's: the C++ runner's checks lack them
            res = cmp.compare_bytes(np.frombuffer(a, np.uint8), np.frombuffer(b, np.uint8),
                                    spec.get("dtype", c.get("dtype")), tol,
                                    spec.get("shape", c.get("shape")))
            ulp = res.to_dict().get("max_ulp")
            out.append(entry | {"status": res.status, "summary": res.summary(),
                                "max_ulp": None if ulp is None else float(ulp)})
    return out


def fetch_output(cache: dict[tuple[int, str], bytes | None], run: DeviceRun,
                 t: Transport | None, name: str, timeout: float) -> bytes | None:
    """The output file ``name`` of ``run`` from its host (None: it could not be read),
    each one fetched once (``cache``)."""
    key = (id(run), name)
    if key in cache:
        return cache[key]
    data: bytes | None = None
    if t is not None and run.out_dir and not t.dead:
        res = t.run(f"cat -- {shlex.quote(run.out_dir + '/' + name)}", timeout=timeout)
        data = res.out if res.rc == 0 else None
    cache[key] = data
    return data

