"""TUI benchmark: time to first paint and keypress-to-repaint latency.

    .venv/bin/python benchmarks/tui_bench.py [--heat2d DIR] [--log-dir DIR] [--n 1000000]

Runs the app headless (``App.run_test``) at 120x36 on:
- the heat2d_large capture (204,011 enqueues, 444 MB log) when ``--heat2d`` is given or found
  at /tmp/heat2d/heat2d_large;
- an in-memory synthetic capture of ``--n`` enqueues (benchmarks/synthcap.py: the list code is
  the same, only the index is not read from disk);
- a synthesised log (benchmarks/synth_log.py output) when ``--log-dir`` is given.

First paint is the time from starting the app to its first frame (the index fills in a worker
afterwards); "index ready" is when the list is filled.  Filter as typed: each key of
FILTER_TEXT typed into ``/`` (the list filters every enqueue with each key) from the press to
the list's first repainted line; sort: ``S`` (by device time) to the same.  Key latency is
the time from ``pilot.press(key)`` to the compositor asking the list for its first line of
the new frame (the list is drawn line by line, so that is when the repaint starts; the whole
list page costs the "render" figure more), median and max of repeated presses: the figure to compare
with the 16 ms budget.  "CPU per key" is the process CPU time of all threads per key (the
enqueue decode for the detail panes runs in a worker thread after the list repainted) minus
that of a key bound to nothing.  "render" is the cost of
drawing every visible list line after a jump.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.synthcap import SyntheticCapture
from cltui.tui.app import CltuiApp, make_app

SIZE = (120, 36)
NOOP_KEY = "f12"  # bound to nothing: the harness's own cost of a key press and idle wait
KEYS = ["down", "pagedown", "shift+down", "n", "up", "pageup", "end", "home"]
REPEAT = 15
FILTER_TEXT = "heat_sten time>1us"  # typed into '/' a key at a time


async def measure(app: CltuiApp, label: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    async with app.run_test(size=SIZE) as pilot:
        first_paint = time.perf_counter() - t0
        screen = app.main
        while screen.capture is None and screen.error is None:
            await pilot.pause(0.005)
        ready = time.perf_counter() - t0
        await pilot.pause()
        await app.workers.wait_for_complete()
        lst = screen.enqueue_list
        lst.focus()
        latencies: dict[str, list[float]] = {}
        cpu: dict[str, float] = {}
        c0 = time.process_time()
        noop = []
        for _ in range(REPEAT):
            start = time.perf_counter()
            await pilot.press(NOOP_KEY)
            noop.append(time.perf_counter() - start)
        idle_cpu = (time.process_time() - c0) / REPEAT
        base = statistics.median(noop)
        painted: list[float] = []
        original = lst.render_line

        def timed_render_line(y: int) -> Any:
            if not painted:
                painted.append(time.perf_counter())
            return original(y)

        lst.render_line = timed_render_line  # type: ignore[method-assign]
        for key in KEYS:
            times = []
            c0 = time.process_time()
            for _ in range(REPEAT):
                await pilot.pause()
                painted.clear()
                start = time.perf_counter()
                await pilot.press(key)
                if painted:  # keys that change nothing (home at the top) repaint nothing
                    times.append(painted[0] - start)
            cpu[key] = (time.process_time() - c0) / REPEAT - idle_cpu
            latencies[key] = times or [0.0]
        filter_ms, sort_ms = await filter_and_sort(pilot, app, painted)
        lst.render_line = original  # type: ignore[method-assign]
        # raw render cost of a full list page far into the capture
        assert screen.capture is not None, screen.error
        screen.jump_to(int(screen.capture.numbers[len(screen.capture) // 2]))
        lst._cache.clear()
        start = time.perf_counter()
        for y in range(lst.size.height):
            lst.render_line(y)
        render = time.perf_counter() - start
        rows = len(lst.view)
    return {
        "label": label,
        "rows": rows,
        "first_paint_s": first_paint,
        "index_ready_s": ready,
        "page_render_ms": render * 1e3,
        "noop_ms": base * 1e3,
        "filter_keys_ms": filter_ms,  # per key typed into '/': press -> the list's repaint
        "filter_text": FILTER_TEXT,
        "sort_ms": sort_ms,  # S (by device time) -> the list's repaint
        "keys_ms": {
            k: (statistics.median(v) * 1e3, max(v) * 1e3, cpu[k] * 1e3)
            for k, v in latencies.items()
        },
    }


async def filter_and_sort(
    pilot: Any, app: CltuiApp, painted: list[float]
) -> tuple[list[float], float]:
    """Type FILTER_TEXT into ``/`` one key at a time (the list filters with every key):
    each key's press to the list's first repainted line; then ``S`` (sort by device time,
    the slowest first) to the list's first repainted line.  Both end as they began."""
    screen = app.main
    await pilot.press("slash")
    per_key = []
    for ch in FILTER_TEXT:
        await pilot.pause()
        painted.clear()
        start = time.perf_counter()
        await pilot.press("space" if ch == " " else ch)
        if painted:
            per_key.append((painted[0] - start) * 1e3)
    await pilot.press("escape")
    await pilot.pause()
    painted.clear()
    start = time.perf_counter()
    await pilot.press("S")
    sort = (painted[0] - start) if painted else float("nan")
    screen.set_sort("number", False)
    await pilot.pause()
    return per_key, sort * 1e3


def report(r: dict[str, Any]) -> None:
    print(f"\n{r['label']}: {r['rows']:,} enqueues")
    print(f"  first paint        {r['first_paint_s'] * 1e3:8.1f} ms")
    print(f"  index ready        {r['index_ready_s'] * 1e3:8.1f} ms")
    print(f"  full page render   {r['page_render_ms']:8.2f} ms (uncached, {SIZE[1]} lines)")
    print(f"  (a no-op key through the test harness: {r['noop_ms']:.1f} ms wall)")
    print("  key          key->list repaint median / max    CPU per key (all threads)")
    for key, (median, worst, cpu) in r["keys_ms"].items():
        print(f"  {key:<12} {median:8.2f} ms / {worst:7.2f} ms      {cpu:8.2f} ms")
    fk = r["filter_keys_ms"] or [0.0]
    print(f"  filter as typed ({r['filter_text']!r}, {len(fk)} keys): key->list repaint "
          f"median {statistics.median(fk):.2f} ms / max {max(fk):.2f} ms")
    print(f"  sort by device time (S): {r['sort_ms']:.1f} ms to the list's repaint")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--heat2d", type=Path, default=Path("/tmp/heat2d/heat2d_large"))
    ap.add_argument("--log-dir", type=Path, default=None, help="a synth_log.py output folder")
    ap.add_argument("--n", type=int, default=1_000_000)
    args = ap.parse_args()
    results = []
    if (args.heat2d / "clintercept_log.txt").is_file():
        results.append(asyncio.run(measure(make_app(args.heat2d), "heat2d_large (real log)")))
    else:
        print(f"skipping heat2d: no log under {args.heat2d}")
    synthetic = SyntheticCapture(args.n)

    def synth_open(path: Path, progress: Any, cancel: threading.Event) -> Any:
        return synthetic

    results.append(
        asyncio.run(measure(make_app("synthetic", opener=synth_open), "synthetic (in memory)"))
    )
    if args.log_dir is not None:
        results.append(asyncio.run(measure(make_app(args.log_dir), "synthetic log (real index)")))
    for r in results:
        report(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
