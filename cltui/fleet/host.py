"""One host's part of a fleet run: connect, check what the runner needs, send the bundle,
build (C++), list the devices, replay on each device that the filter names, collect the JSON.

Every failure is said in one line and ends only this host, its status one of
``unreachable``, ``authentication``, ``transport`` (the template itself), ``missing-dependency``
(what is missing, in one line), ``connection-lost`` (ssh's own exit 255 after the connection
was made, or a host that stopped answering), ``hang`` (a step made no progress on a live
link), ``build`` (the C++ runner does not build), ``no-device``, ``error``, ``cancelled``;
:func:`cltui.fleet.faults.host_fault` names its fault class.  A device's own end (a crash,
a hang, a lost connection, a plan that cannot run there) is its :class:`DeviceRun`'s
``fault`` and its result's ``status`` (:mod:`cltui.fleet.device_run`).
"""

from __future__ import annotations

import json
import re
import secrets
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

from cltui.errors import CltuiError
from cltui.fleet.cache import BundleFiles, SyncStats, publish, shell_path, sync
from cltui.fleet.device_run import KILL_WAIT, DeviceRun, replay_device
from cltui.fleet.hostvars import device_tolerance
from cltui.fleet.inventory import Host
from cltui.fleet.scratch import SWEEP, mark, start_keeper
from cltui.fleet.transport import CommandResult, Transport, classify_failure
from cltui.progress import CancelToken, ProgressEvent
from cltui.replay.engine import EngineError, match_devices
from cltui.replay.engine.schema import Device, Manifest, ToleranceSpec
from cltui.runners.build import build_shell

__all__ = ["DeviceRun", "HostFailed", "HostOutcome", "HostRunner", "RunSettings"]

# replay.cpp --list-devices: "0:0  NAME  (PLATFORM, DEVICE VERSION)  driver DRIVER VERSION"
_LISTED = re.compile(r"(\d+:\d+)  (.*)  \((.*?), (.*?)\)(?:  driver (.*))?\Z")
_LIST_PY = (
    "import json,sys; sys.path.insert(0, 'lib'); from cltui.replay import engine; "
    "print(json.dumps(engine.list_devices()))"
)


@dataclass(frozen=True)
class RunSettings:
    """What every host runs: the runner (None: the host's, else python), the device filter
    (empty: the host's, else every device), seconds without progress, tolerances."""

    runner: str | None = None
    devices: tuple[str, ...] = ()
    timeout: float = 120.0
    tolerance: ToleranceSpec = field(default_factory=lambda: cast(ToleranceSpec, {}))
    lock_wait: float = 600.0  # seconds to wait for a device another fleet holds (lock.py)
    retry_flaky: int = 0  # runs again of a column that differs (cltui.fleet.flaky)
    # this fleet's run, as its device locks name their holder (cltui.fleet.lock)
    run_id: str = field(default_factory=lambda: secrets.token_hex(8))


@dataclass
class HostOutcome:
    """How one host ended: ``status`` ``ok`` or why not, with a one-line ``reason``."""

    host: Host
    runner: str
    status: str = "ok"
    reason: str = ""
    devices: list[DeviceRun] = field(default_factory=list)
    sync: SyncStats = field(default_factory=SyncStats)
    listed: list[Device] = field(default_factory=list)
    bytes_sent: int = 0
    bytes_received: int = 0
    seconds: float = 0.0


class HostFailed(CltuiError):
    """Ends one host's run (caught: becomes the outcome's status and reason)."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


class HostRunner:
    """Runs a bundle on one host through its transport."""

    def __init__(
        self,
        transport: Transport,
        bundle: BundleFiles,
        plan: Manifest,
        settings: RunSettings,
        *,
        cancel: CancelToken,
        progress: Callable[[str, ProgressEvent], None],
    ) -> None:
        self.t, self.bundle, self.plan, self.s = transport, bundle, plan, settings
        self.host = transport.host
        self.cancel, self._progress = cancel, progress
        self.runner = settings.runner or self.host.runner or "python"
        self.w = shell_path(self.host.workdir)
        self.b = f'"$W/bundles/{bundle.id}"'
        self.owner = ""  # PID@HOST of the run's keeper there (cltui.fleet.scratch)

    def say(self, fraction: float | None, what: str) -> None:
        self._progress(self.host.name, ProgressEvent(fraction, what))

    def run(self) -> HostOutcome:
        out = HostOutcome(self.host, self.runner)
        try:
            self._run(out)
        except HostFailed as exc:
            out.status, out.reason = exc.status, exc.reason
        out.bytes_sent, out.bytes_received = self.t.bytes_sent, self.t.bytes_received
        self.say(1.0, "done" if out.status == "ok" else f"{out.status}: {out.reason}")
        return out

    def discover(self) -> HostOutcome:
        """Only the host's devices (``listed``), by the path a run takes to them: connect,
        check, send the bundle (the device lister's), build (C++), list."""
        out = HostOutcome(self.host, self.runner)
        try:
            self._prepare(out)
            out.listed = self._list_devices()
            if not out.listed:
                raise HostFailed("no-device", "no OpenCL device found (is an ICD installed?)")
        except HostFailed as exc:
            out.status, out.reason = exc.status, exc.reason
        out.bytes_sent, out.bytes_received = self.t.bytes_sent, self.t.bytes_received
        return out

    def _prepare(self, out: HostOutcome) -> None:
        """Connect, check what the runner needs, send the bundle, build the C++ runner."""
        self.say(0.0, "connecting")
        self._check(self.t.connect(self.cancel), "connect", connecting=True)
        self.owner = start_keeper(self.t, min(self.s.timeout, 30.0), self.cancel)
        self.send(out, has_bundle=self._probe())

    def send(self, out: HostOutcome, *, has_bundle: bool = False) -> None:
        """Send the bundle (only what the host lacks) and build the C++ runner: a run's
        part after connecting; alone, a bundle more on a transport that an earlier runner
        of the same run connected (its ``owner`` given: :mod:`cltui.fleet.explain`).
        :class:`HostFailed` when it does not work."""
        self.say(0.1, "sending the bundle" if not has_bundle else "the bundle is cached")
        out.sync, failed = sync(self.t, self.bundle, self.host.workdir, has_bundle=has_bundle,
                                timeout=self.s.timeout, cancel=self.cancel, owner=self.owner)
        if failed is not None:
            self._check(failed, "sending the bundle")
        if self.runner == "cpp":
            self._build()

    def _run(self, out: HostOutcome) -> None:
        self._prepare(out)
        out.listed = self._list_devices()
        chosen = self._choose(out.listed)
        for i, dev in enumerate(chosen):
            start = time.monotonic()
            out.devices.append(replay_device(self, dev, i, len(chosen)))
            out.devices[-1].seconds = time.monotonic() - start

    # ---- steps ---------------------------------------------------------------------

    def script(self, *lines: str) -> str:
        env = [f"export {k}={shlex.quote(v)}" for k, v in self.host.env]
        return "\n".join([f"W={self.w}", *env, *lines])

    def _check(self, res: CommandResult, doing: str, *, connecting: bool = False) -> None:
        """Nothing when ``res`` worked, else the host's end, named (cltui.fleet.faults)."""
        if res.cancelled:
            raise HostFailed("cancelled", f"cancelled while {doing}")
        if res.timed_out and connecting:
            raise HostFailed("unreachable", f"no answer within {self.t.connect_timeout:g} s "
                             "while connecting")
        if res.timed_out:
            if not self._link_answers():
                raise HostFailed("connection-lost", f"connection lost while {doing} (the "
                                 f"host stopped answering within {self.s.timeout:g} s)")
            raise HostFailed("hang", f"no progress within {self.s.timeout:g} s while {doing}")
        if res.rc == 0:
            return
        if connecting or (self.t.is_ssh and res.rc == 255):
            status, why = classify_failure(res.err)
            if connecting or status == "authentication":
                raise HostFailed(status, why)
            self.t.dead = True  # ssh's own exit after the connection was made: it ended
            raise HostFailed("connection-lost", f"connection lost while {doing}: {why}")
        why = res.last_err() or "no output"
        raise HostFailed("error", f"{doing} failed (exit {res.rc}): {why}")

    def _link_answers(self) -> bool:
        """Whether the host still answers a trivial command within a few seconds (a
        command that timed out on a live link hung; on a dead one, the link is lost)."""
        if self.t.dead:
            return False
        res = self.t.run("true", timeout=KILL_WAIT)
        if res.rc != 0 or res.timed_out:
            self.t.dead = True
            return False
        return True

    def _probe(self) -> bool:
        """What the runner needs, all missing things in one line; whether the bundle is
        there whole already."""
        py = shlex.quote(self.host.python)
        if self.runner == "python":
            need = [
                f"if command -v {py} >/dev/null 2>&1; then",
                f"  M=$({py} -c 'import importlib.util as u; print(\" \".join(m for m in "
                "(\"numpy\", \"pyopencl\") if u.find_spec(m) is None))' 2>/dev/null) || M=numpy",
                '  for m in $M; do echo "missing $m"; done',
                f'else echo "missing {self.host.python}"; fi',
            ]
            needs = f"python runner: {self.host.python}"
        else:
            need = [
                'command -v cmake >/dev/null 2>&1 || echo "missing cmake"',
                "CXX=$(command -v c++ || command -v g++ || command -v clang++) "
                '|| echo "missing a C++ compiler"',
                '[ -z "$CXX" ] || echo "#include <CL/cl.h>" | "$CXX" -E -x c++ - >/dev/null 2>&1 '
                '|| echo "missing the OpenCL headers (CL/cl.h)"',
            ]
            needs = "C++ runner"
        tools = [f'command -v {t} >/dev/null 2>&1 || echo "missing {t}"'
                 for t in ("tar", "gzip", "mktemp")]
        cached = f"[ -f {self.b}/.complete ] && touch {self.b} && echo cached"  # touch: LRU
        script = self.script(*need, *tools, SWEEP, cached, "true")  # SWEEP: killed runs
        res = self.t.run(script, timeout=self.s.timeout, cancel=self.cancel)
        self._check(res, "checking the host")
        lines = res.out.decode("utf-8", "replace").splitlines()
        missing = [ln[len("missing ") :] for ln in lines if ln.startswith("missing ")]
        if missing:
            raise HostFailed("missing-dependency", ", ".join(missing) + f" ({needs})")
        return "cached" in lines

    def _build(self) -> None:
        """The C++ runner, built once per content of its sources (``builds/<key>``)."""
        key = self.bundle.cpp_key
        if key is None:
            raise HostFailed("error", "the bundle has no replay.cpp (export it with C++)")
        self.say(0.15, "building the C++ runner")
        build = build_shell('"$S"', '"$S/build"', '"$N"', quote=False)  # the one recipe
        script = self.script(
            f'K="$W/builds/{key}"; [ -x "$K/build/replay" ] && exit 0',
            'mkdir -p "$W/builds" && S=$(mktemp -d "$W/builds/.tmp.XXXXXX") || exit 3',
            mark("S", self.owner),
            f'cp {self.b}/replay.cpp {self.b}/CMakeLists.txt "$S"/ && cp -R {self.b}/cpp "$S"/',
            'N=$(nproc 2>/dev/null || echo 2)',
            f"{{ {build}; }} >&2 || {{ rm -rf \"$S\"; exit 4; }}",
            publish("S", "K"), 'rm -rf "$S"; [ -x "$K/build/replay" ]',
        )
        res = self.t.run(script, timeout=self.s.timeout, cancel=self.cancel)
        if res.rc == 4:
            raise HostFailed("build", f"the C++ runner does not build: {res.last_err()}")
        self._check(res, "building the C++ runner")

    def runner_cmd(self) -> str:
        if self.runner == "cpp":
            return f'"$W/builds/{self.bundle.cpp_key}/build/replay" --bundle {self.b}'
        return f"{shlex.quote(self.host.python)} replay.py"

    def _list_devices(self) -> list[Device]:
        if self.runner == "cpp":
            cmd = f"{self.runner_cmd()} --list-devices"
        else:
            cmd = f"{shlex.quote(self.host.python)} -c {shlex.quote(_LIST_PY)}"
        res = self.t.run(self.script(f"cd {self.b} || exit 3", cmd),
                         timeout=self.s.timeout, cancel=self.cancel)
        self._check(res, "listing the devices")
        text = res.out.decode("utf-8", "replace")
        if self.runner == "python":
            try:
                return cast(list[Device], json.loads(text))
            except ValueError:
                raise HostFailed("error", "the device list is not JSON") from None
        return [_listed(m) for ln in text.splitlines() if (m := _LISTED.match(ln.strip()))]

    def _choose(self, listed: list[Device]) -> list[Device]:
        specs = self.s.devices or self.host.devices
        if not listed:
            raise HostFailed("no-device", "no OpenCL device found (is an ICD installed?)")
        if not specs:
            return listed
        try:
            return match_devices(listed, list(specs))
        except EngineError as exc:
            raise HostFailed("no-device", str(exc)) from None

    # ---- one device (cltui.fleet.device_run) ------------------------------------------

    def tol_args(self, dev: Device) -> str:
        """The tolerance options of ``dev``'s replay: the command line's, then the host's,
        then its device pattern's (cltui.fleet.hostvars)."""
        tol = device_tolerance(self.s.tolerance, self.host.tolerance,
                               self.host.device_tolerances, dev)
        return " ".join(f"--{k} {shlex.quote(str(v))}" for k, v in tol.items())

    def replay_again(self, dev: Device) -> DeviceRun:
        """The range once more on ``dev`` (--retry-flaky)."""
        start = time.monotonic()
        run = replay_device(self, dev, 0, 1)
        run.seconds = time.monotonic() - start
        return run

def _listed(m: re.Match[str]) -> Device:
    dev = {"id": m.group(1), "name": m.group(2), "platform": m.group(3), "version": m.group(4)}
    if m.group(5):
        dev["driver"] = m.group(5)
    return cast(Device, dev)


def host_devices_text(devs: Sequence[Device]) -> str:
    return ", ".join(f"{d['id']} {d['name']}" for d in devs)
