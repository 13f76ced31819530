"""Pilot test of the replay dialog's *hosts* field: the range runs on an inventory's hosts
(``cltui fleet``'s job; here a host reached through a plain local shell template, with PoCL
only, and one that is down) and the matrix screen shows rows x host:device, the verdict first,
and the host that did not run."""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path

import pytest
from textual.widgets import DataTable, Input, Static

from cltui.tui.app import make_app
from cltui.tui.screens.fleet_results import FleetResultsScreen
from tests.test_tui_replay import SIZE, loaded, open_dialog, select, wait_for

pytestmark = [pytest.mark.device]


def test_the_replay_dialog_runs_the_range_on_an_inventorys_hosts(
    images_svm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pocl = Path("/etc/OpenCL/vendors/pocl.icd")
    if not pocl.is_file():
        pytest.skip("PoCL is not installed")
    icd = tmp_path / "icd"
    icd.mkdir()
    shutil.copy(pocl, icd)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    inv = tmp_path / "lab.ini"
    inv.write_text(
        f"here cltui_transport='sh -c {{cmd}}' cltui_workdir={tmp_path / 'work'} "
        f"cltui_env='OCL_ICD_VENDORS={icd}' ansible_python_interpreter={sys.executable}\n"
        "gone ansible_host=127.0.0.1 ansible_port=1 ansible_ssh_common_args='-F /dev/null'\n"
    )

    async def run() -> None:
        async with make_app(images_svm).run_test(size=SIZE) as pilot:
            screen = await loaded(pilot)
            await select(pilot, screen, 0, 3)
            dialog = await open_dialog(pilot)
            dialog.query_one("#replay-hosts", Input).value = str(inv)
            dialog.action_accept()
            await wait_for(pilot, lambda: isinstance(pilot.app.screen, FleetResultsScreen)
                           or bool(getattr(pilot.app.screen, "error", None)), 180)
            await pilot.pause()
            res = pilot.app.screen
            assert isinstance(res, FleetResultsScreen), getattr(res, "error", None)
            await wait_for(pilot, lambda: res.query_one(DataTable).row_count > 0, 10)
            rep = res.report
            assert [c["id"] for c in rep["columns"]] == ["here:0:0"]
            assert {h["name"]: h["status"] for h in rep["hosts"]} == {
                "here": "ok", "gone": "unreachable"}
            assert rep["verdict"]["status"] == "incomplete"  # PoCL passes; a host did not run
            table = res.query_one(DataTable)
            assert table.row_count == len(rep["rows"]) > 0 and len(table.columns) == 3
            assert all(str(table.get_row_at(i)[2]) == "equal" for i in range(table.row_count))
            summary = str(res.query_one("#results-summary", Static).render())
            assert summary.startswith("INCOMPLETE: 1 devices on 1 of 2 hosts")
            notes = str(res.query_one("#results-notes-text", Static).render())
            assert "host gone: unreachable" in notes
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(pilot.app.screen, FleetResultsScreen))

    asyncio.run(run())
