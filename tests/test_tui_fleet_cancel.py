"""The app's fleet Cancel keeps what finished: one host done, another hung at enqueue 3 (a
fault planted in its runner, as in tests/test_fleet_faults.py); Cancel in the progress
dialog opens the fleet matrix with the finished host's column and the steps the hung one
finished, its column ``cancelled`` at the enqueue it was running; nothing is left running.

Two machines (each host its own TMPDIR, where a fleet's device locks live), and one machine
listed twice (one TMPDIR: the two columns share the device's lock, cltui/fleet/lock.py), in
either order: the done host first (the hung one runs after it), or the hung one first (the
done host then waits for the lock until Cancel: its column says so).  The hung column's
timeout is long, so the run can only end by Cancel."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, SelectionList

from cltui.fleet.device_run import WAITING
from cltui.progress import ProgressEvent
from cltui.tui.app import make_app
from cltui.tui.screens.fleet_results import FleetResultsScreen
from cltui.tui.screens.replay_dialog import ReplayDialog
from cltui.tui.screens.replay_progress import TaskControl
from tests.fleet_setup import list_hosts, one_vendor, range_dialog
from tests.test_fleet_faults import AT, _planted
from tests.test_tui_replay import SIZE, wait_for

pytestmark = [pytest.mark.device, pytest.mark.child, pytest.mark.slow]

# a runner's python that lists the devices of a run (not of the dialog's discovery, made
# before HOLD exists) only once WAIT_GLOB names a file with something in it: the order of
# the two columns at the device's lock (bounded: a hang bound, not a timing)
_GATE = """#!{py}
import glob, os, sys, time
if sys.argv[1:2] == ["-c"] and os.path.exists({hold!r}):
    end = time.monotonic() + 300
    while time.monotonic() < end and not any(
            os.path.getsize(p) for p in glob.glob({wait!r})):
        time.sleep(0.1)
os.execv({real!r}, [{real!r}, *sys.argv[1:]])
"""


def _gate(root: Path, name: str, real: str, wait: str) -> Path:
    p = root / f"gate-{name}"
    p.write_text(_GATE.format(py=sys.executable, hold=str(root / "hold"), wait=wait, real=real))
    p.chmod(0o755)
    return p


@pytest.mark.parametrize("machines", ["two", "one-done-first", "one-stuck-first"])
def test_cancel_in_the_app_returns_what_finished(
    images_svm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, machines: str
) -> None:
    icd = one_vendor(tmp_path, monkeypatch, "pocl")
    said: list[str] = []  # every progress line of the fleet (the dialog shows the last)
    keep = TaskControl.progress

    def progress(self: TaskControl, event: ProgressEvent) -> None:
        said.append(event.what)
        keep(self, event)

    monkeypatch.setattr(TaskControl, "progress", progress)
    py, mark, sleep = _planted(tmp_path, "app", "hang")
    done_py, stuck_py = sys.executable, str(py)
    if machines == "one-done-first":  # the hung host starts once the done one finished
        stuck_py = str(_gate(tmp_path, "stuck", stuck_py, str(tmp_path / "w1/out.*/.result.json")))
    elif machines == "one-stuck-first":  # the done host starts once the hung one hangs
        done_py = str(_gate(tmp_path, "done", done_py, str(mark)))
    tmp = {"done": tmp_path / "t1", "stuck": tmp_path / ("t1" if machines != "two" else "t2")}
    for t in tmp.values():
        t.mkdir(exist_ok=True)
    common = "cltui_transport='sh -c {cmd}'"
    inv = tmp_path / "lab.ini"
    inv.write_text(
        f"done {common} cltui_env='OCL_ICD_VENDORS={icd} TMPDIR={tmp['done']}' "
        f"cltui_workdir={tmp_path / 'w1'} ansible_python_interpreter={done_py}\n"
        f"stuck {common} cltui_env='OCL_ICD_VENDORS={icd} TMPDIR={tmp['stuck']}' "
        f"cltui_workdir={tmp_path / 'w2'} ansible_python_interpreter={stuck_py}\n"
    )

    def finished() -> bool:  # the done host's runner wrote its result
        return any(p.stat().st_size for p in (tmp_path / "w1").glob("out.*/.result.json"))

    async def run() -> dict[str, Any]:
        async with make_app(images_svm).run_test(size=SIZE) as pilot:
            dialog = await range_dialog(pilot)
            dialog.query_one("#replay-timeout", Input).value = "3600"  # never on its own
            await list_hosts(pilot, dialog, inv)
            picked = dialog.query_one("#replay-devices", SelectionList).selected
            assert sorted(picked) == ["@done/0:0", "@stuck/0:0"], picked
            (tmp_path / "hold").touch()  # the gates hold the run's listing from now on
            dialog.action_accept()
            await wait_for(pilot, lambda: mark.is_file() and not isinstance(
                pilot.app.screen, ReplayDialog), 300)
            if machines == "one-stuck-first":  # the done host waits for the device's lock
                await wait_for(pilot, lambda: any(
                    w.startswith("done: ") and "waiting: another column of this fleet" in w
                    for w in said), 120)  # its own fleet holds the lock, and it says so
            else:  # the other host finishes meanwhile (it has no fault): its result
                await wait_for(pilot, finished, 120)
            await pilot.pause(1)
            await pilot.press("escape")  # Cancel
            await wait_for(pilot, lambda: isinstance(pilot.app.screen, FleetResultsScreen), 60)
            return dict(pilot.app.screen.report)  # type: ignore[attr-defined]

    rep = asyncio.run(run())
    cols = {c["host"]: c for c in rep["columns"]}
    assert cols["stuck"]["fault"] == "cancelled", cols["stuck"]
    assert cols["stuck"]["failed_enqueue"] == AT
    assert cols["stuck"]["verdict"]["counts"]["replayed"] == AT
    if machines == "one-stuck-first":
        assert cols["done"]["fault"] == "cancelled", cols["done"]
        assert cols["done"]["error"] == f"cancelled {WAITING}", cols["done"]
        assert cols["done"]["verdict"]["counts"]["replayed"] == 0
    else:
        assert cols["done"]["verdict"]["status"] == "pass", cols["done"]
    left = subprocess.run(["pgrep", "-f", f"sleep {sleep}|{tmp_path}"], capture_output=True,
                          text=True)
    assert left.stdout.strip() == "", f"left running: {left.stdout}"
    scratch = [p for w in ("w1", "w2") for p in (tmp_path / w).glob("*")
               if p.name.startswith(("out.", "incoming."))]
    assert scratch == [], f"scratch folders left: {scratch}"
