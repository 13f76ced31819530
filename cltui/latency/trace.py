"""``cltui latency --trace FILE``: the capture's timing and the replays as a Chrome
trace-event JSON (opens in Perfetto and chrome://tracing).

One process per source (the capture, then each runner on each device), each with a
host-thread track (the enqueue calls) and a device-queue track (each kernel's
start→end; the queued→submit and submit→start stages in its args); metadata events name
them.  Each process starts at 0 us.  The device's clock is put on the host's by the
offset every launch agrees with (queued lies inside its enqueue call); the capture
logs no device timestamps, so its kernels are placed after their call, back to back,
from their durations (said in each event's args)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cltui.latency.stats import Launch

HOST_TID, DEVICE_TID = 1, 2


def clock_offset(launches: Sequence[Launch]) -> float:
    """device - host clock offset (ns): inside every launch's window [queued - call end,
    queued - call start] where they intersect, else the median of the windows' middles."""
    lows, highs = [], []
    for ln in launches:
        if ln.device_times is None or ln.host_start is None:
            continue
        q = ln.device_times[0]
        call = ln.stages.get("host_enqueue") or 0.0
        lows.append(q - (ln.host_start + call))
        highs.append(q - ln.host_start)
    if not lows:
        return 0.0
    lo, hi = max(lows), min(highs)
    if lo <= hi:
        return (lo + hi) / 2.0
    mids = sorted((a + b) / 2.0 for a, b in zip(lows, highs, strict=True))
    return mids[len(mids) // 2]


def _meta(pid: int, name: str, threads: dict[int, str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "ts": 0,
         "args": {"name": name}},
        {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "ts": 0,
         "args": {"sort_index": pid}},
    ]  # fmt: skip
    for tid, tname in threads.items():
        out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "ts": 0,
                    "args": {"name": tname}})  # fmt: skip
    return out


def replay_events(pid: int, name: str, launches: Sequence[Launch]) -> list[dict[str, Any]]:
    """A replay's launches: host calls and device executions, on one time axis (us)."""
    timed = [ln for ln in launches if ln.host_start is not None and ln.device_times is not None]
    events = _meta(pid, name, {HOST_TID: "host thread", DEVICE_TID: "device queue"})
    if not timed:
        return events
    off = clock_offset(timed)
    t0 = min(min(ln.host_start or 0.0 for ln in timed),
             min((ln.device_times or (0, 0, 0, 0))[0] - off for ln in timed))  # fmt: skip
    host: list[dict[str, Any]] = []
    dev: list[dict[str, Any]] = []
    for ln in timed:
        assert ln.host_start is not None and ln.device_times is not None
        q, s, b, e = ln.device_times
        args = {"enqueue": ln.enqueue, "repetition": ln.rep, "step": ln.step}
        host.append({"ph": "X", "name": f"enqueue {ln.enqueue} {ln.kernel}", "pid": pid,
                     "tid": HOST_TID, "ts": (ln.host_start - t0) / 1e3,
                     "dur": (ln.stages.get("host_enqueue") or 0.0) / 1e3, "args": args})
        dev.append({"ph": "X", "name": ln.kernel, "pid": pid, "tid": DEVICE_TID,
                    "ts": (b - off - t0) / 1e3, "dur": max(e - b, 0) / 1e3,
                    "args": {**args, "queued_to_submit_ns": s - q, "submit_to_start_ns": b - s,
                             "end_to_next_ns": ln.stages.get("end_to_next")}})  # fmt: skip
    return events + _ordered(host) + _ordered(dev)


def capture_events(pid: int, name: str, launches: Sequence[Launch]) -> list[dict[str, Any]]:
    """The capture's enqueue calls (host, from ``Time:``) and its kernels placed from their
    durations after their call, back to back on the queue."""
    events = _meta(pid, name, {HOST_TID: "host thread (as captured)",
                               DEVICE_TID: "device queue (durations placed)"})  # fmt: skip
    timed = [ln for ln in launches if ln.host_start is not None]
    if not timed:
        return events
    t0 = min(ln.host_start or 0.0 for ln in timed)
    host: list[dict[str, Any]] = []
    dev: list[dict[str, Any]] = []
    free = 0.0  # the queue's end so far (ns from t0)
    for ln in timed:
        assert ln.host_start is not None
        start = ln.host_start - t0
        call = ln.stages.get("host_enqueue") or 0.0
        args = {"enqueue": ln.enqueue}
        host.append({"ph": "X", "name": f"enqueue {ln.enqueue} {ln.kernel}", "pid": pid,
                     "tid": HOST_TID, "ts": start / 1e3, "dur": call / 1e3, "args": args})
        run = ln.stages.get("start_to_end")
        if run is None:
            continue
        wait = sum(ln.stages.get(k) or 0.0 for k in ("queued_to_submit", "submit_to_start"))
        begin = max(start + wait, free)
        free = begin + run
        dev.append({"ph": "X", "name": ln.kernel, "pid": pid, "tid": DEVICE_TID,
                    "ts": begin / 1e3, "dur": run / 1e3,
                    "args": {**args, "placed": "from the Device Time durations"}})
    return events + _ordered(host) + _ordered(dev)


def _ordered(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events of one track by start time (monotonic ``ts``, as viewers expect)."""
    return sorted(events, key=lambda ev: float(ev["ts"]))


def trace_json(
    capture: tuple[str, Sequence[Launch]], replays: Sequence[tuple[str, Sequence[Launch]]]
) -> dict[str, Any]:
    """The whole trace: the capture first (pid 1), then each replay."""
    events = capture_events(1, capture[0], capture[1])
    for k, (name, launches) in enumerate(replays, start=2):
        events += replay_events(k, name, launches)
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"generator": "cltui latency"}}  # fmt: skip
