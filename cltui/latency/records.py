"""Launch records from the three sources of ``cltui latency``: the engine's timeline (a
device result's ``timeline``), the C++ runner's ``--latency`` rows, and the capture's own
timing (the log's ``Time:`` stamps around each enqueue call, its ``Device Time`` lines)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cltui.latency.stats import Launch, with_gaps

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.replay.engine.schema import StepSpec, TimelineResult

_TIME = re.compile(r"^(?:>>>>|<<<<) Time: (\d+) ")


def _stages(host_ns: float, q: int, s: int, st: int, e: int) -> dict[str, float | None]:
    return {
        "host_enqueue": float(host_ns),
        "queued_to_submit": float(s - q),
        "submit_to_start": float(st - s),
        "start_to_end": float(e - st),
    }


def engine_launches(steps: Sequence[StepSpec], timeline: TimelineResult) -> list[Launch]:
    """Every launch of the engine's timing repetitions (repetition 1 is the first after
    the validation run), each with its gap to the next launch."""
    out: list[Launch] = []
    for r, rep in enumerate(timeline["repetitions"], start=1):
        one = []
        for ln in rep["launches"]:
            st = steps[ln["step"]]
            q, s, b, e = ln["queued"], ln["submit"], ln["start"], ln["end"]
            one.append(
                Launch(r, ln["step"], int(st["enqueue"]), str(st["kernel"]),
                       _stages(ln["host_ns"], q, s, b, e), float(ln["host_start"]), float(q),
                       (q, s, b, e))
            )  # fmt: skip
        out += with_gaps(one)
    return out


def native_launches(steps: Sequence[StepSpec], rows: Sequence[Sequence[Any]]) -> list[Launch]:
    """The C++ runner's rows ``[pass, step, host_start, host_ns, q, s, st, e]``, by pass."""
    by_pass: dict[int, list[Launch]] = {}
    for row in rows:
        p, i, h0, hn, q, s, b, e = (row[0], int(row[1]), row[2], row[3], *map(int, row[4:8]))
        if not 0 <= i < len(steps):
            continue
        st = steps[i]
        by_pass.setdefault(int(p), []).append(
            Launch(int(p), i, int(st["enqueue"]), str(st["kernel"]), _stages(hn, q, s, b, e),
                   float(h0), float(q), (q, s, b, e))
        )  # fmt: skip
    out: list[Launch] = []
    for p in sorted(by_pass):
        out += with_gaps(sorted(by_pass[p], key=lambda ln: ln.step))
    return out


def capture_launches(cap: Capture, steps: Sequence[Mapping[str, Any]]) -> list[Launch]:
    """What the application saw for the range's kernel enqueues: the host call from the
    log's ``Time:`` stamps (microseconds, so ns = us * 1000) and the device stages from
    its ``Device Time`` lines (durations only: no gap)."""
    out: list[Launch] = []
    for i, st in enumerate(steps):
        number = int(st["enqueue"])
        pos = cap.position_of(number)
        if pos is None:
            continue
        stages: dict[str, float | None] = dict.fromkeys(
            ("host_enqueue", "queued_to_submit", "submit_to_start", "start_to_end")
        )
        dt = [int(v) for v in cap.device_times[pos]]
        for key, v in zip(("queued_to_submit", "submit_to_start", "start_to_end"), dt,
                          strict=True):  # fmt: skip
            stages[key] = float(v) if v >= 0 else None
        entry, leave = call_times(cap, pos)
        if entry is not None and leave is not None:
            stages["host_enqueue"] = float((leave - entry) * 1000)
        out.append(Launch(0, i, number, str(st["kernel"]), stages,
                          None if entry is None else float(entry * 1000)))  # fmt: skip
    return out


def call_times(cap: Capture, pos: int) -> tuple[int | None, int | None]:
    """The ``Time:`` stamps (us) of the enqueue's entry and exit lines, if logged."""
    log = cap.log
    off = int(cap.offsets[pos])
    if log is None or off < 0:
        return None, None
    entry = log.read_line(off)
    m = _TIME.match(entry)
    if m is None:
        return None, None
    fn = entry[m.end():].split("(")[0].split(":")[0].strip()
    return int(m.group(1)), log.exit_time(off, fn)
