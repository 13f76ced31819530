"""Pilot tests of ``r``: device dialog, progress, results table and the three-way diff.

They replay real ranges of the shared captures on PoCL (bit-exact there) and on Oclgrind
(floating-point differences), and compare what the screens show with the raw dump files.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable

from cltui.replay.engine.compare import Tolerance
from cltui.tui.app import CltuiApp, make_app
from cltui.tui.screens.diff import DiffScreen
from cltui.tui.screens.main import MainScreen
from cltui.tui.screens.replay_dialog import ReplayDialog
from cltui.tui.screens.replay_progress import ProgressScreen, TaskControl, TaskFailed
from cltui.tui.screens.replay_request import parse_arg_tolerances, parse_replay_fields
from cltui.tui.screens.results import ReplayResultsScreen
from cltui.tui.widgets.diff_view import DiffView
from tests.said import Said

SIZE = (140, 36)


def aio(fn: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        asyncio.run(fn(*args, **kwargs))

    return wrapper


async def wait_for(pilot: Pilot[Any], cond: Callable[[], bool], timeout: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        if loop.time() > end:
            raise AssertionError(f"timed out waiting; screen is {pilot.app.screen!r}")
        await pilot.pause(0.05)


async def loaded(pilot: Pilot[Any]) -> MainScreen:
    app = pilot.app
    assert isinstance(app, CltuiApp)
    await wait_for(pilot, lambda: app.main.is_mounted and app.main.capture is not None)
    await pilot.pause()
    return app.main


async def select(pilot: Pilot[Any], screen: MainScreen, first: int, last: int) -> None:
    assert screen.jump_to(first)
    await pilot.pause()
    for _ in range(last - first):
        await pilot.press("shift+down")
    await pilot.pause()
    assert screen.state()["range"] == (first, last) or first == last


async def open_dialog(pilot: Pilot[Any]) -> ReplayDialog:
    await pilot.press("r")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, ReplayDialog))
    dialog = pilot.app.screen
    assert isinstance(dialog, ReplayDialog)
    await wait_for(pilot, lambda: not dialog.listing, 30)
    return dialog


def device_id(dialog: ReplayDialog, name: str) -> str:
    ids = [d["id"] for d in dialog.devices if name in d["name"].lower()]
    if not ids:
        pytest.skip(f"no {name} device")
    return str(ids[0])


async def results_screen(pilot: Pilot[Any]) -> ReplayResultsScreen:
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, ReplayResultsScreen), 90)
    screen = pilot.app.screen
    assert isinstance(screen, ReplayResultsScreen)
    await pilot.pause()
    return screen


def table_rows(screen: ReplayResultsScreen) -> list[list[str]]:
    table: DataTable[Any] = screen.query_one(DataTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


@pytest.mark.child
@aio
async def test_replay_images_svm_on_pocl_all_equal_and_three_way_diff(images_svm: Path) -> None:
    async with make_app(images_svm).run_test(size=SIZE) as pilot:
        main = await loaded(pilot)
        await select(pilot, main, 0, 8)
        dialog = await open_dialog(pilot)
        pocl = device_id(dialog, "pthread")
        # the capture's own device is ticked by default
        assert dialog.request() is not None
        assert [d["id"] for d in dialog.request().devices] == [pocl]  # type: ignore[union-attr]
        await pilot.click("#replay-go")
        results = await results_screen(pilot)
        rows = table_rows(results)
        # 7 kernel enqueues (0,1,2,3,6,7,8), every check bit-exact on the capturing device
        enqueues = sorted({int(r[0]) for r in rows})
        assert enqueues == [0, 1, 2, 3, 6, 7, 8]
        assert rows and all(r[4] == "equal" for r in rows)
        assert all(r[3] == pocl for r in rows)
        assert results.outcome.report["ok"] is True
        assert "PASS" in results.summary().plain
        # timing: a start->end figure on the first row of each step
        assert all(r[9] for r in rows if r[2].startswith("arg 0"))
        # enqueue 0, arg 1: the 32x24 float4 image the kernel writes
        index = next(i for i, r in enumerate(rows) if r[0] == "0" and r[2].startswith("arg 1"))
        results.table.move_cursor(row=index)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, DiffScreen))
        diff = pilot.app.screen
        assert isinstance(diff, DiffScreen)
        await pilot.pause()
        view = diff.query_one(DiffView)
        pattern = "Enqueue_0000_Kernel_downsample_Arg_1_*"
        (post_file,) = (images_svm / "memDumpPostEnqueue").glob(pattern)
        (pre_file,) = (images_svm / "memDumpPreEnqueue").glob(pattern)
        post = np.fromfile(post_file, dtype=np.float32).reshape(-1, 4)
        pre = np.fromfile(pre_file, dtype=np.float32).reshape(-1, 4)
        assert view.row_count == 32 * 24
        assert view.itemsize == 16
        assert view.mismatch_count() == 0
        k = 100
        for which, arr in (("pre", pre), ("post", post), ("replayed", post)):
            raw_bytes = view.element_bytes(which, k)
            assert raw_bytes is not None
            assert np.array_equal(np.frombuffer(raw_bytes, dtype=np.float32), arr[k])
        assert "float4" in view.value_text("post", k) or view.value_text("post", k)
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ReplayResultsScreen))
        save_dir = results.outcome.save_dir
        assert save_dir.is_dir()
        # g: back to the browser, on the enqueue of the row
        results.table.move_cursor(row=next(i for i, r in enumerate(rows) if r[0] == "7"))
        await pilot.press("g")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, MainScreen))
        await pilot.pause()
        assert main.state()["cursor"] == 7
        assert not save_dir.exists()  # the replayed outputs go with the results screen


@pytest.mark.child
@aio
async def test_replay_on_oclgrind_shows_ulp_and_highlights_mismatches(pyocl_pocl: Path) -> None:
    post_file = next((pyocl_pocl / "memDumpPostEnqueue").glob("Enqueue_0022_Kernel_*_Arg_0_*"))
    captured = np.fromfile(post_file, dtype=np.float32)
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        main = await loaded(pilot)
        await select(pilot, main, 22, 22)
        dialog = await open_dialog(pilot)
        grind = device_id(dialog, "oclgrind")
        dialog.select_devices([grind])
        await pilot.pause()
        dialog.action_accept()
        results = await results_screen(pilot)
        rows = table_rows(results)
        (row,) = [r for r in rows if r[2].startswith("arg 0")]
        assert row[4] == "different"
        assert row[7] == "1"  # max 1 ULP
        assert row[5].endswith("/8,192")
        await pilot.press("f")  # next failure
        assert results.current_row() is not None
        assert results.current_row().status == "different"  # type: ignore[union-attr]
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, DiffScreen))
        diff = pilot.app.screen
        assert isinstance(diff, DiffScreen)
        await pilot.pause()
        view = diff.query_one(DiffView)
        replayed = np.frombuffer(bytes(view.replayed), dtype=np.float32)  # type: ignore[arg-type]
        expected_bad = np.flatnonzero(captured.view(np.uint32) != replayed.view(np.uint32))
        n_diff = int(row[5].split("/")[0].replace(",", ""))
        assert view.mismatch_count() == len(expected_bad) == n_diff
        assert view.cursor == int(expected_bad[0])  # opened on the first differing element
        assert view.is_mismatch(int(expected_bad[0]))
        await pilot.press("right_square_bracket")
        await wait_for(pilot, lambda: view.cursor == int(expected_bad[1]), 10)
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: view.cursor == int(expected_bad[0]), 10)
        # again with a 1 ULP tolerance on argument 0 only: within tolerance, arg 2 still equal
        await pilot.press("escape", "escape")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, MainScreen))
        dialog = await open_dialog(pilot)
        dialog.select_devices([grind])
        dialog.query_one("#replay-argtol").value = "0:ulp=1"  # type: ignore[attr-defined]
        dialog.action_accept()
        results = await results_screen(pilot)
        statuses = {r[2].split(" (")[0]: r[4] for r in table_rows(results)}
        assert statuses == {"arg 0": "within", "arg 2": "equal"}
        assert "arg 0: ulp 1" in results.summary().plain


@pytest.mark.child
@aio
async def test_dialog_rejects_bad_fields_and_escape_cancels(images_svm: Path) -> None:
    async with make_app(images_svm).run_test(size=SIZE) as pilot:
        main = await loaded(pilot)
        await select(pilot, main, 0, 0)
        dialog = await open_dialog(pilot)
        dialog.query_one("#replay-ulp").value = "two"  # type: ignore[attr-defined]
        await pilot.click("#replay-go")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ReplayDialog)
        assert "ulp: 'two' is not a whole number" in str(
            dialog.query_one("#replay-error").render()
        )
        dialog.select_devices([])
        dialog.query_one("#replay-ulp").value = "2"  # type: ignore[attr-defined]
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert "Tick at least one device" in str(dialog.query_one("#replay-error").render())
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(pilot.app.screen, MainScreen)


@pytest.mark.child
@aio
async def test_start_asked_for_while_listing_runs_once_the_devices_are_listed(
    pyocl_pocl: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ctrl+r before the device list arrives is not lost: the dialog says it waits, then
    starts on the rule's ticks when the list comes (a slow ICD, a loaded machine)."""
    from cltui.replay import devices as devs

    release = threading.Event()
    real = devs.list_devices

    def slow() -> list[Any]:
        release.wait(60)
        return real()

    monkeypatch.setattr("cltui.replay.devices.list_devices", slow)
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        main = await loaded(pilot)
        await select(pilot, main, 22, 22)
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ReplayDialog))
        dialog = pilot.app.screen
        assert isinstance(dialog, ReplayDialog) and dialog.listing
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert pilot.app.screen is dialog
        said = str(dialog.query_one("#replay-error").render())
        assert "Still listing the devices" in said and "starts" in said
        release.set()
        results = await results_screen(pilot)
        assert dialog.device_choice["rule"] in ("captured", "most-alike")  # PoCL, not Oclgrind
        (ran,) = [d for d in dialog.devices if "pthread" in d["name"]]
        assert ran["name"] in results.summary().plain


def test_parse_arg_tolerances() -> None:
    assert parse_arg_tolerances("") == {}
    assert parse_arg_tolerances("0:ulp=2; 3:atol=1e-6,rtol=0.5") == {
        0: {"ulp": 2}, 3: {"atol": 1e-6, "rtol": 0.5}}
    for bad in ("x:ulp=1", "0:foo=1", "0:ulp=1.5", "0:atol=-1", "0:"):
        with pytest.raises(ValueError, match="per argument"):
            parse_arg_tolerances(bad)


def test_parse_replay_fields() -> None:
    tol, rep, timeout = parse_replay_fields("1e-6", "", "4", "3", "")
    assert tol == Tolerance(1e-6, 0.0, 4) and rep == 3 and timeout == 60.0
    for bad, field in ((("x", "", "", "", ""), "atol"), (("", "-1", "", "", ""), "rtol"),
                       (("", "", "1.5", "", ""), "ulp"), (("", "", "", "0", ""), "repeat"),
                       (("", "", "", "", "0"), "timeout")):
        with pytest.raises(ValueError, match=field):
            parse_replay_fields(*bad)


@pytest.mark.child
@aio
async def test_progress_cancel_runs_hooks_and_failure_is_one_line(images_svm: Path) -> None:
    started = threading.Event()
    hooked = threading.Event()

    def slow(control: TaskControl) -> int:
        control.cancel.on_cancel(hooked.set)
        started.set()
        control.cancel.wait(20)
        return 1

    def broken(control: TaskControl) -> int:
        raise KeyError("boom")

    def refused(control: TaskControl) -> int:
        raise TaskFailed("enqueue 5 (svm_scale) crashed")

    results: list[int | None] = []
    async with make_app(images_svm).run_test(size=SIZE) as pilot:
        await loaded(pilot)
        pilot.app.push_screen(ProgressScreen("slow", slow), results.append)
        await wait_for(pilot, started.is_set, 10)
        await pilot.press("escape")
        await wait_for(pilot, lambda: results == [None], 10)
        assert hooked.is_set()
        for task, text in ((broken, "broken failed: KeyError: 'boom'"),
                           (refused, "enqueue 5 (svm_scale) crashed")):
            screen: ProgressScreen[int] = ProgressScreen("broken", task)
            pilot.app.push_screen(screen, results.append)
            await wait_for(pilot, lambda s=screen: s.error is not None, 10)  # type: ignore[misc]
            assert screen.error == text
            assert isinstance(pilot.app.screen, ProgressScreen)
            await pilot.press("escape")
            await pilot.pause()
        assert results == [None, None, None]


def _fault_plan(tmp: Path, kernel: str) -> Any:
    """A hand-made plan over tests/fixtures/replay/faults.cl whose enqueue 41 crashes or hangs."""
    from cltui.replay.plan import Plan
    from tests.test_replay_runner import _fill, _plan, _step

    args = [{"index": 0, "kind": "buffer", "mem": "m0"}]
    memory: dict[str, Any] = {"m0": {"kind": "buffer", "size": 256}}
    if kernel == "spin":
        args.append({"index": 1, "kind": "buffer", "mem": "m1"})
        memory["m1"] = {"kind": "buffer", "size": 256}
    # spin loops while its flag (m0) is 0
    manifest = _plan(tmp, [_fill(40, 0), _step(41, kernel, args)], memory)
    return Plan(manifest, tmp)


@pytest.mark.child
@pytest.mark.parametrize(("kernel", "status", "text"), [
    ("wild", "crashed", "enqueue 41 (wild) crashed the driver"),
    ("spin", "timed out", "enqueue 41 (spin) did not finish within 6 s"),
])
@aio
async def test_crash_or_hang_is_one_line_and_the_app_lives(
    images_svm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    kernel: str, status: str, text: str,
) -> None:
    monkeypatch.setattr("cltui.replay.plan.build_plan",
                        lambda *a, **k: _fault_plan(tmp_path, kernel))
    async with make_app(images_svm).run_test(size=SIZE) as pilot:
        main = await loaded(pilot)
        await select(pilot, main, 0, 0)
        dialog = await open_dialog(pilot)
        dialog.select_devices([device_id(dialog, "pthread")])
        # 6 s: long enough that a loaded machine never takes a slow build for a hang
        dialog.query_one("#replay-timeout").value = "6"  # type: ignore[attr-defined]
        dialog.action_accept()
        results = await results_screen(pilot)
        rows = table_rows(results)
        failed = [r for r in rows if r[4] == status]
        assert len(failed) == 1 and failed[0][0] == "41"
        assert failed[0][8].startswith(text)
        assert text in results.notes_text().plain
        assert "FAIL" in results.summary().plain
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, MainScreen))
        await pilot.press("down")  # still browsing
        await pilot.pause()
        assert main.state()["cursor"] == 1


@pytest.mark.child
@aio
async def test_cancel_kills_a_hanging_replay(
    images_svm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("cltui.replay.plan.build_plan",
                        lambda *a, **k: _fault_plan(tmp_path, "spin"))
    loop = asyncio.get_running_loop()
    async with make_app(images_svm).run_test(size=SIZE) as pilot:
        main = await loaded(pilot)
        dialog = await open_dialog(pilot)
        dialog.select_devices([device_id(dialog, "pthread")])
        dialog.action_accept()  # the default 60 s timeout: only cancel can end it soon
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ProgressScreen), 10)
        progress = pilot.app.screen
        assert isinstance(progress, ProgressScreen)
        await wait_for(pilot, lambda: "enqueue 41 (spin)" in progress.last_text, 30)
        started = loop.time()
        await pilot.press("escape")
        # the cancelled replay's results: what finished before it (tests/test_replay_cancel.py)
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ReplayResultsScreen), 15)
        assert loop.time() - started < 15
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, MainScreen), 15)
        assert pilot.app.screen is main


@pytest.mark.child
@pytest.mark.parametrize(
    ("pocl_name", "mark", "rule", "why"),
    [
        # the capture's own device
        (
            "pthread-skylake-avx512-AMD EPYC",
            "(captured here)",
            "captured",
            "1:0 pthread-skylake-avx512-AMD EPYC is the device the capture ran on",
        ),
        # PoCL here on another CPU than the capture's
        (
            "pthread-skylake-avx512-Intel(R) Xeon(R) Processor",
            "(similar to captured)",
            "most-alike",
            "the capture ran on pthread-skylake-avx512-AMD EPYC, which is not here; 1:0 "
            "pthread-skylake-avx512-Intel(R) Xeon(R) Processor shares the most leading words "
            "with it (3 words)",
        ),
        # a device named like nothing the capture names: real before the simulator
        (
            "cpu-x86-64-Intel(R) Xeon(R) Processor",
            "(first real device)",
            "real-before-simulator",
            "the capture ran on pthread-skylake-avx512-AMD EPYC, which is not here and no device "
            "is named like it; 1:0 cpu-x86-64-Intel(R) Xeon(R) Processor is the first device "
            "that is not a simulator",
        ),
    ],
)
@aio
async def test_dialog_ticks_the_device_the_rule_chooses_and_says_why(
    images_svm: Path,
    monkeypatch: pytest.MonkeyPatch,
    pocl_name: str,
    mark: str,
    rule: str,
    why: str,
) -> None:
    """Not the first device (Oclgrind): the capture's, else the one named like it, else the
    first real one; a line under the list says which and why (the CLI's and bundles' rule)."""
    from textual.widgets import Label, SelectionList

    devices = [
        {"id": "0:0", "name": "Oclgrind Simulator", "platform": "Oclgrind"},
        {"id": "1:0", "name": pocl_name, "platform": "Portable Computing Language"},
    ]
    monkeypatch.setattr("cltui.replay.devices.list_devices", lambda: [dict(d) for d in devices])
    async with make_app(images_svm).run_test(size=SIZE) as pilot:
        main = await loaded(pilot)
        await select(pilot, main, 0, 8)
        dialog = await open_dialog(pilot)
        request = dialog.request()
        assert request is not None and [d["id"] for d in request.devices] == ["1:0"]
        options = dialog.query_one("#replay-devices", SelectionList)
        prompts = [str(options.get_option_at_index(i).prompt) for i in range(2)]
        assert mark in prompts[1] and "(" not in prompts[0]
        assert dialog.device_choice == {"rule": rule, "why": why}
        shown = str(dialog.query_one("#replay-device-why", Label).render())
        assert " ".join(shown.split()) == f"ticked: {why}"


@pytest.mark.child
@aio
async def test_dialog_without_the_capture_s_device_name_ticks_a_real_device(
    images_svm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A range whose device the capture does not know: PoCL, not Oclgrind listed first."""
    devices = [
        {"id": "0:0", "name": "Oclgrind Simulator", "platform": "Oclgrind"},
        {"id": "1:0", "name": "pthread-x", "platform": "Portable Computing Language"},
    ]
    monkeypatch.setattr("cltui.replay.devices.list_devices", lambda: [dict(d) for d in devices])
    monkeypatch.setattr(ReplayDialog, "_captured_device", lambda self: [])
    async with make_app(images_svm).run_test(size=SIZE) as pilot:
        main = await loaded(pilot)
        await select(pilot, main, 0, 1)
        dialog = await open_dialog(pilot)
        request = dialog.request()
        assert request is not None and [d["id"] for d in request.devices] == ["1:0"]
        assert dialog.device_choice["rule"] == "real-before-simulator"
        assert dialog.device_choice["why"].startswith("the capture does not name its device")


@pytest.mark.child
@aio
async def test_a_range_without_kernels_is_refused_before_the_dialog(pyocl_pocl: Path) -> None:
    """Replay and export of a range with no kernel enqueue (13: a transfer) say so at once, in
    the plan's words, instead of opening a dialog that fails after its start (issue 17)."""
    said = Said()
    async with make_app(pyocl_pocl).run_test(size=SIZE, message_hook=said) as pilot:
        main = await loaded(pilot)
        await select(pilot, main, 13, 13)
        for key in ("r", "e"):
            await pilot.press(key)
            await pilot.pause()
            assert pilot.app.screen is main
        assert any(m.startswith("Replay: no kernel enqueue in range 13") for m in said.texts)
        assert any(m.startswith("Export: no kernel enqueue in range 13") for m in said.texts)
