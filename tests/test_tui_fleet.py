"""Pilot tests of the replay dialog's *hosts* field: the devices of an inventory's hosts are
listed beside the local ones (over the fleet's transport: a plain local shell template, real
sshd hosts), a host that does not answer is a disabled row with its reason, and the range runs
on exactly the ticked remote devices (``cltui fleet``'s job); the matrix screen shows rows x
host:device, the verdict first, each column's first divergence."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import DataTable, Input, SelectionList, Static

from cltui.tui.app import make_app
from cltui.tui.screens.fleet_results import FleetResultsScreen
from cltui.tui.screens.replay_dialog import ReplayDialog
from tests.fleet_setup import list_hosts, one_vendor, range_dialog
from tests.sshd_hosts import HostSpec, SshHosts
from tests.test_tui_replay import SIZE, wait_for

pytestmark = [pytest.mark.device, pytest.mark.child]


def test_the_replay_dialog_runs_the_range_on_an_inventorys_hosts(
    images_svm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    icd = one_vendor(tmp_path, monkeypatch, "pocl")
    inv = tmp_path / "lab.ini"
    inv.write_text(
        f"here cltui_transport='sh -c {{cmd}}' cltui_workdir={tmp_path / 'work'} "
        f"cltui_env='OCL_ICD_VENDORS={icd} TMPDIR={tmp_path}' "  # its locks: not in /tmp
        f"ansible_python_interpreter={sys.executable}\n"
        "gone ansible_host=127.0.0.1 ansible_port=1 ansible_ssh_common_args='-F /dev/null'\n"
    )

    async def run() -> None:
        async with make_app(images_svm).run_test(size=SIZE) as pilot:
            dialog = await range_dialog(pilot)
            await list_hosts(pilot, dialog, inv)  # not listed yet: lists it, starts nothing
            picked = dialog.query_one("#replay-devices", SelectionList).selected
            assert picked == ["@here/0:0"], picked  # the remote ones ticked, the local not
            dialog.action_accept()
            await wait_for(pilot, lambda: isinstance(pilot.app.screen, FleetResultsScreen)
                           or bool(getattr(pilot.app.screen, "error", None)), 180)
            await pilot.pause()
            res = pilot.app.screen
            assert isinstance(res, FleetResultsScreen), getattr(res, "error", None)
            await wait_for(pilot, lambda: res.query_one(DataTable).row_count > 0, 10)
            rep = res.report
            assert [c["id"] for c in rep["columns"]] == ["here:0:0"]
            assert {h["name"]: h["status"] for h in rep["hosts"]} == {"here": "ok"}
            assert rep["verdict"]["status"] == "pass"  # only the ticked host runs
            table = res.query_one(DataTable)
            assert table.row_count == len(rep["rows"]) > 0 and len(table.columns) == 3
            assert all(str(table.get_row_at(i)[2]) == "equal" for i in range(table.row_count))
            summary = str(res.query_one("#results-summary", Static).render())
            assert "1 devices on 1 of 1 hosts" in summary, summary
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(pilot.app.screen, FleetResultsScreen))

    asyncio.run(run())


def _prompts(dialog: ReplayDialog) -> list[tuple[str, str, bool]]:
    lst = dialog.query_one("#replay-devices", SelectionList)
    return [(str(o.value), str(o.prompt), o.disabled)
            for o in (lst.get_option_at_index(i) for i in range(lst.option_count))]


def test_the_dialog_lists_ssh_hosts_devices_and_runs_one_ticked_remote_device(
    images_svm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    ssh_hosts: Callable[[list[HostSpec]], SshHosts],
) -> None:
    """Real sshd hosts: one with the machine's ICDs (Oclgrind and PoCL), one down.  The
    dialog lists ``both: P:D name (platform)`` rows after the local ones and one disabled
    row for the down host; ticking only PoCL on ``both`` gives a matrix of that one column."""
    if not Path("/etc/OpenCL/vendors/pocl.icd").is_file():
        pytest.skip("PoCL is not installed")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    hosts = ssh_hosts([HostSpec("both"), HostSpec("down", down=True)])
    inv = tmp_path / "farm.ini"
    inv.write_text("[lab]\n" + "".join(
        f"{h} ansible_host=127.0.0.1 ansible_port={hosts[h].port} "
        f"cltui_workdir={tmp_path / 'work' / h}\n" for h in ("both", "down"))
        + f"\n[lab:vars]\nansible_ssh_common_args=\"-F {hosts.config}\"\n"
        f"ansible_python_interpreter={sys.executable}\n")

    async def run() -> None:
        async with make_app(images_svm).run_test(size=SIZE) as pilot:
            dialog = await range_dialog(pilot)
            field = dialog.query_one("#replay-hosts", Input)
            field.value = str(inv)
            field.focus()
            await pilot.press("ctrl+l")
            await wait_for(pilot, lambda: dialog.hosts_for == str(inv)
                           and not dialog.discovering, 120)
            rows = _prompts(dialog)
            local = [r for r in rows if not r[0].startswith("@")]
            assert [r[0] for r in local] == [d["id"] for d in dialog.devices]  # first
            remote = {r[0]: r for r in rows if r[0].startswith("@both/")}
            pocl = [d for d in dialog.remote[0].devices
                    if "Portable" in str(d["platform"])]
            assert dialog.remote[0].status == "ok" and pocl
            for d in dialog.remote[0].devices:
                _value, prompt, disabled = remote[f"@both/{d['id']}"]
                assert prompt == f"both: {d['id']} {d['name']} ({d['platform']})"
                assert not disabled
            (down,) = [r for r in rows if r[0].startswith("@down/")]
            assert down[2] and down[1].startswith("down: ✗ unreachable: ")
            assert "Connection refused" in down[1]
            dialog.select_devices([f"@both/{pocl[0]['id']}"])
            dialog.action_accept()
            await wait_for(pilot, lambda: isinstance(pilot.app.screen, FleetResultsScreen)
                           or bool(getattr(pilot.app.screen, "error", None)), 180)
            await pilot.pause()
            res = pilot.app.screen
            assert isinstance(res, FleetResultsScreen), getattr(res, "error", None)
            rep = res.report
            assert [c["id"] for c in rep["columns"]] == [f"both:{pocl[0]['id']}"]
            assert [h["name"] for h in rep["hosts"]] == ["both"]
            table = res.query_one(DataTable)
            await wait_for(pilot, lambda: table.row_count > 0, 10)
            assert len(table.columns) == 3 and table.row_count == len(rep["rows"])
            notes = str(res.query_one("#results-notes-text", Static).render())
            assert notes.startswith(f"both:{pocl[0]['id']} {pocl[0]['name']}")
            assert rep["verdict"]["status"] == "pass", rep["verdict"]

    asyncio.run(run())


def test_enter_on_a_differing_cell_opens_the_three_way_diff_from_the_kept_output(
    images_svm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Oclgrind (over a local shell template) rounds enqueue 2's sampling 2 ULP apart: the
    results open on that cell, ``enter`` shows the capture's Post against the device's output
    kept from the host, ``?`` names the screen's keys, and closing removes the kept files."""
    from rich.console import Console

    from cltui.tui.screens.diff import DiffScreen
    from cltui.tui.screens.help import HelpScreen, bindings_table
    from cltui.tui.screens.prompt import PromptScreen

    icd = one_vendor(tmp_path, monkeypatch, "oclgrind")
    inv = tmp_path / "lab.ini"
    inv.write_text(
        f"sim cltui_transport='sh -c {{cmd}}' cltui_workdir={tmp_path / 'work'} "
        f"cltui_env='OCL_ICD_VENDORS={icd} TMPDIR={tmp_path}' "  # its locks: not in /tmp
        f"ansible_python_interpreter={sys.executable}\n")

    async def run() -> None:
        async with make_app(images_svm).run_test(size=SIZE) as pilot:
            dialog = await range_dialog(pilot)
            await list_hosts(pilot, dialog, inv)
            dialog.action_accept()
            await wait_for(pilot, lambda: isinstance(pilot.app.screen, FleetResultsScreen)
                           or bool(getattr(pilot.app.screen, "error", None)), 300)
            await pilot.pause()
            res = pilot.app.screen
            assert isinstance(res, FleetResultsScreen), getattr(res, "error", None)
            table = res.query_one(DataTable)
            await wait_for(pilot, lambda: table.row_count > 0, 10)
            kept = Path(str(res.report["artifacts"]))
            assert any(kept.rglob("enqueue-2-*")), sorted(kept.rglob("*"))
            row = res.report["rows"][table.cursor_coordinate.row]
            assert (row["enqueue"], table.cursor_coordinate.column) == (2, 2)
            assert res.report["rows"][table.cursor_coordinate.row]["cells"][0]["status"] \
                == "different"
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(pilot.app.screen, DiffScreen), 10)
            diff = pilot.app.screen
            assert isinstance(diff, DiffScreen)
            assert "device sim:0:0" in diff.title_text
            assert all(d is not None for d in diff.data[1:])  # captured Post, device output
            await pilot.press("escape")
            await wait_for(pilot, lambda: pilot.app.screen is res, 10)
            await pilot.press("question_mark")
            await wait_for(pilot, lambda: isinstance(pilot.app.screen, HelpScreen), 10)
            console = Console(width=120, record=True)
            console.print(bindings_table(res.active_bindings, None))
            text = console.export_text()
            assert "Fleet results" in text and "FleetResultsScreen" not in text
            assert "Next difference" in text and "Save" in text
            await pilot.press("escape")
            await wait_for(pilot, lambda: pilot.app.screen is res, 10)
            saved = tmp_path / "matrix.csv"
            await pilot.press("s")
            await wait_for(pilot, lambda: isinstance(pilot.app.screen, PromptScreen), 10)
            pilot.app.screen.query_one(Input).value = str(saved)
            await pilot.press("enter")
            await wait_for(pilot, saved.is_file, 30)
            await wait_for(pilot, lambda: len(saved.read_text().splitlines()) > 1, 30)
            lines = saved.read_text().splitlines()
            assert lines[0] == "enqueue,argument,sim:0:0" and "2,sample_linear arg 2 (buffer " \
                "0003),DIFF 2ulp" in lines
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(pilot.app.screen, FleetResultsScreen))
            await pilot.pause()
            assert not kept.exists()

    asyncio.run(run())
