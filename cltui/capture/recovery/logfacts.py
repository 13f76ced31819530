"""What a damaged log itself still says: how it was damaged (NUL runs, a lost start, a lost end)
and the ``Device Time for <name> (enqueue N)`` lines that name lost enqueues.  Each is one
pass over a memory map of the log, linear in its size."""

from __future__ import annotations

import mmap
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from cltui.capture.model import DeviceTime
from cltui.capture.safeopen import open_regular

if TYPE_CHECKING:
    from cltui.capture.log.index import LogIndex

__all__ = ["LOST_DEVICE_TIMES", "log_damage", "named_device_times"]

# "Device Time for <name> (enqueue N) = ... (start -> end)": found by its tail, then the tag
# before it on the same line (at most NAME_MAX bytes back, never before the previous match):
# one regex with a lazy name over a line of repeated tags was quadratic (a fuzz hang)
_DEVTIME_TAIL_RE = re.compile(
    rb" \(enqueue (\d{1,18})\) = (\d{1,18}) ns \(queued -> submit\), (\d{1,18}) ns "
    rb"\(submit -> start\), (\d{1,18}) ns \(start -> end\)"
)
_DEVTIME_TAG = b"Device Time for "
NAME_MAX = 4096
_NUL_RUN_RE = re.compile(rb"\x00+")
LOST_DEVICE_TIMES = "Device Time lines name enqueues"  # the log index's problem about such lines


def _nul_runs(path: Path) -> tuple[int, int, int]:
    """(runs, offset of the first, length of the longest) of the NUL runs in the file."""
    runs = 0
    first = -1
    longest = 0
    try:
        with (
            open_regular(path, follow=True) as f,
            mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm,
        ):
            at = mm.find(b"\x00")
            while at >= 0:
                m = _NUL_RUN_RE.match(mm, at)
                end = m.end() if m is not None else at + 1
                runs += 1
                if first < 0:
                    first = at
                longest = max(longest, end - at)
                at = mm.find(b"\x00", end)
    except (OSError, ValueError):
        pass
    return runs, first, longest


def log_damage(path: Path, log: LogIndex) -> tuple[str, str]:
    """(state, why) of a log that lost enqueues: NUL runs, a lost start, a lost end."""
    runs, first, longest = _nul_runs(path)
    clauses: list[str] = []
    if runs:
        what = "a NUL run" if runs == 1 else f"{runs} NUL runs (the longest"
        clauses.append(
            f"{what} of {longest:,} bytes at byte {first:,}"
            + (")" if runs > 1 else "")
            + " overwrote it: a child process, such as PoCL's linker, probably truncated it"
        )
    if log.leading_fragment and not runs:
        clauses.append("its start is missing")
    if log.shutdowns < max(1, len(log.sessions)):
        clauses.append("it ends early, with no 'shutting down' footer")
    if not clauses:
        return "damaged", "files name enqueues past the end of the log or between its enqueues"
    return "damaged", "; ".join(clauses)


def named_device_times(
    path: Path, lost: Callable[[int], bool]
) -> dict[int, tuple[str, DeviceTime]]:
    """``Device Time for <name> (enqueue N)`` lines of the log whose N was lost (last wins)."""
    out: dict[int, tuple[str, DeviceTime]] = {}
    try:
        with (
            open_regular(path, follow=True) as f,
            mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm,
        ):
            floor = 0  # the previous match's end: each byte is searched back once
            for m in _DEVTIME_TAIL_RE.finditer(mm):
                lo = max(floor, m.start() - NAME_MAX - len(_DEVTIME_TAG))
                floor = m.end()
                nl = mm.rfind(b"\n", lo, m.start())
                at = mm.rfind(_DEVTIME_TAG, nl + 1 if nl >= 0 else lo, m.start())
                if at < 0 or at + len(_DEVTIME_TAG) >= m.start():
                    continue  # no tag on its line within reach, or an empty name
                n = int(m.group(1))
                if lost(n):
                    raw = mm[at + len(_DEVTIME_TAG) : m.start()]
                    name = raw.replace(b"\x00", b"").decode("utf-8", "replace").strip()
                    q, s, e = (int(x) for x in m.group(2, 3, 4))
                    out[n] = (name, DeviceTime(q, s, e))
    except (OSError, ValueError):
        return {}
    return out
