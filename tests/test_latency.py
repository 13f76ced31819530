"""``cltui latency``: the figures (pure), the trace-event format, and the whole command on
a synthetic capture and a shared one on PoCL (the Python engine and the C++ runner)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from cltui.cli import main
from cltui.latency import fit
from cltui.latency.schema import Dist, LatencyReport, StageSummary
from cltui.latency.stats import STAGES, Launch, blocks, distribution, summarise, with_gaps
from cltui.latency.text import sensitivity_lines
from tests.analysis_synth import chain_capture, write_capture
from tests.latency_synth import synth_launch_bound
from tests.schemas import validate

NEEDS_CPP = pytest.mark.skipif(
    shutil.which("cmake") is None or shutil.which("c++") is None,
    reason="cmake or a C++ compiler is not installed",
)


def _launch(rep: int, step: int, q: int, host: float = 1000.0, run: int = 500) -> Launch:
    t = (q, q + 10, q + 30, q + 30 + run)
    return Launch(rep, step, 10 + step, f"k{step % 2}",
                  {"host_enqueue": host, "queued_to_submit": 10.0, "submit_to_start": 20.0,
                   "start_to_end": float(run)}, float(q - 100), float(q), t)  # fmt: skip


def test_distribution_and_blocks() -> None:
    d = distribution([float(v) for v in range(1, 101)])
    assert d is not None
    assert (d["count"], d["min"], d["max"]) == (100, 1.0, 100.0)
    assert d["p50"] == pytest.approx(50.5) and d["p99"] == pytest.approx(99.01)
    assert sum(d["hist"]) == 100
    assert distribution([]) is None
    assert blocks([0, 1, 8]) == " ▁█"
    assert len(blocks(list(range(24)), 12)) == 12


def test_gaps_outliers_and_kernels() -> None:
    one = [_launch(1, i, 1000 * i, host=5000.0 if i == 7 else 1000.0) for i in range(10)]
    got = with_gaps(one)
    assert got[0].stages["end_to_next"] == pytest.approx(1000 - 530 + 30)
    assert got[-1].stages["end_to_next"] is None
    s: StageSummary = summarise(got)
    assert s["launches"] == 10
    assert [k["kernel"] for k in s["kernels"]] == ["k0", "k1"]
    assert s["outliers"][0]["enqueue"] == 17 and s["outliers"][0]["stage"] == "host_enqueue"
    assert s["outliers"][0]["times_median"] == pytest.approx(5.0)
    d: Dist | None = s["stages"]["end_to_next"]
    assert d is not None and d["count"] == 9


def test_slope_of_known_cases() -> None:
    gen = np.random.default_rng(3)
    xs = [0.0, 500.0, 2000.0, 10000.0]
    drift = gen.normal(0, 5000, 20)  # a round's offset: the within-round fit removes it
    lb = [[(x, 50000 + d + x + gen.normal(0, 200)) for x in xs] for d in drift]
    db = [[(x, 50000 + d + gen.normal(0, 200)) for x in xs] for d in drift]
    s1, s0 = fit.slope_ci(lb), fit.slope_ci(db)
    assert s1 is not None and s0 is not None
    assert s1[1][0] < 1.0 < s1[1][1] and s1[0] == pytest.approx(1.0, abs=0.05)
    assert s0[1][0] < 0.0 < s0[1][1] and abs(s0[0]) < 0.05
    assert fit.slope_ci([[(1.0, 1.0), (1.0, 2.0)]] * 3) is None
    assert fit.slope_ci([[(0.0, 1.0), (1.0, 2.0)]] * 2) is None
    assert fit.bound_of(0.05) == "device-bound" and fit.bound_of(0.95) == "launch-bound"


def test_sensitivity_line() -> None:
    ladder = [(d, [d * 10.0] * 5, [10000.0 + d * 10.0 + k for k in range(5)])
              for d in (0, 50, 200, 1000)]  # fmt: skip
    s = fit.sensitivity(ladder, 10, "Dev")
    assert s["slope"] == pytest.approx(1.0, abs=1e-6)
    assert s["saving_ns"] == pytest.approx(400.0, rel=1e-3)
    assert s["line"].startswith("removing 40 ns per launch would save about 400 ns")
    assert s["line"].endswith("on Dev") and "(4.00 %)" in s["line"]


DELAYS = (0, 50, 200, 1000, 5000, 20000)


def _planted(
    host_per_launch: float, device_ns: float, launches: int = 15, rounds: int = 30,
    noise: float = 2000.0, seed: int = 1, slow: int = 3,
) -> list[tuple[int, list[float], list[float]]]:  # fmt: skip
    """A ladder of a range whose wall is the larger of its host loop (``host_per_launch`` +
    the delay, per launch) and its device time, plus each round's drift, Gaussian noise,
    ``slow`` passes 30x slow (a busy machine)."""
    gen = np.random.default_rng(seed)
    drift = gen.normal(0.0, 5 * noise, rounds)
    out = []
    for d in DELAYS:
        inj = [d * launches * (1.0 + 0.01 * gen.random()) for _ in range(rounds)]
        wall = []
        for r in range(rounds):
            host = launches * host_per_launch + inj[r]
            wall.append(max(host, device_ns) + drift[r] + gen.normal(0, noise))
        for r in gen.choice(rounds, size=slow, replace=False):
            wall[r] *= 30.0
        out.append((d, inj, wall))
    return out


def test_the_estimator_recovers_planted_ranges() -> None:
    """A launch-bound range (its host loop is the wall: slope 1) and a device-bound range
    (the device hides every delay of the ladder: slope 0), each with drift, noise and
    30x-slow passes: both recovered within their intervals, and classified."""
    lb = fit.sensitivity(_planted(3000.0, 0.0), 15, "Dev")
    assert lb["ci95_raw"] is not None and lb["ci95_raw"][0] <= 1.0 <= lb["ci95_raw"][1]
    assert lb["bound"] == "launch-bound" and lb["measurable"]
    db = fit.sensitivity(_planted(3000.0, 400_000.0), 15, "Dev")
    assert db["ci95_raw"] is not None and db["ci95_raw"][0] <= 0.0 <= db["ci95_raw"][1]
    assert db["bound"] == "device-bound"
    # one slow pass per rung would have swung a least-squares fit on round means
    assert lb["outliers"] >= 3 * len(DELAYS) - 3
    assert any("statistical outliers" in w for w in lb["warnings"])
    for s in (lb, db):  # the saving never exceeds 40 ns x launches
        assert s["saving_ns"] is not None and s["saving_ns"] <= 40 * 15 + 1e-9
        assert s["saving_ci_ns"] is not None and s["saving_ci_ns"][1] <= 40 * 15 + 1e-9


def test_a_slope_above_one_is_clipped_and_named() -> None:
    """The wall grows 1.6 ns per injected ns on a CPU device: the figure is clipped to 1,
    the flag names contention for cores, and the saving stays in its bound."""
    ladder = _planted(3000.0, 0.0, slow=0)
    ladder = [(d, inj, [w + 0.6 * x for w, x in zip(wall, inj, strict=True)])
              for d, inj, wall in ladder]  # fmt: skip
    s = fit.sensitivity(ladder, 15, "cpu", cpu=True)
    assert s["slope_raw"] is not None and s["slope_raw"] > 1.4
    assert s["slope"] == 1.0 and s["ci95"] == [1.0, 1.0]
    assert s["flag"] is not None and "more than the wait itself" in s["flag"]
    assert "contention" in s["flag"] and "share cores" in s["flag"]
    assert s["saving_ns"] == pytest.approx(600.0) and "at most 40 ns x 15 launches" in s["line"]
    gpu = fit.sensitivity(ladder, 15, "gpu")
    assert gpu["flag"] is not None and "something else competes" in gpu["flag"]
    text = "\n".join(sensitivity_lines(s, "cpu"))
    assert "flag: the wall grew" in text and "unclipped" in text


def test_below_the_noise_is_not_measurable() -> None:
    """The ladder's largest delay injects less per pass than the wall's noise: no slope,
    no saving figure, "not measurable" (never a huge number); the near-0 slope likewise
    where only its delays are below the noise."""
    quiet = _planted(3000.0, 0.0, noise=50_000.0, slow=0, launches=2)
    s = fit.sensitivity([(d, i, w) for d, i, w in quiet if d <= 1000], 2, "Dev")
    assert s["bound"] == "not measurable" and not s["measurable"]
    assert s["slope"] is None and s["saving_ns"] is None
    assert "not measurable on Dev" in s["line"] and "noise" in s["line"]
    text = "\n".join(sensitivity_lines(s, "Dev"))
    assert "slope (wall on injected time, whole ladder): not measurable" in text
    mid = fit.sensitivity(_planted(3000.0, 0.0, noise=40_000.0, slow=0), 15, "Dev")
    assert mid["measurable"] and mid["slope_small"] is None
    assert any(w.startswith("slope near 0: not measurable") for w in mid["warnings"])
    assert "slope near 0 (delays ≤ 1 µs): not measurable" in "\n".join(
        sensitivity_lines(mid, "Dev"))


def test_runners_whose_passes_disagree_are_warned() -> None:
    from cltui.latency.measure import spread_warnings

    steady = [2000.0 * 10 + k for k in range(20)]
    jumpy = [2000.0 * 10] * 10 + [28000.0 * 10] * 10
    rows = [{"runner": "C++ runner", "host_ns_per_launch": 2000.0, "passes": 20,
             "spread": [2000.0, 2001.0]},
            {"runner": "Python engine", "host_ns_per_launch": 15000.0, "passes": 20,
             "spread": [2000.0, 28000.0]}]  # fmt: skip
    out = spread_warnings(rows, {"C++ runner": steady, "Python engine": jumpy})  # type: ignore[arg-type]
    assert len(out) == 1 and out[0].startswith("Python engine: its passes disagree")


# --------------------------------------------------------------------------- trace format


def check_trace(doc: dict[str, Any]) -> None:
    """The Chrome trace-event format as Perfetto reads it: required fields, ``dur`` on
    complete events, ``ts`` monotonic per track, every track named by metadata."""
    events = doc["traceEvents"]
    assert isinstance(events, list) and events
    named_threads: set[tuple[int, int]] = set()
    named_procs: set[int] = set()
    last: dict[tuple[int, int], float] = {}
    for ev in events:
        for key in ("ph", "ts", "pid", "tid", "name"):
            assert key in ev, (key, ev)
        assert isinstance(ev["pid"], int) and isinstance(ev["tid"], int)
        assert isinstance(ev["ts"], int | float) and ev["ts"] >= 0
        if ev["ph"] == "M":
            assert ev["name"] in ("process_name", "thread_name", "process_sort_index")
            if ev["name"] == "thread_name":
                named_threads.add((ev["pid"], ev["tid"]))
            if ev["name"] == "process_name":
                named_procs.add(ev["pid"])
            continue
        assert ev["ph"] == "X", ev
        assert isinstance(ev["dur"], int | float) and ev["dur"] >= 0
        track = (ev["pid"], ev["tid"])
        assert ev["ts"] >= last.get(track, 0.0), ("not monotonic", ev)
        last[track] = ev["ts"]
    assert set(last) <= named_threads
    assert {p for p, _t in last} <= named_procs


# --------------------------------------------------------------------------- the command


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_capture(chain_capture(), tmp_path_factory.mktemp("lat") / "chain")


def _run(args: list[str]) -> tuple[int, str]:
    res = CliRunner().invoke(main, ["latency", *args])
    return res.exit_code, res.output


@pytest.mark.child
@NEEDS_CPP
def test_latency_json_on_pocl(chain: Path, tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    code, out = _run([str(chain), "0-5", "-d", "pocl", "--repeat", "3",
                      "--delays", "0,1000,20000", "--trace", str(trace), "--json"])  # fmt: skip
    assert code == 0, out
    rep: LatencyReport = json.loads(out)
    validate(rep, "cli.schema.json", "latency")
    assert rep["kernels"] == 6 and rep["trace"] == str(trace)
    (dev,) = rep["devices"]
    assert dev["error"] is None and dev["device_choice"]["rule"] == "user"
    assert dev["engine"] is not None and dev["engine"]["launches"] == 18
    assert dev["native"] is not None and dev["native"]["launches"] == 18
    names = [r["runner"] for r in dev["runners"]]
    assert names == ["Python engine", "C++ runner", "C++ runner, staged",
                     "bare C loop, profiling", "bare C loop (floor)"]  # fmt: skip
    assert all(r["host_ns_per_launch"] and r["host_ns_per_launch"] > 0 for r in dev["runners"])
    assert all(r["ratio_to_floor"] and r["passes"] == 3 for r in dev["runners"])
    assert dev["runners"][4]["ratio_to_floor"] == pytest.approx(1.0)
    sens = dev["sensitivity"]
    assert sens is not None and [p["delay_ns"] for p in sens["ladder"]] == [0, 1000, 20000]
    assert sens["ladder"][2]["injected_ns_per_launch"] >= 20000
    if sens["bound"] == fit.NOT_MEASURABLE:  # a loaded machine's noise hides the ladder
        assert sens["line"].startswith("removing 40 ns per launch: not measurable on"), sens
        assert "more --repeat or a quieter machine" in sens["line"]
    else:
        assert sens["line"].startswith("removing 40 ns per launch would save about"), sens
    for stage in STAGES[:4]:
        assert dev["engine"]["stages"][stage] is not None
    cap = rep["capture_timing"]
    assert cap["stages"]["host_enqueue"] is not None and cap["stages"]["end_to_next"] is None
    doc = json.loads(trace.read_text())
    check_trace(doc)
    procs = [e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"]
    assert procs[0] == "capture 0-5" and len(procs) == 3


@pytest.mark.child
@NEEDS_CPP
def test_a_planted_launch_cost_is_recovered_on_pocl(tmp_path: Path) -> None:
    """A launch-bound range (200 one-work-item launches back to back: the host loop is the
    wall, so every injected ns adds one) through the C++ runner's ladder on PoCL: launch-
    bound, its interval holds the planted slope 1 (clipped: on this 2-core machine the
    host's launch calls and PoCL's threads share cores, which the flag names), the 40 ns line within
    40 ns x 200.  Delays up to 50 us, so the injected time stands above a loaded
    machine's noise."""
    path = write_capture(synth_launch_bound(200), tmp_path / "lb")
    code, out = _run([str(path), "0-199", "-d", "pocl", "--repeat", "12",
                      "--delays", "0,20000,50000", "--json"])  # fmt: skip
    assert code == 0, out
    rep: LatencyReport = json.loads(out)
    validate(rep, "cli.schema.json", "latency")
    sens = rep["devices"][0]["sensitivity"]
    assert sens is not None and sens["measurable"], sens
    assert sens["bound"] == "launch-bound"
    assert sens["ci95"] is not None and sens["ci95"][0] <= 1.0 <= sens["ci95"][1]
    assert sens["saving_ns"] is not None and sens["saving_ns"] <= 40 * 200 + 1e-6
    assert sens["saving_bound_ns"] == 40 * 200


@pytest.mark.child
def test_latency_text_without_native(chain: Path) -> None:
    code, out = _run([str(chain), "1-3", "-d", "pocl", "--repeat", "3", "--no-native"])
    assert code == 0, out
    assert "== Python engine on" in out and "host enqueue call" in out
    assert "== timeline: Python engine on" in out and "\n  device " in out
    assert "sensitivity on" in out and "not measured" in out
    assert "bare C loop (floor)" in out


def test_latency_bad_input(chain: Path) -> None:
    assert _run([str(chain), "40-50", "-d", "pocl"])[0] == 2
    code, out = _run([str(chain), "0-5", "--delays", "a,b"])
    assert code == 2 and "bad --delays" in out
    code, out = _run([str(chain), "0-5", "-d", "no-such-device"])
    assert code == 2 and out.count("\n") == 1


@pytest.mark.child
def test_latency_on_a_damaged_range_says_what_is_not_measured(tmp_path: Path) -> None:
    """pyopencl_lib_coldcache lost enqueues 0-100 to a NUL run: of 14-38 the 23 recovered
    kernels are measured; the 2 enqueues lost with the log are named first (INCOMPLETE, exit
    3), and the capture's own timing says it was lost with the log, not switched off."""
    from tests.conftest import CAPTURES, copy_capture

    cap = copy_capture(CAPTURES / "pyopencl_lib_coldcache", tmp_path)
    args = [str(cap), "14-38", "-d", "pocl", "--repeat", "3", "--delays", "0", "--no-native"]
    code, out = _run([*args, "--json"])
    assert code == 3, out
    rep: LatencyReport = json.loads(out)
    validate(rep, "cli.schema.json", "latency")
    assert rep["not_measured"] == "2 enqueues lost with the log" and rep["kernels"] == 23
    notes = rep["capture_timing"]["notes"]
    assert any(n.startswith("23 of 23 kernel enqueues were recovered") for n in notes), notes
    assert not any("CallLoggingElapsedTime off" in n for n in notes), notes
    (dev,) = rep["devices"]
    assert dev["error"] is None and dev["engine"] is not None
    assert dev["engine"]["launches"] == 23 * 3
    res = CliRunner().invoke(main, ["latency", *args])
    assert res.exit_code == 3
    head = res.stdout.splitlines()[:2]
    assert head[1] == "INCOMPLETE: not measured: 2 enqueues lost with the log", res.stdout
