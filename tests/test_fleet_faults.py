"""``cltui fleet`` under faults, against real sshd daemons on localhost: a hang, a device
crash, a connection lost mid-run (the host's sshd session killed), a frozen host (its sshd
session stopped with SIGSTOP), ctrl-c and SIGTERM, one machine listed twice.  Each run must
name its fault class, keep the steps that finished with true counts, end within
``--timeout`` + 10 s of the fault (a hang bound, not a timing test), and leave no ssh or
sshd process and no scratch folder behind (here and on the host; a folder a dead link kept
is swept by the next run).

The faults are planted in the runner: a ``sitecustomize`` on the runner's ``PYTHONPATH``
watches its stderr, and when the runner has said ``replay: enqueue N`` (a whole line, before
N runs; the steps before N have been streamed) it writes a marker file and then hangs (``exec
sleep``), crashes (SIGSEGV) or waits a few seconds for the test to cut or freeze the link
(once cltui has said it heard of enqueue N: a line on its way would be lost with the link).
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fleet_setup import PY, REPO, export_bundle, own_sleep_arg, stuck_report
from tests.schemas import validate
from tests.sshd_hosts import HostSpec, SshHosts

pytestmark = [pytest.mark.device, pytest.mark.slow, pytest.mark.child]

RANGE = "0-8"  # enqueues 0 1 2 3 6 7 8 (kernels) and a host write at 4
AT = 3  # the planted fault: 0 1 2 finished, the write at 4 comes after it
SLACK = 10.0  # the fault costs at most --timeout + SLACK seconds

_SITE = """
import os, signal, sys, time
_at, _how, _mark = os.environ["FAULT_AT"], os.environ["FAULT_HOW"], os.environ["FAULT_MARK"]
_key = "replay: enqueue %s (" % _at
class _Err:
    def __init__(self, inner):
        self._inner, self._line = inner, ""
    def write(self, s):  # (print writes the text, then its newline: fire on the whole line)
        n = self._inner.write(s)
        self._line += s
        if "\\n" not in self._line:
            return n
        done, _, self._line = self._line.rpartition("\\n")
        if _key in done:
            self._inner.flush()
            with open(_mark, "w") as f:
                f.write(repr(time.time()))
            if _how == "hang":
                os.execvp("sleep", ["sleep", os.environ["FAULT_SLEEP"]])
            elif _how == "segv":  # (the driver may hold a handler of its own)
                signal.signal(signal.SIGSEGV, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGSEGV)
            else:
                time.sleep(float(_how))
        return n
    def __getattr__(self, name):
        return getattr(self._inner, name)
sys.stderr = _Err(sys.stderr)
"""


def _planted(root: Path, name: str, how: str) -> tuple[Path, Path, str]:
    """A python for ansible_python_interpreter that runs replay.py with the fault planted;
    (the interpreter, its marker file, the sleep's unique argument)."""
    site = root / f"site-{name}"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(_SITE)
    mark = root / f"{name}.fault"
    mark.unlink(missing_ok=True)
    sleep = own_sleep_arg(600 + abs(hash(name)) % 300)  # this worker's own
    p = root / f"python-{name}"
    p.write_text("#!/bin/sh\n"
                 f'[ "$1" = replay.py ] && export PYTHONPATH={site} FAULT_AT={AT} '
                 f"FAULT_HOW={how} FAULT_MARK={mark} FAULT_SLEEP={sleep}\n"
                 f'exec {PY} "$@"\n')
    p.chmod(0o755)
    return p, mark, sleep


@dataclass
class Farm:
    hosts: SshHosts
    root: Path
    env: dict[str, str]
    bundle: Path


@pytest.fixture(scope="module")
def farm(ssh_hosts: Callable[[list[HostSpec]], SshHosts], tmp_path_factory: pytest.TempPathFactory,
         images_svm: Path) -> Farm:
    root = tmp_path_factory.mktemp("faults")
    hosts = ssh_hosts([HostSpec("a"), HostSpec("b"), HostSpec("c")])
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONFAULTHANDLER": "1",  # see stuck_report
           "XDG_CACHE_HOME": str(tmp_path_factory.mktemp("xdg"))}
    bundle = export_bundle(images_svm, RANGE, root / "bundle", env)
    return Farm(hosts, root, env, bundle)


def _inventory(farm: Farm, name: str,
               lines: list[tuple[str, str, dict[str, str]]], work: str = "") -> Path:
    """``[(inventory name, sshd host, extra vars)]`` -> an inventory; one work folder per
    sshd host, under the test's own (``work``, default the inventory's name: a folder one
    test leaves is not another's failure)."""
    hosts, root = farm.hosts, farm.root
    work = work or Path(name).stem
    out = ["[lab]"]
    for inv_name, sshd, extra in lines:
        more = " ".join(f"{k}={json.dumps(v)}" for k, v in extra.items())
        out.append(f"{inv_name} ansible_host=127.0.0.1 ansible_port={hosts[sshd].port} "
                   f"cltui_workdir={root / 'work' / work / sshd} {more}")
    out += ["", "[lab:vars]", f'ansible_ssh_common_args="-F {hosts.config}"',
            f"ansible_python_interpreter={PY}"]
    inv = root / name
    inv.write_text("\n".join(out) + "\n")
    return inv


def _start(farm: Farm, inv: Path, *args: str, stderr: int = subprocess.PIPE
           ) -> subprocess.Popen[str]:
    return subprocess.Popen([PY, "-m", "cltui", "fleet", str(farm.bundle), "--hosts", str(inv),
                             "--device", "pocl", *args], stdout=subprocess.PIPE,
                            stderr=stderr, text=True, env=farm.env)  # fmt: skip


def _start_on_a_terminal(farm: Farm, inv: Path, *args: str
                         ) -> tuple[subprocess.Popen[str], list[str]]:
    """:func:`_start` with its stderr on a terminal, where cltui says each enqueue as it
    hears of it from the host; the lines it said so far (read by a thread)."""
    master, slave = pty.openpty()
    try:
        proc = _start(farm, inv, *args, stderr=slave)
    finally:
        os.close(slave)
    said: list[str] = []

    def read() -> None:
        buf = b""
        with contextlib.suppress(OSError):  # EIO: the terminal's last writer went
            while chunk := os.read(master, 4096):
                *lines, buf = (buf + chunk).split(b"\n")
                said.extend(ln.decode("utf-8", "replace").rstrip("\r") for ln in lines)
        os.close(master)

    threading.Thread(target=read, daemon=True).start()
    return proc, said


def _heard(said: list[str], what: str, proc: subprocess.Popen[str], limit: float = 120,
           host: str = "") -> None:
    """Wait until cltui has said ``what`` (of ``host``: its progress line ``host: ...``):
    the host's line reached it (the runner writing it is not enough, it may still be on its
    way when the test acts); a hang bound."""
    head = f"{host}: " if host else ""
    end = time.monotonic() + limit
    while not any(ln.startswith(head) and what in ln[len(head):] for ln in said):
        assert proc.poll() is None and time.monotonic() < end, (what, said[-20:])
        time.sleep(0.1)


def _wait_mark(mark: Path, proc: subprocess.Popen[str], limit: float = 300) -> float:
    """When the planted fault fired (the time it wrote), waiting for it (a hang bound)."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if mark.is_file() and mark.read_text():
            return float(mark.read_text())
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"the fault was never reached: {proc.communicate()}")


def _signal_sessions(hosts: SshHosts, name: str, sig: int) -> None:
    for pid in hosts[name].sessions():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _freeze_host(hosts: SshHosts, name: str, sig: int) -> None:
    """Stop (or continue) a whole host: its daemon first, so that no connection made while its
    sessions are being stopped escapes (under load a fleet's liveness probe once got a new
    session that answered, and the frozen host read as a hang), then its sessions, twice, for
    one forked while they were listed."""
    daemon = hosts[name].proc
    if daemon is not None and sig == signal.SIGSTOP:
        os.kill(daemon.pid, sig)
    for _ in range(2):
        _signal_sessions(hosts, name, sig)
    if daemon is not None and sig == signal.SIGCONT:
        os.kill(daemon.pid, sig)


def _nothing_left(farm: Farm, inv: Path, *markers: str,
                  scratch: bool = True) -> None:
    """No ssh of the run here, no sshd session and no runner there, no scratch folder in the
    work folders of the run of ``inv`` (``scratch``: a dead link's are swept by the next run
    instead); polled a while, as sshd ends its sessions after the client went."""
    hosts, root = farm.hosts, farm.root / "work" / inv.stem
    end = time.monotonic() + 30
    while True:
        ssh = subprocess.run(["pgrep", "-f", str(hosts.config)], capture_output=True,
                             text=True).stdout.split()
        sessions = [p for h in ("a", "b", "c") for p in hosts[h].sessions()]
        left = [m for m in markers if subprocess.run(["pgrep", "-f", m],
                                                     capture_output=True).returncode == 0]
        folders = [str(p) for p in root.glob("*/*")
                   if p.name.startswith(("out.", "incoming."))] if scratch else []
        folders += [str(p) for p in root.glob("*/builds/.tmp.*")] if scratch else []
        if not (ssh or sessions or left or folders):
            return
        if time.monotonic() > end:
            raise AssertionError(f"left behind: ssh {ssh}, sshd sessions {sessions}, "
                                 f"runners {left}, folders {folders}")
        time.sleep(0.5)


def _finish(proc: subprocess.Popen[str], fault_at: float, timeout: float,
            codes: tuple[int, ...], slack: float = SLACK,
            said: list[str] | None = None) -> tuple[str, str]:
    """The run's output once it ended; it must end within ``timeout`` + ``slack`` s of the
    fault (a hang bound: a run that waits on a dead link many times over misses it)."""
    try:
        out, err = proc.communicate(timeout=timeout + slack + 60)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the run did not end: {stuck_report(proc, said)}") from None
    took = time.time() - fault_at
    err = err or ""  # (None: it went to a terminal)
    assert proc.returncode in codes, (proc.returncode, out[-3000:], err[-3000:])
    assert took < timeout + slack, f"the fault cost {took:.1f} s for --timeout {timeout:g}"
    return out, err


def _column(rep: dict[str, Any], host: str) -> tuple[dict[str, Any], dict[int, str]]:
    validate(rep, "cli.schema.json", "fleet")
    (i, col), = [(i, c) for i, c in enumerate(rep["columns"]) if c["host"] == host]
    return col, {r["enqueue"]: r["cells"][i]["status"] for r in rep["rows"]}


def _kept(col: dict[str, Any], cells: dict[int, str], fault: str) -> None:
    """The steps before the fault are kept and checked, the fault sits at its enqueue, the
    rest did not run, and the counts say so (the host write at 4 came after the fault)."""
    assert col["fault"] == fault, col
    assert col["failed_enqueue"] == AT, col
    assert [cells[e] for e in (0, 1, 2)] == ["equal"] * 3, cells
    assert cells[AT] == fault
    assert [cells[e] for e in (6, 7, 8)] == ["not-reached"] * 3, cells
    counts = col["verdict"]["counts"]
    assert counts["replayed"] == 3 and counts["kernels"] == 7, counts
    assert counts["transfers_replayed"] == 0 and counts["transfers"] == 1, counts
    assert "3/7 kernel enqueues replayed" in col["verdict"]["line"]


def test_a_hang_keeps_the_finished_steps_and_kills_the_runner(
    farm: Farm,
) -> None:
    py, mark, sleep = _planted(farm.root, "hang", "hang")
    inv = _inventory(farm, "hang.ini", [("h", "a", {"ansible_python_interpreter": str(py)})])
    proc = _start(farm, inv, "--json", "--timeout", "8")
    out, _err = _finish(proc, _wait_mark(mark, proc), 8, codes=(1,))
    col, cells = _column(json.loads(out), "h")
    _kept(col, cells, "hang")
    assert col["verdict"]["status"] == "fail"
    _nothing_left(farm, inv, f"sleep {sleep}")


def test_a_device_crash_keeps_the_finished_steps(
    farm: Farm, tmp_path: Path,
) -> None:
    py, mark, _sleep = _planted(farm.root, "segv", "segv")
    inv = _inventory(farm, "segv.ini", [("s", "a", {"ansible_python_interpreter": str(py)})])
    junit = tmp_path / "segv.xml"
    proc = _start(farm, inv, "--json", "--timeout", "30", "--junit", str(junit))
    out, _err = _finish(proc, _wait_mark(mark, proc), 30, codes=(1,))
    col, cells = _column(json.loads(out), "s")
    _kept(col, cells, "device-crash")
    assert "SIGSEGV" in col["error"] and f"enqueue {AT}" in col["error"]
    xml = junit.read_text()
    assert 'type="device-crash"' in xml and "<skipped" in xml
    _nothing_left(farm, inv)


def test_a_connection_lost_mid_run_is_named_and_keeps_the_finished_steps(
    farm: Farm,
) -> None:
    hosts = farm.hosts
    py, mark, _sleep = _planted(farm.root, "cut", "6")
    inv = _inventory(farm, "cut.ini", [("x", "b", {"ansible_python_interpreter": str(py)})])
    keep = farm.root / "cut-artifacts"
    proc, said = _start_on_a_terminal(farm, inv, "--timeout", "60", "--artifacts", str(keep))
    fired = _wait_mark(mark, proc)
    _heard(said, f": enqueue {AT} (", proc)
    _signal_sessions(hosts, "b", signal.SIGKILL)  # the host's end of the connection dies
    _finish(proc, fired, 60, codes=(3,))
    rep = json.loads((keep / "report.json").read_text())
    col, cells = _column(rep, "x")
    _kept(col, cells, "connection-lost")
    assert col["verdict"]["status"] == "incomplete" and rep["verdict"]["status"] == "incomplete"
    assert "connection lost while enqueue 3 ran" in col["error"]
    _nothing_left(farm, inv, scratch=False)
    _swept_by_the_next_run(farm, inv, "b")


def test_a_frozen_host_costs_the_timeout_and_no_more(
    farm: Farm,
) -> None:
    hosts = farm.hosts
    py, mark, _sleep = _planted(farm.root, "frozen", "6")
    inv = _inventory(farm, "frozen.ini", [("f", "c", {"ansible_python_interpreter": str(py)})])
    keep = farm.root / "frozen-artifacts"
    # --timeout under ssh's own 15 s (ServerAlive): cltui's timeout finds the frozen host; a
    # bound that a loaded machine keeps (the timeout, a kill that waits 4 s, the clean-up and
    # the exit took 20.5 s there) and a run that waits on the dead link again (the kill, the
    # clean-up: 3 x --timeout) misses
    proc, said = _start_on_a_terminal(farm, inv, "--timeout", "10", "--artifacts", str(keep))
    fired = _wait_mark(mark, proc)
    _heard(said, f": enqueue {AT} (", proc)
    _freeze_host(hosts, "c", signal.SIGSTOP)  # the host freezes: no answer, no close
    try:
        _finish(proc, fired, 10, codes=(3,), slack=1.5 * SLACK)
    finally:
        _freeze_host(hosts, "c", signal.SIGCONT)
    col, cells = _column(json.loads((keep / "report.json").read_text()), "f")
    _kept(col, cells, "connection-lost")
    assert "the host stopped answering" in col["error"]
    _nothing_left(farm, inv, scratch=False)
    _swept_by_the_next_run(farm, inv, "c")


def _swept_by_the_next_run(farm: Farm, dead: Path, sshd: str) -> None:
    """A dead link's scratch folder (the outputs) stays there, owned by the run's keeper
    there, which ends once sshd notices the link went; the next run (in the work folder of
    the run of ``dead``) sweeps it."""
    owners = [(d / ".cltui-owner").read_text().split("@")[0]
              for d in (farm.root / "work" / dead.stem / sshd).glob("out.*")]
    end = time.monotonic() + 30
    while any(Path(f"/proc/{pid}").exists() for pid in owners):
        assert time.monotonic() < end, f"the keeper outlived the run: {owners}"
        time.sleep(0.2)
    inv = _inventory(farm, f"next-{sshd}.ini", [("n", sshd, {})], work=dead.stem)
    proc = _start(farm, inv, "--json", "--timeout", "60")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, (out[-2000:], err[-2000:])
    _nothing_left(farm, dead)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_prints_what_finished(
    farm: Farm, sig: int,
) -> None:
    py, mark, sleep = _planted(farm.root, f"int{int(sig)}", "hang")
    inv = _inventory(farm, f"int{int(sig)}.ini", [
        ("done", "a", {}), ("stuck", "b", {"ansible_python_interpreter": str(py)})])
    proc, said = _start_on_a_terminal(farm, inv, "--timeout", "300")
    fired = _wait_mark(mark, proc)
    _heard(said, f": enqueue {AT} (", proc, host="stuck")  # cltui knows where it hangs
    _heard(said, "done", proc, host="done")  # the other host finished: it says so
    proc.send_signal(sig)
    out, _err = _finish(proc, max(fired, time.time()), 0, codes=(130,), said=said)
    end = time.monotonic() + 30  # (the terminal's last lines, read by a thread)
    while not any("interrupted" in ln for ln in said):
        assert time.monotonic() < end, said[-10:]
        time.sleep(0.1)
    lines = out.splitlines()
    done = [ln for ln in lines if ln.startswith("done:")]
    stuck = [ln for ln in lines if ln.startswith("stuck:")]
    assert done and "PASS: 7/7 kernel enqueues replayed" in done[0], out
    assert stuck and "3/7 kernel enqueues replayed" in stuck[0], out
    assert f"cancelled while enqueue {AT} ran" in stuck[0], out
    _nothing_left(farm, inv, f"sleep {sleep}")


def test_one_machine_listed_twice_is_two_hosts_and_leaves_nothing(
    farm: Farm,
) -> None:
    inv = _inventory(farm, "twice.ini", [("one", "a", {"cltui_env": "X=1"}),
                                         ("two", "a", {"cltui_env": "X=2"})])
    proc = _start(farm, inv, "--json", "--timeout", "60")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, (out[-2000:], err[-2000:])
    rep = json.loads(out)
    assert [h["status"] for h in rep["hosts"]] == ["ok", "ok"]
    assert all(h["bytes_received"] > 0 for h in rep["hosts"])
    _nothing_left(farm, inv)
