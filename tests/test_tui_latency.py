"""``L`` in the app: the launch latency of the selected range (a Pilot test on PoCL, the
Python engine only), and a snapshot of the Latency screen with fixed figures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from cltui.latency import fit
from cltui.latency.measure import Measured, Options
from cltui.latency.schema import CaptureTiming, DeviceLatency, LatencyReport
from cltui.latency.stats import Launch, summarise, with_gaps
from cltui.tui.app import CltuiApp, make_app
from cltui.tui.screens.latency import LatencyScreen
from cltui.tui.screens.replay_progress import ProgressScreen
from tests.analysis_synth import chain_capture, write_capture
from tests.test_tui_replay import aio, loaded, select, wait_for

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)

Compare = Callable[..., bool]


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_capture(chain_capture(), tmp_path_factory.mktemp("tuilat") / "chain")


async def _loaded(pilot: Pilot[Any]) -> CltuiApp:
    app = pilot.app
    assert isinstance(app, CltuiApp)
    for _ in range(1000):
        if app.main.is_mounted and app.main.capture is not None:
            break
        await pilot.pause(0.01)
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    return app


@aio
async def test_latency_key_measures_the_range(chain: Path) -> None:
    app = make_app(chain)
    async with app.run_test(size=(140, 40)) as pilot:
        await select(pilot, await loaded(pilot), 0, 5)
        app.latency_options = Options(repeat=3, native=False)
        await pilot.press("L")
        await pilot.pause()  # the progress screen, or already the view on a fast machine
        assert isinstance(app.screen, ProgressScreen | LatencyScreen)
        # the Python engine in its child process on PoCL; the app stays responsive
        await wait_for(pilot, lambda: (isinstance(app.screen, LatencyScreen)
                                       and bool(app.screen.text))
                       or bool(getattr(app.screen, "error", None)), timeout=240)  # fmt: skip
        screen = app.screen
        assert isinstance(screen, LatencyScreen), getattr(screen, "error", None)
        rep = screen.measured.report
        assert rep["range"] == "0-5" and rep["kernels"] == 6
        assert rep["devices"][0]["engine"] is not None
        assert rep["devices"][0]["device_choice"]["why"]
        assert "== timeline: Python engine on" in screen.text
        assert "  device " in screen.text and "== Python engine on" in screen.text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, LatencyScreen)


def _fixed() -> Measured:
    """A report with fixed figures (three kernels, two repetitions, a ladder)."""
    launches: list[Launch] = []
    for rep in (1, 2):
        one = []
        q = 1_000_000 * rep
        for i, (name, run) in enumerate([("saxpy", 4000), ("scale", 9000), ("reduce", 2500)] * 3):
            t = (q, q + 900, q + 2000, q + 2000 + run + 37 * i)
            one.append(Launch(rep, i, 10 + i, name,
                              {"host_enqueue": 3100.0 + 50 * i, "queued_to_submit": 900.0,
                               "submit_to_start": 1100.0, "start_to_end": float(t[3] - t[2])},
                              float(q - 200), float(q), t))  # fmt: skip
            q = t[3] + 1500
        launches += with_gaps(one)
    ladder = [(d, [d * 9.0 + k for k in range(4)], [60000.0 + d * 9.0 + 40 * k for k in range(4)])
              for d in (0, 50, 200, 1000, 5000, 20000)]  # fmt: skip
    cap = [Launch(0, ln.step, ln.enqueue, ln.kernel, {**ln.stages, "end_to_next": None})
           for ln in launches[:9]]  # fmt: skip
    capture: CaptureTiming = {**summarise(cap), "source": "capture",  # type: ignore[typeddict-item]
                              "notes": ["fixed figures for the snapshot"]}
    dev: DeviceLatency = {
        "device": {"id": "0:0", "name": "Fixed GPU", "platform": "Fixed"},
        "device_choice": {"rule": "user", "why": "chosen for the snapshot"},
        "error": None, "launched": 9, "cannot_run": [],
        "engine": summarise(launches), "native": summarise(launches),
        "runners": [
            {"runner": "Python engine", "what": "engine", "host_ns_per_launch": 12000.0,
             "ratio_to_floor": 2.4, "passes": 2, "spread": None},
            {"runner": "bare C loop (floor)", "what": "floor", "host_ns_per_launch": 5000.0,
             "ratio_to_floor": 1.0, "passes": 2, "spread": None},
        ],
        "sensitivity": fit.sensitivity(ladder, 9, "Fixed GPU"), "notes": [], "warnings": [],
    }  # fmt: skip
    report: LatencyReport = {"capture": "fixed", "range": "10-18", "kernels": 9,
                             "not_measured": None, "repeat": 2,
                             "capture_timing": capture, "devices": [dev], "trace": None}
    return Measured(report, cap, [("Python engine on Fixed GPU", launches)])


def test_latency_screen_snapshot(snap_compare: Compare, chain: Path) -> None:
    async def run(pilot: Pilot[Any]) -> None:
        app = await _loaded(pilot)
        app.push_screen(LatencyScreen(_fixed(), "Launch latency of 10-18"))
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()

    assert snap_compare(make_app(chain), terminal_size=(120, 36), run_before=run)
