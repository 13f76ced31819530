"""A real single-node Slurm cluster on localhost, for the fleet's Slurm backend tests.

:func:`start_cluster` starts ``munged`` (its own key, socket, pid, log and seed files),
``slurmctld`` and ``slurmd`` in the foreground on free localhost ports, from a
``slurm.conf`` of its own under ROOT: the system's Slurm and munge configuration are never
read or touched.  Client commands find it through ``SLURM_CONF`` (:attr:`Cluster.env`).
Each partition's jobs get the environment its ``TaskProlog`` exports (``partitions``: name ->
``{VAR: VALUE}``; ``down`` names partitions whose jobs stay pending), every job ``TMPDIR``
``ROOT/tmp`` (a machine of its own: a fleet's device locks live there, not in the /tmp that
another test run on this machine shares).

    cluster = start_cluster(tmp_path, {"pocl": {"OCL_ICD_VENDORS": "/x"}}, down=("closed",))
    subprocess.run(["sinfo"], env={**os.environ, **cluster.env})
    cluster.stop()   # every job cancelled, every daemon ended, ROOT's files left to the caller

Needs Debian's ``slurm-wlm`` and ``munge``, and root (slurmd runs jobs as their user).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.tiers import hand_over

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "srun")
NODE = "cltuinode"


def available() -> str:
    """Why the cluster cannot start here ("" when it can)."""
    missing = [d for d in DAEMONS if shutil.which(d) is None and
               not Path("/usr/sbin", d).exists()]
    if missing:
        return "Slurm or munge is not installed (Debian: slurm-wlm munge): " + ", ".join(missing)
    if os.geteuid() != 0:
        return "the test Slurm cluster needs root (slurmd)"
    return ""


def _exe(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    """A started cluster: its folder, its ``slurm.conf`` and the daemons."""

    root: Path
    conf: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def run(self, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **self.env}, check=False)

    def jobs(self) -> list[str]:
        """Every job the controller still knows as queued or running: ``ID STATE NAME``."""
        res = self.run("squeue", "--noheader", "--format=%i %T %j")
        return [ln for ln in res.stdout.splitlines() if ln.strip()]

    def stop(self) -> None:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            self.run("scancel", "--full", "--user", "root", timeout=10)
        for p in reversed(self.procs):  # slurmd, slurmctld, then munged
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.procs.clear()
        # slurmstepd processes of a job still ending outlive slurmd by a moment
        for pid in _stepds(self.root):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)


def _stepds(root: Path) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            cmd = (d / "cmdline").read_bytes()
            if b"slurmstepd" in cmd and str(root).encode() in (d / "environ").read_bytes():
                out.append(int(d.name))
    return out


def _conf(root: Path, partitions: Sequence[str], down: Sequence[str]) -> str:
    host = socket.gethostname().split(".")[0]
    lines = [
        "ClusterName=cltuitest",
        f"SlurmctldHost={host}(127.0.0.1)",
        f"SlurmctldPort={_free_port()}",
        f"SlurmdPort={_free_port()}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={root}/munge/socket",
        f"StateSaveLocation={root}/state",
        f"SlurmdSpoolDir={root}/spool",
        f"SlurmctldPidFile={root}/slurmctld.pid",
        f"SlurmdPidFile={root}/slurmd.pid",
        f"SlurmctldLogFile={root}/slurmctld.log",
        f"SlurmdLogFile={root}/slurmd.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "SchedulerType=sched/builtin",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        "ReturnToService=2",
        "MpiDefault=none",
        "SlurmdTimeout=30",
        "SlurmdParameters=config_overrides",  # 8 CPUs on 2 cores: every test's jobs at once
        f"TaskProlog={root}/taskprolog.sh",
        f"NodeName={NODE} NodeHostname={host} NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN",
    ]
    for i, name in enumerate([*partitions, *down]):
        state = "DOWN" if name in down else "UP"
        default = " Default=YES" if i == 0 else ""
        lines.append(f"PartitionName={name} Nodes={NODE} MaxTime=INFINITE "
                     f"State={state}{default}")
    return "\n".join(lines) + "\n"


def _prolog(partitions: Mapping[str, Mapping[str, str]], tmp: Path) -> str:
    """The TaskProlog: ``TMPDIR`` and each partition's variables, as ``export`` lines
    slurmstepd reads."""
    out = ["#!/bin/sh", 'case "$SLURM_JOB_PARTITION" in']
    # the cluster is a machine of its own: its jobs' TMPDIR (where a fleet's device locks
    # live) is the cluster's, not the test machine's /tmp that another test run shares
    out.insert(1, f"echo {shlex.quote(f'export TMPDIR={tmp}')}")
    for name, env in partitions.items():
        exports = "; ".join(f"echo {shlex.quote(f'export {k}={v}')}" for k, v in env.items())
        out.append(f"  {shlex.quote(name)}) {exports or ':'} ;;")
    out += ["esac", "exit 0"]
    return "\n".join(out) + "\n"


def _wait(what: str, ok: object, procs: Sequence[subprocess.Popen[bytes]], root: Path,
          bound: float = 60.0) -> None:
    end = time.monotonic() + bound  # a hang detector, not a timing claim
    while time.monotonic() < end:
        if callable(ok) and ok():
            return
        dead = [p.args for p in procs if p.poll() is not None]
        if dead:
            break
        time.sleep(0.2)
    logs = "".join(f"\n--- {p.name}\n" + p.read_text(errors="replace")[-2000:]
                   for p in sorted(root.glob("*.log")))
    raise RuntimeError(f"the test Slurm cluster did not start ({what}){logs}")


def start_cluster(root: Path, partitions: Mapping[str, Mapping[str, str]],
                  down: Sequence[str] = ()) -> Cluster:
    """Start munged, slurmctld and slurmd under ``root``; stop them on any failure."""
    for d in ("munge", "state", "spool", "tmp"):
        (root / d).mkdir(mode=0o700, parents=True, exist_ok=True)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    conf = root / "slurm.conf"
    conf.write_text(_conf(root, list(partitions), down))
    prolog = root / "taskprolog.sh"
    prolog.write_text(_prolog(partitions, root / "tmp"))
    prolog.chmod(0o755)
    cluster = Cluster(root, conf)
    env = {**os.environ, "SLURM_CONF": str(conf)}
    m = root / "munge"
    cmds = [
        [_exe("munged"), "--foreground", "--force", f"--socket={m}/socket",
         f"--key-file={key}", f"--pid-file={m}/munged.pid", f"--log-file={root}/munged.log",
         f"--seed-file={m}/seed"],
        [_exe("slurmctld"), "-D", "-i", "-f", str(conf)],
        [_exe("slurmd"), "-D", "-N", NODE, "-f", str(conf)],
    ]
    checks = [
        lambda: (m / "socket").exists(),
        lambda: cluster.run("sinfo", "--noheader", timeout=10).returncode == 0,
        lambda: "idle" in cluster.run("sinfo", "--noheader", "--format=%T",
                                      f"--partition={next(iter(partitions))}").stdout,
    ]
    try:
        for argv, ok in zip(cmds, checks, strict=True):
            with open(root / f"{Path(argv[0]).name}.out", "wb") as log:
                p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=subprocess.STDOUT, env=env, start_new_session=True)
            hand_over(p.pid)
            cluster.procs.append(p)
            _wait(Path(argv[0]).name, ok, cluster.procs, root)
    except BaseException:
        cluster.stop()
        raise
    return cluster
