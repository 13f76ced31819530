"""Synthesise a >= 10^6-enqueue capture by repeating heat2d_large's records.

The heat2d_large log (204,011 enqueues) is real; this keeps its header and its
first 1000 enqueues, then repeats the records of enqueues 1000..20999 with the
enqueue counters renumbered (``EnqueueCounter: N`` and ``(enqueue N)``), so
every line is a real line with a plausible counter.

    python benchmarks/synth_log.py HEAT2D_DIR OUTDIR [--enqueues 1000000]
"""

from __future__ import annotations

import argparse
import mmap
import re
import sys
import time
from pathlib import Path

NUM = re.compile(rb"(EnqueueCounter: |\(enqueue )(\d+)")


def line_start_of_counter(mm: mmap.mmap, counter: int) -> int:
    """Offset where the record of enqueue ``counter`` begins.

    That is just after the entry/exit line pair of enqueue ``counter - 1``: every
    later line (event releases, clSetKernelArg, ...) already carries ``counter``.
    """
    pat = re.compile(rb"\n>>>> [^\n]*clEnqueue\w+[^\n]*; EnqueueCounter: %d\n" % (counter - 1))
    m = pat.search(mm)
    if m is None:
        raise SystemExit(f"enqueue {counter - 1} not found in the template log")
    pos = m.end()
    if mm[pos : pos + 5] == b"<<<< ":
        pos = mm.find(b"\n", pos) + 1
    return pos


def synthesise(src: Path, out: Path, enqueues: int) -> int:
    log = src / "clintercept_log.txt"
    out.mkdir(parents=True, exist_ok=True)
    with log.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        a, b = 1000, 21000
        start = line_start_of_counter(mm, a)
        stop = line_start_of_counter(mm, b)
        header = mm[:start]
        template = mm[start:stop]
    pieces = NUM.split(template)  # text, prefix, number, text, prefix, number, ...
    texts = pieces[0::3]
    prefixes = pieces[1::3]
    numbers = [int(n) for n in pieces[2::3]]
    period = b - a
    reps = max(1, -(-(enqueues - a) // period))
    with (out / "clintercept_log.txt").open("wb") as w:
        w.write(header)
        for k in range(reps):
            delta = k * period
            buf = bytearray(texts[0])
            for i, n in enumerate(numbers):
                buf += prefixes[i]
                buf += str(n + delta).encode()
                buf += texts[i + 1]
            w.write(buf)
        w.write(b"CLIntercept is shutting down...\n... shutdown complete.\n")
    total = a + reps * period
    (out / "clintercept_report.txt").write_text(f"Total Enqueues: {total}\n\n")
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("heat2d", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--enqueues", type=int, default=1_000_000)
    ns = ap.parse_args(argv)
    t0 = time.perf_counter()
    total = synthesise(ns.heat2d, ns.out, ns.enqueues)
    size = (ns.out / "clintercept_log.txt").stat().st_size
    print(f"wrote {total} enqueues, {size / 1e6:.0f} MB in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
