"""What the fleet tests share: a folder that shows OpenCL one vendor (``OCL_ICD_VENDORS``),
``cltui fleet`` run as a user runs it (a child process, a cache folder of the test module's
own, the exit code checked with what it printed when it is not one expected), the bundle it
is given, and the app's replay dialog listing an inventory's hosts."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from textual.pilot import Pilot

    from cltui.tui.screens.replay_dialog import ReplayDialog

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
VENDORS = Path("/etc/OpenCL/vendors")

CACHE_HOME: dict[str, str] = {}  # XDG_CACHE_HOME of the fleet runs: the module's temp folder


@pytest.fixture(scope="module", autouse=True)
def own_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A module that imports this fixture runs its fleets with a cache of its own."""
    CACHE_HOME["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))


_SLEEPS = itertools.count()


def own_sleep_arg(seconds: int) -> str:
    """The argument of a ``sleep`` that no other test, and no other suite running beside this
    one, gives: ``seconds`` and a fraction of this worker's pid and a count."""
    return f"{seconds}.{os.getpid()}{next(_SLEEPS):04d}"


def own_sleep(seconds: int) -> tuple[str, list[str]]:
    """A ``sleep`` (a planted hung runner) of :func:`own_sleep_arg`: the command, and the
    ``pgrep`` argv that finds it (and only it)."""
    arg = own_sleep_arg(seconds)
    return f"sleep {arg}", ["pgrep", "-f", rf"sleep {re.escape(arg)}$"]


def stuck_report(proc: subprocess.Popen[str], said: list[str] | None = None) -> str:
    """Where a ``cltui fleet`` that did not end is stuck, for the failure's message: its
    signal state (which signals it blocks, ignores, catches), every thread's stack (SIGABRT
    makes its faulthandler print them: started with ``PYTHONFAULTHANDLER=1``), its output and
    the last lines it said on a terminal (``said``).  The process is gone afterwards."""
    status = ""
    try:
        with open(f"/proc/{proc.pid}/status") as f:
            status = " ".join(ln.strip() for ln in f if ln.startswith(("State", "Sig")))
    except OSError as e:
        status = f"(no status: {e})"
    proc.send_signal(signal.SIGABRT)
    try:
        out, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    time.sleep(0.5)  # a terminal's reader takes the last lines
    tail = "\n".join((said or [])[-80:])
    return (f"{status}\nstdout {(out or '')[-3000:]!r}\nstderr:\n{(err or '')[-6000:]}"
            f"\nsaid:\n{tail}")


def icd_folder(root: Path, name: str) -> Path:
    """``root/icd_NAME``: a folder for OCL_ICD_VENDORS holding one vendor file (the test is
    skipped when that vendor is not installed)."""
    src = VENDORS / f"{name}.icd"
    if not src.is_file():
        pytest.skip(f"{src} is not installed")
    d = root / f"icd_{name}"
    d.mkdir(exist_ok=True)
    shutil.copy(src, d / src.name)
    return d


def one_vendor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> Path:
    """:func:`icd_folder` for a test that runs a fleet in its own process (the app, a
    discovery): the cache under ``tmp_path`` too."""
    icd = icd_folder(tmp_path, name)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return icd


def fleet_env() -> dict[str, str]:
    """The environment of a fleet run: this checkout's cltui, the module's cache."""
    return {**os.environ, "PYTHONPATH": str(REPO), **CACHE_HOME}


def run_fleet(env: dict[str, str], *args: str,
              codes: tuple[int, ...]) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """``python -m cltui fleet ARGS`` to its end; its exit code one of ``codes``."""
    proc = subprocess.run([PY, "-m", "cltui", "fleet", *args], capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode in codes, (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc


def fleet(*args: str, codes: tuple[int, ...]) -> subprocess.CompletedProcess[str]:
    """:func:`run_fleet` with :func:`fleet_env`."""
    return run_fleet(fleet_env(), *args, codes=codes)


def export_bundle(capture: Path, rng: str, out: Path, env: dict[str, str] | None = None) -> Path:
    """``cltui export CAPTURE RNG -o OUT`` in a child (the bundle a fleet is given)."""
    subprocess.run([PY, "-m", "cltui", "export", str(capture), rng, "-o", str(out)], check=True,
                   capture_output=True, env=env or {**os.environ, "PYTHONPATH": str(REPO)})
    return out


async def range_dialog(pilot: Pilot[Any]) -> ReplayDialog:
    """The app's replay dialog opened on enqueues 0-3 (the fleet tests of the app)."""
    from tests.test_tui_replay import loaded, open_dialog, select

    screen = await loaded(pilot)
    await select(pilot, screen, 0, 3)
    return await open_dialog(pilot)


async def list_hosts(pilot: Pilot[Any], dialog: ReplayDialog, inventory: Path) -> None:
    """The dialog given an inventory it has not listed: enter lists the hosts' devices and
    starts nothing; back when the listing is done."""
    from textual.widgets import Input

    from cltui.tui.screens.replay_dialog import ReplayDialog
    from tests.test_tui_replay import wait_for

    dialog.query_one("#replay-hosts", Input).value = str(inventory)
    dialog.action_accept()
    assert isinstance(pilot.app.screen, ReplayDialog) and dialog.discovering
    await wait_for(pilot, lambda: not dialog.discovering, 120)
