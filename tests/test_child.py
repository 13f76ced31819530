"""The one child supervisor (cltui.process.child): a replay child and an Oclgrind check child
both die with a cltui that is killed (SIGKILL: no handler runs) while a kernel spins."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_faults import _alive, _children
from tests.test_replay_runner import _devices, spin_plan

pytestmark = [pytest.mark.device, pytest.mark.child]

ROOT = Path(__file__).resolve().parent.parent


_REPLAY = """
import json, sys
from cltui.replay import runner
plan = json.load(open(sys.argv[1]))
from cltui.replay.devices import select_devices
job = runner.start(plan, select_devices(["pocl"]), save_dir=sys.argv[2], timeout=600,
                   callback=lambda ev: print(json.dumps(ev), flush=True))
job.wait()
"""

_CHECK = """
import json, sys, threading
from pathlib import Path
from cltui.analysis.check import _run_child
job = Path(sys.argv[2]) / "job.json"
job.write_text(json.dumps({"plan": json.load(open(sys.argv[1])), "data_root": sys.argv[3]}))
_run_child(job, Path(sys.argv[2]) / "err.txt", 600, lambda ev: print(json.dumps(ev), flush=True),
           None)
"""


def _kill_cltui_while_spinning(tmp_path: Path, module: str, code: str, *extra: str) -> None:
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(spin_plan(tmp_path)))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    stand_in = subprocess.Popen(
        [sys.executable, "-c", code, str(plan_path), str(tmp_path / "out"), *extra],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert stand_in.stdout is not None
        deadline = time.monotonic() + 120
        for line in stand_in.stdout:  # wait until the spinning kernel runs
            ev = json.loads(line)
            if ev.get("type") == "step" and ev.get("enqueue") == 8:
                break
            assert time.monotonic() < deadline
        else:
            pytest.fail("the spinning kernel never started")
        children = _children(stand_in.pid, module)
        assert children, "no child process"
        time.sleep(0.5)  # the kernel is launched, the child is busy in the driver
        assert all(_alive(c) for c in children)
        stand_in.send_signal(signal.SIGKILL)
        stand_in.wait(timeout=10)
        deadline = time.monotonic() + 10
        while any(_alive(c) for c in children) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [c for c in children if _alive(c)]
        for c in left:
            os.kill(c, signal.SIGKILL)
        assert left == [], "a child outlived the killed cltui"
    finally:
        if stand_in.poll() is None:
            stand_in.kill()


def test_replay_child_dies_with_cltui(tmp_path: Path) -> None:
    _devices("pocl")
    (tmp_path / "out").mkdir()
    _kill_cltui_while_spinning(tmp_path, "cltui.replay.runner", _REPLAY)


def test_oclgrind_check_child_dies_with_cltui(tmp_path: Path) -> None:
    _devices("oclgrind")
    (tmp_path / "out").mkdir()
    _kill_cltui_while_spinning(tmp_path, "cltui.analysis.check", _CHECK, str(tmp_path))
