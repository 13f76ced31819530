"""One Slurm job per GPU kind, as a fleet host's transport.

:meth:`SlurmTransport.connect` submits a holding job (``sbatch``: the kind's options, one
task, ``sleep`` until its time limit) and watches it in the queue (``squeue``: pending and
why, then running and where) until it runs; every command of the host's run is then a job
step inside it (``srun --jobid J --overlap``), so :class:`cltui.fleet.host.HostRunner` runs
a kind exactly as it runs an ssh host (checks, the cache, devices, the streamed trace, the
kill of a hung runner, the outputs fetched for the cross-compare).  :meth:`close` removes
the run's scratch folders there and ``scancel``s the job: at the normal end, on an error, a
``--timeout`` (a job still pending after ``--timeout`` seconds is cancelled and its kind
ends as ``timeout``), ctrl-c or SIGTERM; at exit, every job still held is cancelled too.

:func:`stage_shared` puts the bundle once into each kind's work folder from here, the
submission host (a cluster's work folder, like ``~``, lies on the shared file system), so
that no job sends it; a cluster whose file system the submission host does not share gets
it through ``srun`` instead, as a host over ssh does.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from cltui.fleet.cache import BundleFiles, sync
from cltui.fleet.host import HostFailed
from cltui.fleet.inventory import Host
from cltui.fleet.slurm.spec import parse_spec, sbatch_options, spec_name
from cltui.fleet.transport import CommandResult, Transport
from cltui.progress import CancelToken, ProgressEvent

__all__ = ["SlurmTransport", "cancel_all", "kind_hosts", "stage_shared", "transport_for"]

HostProgress = Callable[[str, ProgressEvent], None]
POLL_S = (0.5, 5.0)  # squeue every half second at first, backing off to every 5 s
_CLIENT_S = 30.0  # an sbatch, squeue or scancel that says nothing for this long failed
_ENDED = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
          "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY")


def kind_hosts(specs: Iterable[str]) -> list[Host]:
    """The hosts of ``cltui fleet --slurm SPEC`` (one per SPEC); ValueError names a bad one."""
    out = []
    for text in specs:
        try:
            pairs = parse_spec(text)
        except ValueError as exc:
            raise ValueError(f"bad --slurm {text!r}: {exc}") from None
        name = spec_name(pairs)
        out.append(Host(name=name, address=name, slurm=pairs, where="--slurm"))
    return out


def _client(argv: Sequence[str]) -> CommandResult:
    """A Slurm client command here (no shell): its exit, output and error text."""
    try:
        proc = subprocess.run(list(argv), stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=_CLIENT_S, check=False)
    except FileNotFoundError:
        return CommandResult(127, b"", f"{argv[0]}: not found")
    except subprocess.TimeoutExpired:
        return CommandResult(124, b"", f"{argv[0]} did not answer within {_CLIENT_S:g} s",
                             timed_out=True)
    except OSError as exc:
        return CommandResult(126, b"", f"cannot start {argv[0]}: {exc.strerror or exc}")
    return CommandResult(proc.returncode, proc.stdout, proc.stderr.decode("utf-8", "replace"))


_held: set[str] = set()  # jobs submitted and not cancelled yet
_held_lock = threading.Lock()


def cancel_all() -> None:
    """``scancel`` every job still held (at exit: cltui ended without closing a run)."""
    with _held_lock:
        jobs = sorted(_held)
        _held.clear()
    if jobs:
        _client(["scancel", *jobs])


atexit.register(cancel_all)


class SlurmTransport(Transport):
    """A kind's transport: its holding job, and each command a step of that job."""

    def __init__(self, host: Host, control_dir: Path, queue_timeout: float,
                 progress: HostProgress) -> None:
        self.job = ""  # the holding job's id, once submitted
        self.node = ""  # where it runs
        super().__init__(replace(host, transport="sh -c {cmd}"), control_dir)
        self.dead = False  # the job ended under a command: no step can run any more
        self.host = host
        self.is_ssh = False
        self.queue_timeout, self._say = queue_timeout, progress
        self.options = dict(host.slurm)

    def argv(self, script: str | None, *, master: str = "no", extra: Iterable[str] = ()
             ) -> list[str]:
        step = ["srun", f"--jobid={self.job or 0}", "--overlap", "--quiet", "--nodes=1",
                "--ntasks=1"]
        return [*step, "sh", "-c", script if script is not None else "true"]

    def run(self, script: str, stdin: bytes | Iterable[bytes] | None = None, *,
            timeout: float, cancel: CancelToken | None = None,
            on_line: Callable[[str], None] | None = None, hold_stdin: bool = False
            ) -> CommandResult:
        """A job step; a step that failed because the job is gone (cancelled from outside,
        its time limit, its node lost) says so as its last error line, and the transport is
        then ``dead`` (the fleet's word for a lost link); nothing more runs in it."""
        if self.dead:
            return CommandResult(1, b"", f"the Slurm job {self.job} has ended")
        res = super().run(script, stdin, timeout=timeout, cancel=cancel, on_line=on_line,
                          hold_stdin=hold_stdin)
        if res.rc != 0 and not res.cancelled and self.job:
            state, reason, _node = self._state()
            for _ in range(10):  # COMPLETING: its end state (CANCELLED, TIMEOUT, ...) follows
                if state != "COMPLETING":
                    break
                time.sleep(0.5)
                state, reason, _node = self._state()
            if state != "RUNNING":
                self.dead = True
                res.err += (f"\nthe Slurm job {self.job} ended while it ran "
                            f"({state or 'gone from the queue'}{_why(reason)})")
        return res

    def _state(self) -> tuple[str, str, str]:
        """The job's state, the queue's reason for it and its node ("" when unknown)."""
        res = _client(["squeue", "--noheader", f"--jobs={self.job}", "--states=all",
                       "--format=%T|%r|%N"])
        said = res.out.decode("utf-8", "replace").strip().split("|") if res.rc == 0 else []
        state, reason, node = [*said, "", "", ""][:3]
        return state, reason, node

    def connect(self, cancel: CancelToken | None = None) -> CommandResult:
        """Submit the holding job and wait until it runs (its queue state as progress)."""
        name = f"cltui-fleet:{self.host.name}"[:120]
        res = _client(["sbatch", "--parsable", f"--job-name={name}", "--nodes=1",
                       "--ntasks=1", "--output=/dev/null", "--error=/dev/null",
                       *sbatch_options(self.options), "--wrap", "exec sleep 2147483647"])
        if res.rc != 0:
            raise _submit_failed(res)
        self.job = res.out.decode("ascii", "replace").strip().split(";")[0]
        if not self.job.isdigit():
            raise HostFailed("error", f"sbatch gave no job id: {self.job[:60]!r}")
        with _held_lock:
            _held.add(self.job)
        self.closers.append(self._scancel)  # the first closer: run last (see close)
        return self._wait(cancel)

    def _wait(self, cancel: CancelToken | None) -> CommandResult:
        start = time.monotonic()
        pause, said = POLL_S[0], ""
        where = self.options.get("partition") or "the queue"
        while True:
            state, reason, node = self._state()
            if state == "RUNNING":
                self.node = node
                self._say(self.host.name, ProgressEvent(
                    0.05, f"job {self.job} running on {node or 'its node'}"))
                return CommandResult(0, b"", "")
            if state in _ENDED:
                raise HostFailed("error", f"job {self.job} ended before it ran "
                                 f"({state}{_why(reason)})")
            now = f"job {self.job} {state.lower() or 'submitted'} in {where}" + (
                f" ({reason})" if reason and reason != "None" else "")
            if now != said:
                self._say(self.host.name, ProgressEvent(0.02, now))
                said = now
            waited = time.monotonic() - start
            if waited > self.queue_timeout:
                raise HostFailed("timeout", f"job {self.job} still {state.lower() or 'queued'} "
                                 f"in {where} after {self.queue_timeout:g} s"
                                 + (f" ({reason})" if reason and reason != "None" else "")
                                 + ": cancelled")
            if cancel is not None and cancel.wait(pause):
                return CommandResult(-1, b"", "cancelled", cancelled=True)
            if cancel is None:
                time.sleep(pause)
            pause = min(POLL_S[1], pause * 1.5)

    def _scancel(self) -> None:
        if not self.job:
            return
        with _held_lock:
            _held.discard(self.job)
        _client(["scancel", self.job])


def _why(reason: str) -> str:
    return f": {reason}" if reason and reason != "None" else ""


def _submit_failed(res: CommandResult) -> HostFailed:
    why = (res.last_err().removeprefix("sbatch: error: ")
           .removeprefix("Batch job submission failed: ") or f"exit {res.rc}")
    if res.rc == 127:
        return HostFailed("missing-dependency", "sbatch (Slurm's client commands) is not "
                          "installed here")
    low = res.err.lower()
    if "unable to contact slurm controller" in low or "connection refused" in low:
        return HostFailed("unreachable", f"the Slurm controller does not answer: {why}")
    return HostFailed("error", f"sbatch refused the job: {why}")


def transport_for(host: Host, control: Path, timeout: float, progress: HostProgress
                  ) -> Transport:
    """The host's transport: a Slurm kind's job, else its own (ssh or a template)."""
    if host.slurm:
        return SlurmTransport(host, control, timeout, progress)
    return Transport(host, control, connect_timeout=min(timeout, 30.0))


def stage_shared(bundle: BundleFiles, hosts: Sequence[Host], control: Path, timeout: float,
                 cancel: CancelToken, progress: HostProgress) -> None:
    """The bundle made whole once in each Slurm kind's work folder, from here (the shared
    file system); a folder this host cannot write is left to the jobs (they send it)."""
    done: set[str] = set()
    for h in hosts:
        if not h.slurm or h.workdir in done:
            continue
        done.add(h.workdir)
        if (Path(os.path.expanduser(h.workdir)) / "bundles" / bundle.id / ".complete").is_file():
            continue
        local = Transport(replace(h, transport="sh -c {cmd}", slurm=()), control)
        progress(h.name, ProgressEvent(0.0, f"staging the bundle in {h.workdir}"))
        with contextlib.suppress(OSError):
            stats, failed = sync(local, bundle, h.workdir, has_bundle=False, timeout=timeout,
                                 cancel=cancel)
            if failed is None:
                progress(h.name, ProgressEvent(0.0, f"staged {stats.files_sent} files "
                                               f"({stats.bytes_sent} bytes) in {h.workdir}"))
