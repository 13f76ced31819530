"""``cltui latency``'s measurement: one range on each chosen device, by three runners.

1. the capture's own timing (what the application saw);
2. the Python engine in its child process (``runner.start(..., timeline=True)``): every
   launch of ``repeat`` timing repetitions;
3. the range exported as a bundle (a temp folder), the C++ runner built once with CMake
   (:mod:`.native`) and run with ``--latency``: per round a timed pass of that runner (no
   event: its host time), a staged one (an event per launch: every launch's stages), one of
   the floor (the bare launch loop) and one per host delay.

The figures are made by :mod:`.stats` and :mod:`.fit`; :func:`measure` returns the report
(``docs/cli-json.md``) and the launches for ``--trace``.  Progress and cancel as every
long task (:mod:`cltui.progress`)."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from cltui.errors import CltuiError
from cltui.latency import fit, native, records
from cltui.latency.schema import CaptureTiming, DeviceLatency, LatencyReport, RunnerCost
from cltui.latency.stats import Launch, summarise
from cltui.progress import CancelToken, ProgressEvent, ProgressFn, no_progress
from cltui.text.units import fmt_ns

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.capture.ranges import EnqueueRange
    from cltui.replay.engine.schema import Device, Manifest

DELAYS = (0, 50, 200, 1000, 5000, 20000)
SPREAD_WARN = 0.25  # a runner's quartiles this far apart (of its median): a warning


class LatencyError(CltuiError):
    """A range ``cltui latency`` cannot measure (no kernel, no device): one line."""


@dataclasses.dataclass
class Measured:
    """The report and the launches behind it (by source name, for ``--trace``)."""

    report: LatencyReport
    capture_launches: list[Launch]
    replays: list[tuple[str, list[Launch]]]


@dataclasses.dataclass
class Options:
    repeat: int = 50
    delays: Sequence[int] = DELAYS
    timeout: float = 120.0
    native: bool = True  # the C++ runner (floor, ladder) as well as the Python engine


def choose(
    cap: Capture, rng: EnqueueRange, specs: Sequence[str]
) -> list[tuple[Device, dict[str, str]]]:
    """The devices and why: ``--device`` as given, else the capture's by the one rule."""
    from cltui.replay.devices import DeviceError, devices_for

    try:
        devices, why = devices_for(cap, rng, specs)
    except DeviceError as exc:
        raise LatencyError(str(exc)) from None
    return [(d, why) for d in devices]


def capture_timing(cap: Capture, manifest: Manifest) -> tuple[CaptureTiming, list[Launch]]:
    launches = records.capture_launches(cap, manifest["steps"])
    notes = ["host calls from the log's Time: stamps (microseconds; under the layer, with "
             "its dumps), device stages from its Device Time lines; no end→next gap: the "
             "capture logs durations, not timestamps"]  # fmt: skip
    steps = manifest["steps"]
    recovered = sum(1 for st in steps if st.get("recovered"))
    if recovered:
        notes.append(f"{recovered} of {len(steps)} kernel enqueues were recovered from the dump "
                     "files after the log lost their records: their capture timing is lost too")
    if recovered < len(steps):
        if not any(ln.stages.get("host_enqueue") is not None for ln in launches):
            notes.append("the log has no Time: stamps (CallLoggingElapsedTime off)")
        if not any(ln.stages.get("start_to_end") is not None for ln in launches):
            notes.append("the log has no Device Time lines (DevicePerformanceTimeLogging off)")
    summary = summarise(launches)
    return cast(CaptureTiming, {**summary, "source": "capture", "notes": notes}), launches


def measure(
    cap: Capture,
    rng: EnqueueRange,
    specs: Sequence[str] = (),
    opts: Options | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> Measured:
    """Measure ``rng`` of ``cap`` on the chosen devices (see the module doc)."""
    from cltui.replay.plan import PlanError, build_plan

    opts = opts or Options()
    cancel = cancel or CancelToken()
    try:
        plan = build_plan(cap, rng, "chain")
    except PlanError as exc:
        raise LatencyError(str(exc)) from None
    manifest = plan.to_manifest()
    chosen = choose(cap, rng, specs)
    timing, cap_launches = capture_timing(cap, manifest)
    from cltui.replay.feasibility import unchecked_line

    out = Measured(
        {"capture": str(cap.path), "range": str(rng), "kernels": len(manifest["steps"]),
         "not_measured": unchecked_line(manifest) or None, "repeat": opts.repeat,
         "capture_timing": timing, "devices": [], "trace": None},
        cap_launches, [],
    )  # fmt: skip
    bundle = _bundle(cap, rng, opts, cancel, progress) if opts.native else None
    try:
        for k, (dev, why) in enumerate(chosen):
            progress(ProgressEvent(k / len(chosen), f"{dev['name']}: the Python engine"))
            res = _device(cap, manifest, dev, why, opts, bundle, cancel, progress, out)
            out.report["devices"].append(res)
    finally:
        if bundle is not None and isinstance(bundle[0], Path):
            from cltui.process import lifecycle

            lifecycle.remove(bundle[0].parent)
    progress(ProgressEvent(1.0, "done"))
    return out


def _bundle(
    cap: Capture, rng: EnqueueRange, opts: Options, cancel: CancelToken, progress: ProgressFn
) -> tuple[Path | None, Path | None, str]:
    """(bundle folder, C++ runner, why not) for the native runs."""
    from cltui.export import ExportError, export_range
    from cltui.process import lifecycle

    progress(ProgressEvent(0.0, "exporting the range for the C++ runner"))
    tmp = lifecycle.temp_dir("latency")
    try:
        export_range(cap, rng, tmp / "bundle", langs="cpp", cancel=cancel)
        progress(ProgressEvent(0.05, "building the C++ runner (cmake, once per version)"))
        exe = native.build_runner(cancel)
    except (ExportError, native.NativeError) as exc:
        return tmp / "bundle", None, str(exc)
    return tmp / "bundle", exe, ""


def _device(
    cap: Capture,
    manifest: Manifest,
    dev: Device,
    why: dict[str, str],
    opts: Options,
    bundle: tuple[Path | None, Path | None, str] | None,
    cancel: CancelToken,
    progress: ProgressFn,
    out: Measured,
) -> DeviceLatency:
    from cltui.replay import runner

    n_steps = len(manifest["steps"])
    res: DeviceLatency = {
        "device": dict(dev), "device_choice": why, "error": None, "launched": n_steps,
        "cannot_run": [], "engine": None, "native": None, "runners": [], "sensitivity": None,
        "notes": [], "warnings": [],
    }  # fmt: skip
    job = runner.start(manifest, [dev], data_root=cap.path, repeat=opts.repeat + 1,
                       timeout=opts.timeout, timeline=True)  # fmt: skip
    cancel.on_cancel(job.cancel)
    report = job.wait()
    job.cleanup()
    cancel.raise_if_set()
    dres = report["devices"][0]
    res["cannot_run"] = list(dres.get("cannot_run") or [])
    res["launched"] = n_steps - len({f["enqueue"] for f in res["cannot_run"]})
    engine_cost: float | None = None
    engine_loops: list[float] = []
    if dres.get("error") or "timeline" not in dres:
        res["error"] = str(dres.get("error") or f"the Python engine ended: {dres['status']}")
    else:
        launches = records.engine_launches(manifest["steps"], dres["timeline"])
        res["engine"] = summarise(launches)
        out.replays.append((f"Python engine on {dev['name']}", launches))
        engine_loops = [r["loop_ns"] for r in dres["timeline"]["repetitions"]]
        engine_cost = (statistics.median(engine_loops) / max(res["launched"], 1)
                       if engine_loops else None)  # fmt: skip
    native_res: dict[str, Any] | None = None
    if bundle is not None and bundle[1] is not None and bundle[0] is not None:
        progress(ProgressEvent(0.5, f"{dev['name']}: the C++ runner, floor and delays"))
        try:
            native_res = native.run_latency(bundle[1], bundle[0], dev, opts.repeat,
                                            opts.delays, opts.timeout * 4, cancel)  # fmt: skip
        except native.NativeError as exc:
            res["notes"].append(str(exc))
    elif bundle is not None:
        res["notes"].append(f"no C++ runner: {bundle[2]}")
    _native_figures(res, manifest, native_res, (engine_cost, engine_loops), dev, out)
    return res


def _median_per_launch(passes: dict[str, list[float]] | None, n: int) -> float | None:
    loops = (passes or {}).get("loop_ns") or []
    return statistics.median(loops) / max(n, 1) if loops else None


def _spread(loops: Sequence[float] | None, n: int) -> list[float] | None:
    """The passes' quartiles of host time per launch (None under 4 passes)."""
    if not loops or len(loops) < 4:
        return None
    q = statistics.quantiles(loops, n=4)
    return [q[0] / max(n, 1), q[2] / max(n, 1)]


def spread_warnings(runners: Sequence[RunnerCost], passes: dict[str, Sequence[float]]) -> list[str]:
    """A warning per runner whose passes disagree: quartiles more than
    :data:`SPREAD_WARN` of the median apart, or hyperfine-style outliers among them."""
    out: list[str] = []
    for r in runners:
        sp, med = r["spread"], r["host_ns_per_launch"]
        odd = fit.outliers(passes.get(r["runner"]) or [])
        wide = sp is not None and med and (sp[1] - sp[0]) / med > SPREAD_WARN
        if not wide and not odd:
            continue
        what = (f"its passes disagree: host time per launch {fmt_ns(sp[0])} to {fmt_ns(sp[1])} "
                f"(quartiles) around a median of {fmt_ns(med or 0.0)}") if wide and sp else ""
        if odd:
            what += (("; " if what else "") + f"{odd} of {r['passes']} passes are statistical "
                     "outliers (modified Z-score above 14, hyperfine's rule)")  # fmt: skip
        out.append(f"{r['runner']}: {what}: the machine was busy; read its figure with care "
                   "or run again on a quieter machine")  # fmt: skip
    return out


def _paired_ratio(
    passes: dict[str, list[float]] | None, floor: dict[str, list[float]] | None
) -> float | None:
    """Median over rounds of a pass's loop time over the floor pass of the same round."""
    a, b = (passes or {}).get("loop_ns") or [], (floor or {}).get("loop_ns") or []
    pairs = [x / y for x, y in zip(a, b, strict=False) if y > 0]
    return statistics.median(pairs) if pairs else None


def _native_figures(
    res: DeviceLatency,
    manifest: Manifest,
    nat: dict[str, Any] | None,
    engine: tuple[float | None, list[float]],
    dev: Device,
    out: Measured,
) -> None:
    """The runners' table, the C++ runner's stages and the sensitivity, from its JSON
    (per launch: over the launches a pass makes; steps that cannot run are not launched)."""
    n = res["launched"]
    engine_cost, engine_loops = engine
    nat_ok = nat if nat is not None and not nat.get("error") else {}
    if nat is not None and nat.get("error"):
        res["notes"].append(f"the C++ runner: {nat['error']}")
    floor_p = nat_ok.get("floor_passes")
    prof_p = nat_ok.get("floor_profiling_passes")
    timed, staged = nat_ok.get("runner_passes"), nat_ok.get("staged_passes")
    floor = _median_per_launch(floor_p, n)
    if nat_ok:
        launches = records.native_launches(manifest["steps"], nat_ok.get("rows", []))
        res["native"] = summarise(launches)
        out.replays.append((f"C++ runner on {dev['name']}", launches))
        ladder = [(int(p["delay_ns"]), p["passes"]["injected_ns"], p["passes"]["wall_ns"])
                  for p in nat_ok.get("ladder", [])]  # fmt: skip
        cpu = "CPU" in str(dev.get("type", "")).upper()
        res["sensitivity"] = fit.sensitivity(ladder, n, str(dev["name"]), cpu,
                                             fit.busy_ladder(nat_ok))  # fmt: skip
    engine_passes = res["engine"]["launches"] // max(n, 1) if res["engine"] else 0
    loops: dict[str, Sequence[float]] = {
        "Python engine": engine_loops, "C++ runner": (timed or {}).get("loop_ns") or [],
        "C++ runner, staged": (staged or {}).get("loop_ns") or [],
        "bare C loop, profiling": (prof_p or {}).get("loop_ns") or [],
        "bare C loop (floor)": (floor_p or {}).get("loop_ns") or [],
    }  # fmt: skip
    rows: list[tuple[str, str, float | None, float | None, int]] = [
        ("Python engine", "cltui's engine (pyopencl), an event per launch", engine_cost,
         engine_cost / floor if engine_cost and floor else None, engine_passes),
        ("C++ runner", "the exported replay.cpp's timed loop (as --repeat times a range): "
         "transfers and reloads the range needs, no event, queue without profiling",
         _median_per_launch(timed, n), _paired_ratio(timed, floor_p),
         len((timed or {}).get("loop_ns", []))),
        ("C++ runner, staged", "the same loop with an event per launch on the profiling "
         "queue (its passes give the stage figures)", _median_per_launch(staged, n),
         _paired_ratio(staged, floor_p), len((staged or {}).get("loop_ns", []))),
        ("bare C loop, profiling", "the floor's loop on the profiling queue",
         _median_per_launch(prof_p, n), _paired_ratio(prof_p, floor_p),
         len((prof_p or {}).get("loop_ns", []))),
        ("bare C loop (floor)", "replay.cpp --floor: clEnqueueNDRangeKernel only, arguments "
         "set once, queue without profiling", floor, 1.0 if floor else None,
         len((floor_p or {}).get("loop_ns", []))),
    ]  # fmt: skip
    res["runners"] = [
        cast(RunnerCost, {"runner": name, "what": what, "host_ns_per_launch": cost,
                          "ratio_to_floor": ratio, "passes": passes,
                          "spread": _spread(loops[name], n)})
        for name, what, cost, ratio, passes in rows
    ]  # fmt: skip
    res["warnings"] = spread_warnings(res["runners"], loops)
