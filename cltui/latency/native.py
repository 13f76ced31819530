"""The exported C++ runner for ``cltui latency``: built once with CMake from its sources
(:mod:`cltui.runners`, as ``export.exporter.cpp_files`` reads them) into a cache folder named
by their hash, then run on a bundle with ``--latency`` (its runner, the floor and the delay
ladder side by side).

The build is the one recipe (:mod:`cltui.runners.build`, a bundle's README gives it); the
program takes ``--bundle``, so one build serves every bundle.  No C++ compiler or CMake:
one clear line (:class:`NativeError`), and ``cltui latency`` reports the other runners."""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cltui.errors import CltuiError
from cltui.progress import CancelToken

BUILD_TIMEOUT = 600.0


class NativeError(CltuiError):
    """The C++ runner could not be built or did not run (one line)."""


def cache_root() -> Path:
    """``<cltui cache>/native`` (next to the binary cache), or a temp folder when that is
    turned off (``CLTUI_BINARY_CACHE=0``)."""
    from cltui.process import lifecycle
    from cltui.replay.runner import default_binary_cache

    cache = default_binary_cache()
    if cache is None:
        return lifecycle.temp_dir("native")
    return cache.parent / "native"


def build_runner(cancel: CancelToken | None = None) -> Path:
    """The C++ runner's executable, built now unless this version's build is cached."""
    from cltui.export.exporter import cpp_files
    from cltui.runners.build import build_commands

    if shutil.which("cmake") is None or shutil.which("c++") is None:
        raise NativeError("the C++ runner needs cmake and a C++ compiler on PATH")
    files = cpp_files()
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name])
    home = cache_root() / digest.hexdigest()[:16]
    exe = home / "build" / "replay"
    home.mkdir(parents=True, exist_ok=True)
    with (home / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if exe.is_file():
            return exe
        src = home / "src"
        for name, data in files.items():
            path = src / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        build = home / "build"
        for cmd in build_commands(str(src), str(build), "2"):
            proc = run_tool(cmd, BUILD_TIMEOUT, cancel)
            if proc[0] != 0:
                last = (proc[2].strip() or proc[1].strip()).splitlines()[-1:] or ["no output"]
                raise NativeError(f"building the C++ runner failed ({cmd[1]}): {last[0]}")
    if not exe.is_file():
        raise NativeError(f"building the C++ runner left no program at {exe}")
    return exe


def run_tool(
    cmd: Sequence[str], timeout: float, cancel: CancelToken | None, cwd: Path | None = None
) -> tuple[int, str, str]:
    """Run ``cmd`` to its end (:func:`cltui.process.bounded.run_bounded`): (rc, out, err);
    a tool that cannot start or runs past ``timeout`` is a :class:`NativeError`."""
    from cltui.process.bounded import ToolFailed, run_bounded

    try:
        return run_bounded(cmd, timeout, cancel, cwd)
    except ToolFailed as exc:
        raise NativeError(str(exc)) from None


def run_latency(
    exe: Path,
    bundle: Path,
    device: Mapping[str, Any],
    rounds: int,
    delays: Sequence[int],
    timeout: float,
    cancel: CancelToken | None = None,
) -> dict[str, Any]:
    """The runner's ``--latency`` JSON for one device (its ``error`` set if it failed).

    The device is named by its name, not its P:D index: the program may link another ICD
    loader than pyopencl's, which can list other platforms (on the lent H200 machine its
    platform 0 was not NVIDIA's); the device it reports must be the one asked for."""
    name = str(device.get("name", ""))
    cmd = [str(exe), "--bundle", str(bundle), "--device", name, "--latency",
           "--repeat", str(max(rounds, 1)), "--delays", ",".join(str(int(d)) for d in delays)]
    rc, out, err = run_tool(cmd, timeout, cancel, cwd=bundle)
    try:
        data = json.loads(out)
    except json.JSONDecodeError:
        last = err.strip().splitlines()[-1:] or [f"exit code {rc}"]
        raise NativeError(f"the C++ runner failed: {last[0]}") from None
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        raise NativeError("the C++ runner printed no result")
    result: dict[str, Any] = data[0]
    got = result.get("device") or {}
    if got.get("name") != name or got.get("platform") != device.get("platform"):
        raise NativeError(
            f"the C++ runner picked {got.get('name')!r} ({got.get('platform')!r}), not {name!r} "
            f"({device.get('platform')!r}): its figures are left out"
        )
    return result
