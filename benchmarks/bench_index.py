"""Capture index benchmark: cltui's one-pass index vs plain ``mmap.find`` scans.

Each measurement runs in a fresh child process so that its peak RSS is its own; the
three modes take turns, and each figure is the best of ``repeat`` runs.  cltui's time is
``build_index`` alone: the import before it (numpy and the capture package, ~0.1 s, the
same for any log) is timed separately.  CPU time counts
the index's own worker processes (``RUSAGE_CHILDREN``), and the largest worker's peak RSS
is reported next to the main process's.
Run directly (``python benchmarks/bench_index.py LOGDIR``) or through
``benchmarks/run.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

CHILD = r"""
import json, mmap, resource, sys, time
from pathlib import Path
mode, d = sys.argv[1], Path(sys.argv[2])
log = d / "clintercept_log.txt"
size = log.stat().st_size
imported = 0.0
if mode == "cltui":  # the import (numpy, the capture package) is timed on its own
    t0 = time.perf_counter()
    from cltui.capture.log import build_index
    imported = time.perf_counter() - t0
t0 = time.perf_counter()
c0 = time.process_time()
hits = 0
if mode == "find_enqueue":
    # the least work that finds every enqueue call: a find loop over b"clEnqueue"
    with open(log, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        pos = mm.find(b"clEnqueue")
        while pos >= 0:
            hits += 1
            pos = mm.find(b"clEnqueue", pos + 9)
elif mode == "find_absent":
    # pure memory bandwidth: one find of a pattern that is not there
    with open(log, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        hits = mm.find(b"\x01\x02 not in any log \x03")
elif mode == "cltui":
    idx = build_index(log)
    hits = int(len(idx.numbers))
else:
    raise SystemExit(mode)
dt = time.perf_counter() - t0
kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # the index's worker processes, if any
cpu = time.process_time() - c0 + kids.ru_utime + kids.ru_stime
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
out = {"mode": mode, "seconds": dt, "cpu": cpu, "bytes": size, "hits": hits, "rss": rss}
out["import_s"] = imported
out["child_rss"] = kids.ru_maxrss * 1024
print(json.dumps(out))
"""


def measure(mode: str, capture: Path, repeat: int = 3) -> dict[str, Any]:
    """Best of ``repeat`` fresh-process runs (the page cache is warm after the first)."""
    best: dict[str, Any] | None = None
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", CHILD, mode, str(capture)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        res: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        if best is None or res["seconds"] < best["seconds"]:
            best = res
    assert best is not None
    return best


def run(capture: Path, label: str, repeat: int = 3) -> dict[str, Any]:
    # warm the page cache once, so that no side pays for the disk
    measure("find_absent", capture, 1)
    # the three take turns (the machine is shared): best of ``repeat`` fresh processes each
    modes = ["find_enqueue", "find_absent", "cltui"]
    best: dict[str, dict[str, Any]] = {}
    for r in range(repeat):
        for mode in modes[r % 3 :] + modes[: r % 3]:
            res = measure(mode, capture, 1)
            if mode not in best:
                best[mode] = res
            else:  # best wall and best CPU time, each on its own
                b = best[mode]
                b["seconds"] = min(b["seconds"], res["seconds"])
                b["cpu"] = min(b["cpu"], res["cpu"])
                b["rss"] = max(b["rss"], res["rss"])
                b["child_rss"] = max(b["child_rss"], res["child_rss"])
                b["import_s"] = min(b["import_s"], res["import_s"])
    base, bw, ours = best["find_enqueue"], best["find_absent"], best["cltui"]
    mb = ours["bytes"] / 1e6
    return {
        "label": label,
        "log_mb": round(mb, 1),
        "enqueues": ours["hits"],
        "repeat": repeat,
        "cltui_s": round(ours["seconds"], 3),
        "cltui_import_s": round(ours["import_s"], 3),
        "cltui_mb_s": round(mb / ours["seconds"], 1),
        "cltui_enqueues_s": round(ours["hits"] / ours["seconds"]),
        "cltui_peak_rss_mb": round(ours["rss"] / 1e6, 1),
        "cltui_worker_peak_rss_mb": round(ours["child_rss"] / 1e6, 1),
        "find_enqueue_s": round(base["seconds"], 3),
        "find_enqueue_mb_s": round(mb / base["seconds"], 1),
        "find_enqueue_enqueues_s": round(ours["hits"] / base["seconds"]),
        "find_enqueue_peak_rss_mb": round(base["rss"] / 1e6, 1),
        "ratio_vs_find_enqueue": round(base["seconds"] / ours["seconds"], 2),
        "cltui_cpu_s": round(ours["cpu"], 3),
        "find_enqueue_cpu_s": round(base["cpu"], 3),
        "ratio_cpu_vs_find_enqueue": round(base["cpu"] / ours["cpu"], 2),
        "find_absent_s": round(bw["seconds"], 3),
        "find_absent_mb_s": round(mb / bw["seconds"], 1),
        "ratio_vs_find_absent": round(bw["seconds"] / ours["seconds"], 2),
    }


if __name__ == "__main__":
    print(json.dumps(run(Path(sys.argv[1]), Path(sys.argv[1]).name, 1), indent=2))
