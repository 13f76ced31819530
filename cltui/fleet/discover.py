"""The devices of an inventory's hosts, found by the path a fleet run takes to them.

:func:`discover_devices` sends each host the *device lister*: a bundle holding only the
runners (the engine package under ``lib/``, byte for byte as every exported bundle carries it,
and the C++ runner's sources), through :class:`~cltui.fleet.host.HostRunner`'s own connect,
check, send, build and list steps (:meth:`HostRunner.discover`).  The host's cache keeps those
files by sha256, so the range's bundle sent later brings none of them again, and a C++ host
has its runner built already.  A host that fails says why with the fleet's statuses
(``unreachable``, ``authentication``, ``missing-dependency``, ``no-device``, ``timeout``...).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from cltui.export.exporter import cpp_files, engine_modules
from cltui.fleet.cache import bundle_files
from cltui.fleet.host import RunSettings
from cltui.fleet.inventory import Host
from cltui.fleet.job import fleet_progress, host_session, run_hosts
from cltui.process import lifecycle
from cltui.progress import CancelToken, ProgressFn
from cltui.replay.engine.schema import Device, Manifest

__all__ = ["HostDevices", "discover_devices", "lister_bundle"]

LISTER_MANIFEST = {"format": "cltui-device-lister", "steps": []}


@dataclass(frozen=True)
class HostDevices:
    """One host's devices (``status`` ``ok``), or why they are not known, in one line."""

    host: Host
    runner: str
    status: str
    reason: str
    devices: tuple[Device, ...] = ()


def lister_bundle() -> Path:
    """The device lister as a bundle folder in the local cache (made once per content of
    cltui's runners: a folder named by its sha256, written aside and renamed into place)."""
    files = {**engine_modules(), **cpp_files(),
             "manifest.json": json.dumps(LISTER_MANIFEST).encode()}
    sums = {rel: hashlib.sha256(data).hexdigest() for rel, data in sorted(files.items())}
    key = hashlib.sha256("".join(f"{h} {r}\n" for r, h in sums.items()).encode()).hexdigest()
    root = lifecycle.cache_folder() / lifecycle.IN_CACHE["fleet-lister"] / key[:32]
    if (root / "SHA256SUMS").is_file():
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = lifecycle.temp_dir("fleet-lister", parent=root.parent)
    for rel, data in files.items():
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).write_bytes(data)
    (tmp / "SHA256SUMS").write_text("".join(f"{h}  {r}\n" for r, h in sums.items()),
                                    encoding="utf-8")
    try:
        os.rename(tmp, root)
    except OSError:  # another process made it first
        lifecycle.remove(tmp)
    else:
        lifecycle.release(tmp)
    return root


def discover_devices(
    hosts: Sequence[Host],
    *,
    runner: str | None = None,
    timeout: float = 30.0,
    jobs: int = 8,
    cancel: CancelToken | None = None,
    progress: ProgressFn | None = None,
) -> list[HostDevices]:
    """Every host's OpenCL devices (as its runner lists them: ``P:D`` ids that the fleet's
    device filter takes), all hosts in parallel (``jobs`` at a time), each step of a host
    bounded by ``timeout`` seconds; in the order of ``hosts``."""
    bundle = bundle_files(lister_bundle())
    settings = RunSettings(runner=runner, timeout=timeout)
    plan = cast(Manifest, dict(LISTER_MANIFEST))
    token = cancel or CancelToken()
    with host_session(jobs) as (control, transports):
        outcomes = run_hosts(bundle, plan, hosts, settings, jobs, token,
                             fleet_progress(progress, hosts), control, transports,
                             discover=True)  # fmt: skip
    return [HostDevices(o.host, o.runner, o.status, o.reason, tuple(o.listed))
            for o in outcomes]
