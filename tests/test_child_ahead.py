"""A child started ahead of its job (cltui.process.child.start_ahead): it lists the devices
while the parent opens the capture, then runs the job it is given; one the parent does not
need ends; one that cannot list is replaced; the CLI parent then imports no pyopencl."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cltui.capture import open_capture
from cltui.capture.ranges import parse_range
from cltui.process.child import start_ahead
from cltui.replay import runner
from cltui.replay.engine import list_devices
from cltui.replay.experiment.job import ExperimentJob, Point
from cltui.replay.experiment.worker import MODULE
from cltui.replay.plan import build_plan

pytestmark = [pytest.mark.device, pytest.mark.child]

ROOT = Path(__file__).resolve().parent.parent


def _plan(cap_dir: Path, rng: str = "23") -> dict[str, object]:
    return dict(build_plan(open_capture(cap_dir), parse_range(rng)).to_manifest())


def _pocl(listed: list[dict[str, object]]) -> dict[str, object]:
    found = [d for d in listed if "pthread" in str(d["name"]) or "Portable" in str(d["platform"])]
    if not found:
        pytest.skip("no PoCL device")
    return found[0]


def test_ahead_replay_child_lists_the_devices_then_runs_its_job(
    pyocl_pocl: Path, tmp_path: Path
) -> None:
    child = start_ahead("cltui.replay.runner", tmp_path / "err.txt")
    assert child is not None
    try:
        listed = child.listed_devices(120)
        # the same listing as this process makes (but PoCL's global memory size, which it
        # derives from the memory free when it starts: another test's load moves it)
        def steady(devs: list[Any]) -> list[dict[str, Any]]:
            return [{k: v for k, v in d.items() if k != "global_mem"} for d in devs]

        assert steady(listed) == steady(list_devices())
        dev = _pocl(listed)
        pid = child.proc.pid
        job = runner.start(_plan(pyocl_pocl), [dev], data_root=pyocl_pocl, timeout=120,
                           save_dir=tmp_path / "out", ahead=child)  # fmt: skip
        pids = set()
        for _ev in job.events():
            if job.child_pid is not None:
                pids.add(job.child_pid)
        assert pids == {pid}  # the job ran in the child started ahead, no other
        report = job.report
        assert report is not None
        assert report["verdict"]["status"] == "pass", report["verdict"]
    finally:
        child.kill()


def test_ahead_experiment_child_runs_the_sweep_points(pyocl_pocl: Path, tmp_path: Path) -> None:
    child = start_ahead(MODULE, tmp_path / "err.txt")
    assert child is not None
    listed = child.listed_devices(120)
    assert listed is not None
    plan = _plan(pyocl_pocl)
    job = ExperimentJob(None, [Point("p1", plan), Point("p2", plan)], [_pocl(listed)], pyocl_pocl,
                        repeat=3, timeout=120, ahead=child)  # fmt: skip
    try:
        points = [ev for ev in job.events() if ev["type"] == "point"]
    finally:
        job.cleanup()
    assert [p["id"] for p in points] == ["p1", "p2"]
    assert all(p["result"]["ok"] for p in points), points
    assert all(len(p["times"][0]) == 2 for p in points)  # 3 runs: 1 validates, 2 timed
    assert child.proc.wait(timeout=30) == 0  # it ended with its job (not killed: it reported)


def test_an_ahead_child_not_given_a_job_ends(tmp_path: Path) -> None:
    child = start_ahead("cltui.replay.runner", tmp_path / "err.txt")
    assert child is not None
    child.listed_devices(120)
    child._close_stdin()  # the parent needed none (bad input, say): end of its input
    assert child.proc.wait(timeout=30) == 0


def test_an_ahead_child_of_a_killed_parent_dies(tmp_path: Path) -> None:
    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from cltui.process.child import start_ahead\n"
        "c = start_ahead('cltui.replay.runner', Path(sys.argv[1]))\n"
        "print(c.proc.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "err.txt")],
                              stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)))  # fmt: skip
    assert parent.stdout is not None
    pid = int(parent.stdout.readline())
    time.sleep(1.0)  # it imports, lists, and waits for a job that never comes
    parent.kill()
    parent.wait(timeout=10)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        with open(f"/proc/{pid}/stat") as f:  # a zombie (reaped by init later) is gone too
            if f.read().split()[2] == "Z":
                return
        time.sleep(0.05)
    os.kill(pid, 9)
    pytest.fail("the child started ahead outlived its killed parent")


def test_a_child_that_cannot_list_is_replaced(pyocl_pocl: Path, tmp_path: Path) -> None:
    """Its listing None at once (it ended): the caller lists the devices itself, and the job
    starts a child the usual way (this one is gone)."""
    dead = start_ahead("cltui.no_such_module", tmp_path / "err.txt")
    assert dead is not None
    assert dead.listed_devices(60) is None
    dev = _pocl(list_devices())
    job = runner.start(_plan(pyocl_pocl), [dev], data_root=pyocl_pocl, timeout=120,
                       save_dir=tmp_path / "out", ahead=dead)  # fmt: skip
    report = job.wait()
    assert report["verdict"]["status"] == "pass", report["verdict"]


@pytest.mark.parametrize("command", [
    ["replay", "{cap}", "23", "-d", "pocl", "--json"],
    ["sweep", "{cap}", "23", "-d", "pocl", "--local", "32,64", "--repeat", "3", "--json"],
    ["try", "{cap}", "23", "-d", "pocl", "--local", "64", "--repeat", "5", "--json"],
])  # fmt: skip
def test_the_cli_parent_lists_no_device_itself(
    command: list[str], pyocl_pocl: Path, tmp_path: Path
) -> None:
    """The child started ahead lists the devices: the command's own process never imports
    pyopencl (nor lists, nor opens a platform), and its report is as usual."""
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('PYOPENCL', 'pyopencl' in sys.modules, file=sys.stderr))\n"
        "from cltui.cli import main\n"
        "main(sys.argv[1:], prog_name='cltui')\n"
    )
    args = [a.format(cap=pyocl_pocl) for a in command]
    env = dict(os.environ, PYTHONPATH=str(ROOT), CLTUI_DATA_DIR=str(tmp_path / "data"))
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=env, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "PYOPENCL False" in proc.stderr, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["verdict"]["status"] == "pass", report["verdict"]
