"""One host's part of a fleet run: connect, check what the runner needs, send the bundle,
build (C++), list the devices, replay on each device that the filter names, collect the JSON.

Every failure is said in one line and ends only this host: ``unreachable``,
``authentication``, ``transport``, ``missing`` (a dependency: what is missing, in one
line), ``build`` (the C++ runner does not build), ``no-device``, ``error``, ``timeout``,
``cancelled``.  A device's own end (a crash, a hang, a plan that cannot run there) is its
device result's ``status``, as for ``cltui replay``.
"""

from __future__ import annotations

import json
import re
import shlex
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from cltui.errors import CltuiError
from cltui.fleet.cache import BundleFiles, SyncStats, shell_path, sync
from cltui.fleet.hostvars import device_tolerance
from cltui.fleet.inventory import Host
from cltui.fleet.lock import BUSY, NOLOCK, RC_BUSY, busy_reason, lock_lines
from cltui.fleet.scratch import SWEEP, mark, start_keeper
from cltui.fleet.transport import WATCHDOG, CommandResult, Transport, classify_failure
from cltui.progress import CancelToken, ProgressEvent
from cltui.replay.engine import EngineError, match_devices, verdict
from cltui.replay.engine.schema import Device, DeviceResult, Manifest, ToleranceSpec
from cltui.runners.build import build_shell

__all__ = ["DeviceRun", "HostOutcome", "HostRunner", "RunSettings"]

_TRACE = re.compile(r"replay: enqueue (\d+) \((\d+)/(\d+)\)")
# replay.cpp --list-devices: "0:0  NAME  (PLATFORM, DEVICE VERSION)  driver DRIVER VERSION"
_LISTED = re.compile(r"(\d+:\d+)  (.*)  \((.*?), (.*?)\)(?:  driver (.*))?\Z")
_CRASH_SIGNALS = {"SIGSEGV", "SIGABRT", "SIGBUS", "SIGFPE", "SIGILL", "SIGTRAP", "SIGSYS"}
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


@dataclass
class DeviceRun:
    """One device's replay on a host: its result (as ``cltui replay``'s), where the outputs
    lie there and their sha256 by file name."""

    device: Device
    result: DeviceResult
    out_dir: str = ""
    sums: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0  # the replay's wall time, as the fleet saw it
    log: str = ""  # the runner's stderr there (its last 256 KiB)
    retries: int = 0  # --retry-flaky: the range run again on the device (cltui.fleet.flaky)
    flaky: list[str] = field(default_factory=list)  # the outputs that changed between runs


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
        out.bytes_sent = self.t.bytes_sent
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
        out.bytes_sent = self.t.bytes_sent
        return out

    def _prepare(self, out: HostOutcome) -> None:
        """Connect, check what the runner needs, send the bundle, build the C++ runner."""
        self.say(0.0, "connecting")
        self._check(self.t.connect(self.cancel), "connect", connecting=True)
        self.owner = start_keeper(self.t, min(self.s.timeout, 30.0))
        has_bundle = self._probe()
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
            out.devices.append(self._replay(dev, i, len(chosen)))
            out.devices[-1].seconds = time.monotonic() - start

    # ---- steps ---------------------------------------------------------------------

    def _script(self, *lines: str) -> str:
        env = [f"export {k}={shlex.quote(v)}" for k, v in self.host.env]
        return "\n".join([f"W={self.w}", *env, *lines])

    def _check(self, res: CommandResult, doing: str, *, connecting: bool = False) -> None:
        if res.cancelled:
            raise HostFailed("cancelled", f"cancelled while {doing}")
        if res.timed_out:
            raise HostFailed("timeout", f"no answer within {self.s.timeout:g} s while {doing}")
        if res.rc == 0:
            return
        if connecting or (self.t.is_ssh and res.rc == 255):
            status, why = classify_failure(res.err)
            if status != "transport" or connecting:
                raise HostFailed(status, why)
        why = res.last_err() or "no output"
        raise HostFailed("error", f"{doing} failed (exit {res.rc}): {why}")

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
        script = self._script(*need, *tools, SWEEP, cached, "true")  # SWEEP: killed runs
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
        script = self._script(
            f'K="$W/builds/{key}"; [ -x "$K/build/replay" ] && exit 0',
            'mkdir -p "$W/builds" && S=$(mktemp -d "$W/builds/.tmp.XXXXXX") || exit 3',
            mark("S", self.owner),
            f'cp {self.b}/replay.cpp {self.b}/CMakeLists.txt "$S"/ && cp -R {self.b}/cpp "$S"/',
            'N=$(nproc 2>/dev/null || echo 2)',
            f"{{ {build}; }} >&2 || {{ rm -rf \"$S\"; exit 4; }}",
            'mv "$S" "$K" 2>/dev/null || rm -rf "$S"; [ -x "$K/build/replay" ]',
        )
        res = self.t.run(script, timeout=self.s.timeout, cancel=self.cancel)
        if res.rc == 4:
            raise HostFailed("build", f"the C++ runner does not build: {res.last_err()}")
        self._check(res, "building the C++ runner")

    def _runner_cmd(self) -> str:
        if self.runner == "cpp":
            return f'"$W/builds/{self.bundle.cpp_key}/build/replay" --bundle {self.b}'
        return f"{shlex.quote(self.host.python)} replay.py"

    def _list_devices(self) -> list[Device]:
        if self.runner == "cpp":
            cmd = f"{self._runner_cmd()} --list-devices"
        else:
            cmd = f"{shlex.quote(self.host.python)} -c {shlex.quote(_LIST_PY)}"
        res = self.t.run(self._script(f"cd {self.b} || exit 3", cmd),
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

    # ---- one device ----------------------------------------------------------------

    def _tol_args(self, dev: Device) -> str:
        tol = device_tolerance(self.s.tolerance, self.host.tolerance,
                               self.host.device_tolerances, dev)
        return " ".join(f"--{k} {shlex.quote(str(v))}" for k, v in tol.items())

    def _replay(self, dev: Device, i: int, n: int) -> DeviceRun:
        tag = f"{dev['id']} {dev['name']}"
        self.say(0.2 + 0.8 * i / max(1, n), f"replaying on {tag}")
        script = self._script(
            'echo "@@pid $$" >&2',
            WATCHDOG,
            f"cd {self.b} || exit 97",
            *lock_lines(dev, self.s.lock_wait),
            'O=$(mktemp -d "$W/out.XXXXXX") || exit 97',
            mark("O", self.owner),
            f"{self._runner_cmd()} --json --trace --device {shlex.quote(dev['id'])} "
            f'--out "$O" {self._tol_args(dev)} > "$O/.result.json"',
            'rc=$?; echo "@@rc $rc"; echo "@@out $O"',
            "if command -v sha256sum >/dev/null 2>&1; then SUM=sha256sum; "
            'else SUM="shasum -a 256"; fi',
            '(cd "$O" && for f in *; do [ -f "$f" ] && $SUM "$f"; done)',
            'echo "@@json"; cat "$O/.result.json"',
        )
        last: list[int] = []
        pid: list[str] = []

        def line(text: str) -> None:
            if text.startswith("@@pid "):
                pid.append(text[6:].strip())
            elif text.startswith(BUSY):
                self.say(None, f"{tag}: waiting: another cltui fleet holds the device "
                         f"({text[len(BUSY):].strip()} s)")
            elif m := _TRACE.match(text):
                last.append(int(m.group(1)))
                frac = (i + int(m.group(2)) / max(1, int(m.group(3)))) / max(1, n)
                self.say(0.2 + 0.8 * frac, f"{tag}: enqueue {m.group(1)} "
                         f"({m.group(2)}/{m.group(3)})")

        res = self.t.run(script, timeout=self.s.timeout, cancel=self.cancel, on_line=line,
                         hold_stdin=True)
        if (res.timed_out or res.cancelled) and pid:
            self._kill(pid[0])
        return self._device_run(dev, res, last[-1] if last else None)

    def replay_again(self, dev: Device) -> DeviceRun:
        """The range once more on ``dev`` (--retry-flaky)."""
        return self._replay(dev, 0, 1)

    def _kill(self, pid: str) -> None:
        if pid.isdigit():
            self.t.run(f"kill -TERM -{pid} 2>/dev/null; sleep 1; kill -KILL -{pid} "
                       "2>/dev/null; true", timeout=15)

    def _device_run(self, dev: Device, res: CommandResult, last: int | None) -> DeviceRun:
        head, _, body = res.out.decode("utf-8", "replace").partition("\n@@json\n")
        rc, out_dir, sums = None, "", {}
        for ln in head.splitlines():
            if ln.startswith("@@rc "):
                rc = int(ln[5:]) if ln[5:].strip().isdigit() else None
            elif ln.startswith("@@out "):
                out_dir = ln[6:].strip()
            elif len(parts := ln.split()) == 2 and len(parts[0]) == 64:
                sums[parts[1]] = parts[0]
        parsed: Any = None
        try:
            parsed = json.loads(body) if body.strip() else None
        except ValueError:
            parsed = None
        if isinstance(parsed, list) and parsed and isinstance(parsed[0], dict):
            result = cast(DeviceResult, parsed[0])
        else:
            result = self._lost(dev, res, rc, last)
        if out_dir:
            self.t.remove_at_close.append(out_dir)
        unlocked = [ln[len(NOLOCK):] for ln in res.err.splitlines() if ln.startswith(NOLOCK)]
        if unlocked:
            result.setdefault("notes", []).append(f"the device was not locked: {unlocked[0]}")
        log = "\n".join(ln for ln in res.err.splitlines() if not ln.startswith("@@"))
        return DeviceRun(dev, result, out_dir, sums, log=log[-(256 << 10):])

    def _lost(self, dev: Device, res: CommandResult, rc: int | None, last: int | None
              ) -> DeviceResult:
        """A device result for a runner that printed none: crashed, killed, hung."""
        where = f" while enqueue {last} ran" if last is not None else ""
        tail = [ln for ln in res.err.splitlines() if not ln.startswith("@@")][-20:]
        if res.timed_out:
            status, err = "hang", f"no progress within {self.s.timeout:g} s{where}"
        elif res.cancelled:
            status, err = "cancelled", "cancelled"
        elif rc is None and res.rc == RC_BUSY:  # the script's own exit, before the runner
            status, err = "error", busy_reason(self.s.lock_wait)
        elif rc is not None and rc > 128 and (name := _signame(rc - 128)):
            status = "crash" if name in _CRASH_SIGNALS else "killed"
            err = (f"the runner died of {name}{where}" if status == "crash"
                   else f"the runner was killed ({name}) from outside{where}")
        else:
            status = "error"
            err = f"the runner exited {rc if rc is not None else res.rc} without a result: " + (
                tail[-1] if tail else "no output")
        result = cast(DeviceResult, {
            "runner": "replay.cpp" if self.runner == "cpp" else "replay.py",
            "device": dev, "device_choice": {"rule": "user", "why": "named by the fleet"},
            "status": status, "ok": False, "error": err, "failed_enqueue": last,
            "repeat": 1, "loop": None, "builds": [], "notes": [], "steps": [],
            "stderr": "\n".join(tail), "partial": status != "error",
        })
        result["verdict"] = verdict(self.plan, result)
        return result


def _signame(n: int) -> str | None:
    try:
        return signal.Signals(n).name
    except ValueError:
        return None


def _listed(m: re.Match[str]) -> Device:
    dev = {"id": m.group(1), "name": m.group(2), "platform": m.group(3), "version": m.group(4)}
    if m.group(5):
        dev["driver"] = m.group(5)
    return cast(Device, dev)


def host_devices_text(devs: Sequence[Device]) -> str:
    return ", ".join(f"{d['id']} {d['name']}" for d in devs)
