"""A hang detector for the linear-reading tests: run a parse in a forked child with a
generous deadline (a regex does not release the GIL, so a thread could not be waited for)
and fail loudly, naming the input, when it does not answer.  Not a timing test: inputs
that take ~0.1 s get 10 s of CPU time; only a super-linear pass misses that."""

from __future__ import annotations

import importlib.util
import multiprocessing
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

DEADLINE = 10.0  # seconds of the child's CPU time
WALL_FACTOR = 10


def _cpu_seconds(pid: int | None) -> float:
    """The CPU time of process ``pid`` and of its children it has reaped (0 when gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[-1].split()
    except OSError:
        return 0.0
    ticks = sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")
ROOT = Path(__file__).resolve().parents[1]


def bounded(desc: str, fn: Callable[[], object], limit: float = DEADLINE) -> None:
    """Run ``fn`` in a forked child; fail with ``desc`` if it raises or runs past ``limit``."""
    ctx = multiprocessing.get_context("fork")
    r, w = ctx.Pipe(duplex=False)

    def child() -> None:
        try:
            fn()
            w.send("")
        except BaseException as e:
            w.send(f"{type(e).__name__}: {e}\n{traceback.format_exc()}")

    p = ctx.Process(target=child, daemon=True)
    p.start()
    w.close()
    # the limit is the child's CPU time (its own and its reaped workers'): another test's
    # load on the machine does not count; the wall clock gets WALL_FACTOR times that (a
    # child blocked without using the CPU)
    started = time.monotonic()
    while p.is_alive():
        p.join(0.1)
        if not p.is_alive():
            break
        if _cpu_seconds(p.pid) > limit or time.monotonic() - started > WALL_FACTOR * limit:
            p.kill()
            p.join()
            pytest.fail(f"HANG: {desc}: no answer within {limit:.0f} s of CPU time",
                        pytrace=False)  # fmt: skip
    msg = r.recv() if r.poll() else f"the child died (exit code {p.exitcode})"
    r.close()
    if msg:
        pytest.fail(f"{desc}: {msg}", pytrace=False)


def pathological() -> ModuleType:
    """``benchmarks/pathological.py`` (its generators)."""
    mod = sys.modules.get("bench_pathological")
    if mod is not None:
        return mod
    spec = importlib.util.spec_from_file_location(
        "bench_pathological", ROOT / "benchmarks" / "pathological.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_pathological"] = mod
    spec.loader.exec_module(mod)
    return mod
