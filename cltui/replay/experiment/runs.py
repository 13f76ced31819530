"""The two experiments as the CLI and the app run them: an A/B run (:func:`run_ab`) and a
sweep (:class:`SweepRun`), over :class:`~cltui.replay.experiment.job.ExperimentJob`.

Both take a :class:`cltui.progress.CancelToken` (a cancel kills the running child; the rows
done so far stay) and report through a :data:`cltui.progress.ProgressFn`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypedDict

from cltui.process.child import Child
from cltui.progress import CancelToken, ProgressEvent, ProgressFn, no_progress
from cltui.replay.engine.schema import ArgTolerance, Device, Manifest
from cltui.replay.experiment import noise
from cltui.replay.experiment.job import ExperimentJob, Point
from cltui.replay.experiment.noise import Floor
from cltui.replay.experiment.report import AbReport, ab_report, point_verdict, range_times
from cltui.replay.experiment.stats import MIN_RUNS, Diff, paired
from cltui.replay.experiment.sweep import (
    CORRECT,
    Row,
    SweepSpec,
    append_row,
    header,
    point_id,
    row_of,
)
from cltui.replay.experiment.variant import Variant

__all__ = ["TOP", "Confirmed", "SweepRun", "run_ab", "summarize"]

TOP = 3  # the fastest correct points re-measured side by side with the capture's own


class Confirmed(TypedDict):
    """A point run again beside the capture's own configuration, interleaved (A B B A ...):
    ``status`` pass (correct again: ``diff`` is the paired B - A), else why not (``why``)."""

    status: str
    why: str
    diff: Diff
    device: dict[str, str]  # id, name, platform, version, driver


def _cache() -> Path | None:
    from cltui.replay.runner import default_binary_cache

    return default_binary_cache()


def run_ab(base: Manifest, plan: Manifest, devices: Sequence[Device], root: str | Path,
           repeat: int, *, arg_tolerance: ArgTolerance | None = None, timeout: float = 60.0,
           cancel: CancelToken | None = None, progress: ProgressFn | None = None,
           ahead: Child | None = None,
           min_effect: float | None = None) -> AbReport | None:  # fmt: skip
    """A and B on each device (a child each, timed in turns; ``ahead``: the first device's,
    started ahead of its job); None when cancelled.  ``min_effect`` (a fraction of A's
    time): the noise floor on every device; None: each device's A/A calibration (cached,
    :mod:`.noise`; measured first, A against A, where none is cached)."""
    report = progress or no_progress
    floors: dict[str, Floor] = {}
    for dev in devices:
        if min_effect is not None:
            floors[dev["id"]] = {"min_effect": min_effect, "source": "--min-effect",
                                 "measured": "", "range": "", "repeat": 0}  # fmt: skip
        elif (got := noise.lookup(dev)) is not None:
            floors[dev["id"]] = got
    # under MIN_RUNS timed pairs there is no interval to calibrate with (nor to read)
    todo = [d for d in devices if d["id"] not in floors] if repeat - 1 >= MIN_RUNS else []
    if todo:
        report(ProgressEvent(0.0, f"calibrating the A/B noise floor on {len(todo)} device(s): "
                             f"A against A, {repeat} runs (once per device, kept)"))
        # the A/B's first device calibrates last: its process goes on to the A/B, its
        # context and programs kept (another device's opens that device's context)
        todo.sort(key=lambda d: d["id"] == devices[0]["id"])
        aa, ahead = _ab_events(base, base, todo, root, repeat, arg_tolerance, timeout, cancel,
                               None, ahead, keep=True)  # fmt: skip
        if cancel is not None and cancel.is_set():
            if ahead is not None:
                ahead.release()
            return None
        for row in ab_report(base, base, aa, todo, repeat)["devices"]:
            if row["a"]["verdict"]["status"] != "pass":
                continue
            got = noise.floor_of(row["timing"], str(base["source"].get("range")), repeat)
            if got is not None:
                noise.store(row["device"], got)
                floors[row["device"]["id"]] = got
    events, _ = _ab_events(base, plan, devices, root, repeat, arg_tolerance, timeout, cancel,
                           report, ahead)  # fmt: skip
    if cancel is not None and cancel.is_set():
        return None
    return ab_report(base, plan, events, list(devices), repeat, floors)


def _ab_events(base: Manifest, plan: Manifest, devices: Sequence[Device], root: str | Path,
               repeat: int, arg_tolerance: ArgTolerance | None, timeout: float,
               cancel: CancelToken | None, report: ProgressFn | None, ahead: Child | None,
               keep: bool = False) -> tuple[list[dict[str, Any]], Child | None]:  # fmt: skip
    """The point events of one A/B job (B = ``plan``) over ``devices``; with ``keep``, the
    last device's process, its job done and well, waiting for one more (else None)."""
    job = ExperimentJob(base, [Point("B", plan)], devices, root, repeat=repeat, interleave=True,
                        arg_tolerance=arg_tolerance, timeout=timeout,
                        binary_cache=_cache(), ahead=ahead, keep=keep)  # fmt: skip
    if cancel is not None:
        cancel.on_cancel(job.cancel)
    events: list[dict[str, Any]] = []
    kept = None
    try:
        for n, ev in enumerate(job.events()):
            if ev["type"] == "device" and report is not None:
                report(ProgressEvent(n / (3 * max(len(devices), 1)),
                                     f"A and B on {ev['device']} {ev['name']}: {repeat} runs"))
            elif ev["type"] == "point":
                events.append(ev)
        kept = job.take_kept()
    finally:
        job.cleanup()
    return events, kept


class SweepRun:
    """Every point not done yet on each device; :meth:`rows` yields each row as it ends
    (appended to the results file); ``done`` holds every row (those read back too).  Then
    :meth:`confirm`, or :meth:`close` (or ``with``): each device's sweep process waits for
    its confirmation until one of them."""

    def __enter__(self) -> SweepRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __init__(self, spec: SweepSpec, root: str | Path, points: list[Variant],
                 plans: dict[str, Manifest], devices: Sequence[Device], done: list[Row],
                 results: Path | None, *, repeat: int = 10,
                 arg_tolerance: ArgTolerance | None = None, timeout: float = 60.0,
                 cancel: CancelToken | None = None,
                 ahead: Child | None = None) -> None:  # fmt: skip
        self.spec = spec
        self.root = str(root)
        self.points = points
        self.plans = plans
        self.devices = list(devices)
        self.done: list[Row] = list(done)
        self.results = results
        self.repeat = repeat
        self.arg_tolerance = arg_tolerance
        self.timeout = timeout
        self.cancel = cancel or CancelToken()
        self.by_id = {point_id(v): v for v in points}
        self.ahead = ahead  # the first child, started ahead of its job
        self._kept: dict[str, Child] = {}  # per device, its sweep's child: it confirms too

    @property
    def total(self) -> int:
        return len(self.points) * len(self.devices)

    def todo(self, dev: Device) -> list[Point]:
        have = {r["id"] for r in self.done if r["device"] == dev["id"]}
        return [Point(pid, self.plans[pid]) for pid in self.by_id if pid not in have]

    def rows(self) -> Iterator[Row]:
        if self.results is not None and not self.results.exists():
            append_row(self.results, header(self.spec, self.root, len(self.points)))
        for dev in self.devices:
            if self.cancel.is_set():
                return
            todo = self.todo(dev)
            if not todo:
                continue
            job = ExperimentJob(None, todo, [dev], self.root, repeat=self.repeat,
                                arg_tolerance=self.arg_tolerance, timeout=self.timeout,
                                binary_cache=_cache(), ahead=self.ahead,
                                keep="capture" in self.plans)  # fmt: skip
            self.ahead = None
            self.cancel.on_cancel(job.cancel)
            try:
                for ev in job.events():
                    if ev["type"] == "point":
                        row = self._row(dev, ev)
                        self.done.append(row)
                        if self.results is not None and row["status"] != "cancelled":
                            append_row(self.results, row)
                        yield row
                if (kept := job.take_kept()) is not None:
                    self._kept[dev["id"]] = kept
            finally:
                job.cancel()
                job.cleanup()

    def close(self) -> None:
        """The sweep's children still waiting to confirm, told none comes (they end)."""
        while self._kept:
            self._kept.popitem()[1].release()

    def confirm(self, top: int = TOP) -> dict[str, Confirmed]:
        """The ``top`` fastest correct points that change something, per device, run again
        beside the capture's own configuration in one process, timed in turns (paired: the
        rows of a resumed sweep were timed in other sessions); keyed ``device/point``.  A
        device's sweep process runs them (its context and programs kept) where it is still
        there, else a new one.  The sweep's processes end (:meth:`close`)."""
        try:
            return self._confirm(top)
        finally:
            self.close()

    def _confirm(self, top: int) -> dict[str, Confirmed]:
        out: dict[str, Confirmed] = {}
        base = self.plans.get("capture")
        if base is None:
            return out
        for dev in self.devices:
            if self.cancel.is_set():
                break
            good = sorted((r for r in self.done if r["device"] == dev["id"]
                           and r["id"] != "capture" and r["id"] in self.by_id
                           and r["status"] == CORRECT and r["time"]["median"] is not None),
                          key=lambda r: (r["time"]["median"] or 0.0, r["id"]))[:top]  # fmt: skip
            if not good:
                continue
            job = ExperimentJob(base, [Point(r["id"], self.plans[r["id"]]) for r in good], [dev],
                                self.root, repeat=self.repeat, interleave=True,
                                arg_tolerance=self.arg_tolerance, timeout=self.timeout,
                                binary_cache=_cache(),
                                ahead=self._kept.pop(dev["id"], None))  # fmt: skip
            self.cancel.on_cancel(job.cancel)
            events: dict[str, dict[str, Any]] = {}
            try:
                for ev in job.events():
                    if ev["type"] == "point":
                        events[str(ev["id"])] = ev
            finally:
                job.cancel()
                job.cleanup()
            if self.cancel.is_set():
                break
            out.update(_confirmed(base, dev, events, {r["id"]: self.plans[r["id"]] for r in good}))
        return out

    def _row(self, dev: Device, ev: dict[str, Any]) -> Row:
        verdict, res = point_verdict(self.plans[ev["id"]], ev)
        err = res.get("error")
        if res.get("status") in ("crash", "hang", "cancelled"):
            err = f"{res['status']}: {err}"
            if res.get("stderr_log"):  # the stack and the driver's messages
                err += f" (the process's output: {res['stderr_log']})"
        times = range_times(ev.get("times") or [])
        return row_of(ev["id"], self.by_id[ev["id"]], dev["id"], dict(verdict),
                      ev.get("refused"), times, err)  # fmt: skip


def _confirmed(base: Manifest, dev: Device, events: dict[str, dict[str, Any]],
               plans: dict[str, Manifest]) -> dict[str, Confirmed]:  # fmt: skip
    """Each point's second run against the capture's, both checked again."""
    info = {k: str(dev.get(k, "")) for k in ("id", "name", "platform", "version", "driver")}
    a = events.get("A")
    a_verdict = point_verdict(base, a)[0] if a is not None else None
    a_ok = a_verdict is not None and a_verdict["status"] == CORRECT
    a_times = range_times(a.get("times") or []) if a is not None else []
    out: dict[str, Confirmed] = {}
    for pid, plan in plans.items():
        ev = events.get(pid)
        if ev is None or not a_ok:
            why = ("the capture's own configuration did not pass again: "
                   f"{a_verdict['line'] if a_verdict is not None else 'no result'}"
                   if not a_ok else "not run again")  # fmt: skip
            out[f"{dev['id']}/{pid}"] = {"status": "error", "why": why, "diff": paired([], []),
                                          "device": info}  # fmt: skip
            continue
        verdict, _res = point_verdict(plan, ev)
        ok = verdict["status"] == CORRECT
        out[f"{dev['id']}/{pid}"] = {
            "status": str(verdict["status"]), "why": "" if ok else str(verdict["line"]),
            "diff": paired(a_times, range_times(ev.get("times") or [])), "device": info,
        }  # fmt: skip
    return out


def _damage(base: Manifest | None) -> str:
    """What the log lost of the range, for the sweep's line (as a replay's verdict counts it):
    the kernel enqueues recovered from the files that survived, the enqueues lost."""
    from cltui.replay.engine.verdicts import scope_counts

    if base is None:
        return ""
    scope = scope_counts(base)
    out = ""
    if scope["recovered"]:
        out += (f"; {scope['recovered']} of the range's {scope['kernels']} kernel enqueues "
                "recovered (the log lost them: replayed from the files that survived)")
    if scope["lost"]:
        n = scope["lost"]
        out += (f"; {n} enqueue{'s' if n != 1 else ''} of the range lost with the log: no "
                "point can be fully checked (each is incomplete at best)")
    return out


def summarize(spec: SweepSpec, root: Any, pts: list[Variant], rows: list[Row],
              devices: list[str], budget: int | None, seed: int, path: Path | None,
              save: str | None, interrupted: bool,
              confirmed: dict[str, Confirmed] | None = None,
              base: Manifest | None = None) -> dict[str, Any]:  # fmt: skip
    """The report: counts, the ranking, the others, and the best variant: among the points
    re-measured side by side with the capture's own configuration (``confirmed``, see
    :meth:`SweepRun.confirm`), the one measurably faster by the most; saved as ``save`` with
    what it got (device, driver, date, verdict, timing).  ``base`` (the capture's plan): the
    line says what of the range the log lost (enqueues recovered from the files, or lost)."""
    from cltui.replay.experiment.sweep import rank
    from cltui.text.units import fmt_ns

    by_id = {point_id(v): v for v in pts}
    elsewhere = sum(1 for r in rows if r["id"] not in by_id)
    rows = [r for r in rows if r["id"] in by_id]  # a results file of another grid: its rows
    ranked, others = rank(rows)
    confirmed = confirmed or {}
    for item in ranked:
        c = confirmed.get(f"{item['device']}/{item['id']}")
        item["paired"] = c["diff"] if c is not None and c["status"] == CORRECT else None
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    changed = [r for r in ranked if r["id"] != "capture"]
    # BEST only when measurably faster than the capture's own configuration, side by side
    faster = [r for r in changed if r["paired"] is not None and r["paired"]["reading"] == "faster"]
    best = min(faster, key=lambda r: r["paired"]["relative"] or 0.0 if r["paired"] else 0.0,
               default=None)
    record = _record(best, confirmed) if best is not None else None
    saved = (_save_best(by_id[best["id"]], root, save, record)
             if best is not None and save else None)  # fmt: skip
    parts = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    again = len({k for k in confirmed if k.split("/", 1)[1] in by_id})
    if best is None and changed:
        line = (f"NO BETTER VARIANT: {len(changed)} correct configuration"
                f"{'s' if len(changed) != 1 else ''} that change something, none measurably "
                f"faster than the capture's own" + (
                    f" when the fastest {again} ran again side by side with it" if again else
                    " (none re-measured side by side)") +
                f" ({len(rows)} runs: {parts})")  # fmt: skip
    elif best is None:
        line = (f"NO CORRECT VARIANT: {len(rows)} runs ({parts})" if not ranked else
                f"NO CORRECT VARIANT: only the capture's own configuration passes "
                f"({len(rows)} runs: {parts})")  # fmt: skip
    else:
        vs = best["paired"]
        assert vs is not None
        line = (f"BEST: {best['label']} on {best['device']}, {(vs['relative'] or 0) * 100:+.1f}% "
                f"against the capture's configuration (faster, re-measured side by side: "
                f"{fmt_ns(vs['b'])} against {fmt_ns(vs['a'])} over {vs['n']} paired runs, "
                f"{again} point{'s' if again != 1 else ''} re-measured)"
                f" ({len(rows)} runs: {parts})")  # fmt: skip
    line += _damage(base)
    if elsewhere:
        line += (f"; {elsewhere} row{'s' if elsewhere != 1 else ''} of the results file "
                 "belong to points outside this grid (kept there, left out here)")
    if interrupted:
        line = f"INTERRUPTED ({len(rows)} of {len(pts) * len(devices)} runs) " + line
    ok = saved is not None and not saved.startswith("not saved")
    return {
        "verdict": {"status": "pass" if changed else "fail", "line": line,
                    "counts": counts},
        "range": spec.range, "points": len(pts), "devices": devices,
        "sample": {"budget": budget, "seed": seed} if budget is not None else None,
        "rows": rows, "ranking": ranked, "others": others,
        "confirmed": confirmed,
        "best": save if ok else None, "best_id": best["id"] if best else None,
        "best_record": record,
        "best_folder": saved, "results": str(path) if path else None,
        "interrupted": interrupted,
    }  # fmt: skip


def _record(best: Any, confirmed: dict[str, Confirmed]) -> dict[str, Any]:
    """What the best variant got, saved with it: the device and its driver, the date, the
    verdict, its time and the paired difference against the capture's own."""
    import datetime

    c = confirmed[f"{best['device']}/{best['id']}"]
    return {
        "device": c["device"], "date": datetime.datetime.now(datetime.UTC).isoformat(
            timespec="seconds"),
        "verdict": c["status"], "time": best["time"], "vs_capture": c["diff"],
    }  # fmt: skip


def _save_best(var: Variant, root: Any, name: str, record: dict[str, Any] | None) -> str:
    """The best variant stored as ``name``: its folder, or ``not saved: why``."""
    from cltui.replay.experiment.store import save_variant
    from cltui.replay.experiment.variant import VariantError

    try:
        return str(save_variant(root, var, name, result=record))
    except (VariantError, OSError) as exc:
        return f"not saved: {exc}"
