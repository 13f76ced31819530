"""Real OpenSSH daemons on localhost, for tests that need "hosts" (the fleet, an app over SSH).

:func:`start_hosts` starts one ``/usr/sbin/sshd -D -f CONFIG`` per host on a free localhost
port, with a generated host key and a generated client key, and writes an ssh client config
of its own (``ssh -F CONFIG``: its own known_hosts, pre-filled, so ``StrictHostKeyChecking``
stays on; the client key; batch mode): the system's and the user's ssh configuration are never
read or touched.  A host may be ``down`` (a closed port), refuse the client key
(``refuse_key``) or get environment variables in every session (``env``: sshd's ``SetEnv``).
Sessions get ``HOME`` = ``ROOT/home`` (shared by the hosts, unless ``env`` says otherwise) and a
``TMPDIR`` of their own (each host a machine of its own: a fleet's device locks live there):
the user's real home, its caches and its shell start-up files (Debian's bash sources
``~/.bashrc`` for every ssh command) stay out of the tests.

    hosts = start_hosts(tmp_path, [HostSpec("a", env={"OCL_ICD_VENDORS": "/x"}), ...])
    ssh -F hosts.config -p hosts["a"].port 127.0.0.1 true
    hosts.stop()

Needs ``sshd`` (Debian: openssh-server) and ``ssh-keygen``; sshd wants ``/run/sshd``
(created when missing, as root).
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.tiers import hand_over

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


@dataclass(frozen=True)
class HostSpec:
    """One host to start: its name, whether it is down, refuses the key, its session env."""

    name: str
    down: bool = False
    refuse_key: bool = False
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass
class SshHost:
    """A started (or down) host: where it listens and how to log in."""

    name: str
    host: str
    port: int
    user: str
    key: Path  # the client's private key
    config: Path  # ``ssh -F`` config (known_hosts, key, batch mode)
    proc: subprocess.Popen[bytes] | None = None
    tmpdir: Path | None = None  # its sessions' TMPDIR: a machine of its own (its fleet locks)

    def ssh_argv(self, *command: str) -> list[str]:
        return ["ssh", "-F", str(self.config), "-p", str(self.port), self.host, *command]

    def sessions(self) -> list[int]:
        """The sshd processes serving its connections (the daemon's descendants that are
        sshd: not the commands they run)."""
        if self.proc is None or self.proc.poll() is not None:
            return []
        found, todo = [], [self.proc.pid]
        while todo:
            kids = subprocess.run(["ps", "-o", "pid=,comm=", "--ppid", str(todo.pop())],
                                  capture_output=True, text=True, check=False).stdout
            for ln in kids.splitlines():
                parts = ln.split()
                if len(parts) == 2 and parts[1].startswith("sshd"):
                    found.append(int(parts[0]))
                    todo.append(int(parts[0]))
        return found


@dataclass
class SshHosts:
    """The started hosts by name; :meth:`stop` ends their daemons."""

    root: Path
    config: Path
    key: Path
    hosts: dict[str, SshHost]
    home: Path  # the sessions' HOME

    def __getitem__(self, name: str) -> SshHost:
        return self.hosts[name]

    def __iter__(self) -> Iterator[SshHost]:
        return iter(self.hosts.values())

    def stop(self) -> None:
        """End the daemons, and the sessions they still serve (a client that leaked its
        connection would keep those alive after the daemon)."""
        for h in self.hosts.values():
            for pid in h.sessions():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            if h.proc is not None and h.proc.poll() is None:
                h.proc.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    h.proc.wait(5)
                if h.proc.poll() is None:
                    h.proc.kill()
                    h.proc.wait()


def available() -> str | None:
    """Why real sshd hosts cannot be started here (None: they can)."""
    if not os.path.isfile(SSHD):
        return "sshd is not installed (Debian: openssh-server)"
    if shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        return "ssh or ssh-keygen is not installed"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
                   check=True, capture_output=True)
    return Path(f"{path}.pub").read_text().strip()


def _sshd_config(d: Path, port: int, host_key: Path, spec: HostSpec, home: Path) -> Path:
    lines = [
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {host_key}",
        f"PidFile {d / 'sshd.pid'}", f"AuthorizedKeysFile {d / 'authorized_keys'}",
        "PubkeyAuthentication yes", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "PermitRootLogin prohibit-password",
        "StrictModes no", "UsePAM no", "LogLevel ERROR", "MaxSessions 50",
        "MaxStartups 50:30:100",
    ]  # fmt: skip
    tmp = d / "tmp"  # each host a machine of its own: its own TMPDIR (the fleet's device locks)
    tmp.mkdir(exist_ok=True)
    # the run's PoCL kernel cache (tests/conftest.py): a host's own HOME would compile again
    pocl = {k: os.environ[k] for k in ("POCL_CACHE_DIR",) if k in os.environ}
    env = {"HOME": str(home), "TMPDIR": str(tmp), **pocl, **spec.env}
    lines.append("SetEnv " + " ".join(f'"{k}={v}"' for k, v in env.items()))
    cfg = d / "sshd_config"
    cfg.write_text("\n".join(lines) + "\n")
    return cfg


def _wait_listening(port: int, proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise RuntimeError(f"sshd exited {proc.returncode}: {err}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"sshd did not listen on port {port} within {timeout} s")


def start_hosts(root: Path, specs: Sequence[HostSpec]) -> SshHosts:
    """Start one sshd per spec under ``root``; the client config, key and hosts."""
    why = available()
    if why:
        raise RuntimeError(why)
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    root.mkdir(parents=True, exist_ok=True)
    host_key, client_key = root / "host_ed25519", root / "client_ed25519"
    host_pub = _keygen(host_key)
    client_pub = _keygen(client_key)
    stranger_pub = _keygen(root / "stranger_ed25519")
    user = getpass.getuser()
    known = root / "known_hosts"
    home = root / "home"
    home.mkdir(exist_ok=True)
    config = root / "ssh_config"
    config.write_text(
        "Host *\n"
        f"  UserKnownHostsFile {known}\n  GlobalKnownHostsFile /dev/null\n"
        "  StrictHostKeyChecking yes\n  BatchMode yes\n"
        f"  IdentityFile {client_key}\n  IdentitiesOnly yes\n  User {user}\n"
        "  LogLevel ERROR\n  ConnectTimeout 10\n"
    )
    hosts: dict[str, SshHost] = {}
    known_lines = []
    out = SshHosts(root, config, client_key, hosts, home)
    try:
        for spec in specs:
            d = root / spec.name
            d.mkdir(parents=True, exist_ok=True)
            port = free_port()
            known_lines.append(f"[127.0.0.1]:{port} {host_pub}")
            h = SshHost(spec.name, "127.0.0.1", port, user, client_key, config)
            hosts[spec.name] = h
            if spec.down:
                continue
            (d / "authorized_keys").write_text(
                (stranger_pub if spec.refuse_key else client_pub) + "\n")
            cfg = _sshd_config(d, port, host_key, spec, home)
            h.tmpdir = d / "tmp"
            h.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(cfg)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            hand_over(h.proc.pid)  # the ssh_hosts fixture stops it, at its module's end
            _wait_listening(port, h.proc)
        known.write_text("\n".join(known_lines) + "\n")
    except BaseException:
        out.stop()
        raise
    return out
