"""Pilot test of the replay dialog's feasibility marks on the real devices: a copy of
images_svm_pocl whose enqueue 6 is launched with a local size of 2048 (over Oclgrind's
1024): Oclgrind's row is marked, the line under the list says why for the highlighted
device; PoCL's row is not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Label, SelectionList

from cltui.tui.app import make_app
from cltui.tui.screens.replay_dialog import CANNOT_MARK
from cltui.tui.screens.replay_request import feasibility_line
from tests.test_feasible_device import big_local  # noqa: F401  (a fixture)
from tests.test_tui_replay import (
    SIZE,
    aio,
    loaded,
    open_dialog,
    results_screen,
    select,
    table_rows,
    wait_for,
)


@pytest.mark.child
@aio
async def test_a_device_that_cannot_run_the_range_is_marked_with_the_reason(
    big_local: Path,  # noqa: F811
) -> None:
    async with make_app(big_local).run_test(size=SIZE) as pilot:
        main = await loaded(pilot)
        await select(pilot, main, 6, 8)
        dialog = await open_dialog(pilot)
        why = dialog.query_one("#replay-feasible", Label)
        lst = dialog.query_one("#replay-devices", SelectionList)
        await wait_for(pilot, lambda: dialog.feasible is not None, 120)
        assert dialog.feasible is not None
        prompts = {d["name"]: str(lst.get_option_at_index(i).prompt)
                   for i, d in enumerate(dialog.devices)}  # fmt: skip
        grind = [n for n in prompts if "Oclgrind" in n]
        if not grind:
            pytest.skip("no Oclgrind device")
        assert CANNOT_MARK.strip() in prompts[grind[0]]
        assert all(CANNOT_MARK.strip() not in p for n, p in prompts.items() if "pthread" in n)
        row = next(i for i, d in enumerate(dialog.devices) if "Oclgrind" in d["name"])
        lst.highlighted = row
        await pilot.pause()
        text = " ".join(str(why.render()).split())
        assert "enqueue 6 (svm_scale) cannot run: local size 2048" in text
        other = next((i for i, d in enumerate(dialog.devices) if "pthread" in d["name"]), None)
        if other is not None:
            lst.highlighted = other
            await pilot.pause()
            assert "every kernel enqueue of the range can run here" in str(why.render())
        # the dialog stays usable: a replay on Oclgrind shows the enqueue as "cannot run"
        dialog.select_devices([dialog.devices[row]["id"]])
        await pilot.press("ctrl+r")
        screen = await results_screen(pilot)
        rows = table_rows(screen)
        cannot = [r for r in rows if r[4] == "cannot run"]
        assert cannot and all(r[0] == "6" for r in cannot)
        assert cannot[0][8].startswith("cannot run: local size 2048")


@pytest.mark.child
@aio
async def test_the_replay_runs_the_plan_the_pre_flight_built(
    pyocl_pocl: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One plan per replay: the dialog's pre-flight builds it, the replay runs it; the
    tolerance typed after it was built still applies (it goes with the job)."""
    import cltui.replay.plan as plans

    built: list[str] = []
    real = plans.build_plan

    def counted(cap: Any, rng: Any, mode: str = "chain", *args: Any, **kw: Any) -> Any:
        built.append(mode)
        return real(cap, rng, mode, *args, **kw)

    monkeypatch.setattr(plans, "build_plan", counted)
    async with make_app(pyocl_pocl, remember=False).run_test(size=SIZE) as pilot:
        main = await loaded(pilot)
        await select(pilot, main, 22, 22)
        dialog = await open_dialog(pilot)
        grind = [d["id"] for d in dialog.devices if "Oclgrind" in d["name"]]
        if not grind:
            pytest.skip("no Oclgrind device")
        await wait_for(pilot, lambda: dialog.plan is not None, 60)
        dialog.select_devices(grind)
        dialog.query_one("#replay-ulp", Input).value = "1"  # Oclgrind is 1 ULP off there
        dialog.action_accept()
        screen = await results_screen(pilot)
        statuses = {r[2].split(" (")[0]: r[4] for r in table_rows(screen)}
    assert statuses == {"arg 0": "within", "arg 2": "equal"}
    assert built == ["chain"]


def test_feasibility_line_before_the_check_and_on_error() -> None:
    assert feasibility_line(None).startswith("checking")
    dev = {"id": "0:0", "name": "X", "platform": "P", "version": "1"}
    err = {"device": dev, "status": "error", "error": "boom", "steps": 2, "runnable": 0,
           "cannot_run": []}  # fmt: skip
    assert feasibility_line(err) == "0:0 X: not checked: boom"  # type: ignore[arg-type]
