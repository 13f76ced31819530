"""One device's replay on a host, and how it ended: the runner streams each finished step
(``--stream``: ``replay: step {json}`` on stderr) and says each enqueue before it runs
(``--trace``), so whatever ends it (a hang, a crash, a lost connection, a cancel) the
result keeps the steps that finished, says which enqueue was running and names the fault
(:mod:`cltui.fleet.faults`).
"""

from __future__ import annotations

import json
import re
import secrets
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from cltui.fleet.lock import (
    BUSY,
    NOLOCK,
    RC_BUSY,
    busy_reason,
    lock_lines,
    parse_busy,
    waiting_note,
)
from cltui.fleet.scratch import mark
from cltui.fleet.transport import WATCHDOG, CommandResult
from cltui.process import lifecycle
from cltui.replay.engine import verdict
from cltui.replay.engine.schema import Device, DeviceResult, StepResult
from cltui.replay.outcome import failed, partial_step

if TYPE_CHECKING:
    from cltui.fleet.host import HostRunner

__all__ = ["DeviceRun", "replay_device"]

_TRACE = re.compile(r"replay: enqueue (\d+) \((\d+)/(\d+)\)")
_STEP = "replay: step "
KILL_WAIT = 4.0  # seconds a kill or a probe may wait on the link
# where a run ended that never got the device (cltui.fleet.lock): another fleet, or another
# column of this one (one machine listed twice), held it
WAITING = "while waiting for the device (another cltui fleet or column held its lock)"


@dataclass
class DeviceRun:
    """One device's replay on a host: its result (as ``cltui replay``'s), where the outputs
    lie there, their sha256 by file name, and its fault class (None: it finished)."""

    device: Device
    result: DeviceResult
    out_dir: str = ""
    sums: dict[str, str] = field(default_factory=dict)
    fault: str | None = None
    seconds: float = 0.0  # the replay's wall time, as the fleet saw it
    log: str = ""  # the runner's stderr there (its last 256 KiB)
    retries: int = 0  # --retry-flaky: the range run again on the device (cltui.fleet.flaky)
    flaky: list[str] = field(default_factory=list)  # the outputs that changed between runs


@dataclass
class _Seen:
    """What the runner's stderr said so far."""

    pid: str = ""
    out_dir: str = ""
    busy: bool = False  # it waited for the device's lock (the runner starts after it)
    holder: str = ""  # the run id the lock's holder wrote (cltui.fleet.lock), last said
    traced: list[int] = field(default_factory=list)
    finished: list[StepResult] = field(default_factory=list)

    @property
    def running(self) -> int | None:
        """The enqueue started and not finished (None: between steps, or none yet)."""
        if not self.traced:
            return None
        done = {int(s["enqueue"]) for s in self.finished}
        return None if self.traced[-1] in done else self.traced[-1]


def replay_device(r: HostRunner, dev: Device, i: int, n: int) -> DeviceRun:
    """Replay the bundle on ``dev`` (the ``i``-th of ``n``) through ``r``'s transport."""
    tag = f"{dev['id']} {dev['name']}"
    r.say(0.2 + 0.8 * i / max(1, n), f"replaying on {tag}")
    # the outputs' folder is named here, and removed at the end whatever the script did: a
    # cancel races the device's lock (the script may make it after its kill was decided)
    out = f"out.{secrets.token_hex(8)}"
    r.t.remove_at_close.append(f"{r.w}/{out}")
    script = r.script(
        'echo "@@pid $$" >&2',
        WATCHDOG,
        f"cd {r.b} || exit 97",
        *lock_lines(dev, r.s.lock_wait, r.s.run_id),  # one fleet a device (cltui.fleet.lock)
        f'O="$W/{out}"; mkdir -m 700 "$O" || exit 97',
        mark("O", r.owner),
        'echo "@@out $O" >&2',  # where the outputs lie (fetched from there)
        f"{r.runner_cmd()} --json --trace --stream --device {shlex.quote(dev['id'])} "
        f'--out "$O" {r.tol_args(dev)} > "$O/.result.json"',
        'rc=$?; echo "@@rc $rc"',
        "if command -v sha256sum >/dev/null 2>&1; then SUM=sha256sum; "
        'else SUM="shasum -a 256"; fi',
        # one sum over every output ("./" first: a name read as an option cannot be one)
        '(cd "$O" && set -- && for f in *; do [ -f "$f" ] && set -- "$@" "./$f"; done',
        '  [ $# -eq 0 ] || $SUM "$@")',
        'echo "@@json"; cat "$O/.result.json"',
    )
    seen = _Seen()

    def line(text: str) -> None:
        if text.startswith("@@pid ") and not seen.pid:
            seen.pid = text[6:].strip()
        elif text.startswith("@@out ") and not seen.out_dir:
            seen.out_dir = text[6:].strip()
        elif text.startswith(BUSY):
            seen.busy = True
            seconds, seen.holder = parse_busy(text)
            r.say(None, f"{tag}: {waiting_note(seconds, seen.holder, r.s.run_id)}")
        elif text.startswith(_STEP):
            try:
                step = json.loads(text[len(_STEP) :])
            except ValueError:
                return
            if isinstance(step, dict) and "enqueue" in step:
                seen.finished.append(partial_step(step))
        elif m := _TRACE.match(text):
            seen.traced.append(int(m.group(1)))
            frac = (i + int(m.group(2)) / max(1, int(m.group(3)))) / max(1, n)
            r.say(0.2 + 0.8 * frac, f"{tag}: enqueue {m.group(1)} ({m.group(2)}/{m.group(3)})")

    res = r.t.run(script, timeout=r.s.timeout, cancel=r.cancel, on_line=line, hold_stdin=True)
    link_dead = False
    if res.timed_out or res.cancelled:
        link_dead = not _kill(r, seen.pid)
    return _device_run(r, dev, res, seen, link_dead)


def _kill(r: HostRunner, pid: str) -> bool:
    """Kill the runner's process group on the host (the watchdog does it too once the
    command's stdin closes); whether the link answered within :data:`KILL_WAIT` seconds.
    A link that does not is dead: nothing more waits on it."""
    if r.t.dead:
        return False
    script = (f"kill -TERM -{pid} 2>/dev/null; (sleep 1; kill -KILL -{pid} 2>/dev/null) "
              ">/dev/null 2>&1 & true") if pid.isdigit() else "true"
    res = r.t.run(script, timeout=KILL_WAIT)
    if res.timed_out or (r.t.is_ssh and res.rc == 255):
        r.t.dead = True
        return False
    return True


def _device_run(r: HostRunner, dev: Device, res: CommandResult, seen: _Seen, link_dead: bool
                ) -> DeviceRun:
    head, _, body = res.out.decode("utf-8", "replace").partition("\n@@json\n")
    rc, out_dir, sums = None, seen.out_dir, {}
    for ln in head.splitlines():
        if ln.startswith("@@rc "):
            rc = int(ln[5:]) if ln[5:].strip().isdigit() else None
        elif len(parts := ln.split()) == 2 and len(parts[0]) == 64:
            sums[parts[1].removeprefix("./")] = parts[0]
    parsed: Any = None
    try:
        parsed = json.loads(body) if body.strip() else None
    except ValueError:
        parsed = None
    fault: str | None
    if rc is not None and isinstance(parsed, list) and parsed and isinstance(parsed[0], dict):
        result = cast(DeviceResult, parsed[0])
        fault = _own_fault(result)
    else:
        result, fault = _lost(r, dev, res, rc, seen, link_dead)
    unlocked = [ln[len(NOLOCK):] for ln in res.err.splitlines() if ln.startswith(NOLOCK)]
    if unlocked:
        result.setdefault("notes", []).append(f"the device was not locked: {unlocked[0]}")
    log = "\n".join(ln for ln in res.err.splitlines() if not ln.startswith("@@"))
    return DeviceRun(dev, result, out_dir, sums, fault, log=log[-(256 << 10):])


def _own_fault(result: DeviceResult) -> str | None:
    """The fault of a result the runner printed itself (None: it finished)."""
    if not result.get("error"):
        return None
    return "device-crash" if result.get("failed_enqueue") is not None else "error"


def _lost(r: HostRunner, dev: Device, res: CommandResult, rc: int | None, seen: _Seen,
          link_dead: bool) -> tuple[DeviceResult, str]:
    """A device result for a runner that printed none: hung, crashed, killed, cut off or
    cancelled; the steps that finished before are kept (``partial``)."""
    at = seen.running
    where = f"while enqueue {at} ran" if at is not None else (
        f"after enqueue {seen.finished[-1]['enqueue']}" if seen.finished
        else WAITING if seen.busy else "before any enqueue ran")
    tail = [ln for ln in res.err.splitlines()
            if not ln.startswith(("@@", _STEP, "replay: enqueue "))][-20:]
    lost = link_dead or r.t.dead or (
        r.t.is_ssh and rc is None and res.rc == 255 and not res.cancelled)  # fmt: skip
    if res.cancelled:
        status, fault, err = "cancelled", "cancelled", f"cancelled {where}"
    elif rc is None and res.rc == RC_BUSY:  # the script's own exit, before the runner
        status, fault, err = "error", "error", busy_reason(r.s.lock_wait, seen.holder, r.s.run_id)
    elif lost:
        how = ("the host stopped answering" if res.timed_out or link_dead
               else f"ssh ended: {tail[-1] if tail else 'exit 255'}")
        status, fault, err = "error", "connection-lost", f"connection lost {where} ({how})"
    elif res.timed_out:
        status, fault, err = "hang", "hang", f"no progress within {r.s.timeout:g} s {where}"
    else:
        code = rc if rc is not None else res.rc
        cause, what = lifecycle.exit_cause(-(code - 128) if code > 128 else code)
        if cause == "fault" and at is not None:
            status, fault, err = "crash", "device-crash", f"the runner died of {what} {where}"
        elif cause == "fault":
            status, fault, err = "crash", "runner-crash", f"the runner died of {what} {where}"
        elif cause == "killed":
            status, fault = "killed", "runner-crash"
            err = f"the runner was killed ({what}) from outside {where}"
        else:
            status, fault = "error", "runner-crash"
            err = f"the runner exited {code} without a result {where}: " + (
                tail[-1] if tail else "no output")
    result = failed(dev, status, err, at, seen.finished)
    result.update(cast(DeviceResult, {
        "runner": "replay.cpp" if r.runner == "cpp" else "replay.py",
        "device_choice": {"rule": "user", "why": "named by the fleet"},
        "repeat": 1, "loop": None, "builds": [], "stderr": "\n".join(tail),
    }))  # fmt: skip
    v = verdict(r.plan, result)
    if fault == "connection-lost" and v["status"] == "error":  # nothing failed: not all ran
        v["status"], v["line"] = "incomplete", "INCOMPLETE" + v["line"].removeprefix("ERROR")
    result["verdict"] = v
    return result, fault
