"""Snapshot tests of the range-action screens (replay, results, diff, export, check, diverge).

Each uses fixed inputs so frames are stable: a fixed device list for the replay dialog, a fixed
report for the results screen, the real dump files plus a planted mismatch for the diff.
Update after an intended change with
``pytest tests/test_snapshots_actions.py --snapshot-update`` and look at the SVGs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from cltui.analysis.check_report import CheckReport, Finding
from cltui.analysis.oclgrind import SourceLine
from cltui.progress import ProgressEvent
from cltui.replay.engine.compare import Tolerance
from cltui.tui.app import CltuiApp, make_app
from cltui.tui.screens.diff import DiffScreen, ctype_for
from cltui.tui.screens.export_dialog import ExportDialog
from cltui.tui.screens.findings import FindingsScreen
from cltui.tui.screens.replay_progress import ProgressScreen, ReplayOutcome, TaskControl
from cltui.tui.screens.replay_request import ReplayRequest
from cltui.tui.screens.results import ReplayResultsScreen

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)

SMALL = (80, 24)
LARGE = (120, 36)

Compare = Callable[..., bool]

DEVICES = [
    {"id": "0:0", "name": "Oclgrind Simulator", "platform": "Oclgrind"},
    {"id": "1:0", "name": "pthread-skylake-avx512-AMD EPYC",
     "platform": "Portable Computing Language"},
]


async def _loaded(pilot: Pilot[Any]) -> CltuiApp:
    app = pilot.app
    assert isinstance(app, CltuiApp)
    for _ in range(1000):
        if app.main.is_mounted and app.main.capture is not None:
            break
        await pilot.pause(0.01)
    await _settle(pilot)
    return app


async def _settle(pilot: Pilot[Any]) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()


def _keys(jump: int, *keys: str) -> Callable[[Pilot[Any]], Awaitable[None]]:
    async def run(pilot: Pilot[Any]) -> None:
        app = await _loaded(pilot)
        app.main.jump_to(jump)
        await _settle(pilot)
        for key in keys:
            await pilot.press(key)
            await _settle(pilot)
        for widget in app.screen.query(Input):
            widget.cursor_blink = False
        await _settle(pilot)

    return run


def test_replay_dialog(
    snap_compare: Compare, images_svm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("cltui.replay.devices.list_devices", lambda: [dict(d) for d in DEVICES])
    run = _keys(0, *["shift+down"] * 8, "r")
    assert snap_compare(make_app(images_svm), terminal_size=SMALL, run_before=run)


def test_replay_dialog_with_hosts(
    snap_compare: Compare, images_svm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The devices of an inventory's hosts after the local ones (a fixed discovery: one host
    with two devices, one unreachable)."""
    from cltui.fleet.discover import HostDevices
    from cltui.fleet.inventory import Host

    found = [
        HostDevices(Host("gpu-box", "gpu-box"), "python", "ok", "", (
            {"id": "0:0", "name": "NVIDIA H200", "platform": "NVIDIA CUDA"},
            {"id": "1:0", "name": "pthread-cpu", "platform": "Portable Computing Language"})),
        HostDevices(Host("lab-7", "lab-7"), "python", "unreachable",
                    "ssh: connect to host lab-7 port 22: No route to host"),
    ]  # fmt: skip
    monkeypatch.setattr("cltui.replay.devices.list_devices", lambda: [dict(d) for d in DEVICES])
    monkeypatch.setattr("cltui.fleet.inventory.read_inventory", lambda _path: [])
    monkeypatch.setattr("cltui.fleet.discover.discover_devices", lambda *_a, **_k: found)

    async def run(pilot: Pilot[Any]) -> None:
        await _keys(0, *["shift+down"] * 8, "r")(pilot)
        field = pilot.app.screen.query_one("#replay-hosts", Input)
        field.value = "lab.ini"
        field.focus()
        await pilot.press("ctrl+l")
        await _settle(pilot)
        field.cursor_blink = False
        await _settle(pilot)

    assert snap_compare(make_app(images_svm), terminal_size=LARGE, run_before=run)


def test_export_dialog(
    snap_compare: Compare, images_svm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir("/tmp")  # the default folder is under the working directory

    async def run(pilot: Pilot[Any]) -> None:
        await _keys(3, "e")(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, ExportDialog)
        screen.query_one("#export-folder", Input).value = "/tmp/bundles/images_svm_pocl_3"
        screen.query_one("#export-folder", Input).cursor_blink = False
        await _settle(pilot)

    assert snap_compare(make_app(images_svm), terminal_size=SMALL, run_before=run)


def test_progress(snap_compare: Compare, images_svm: Path) -> None:
    def task(control: TaskControl) -> None:
        control.progress(
            ProgressEvent(3 / 7, "1:0 pthread-skylake-avx512-AMD EPYC: enqueue 3 (volume_sum) 4/7")
        )
        control.cancel.wait(20)  # the app's exit cancels it

    async def run(pilot: Pilot[Any]) -> None:
        app = await _loaded(pilot)
        app.push_screen(ProgressScreen("Replaying 0-8 (chain)", task))
        for _ in range(100):
            await pilot.pause(0.02)
            screen = app.screen
            if isinstance(screen, ProgressScreen) and screen.last_text:
                break
        await pilot.pause(0.1)

    assert snap_compare(make_app(images_svm), terminal_size=SMALL, run_before=run)


def _outcome(tmp: Path) -> ReplayOutcome:
    """A fixed report: PoCL bit-exact; Oclgrind 1 ULP off on enqueue 22, then a crash."""

    def check(label: str, mem: str, args: list[int], status: str, **res: Any) -> dict[str, Any]:
        result = {"status": status, "elements": 8192, "n_diff": 0, "max_abs": None,
                  "max_ulp": None, "first": None, "note": ""}
        result.update(res)
        return {"mem": mem, "args": args, "label": label, "dtype": "<f4", "status": status,
                "output": None, "result": result, "summary": "bit-exact"}

    def timing(ns: int) -> dict[str, Any]:
        return {stage: {"min": v, "median": v, "max": v} for stage, v in (
            ("queued_to_submit", 80.0), ("submit_to_start", 120000.0),
            ("start_to_end", float(ns)), ("host_enqueue", 250000.0))}

    first = {"index": 0, "where": "[0]", "expected": -0.9271314144134521,
             "actual": -0.9271314740180969}
    steps_pocl = [
        {"enqueue": 22, "kernel": "sin_kernel", "timing": timing(187000), "prechecks": [],
         "checks": [check("arg 0 (buffer 0014)", "m14", [0], "equal"),
                    check("arg 2 (buffer 0004)", "m4", [2], "equal")]},
        {"enqueue": 23, "kernel": "axpb", "timing": timing(33300), "prechecks": [],
         "checks": [check("arg 0 (buffer 0015)", "m15", [0], "equal")]},
    ]
    steps_grind = [
        {"enqueue": 22, "kernel": "sin_kernel", "timing": timing(101000000), "prechecks": [],
         "checks": [check("arg 0 (buffer 0014)", "m14", [0], "different", n_diff=1331,
                          max_abs=5.960464477539063e-08, max_ulp=1.0, first=first),
                    check("arg 2 (buffer 0004)", "m4", [2], "equal")]},
    ]
    report = {
        "plan": {"range": "22-23", "mode": "chain", "steps": 2, "changes": [], "notes": []},
        "repeat": 1,
        "ok": False,
        "cross": [],
        "devices": [
            {"device": DEVICES[1], "status": "ok", "ok": True, "steps": steps_pocl, "notes": []},
            {"device": DEVICES[0], "status": "crash", "ok": False, "steps": steps_grind,
             "failed_enqueue": 23, "notes": [],
             "error": "enqueue 23 crashed the driver (SIGSEGV)"},
        ],
    }
    manifest = {"steps": [{"enqueue": 22, "kernel": "sin_kernel", "checks": [{}, {}]},
                          {"enqueue": 23, "kernel": "axpb", "checks": [{}]}]}
    request = ReplayRequest([DEVICES[1], DEVICES[0]], "chain", Tolerance(), 1, 60.0)
    return ReplayOutcome(report, manifest, request, "22-23", tmp)


def test_results(snap_compare: Compare, pyocl_pocl: Path, tmp_path: Path) -> None:
    async def run(pilot: Pilot[Any]) -> None:
        app = await _loaded(pilot)
        assert app.main.capture is not None
        app.push_screen(ReplayResultsScreen(app.main.capture, _outcome(tmp_path / "out")))
        await _settle(pilot)

    assert snap_compare(make_app(pyocl_pocl), terminal_size=LARGE, run_before=run)


def test_three_way_diff(snap_compare: Compare, pyocl_pocl: Path) -> None:
    folder = pyocl_pocl / "memDumpPostEnqueue"
    (post_file,) = folder.glob("Enqueue_0022_Kernel_*_Arg_0_*")
    (pre_file,) = (pyocl_pocl / "memDumpPreEnqueue").glob("Enqueue_0022_Kernel_*_Arg_0_*")
    post = np.fromfile(post_file, dtype=np.float32)
    replayed = post.copy()
    replayed[[3, 5, 6]] = np.nextafter(replayed[[3, 5, 6]], np.float32(2))  # 1 ULP each

    async def run(pilot: Pilot[Any]) -> None:
        app = await _loaded(pilot)
        assert app.main.capture is not None
        ctype = ctype_for(app.main.capture, 22, 0, "<f4")
        app.push_screen(DiffScreen(
            "enqueue 22 sin_kernel · arg 0 (buffer 0014) · device 0:0",
            "different: 3/8192 differ, max 1 ULP", np.fromfile(pre_file, np.uint8),
            post.view(np.uint8), replayed.view(np.uint8), ctype, 3,
        ))
        await _settle(pilot)
        await pilot.press("right_square_bracket")
        await _settle(pilot)

    assert snap_compare(make_app(pyocl_pocl), terminal_size=(100, 24), run_before=run)


def test_findings(snap_compare: Compare, opencv: Path) -> None:
    source = "CLI_0001_3AAA08E1_source.cl"
    text = (opencv / source).read_text().splitlines()

    def line(n: int, col: int) -> SourceLine:
        return SourceLine("input.cl", n, col, text[n - 1].strip(), source, True)

    report = CheckReport(
        str(opencv), "4", "isolated", "Oclgrind Simulator", [(4, "RGB2HSV")],
        [Finding("out-of-bounds", "Invalid read of size 4 at global memory address 0x2000000008ffd",
                 4, "RGB2HSV", [line(70, 18)], "Global(127,95,0) Local(0,0,0) Group(127,95,0)"),
         Finding("uninitialized", "Controlflow depends on uninitialized value", 4, "RGB2HSV",
                 [line(75, 5), line(76, 5)], "Global(127,95,0)", count=7)],
        status="findings",
    )

    async def run(pilot: Pilot[Any]) -> None:
        app = await _loaded(pilot)
        assert app.main.capture is not None
        app.push_screen(FindingsScreen(app.main.capture, report))
        await _settle(pilot)

    assert snap_compare(make_app(opencv), terminal_size=LARGE, run_before=run)


def test_two_captures_divergence(
    snap_compare: Compare, pyocl_pocl: Path, pyocl_oclgrind: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.test_tui_diverge import cached_diverge

    monkeypatch.setattr("cltui.analysis.diverge.diverge", cached_diverge)

    async def run(pilot: Pilot[Any]) -> None:
        app = await _loaded(pilot)
        for _ in range(1000):
            if app.divergence is not None and app.divergence.ready:
                break
            await pilot.pause(0.02)
        await _settle(pilot)
        app.clear_notifications()
        await pilot.press("d")
        await _settle(pilot)

    app = make_app(pyocl_pocl, pyocl_oclgrind)
    assert snap_compare(app, terminal_size=LARGE, run_before=run)

