"""The app's fleet Cancel keeps what finished: one host done, another hung at enqueue 3 (a
fault planted in its runner, as in tests/test_fleet_faults.py); Cancel in the progress
dialog opens the fleet matrix with the finished host's column and the steps the hung one
finished, its column ``cancelled`` at the enqueue it was running; nothing is left running."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from textual.widgets import SelectionList

from cltui.tui.app import make_app
from cltui.tui.screens.fleet_results import FleetResultsScreen
from cltui.tui.screens.replay_dialog import ReplayDialog
from tests.fleet_setup import list_hosts, one_vendor, range_dialog
from tests.test_fleet_faults import AT, _planted
from tests.test_tui_replay import SIZE, wait_for

pytestmark = [pytest.mark.device, pytest.mark.child, pytest.mark.slow]


def test_cancel_in_the_app_returns_what_finished(
    images_svm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    icd = one_vendor(tmp_path, monkeypatch, "pocl")
    py, mark, sleep = _planted(tmp_path, "app", "hang")
    # two machines in one: each host its own TMPDIR (where a fleet's device locks live)
    for t in ("t1", "t2"):
        (tmp_path / t).mkdir()
    common = "cltui_transport='sh -c {cmd}'"
    inv = tmp_path / "lab.ini"
    inv.write_text(
        f"done {common} cltui_env='OCL_ICD_VENDORS={icd} TMPDIR={tmp_path / 't1'}' "
        f"cltui_workdir={tmp_path / 'w1'} ansible_python_interpreter={sys.executable}\n"
        f"stuck {common} cltui_env='OCL_ICD_VENDORS={icd} TMPDIR={tmp_path / 't2'}' "
        f"cltui_workdir={tmp_path / 'w2'} ansible_python_interpreter={py}\n"
    )

    async def run() -> None:
        async with make_app(images_svm).run_test(size=SIZE) as pilot:
            dialog = await range_dialog(pilot)
            await list_hosts(pilot, dialog, inv)
            picked = dialog.query_one("#replay-devices", SelectionList).selected
            assert sorted(picked) == ["@done/0:0", "@stuck/0:0"], picked
            dialog.action_accept()
            await wait_for(pilot, lambda: mark.is_file() and not isinstance(
                pilot.app.screen, ReplayDialog), 180)
            # the other host finishes meanwhile (it has no fault): its runner's result
            await wait_for(pilot, lambda: any(p.stat().st_size for p in
                                              (tmp_path / "w1").glob("out.*/.result.json")), 120)
            await pilot.pause(1)
            await pilot.press("escape")  # Cancel
            await wait_for(pilot, lambda: isinstance(pilot.app.screen, FleetResultsScreen), 60)
            rep = pilot.app.screen.report  # type: ignore[attr-defined]
            cols = {c["host"]: c for c in rep["columns"]}
            assert cols["stuck"]["fault"] == "cancelled", cols["stuck"]
            assert cols["stuck"]["failed_enqueue"] == AT
            assert cols["stuck"]["verdict"]["counts"]["replayed"] == AT
            assert cols["done"]["verdict"]["status"] == "pass", cols["done"]

    asyncio.run(run())
    left = subprocess.run(["pgrep", "-f", f"sleep {sleep}"], capture_output=True, text=True)
    assert left.stdout.strip() == "", "the hung runner was left running"
