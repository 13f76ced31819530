"""Pathological logs: each indexed next to an intact log of the same size (same run).

    python benchmarks/pathological.py [--sizes 1,16,256,1024] [--repeat 2] [--json OUT]
    python benchmarks/run.py --only pathological     (the same, and its BENCHMARKS.md section)

The intact log repeats the body of a real log (``pyopencl_lib_pocl``'s by default) with its
counters renumbered, between the real header and footer, until it reaches the size.  Each
pathological log has exactly that size (MB = 2**20 bytes) and is made from the intact one
or from scratch (:data:`KINDS`): NUL runs at the head, in the middle, at the tail and many
of them, one huge line, a log that is one line, lines of a repeated scanner tag, short
orphan lines of every tag, binary garbage, one byte repeated.  Each figure is the best of
``repeat`` fresh-process ``build_index`` runs, the pathological and the intact log taking
turns; the ratio pathological / intact has the goal <= 1.5 (reading is linear whatever the
content).  Logs are generated into a temporary folder and deleted after each size.

The generators are also used by the hang tests (``tests/test_capture_fuzz.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHARED = Path(os.environ.get("CLTUI_SHARED", ROOT.parent / "shared")).resolve()
TEMPLATE = SHARED / "captures" / "pyopencl_lib_pocl" / "clintercept_log.txt"
SIZES_MB = (1, 16, 256, 1024)
GOAL = 1.5
MB = 1 << 20

_NUM = re.compile(rb"(EnqueueCounter: |\(enqueue )(\d+)")

# every literal the scanner keys on (a line of one of them repeated, or many short lines)
TAGS: tuple[bytes, ...] = (
    b"clEnqueue",
    b">>>> clEnqueueNDRangeKernel",
    b"\x00",
    b"Device Time for ",
    b" (enqueue 1) = ",
    b": returned ",
    b"<<<< clCreateBuffer: returned 0x1",
    b"clReleaseMemObject: [ ref count = 1 ] mem = ",
    b"Dumping program to file",
    b"-------> Start of Build Log",
    b"Control ",
    b"-=-=-=-=-=-=-=-=",
    b"kernel = 0x1, index = ",
    b"device = ",
    b" (CL_DEVICE_TYPE_CPU",
    b"; EnqueueCounter: ",
    b"size = 4, ",
    b'#line 1 "',
    b"__kernel void k(",
    b"/*",
    b'"',
)

# orphan lines: tags the scanner acts on, each line on its own (exits without entries,
# device times without enqueues, side lines, releases, entries with broken counters)
ORPHANS: tuple[bytes, ...] = (
    b"<<<< clCreateBuffer: returned 0x1 -> CL_SUCCESS\n",
    b"<<<< Time: 1 clCreateKernel: returned 0x2 -> CL_SUCCESS\n",
    b"Device Time for k (enqueue 7) = 1 ns (queued -> submit), 2 ns (submit -> start), "
    b"3 ns (start -> end)\n",
    b"Device Time for k k k k k k k k k k k k k k k k k k\n",
    b">>>> clReleaseMemObject: [ ref count = 1 ] mem = 0x5; EnqueueCounter: 1\n",
    b"Dumping program to file (inject): /tmp/CLI_0001_ABCDEF01_source.cl\n",
    b"Control DumpDir is set to non-default value: /x\n",
    b">>>> clSetKernelArg( k ): kernel = 0x2, index = 0, size = 8, value = 0x5\n",
    b">>>> clEnqueueNDRangeKernel( k ): queue = 0x1, kernel = 0x2; EnqueueCounter: x\n",
    b"clEnqueueNDRangeKernel clEnqueueNDRangeKernel clEnqueueNDRangeKernel\n",
)


def split_template(path: Path = TEMPLATE) -> tuple[bytes, bytes, bytes]:
    """(header, body, footer) of a real log: the body is what repeats."""
    data = path.read_bytes()
    start = data.index(b"\n>>>> ") + 1
    stop = data.rindex(b"CLIntercept is shutting down")
    return data[:start], data[start:stop], data[stop:]


def heat2d_template(folder: Path) -> tuple[bytes, bytes, bytes]:
    """(header, body, footer) from heat2d_large's real log: its header and first 1000
    enqueues, the records of enqueues 1000..2999 as the body (as ``synth_log.py`` does)."""
    import mmap

    sys.path.insert(0, str(HERE))
    from synth_log import line_start_of_counter

    log = folder / "clintercept_log.txt"
    with log.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        a = line_start_of_counter(mm, 1000)
        b = line_start_of_counter(mm, 3000)
        stop = mm.rfind(b"CLIntercept is shutting down")
        header, body, footer = mm[:a], mm[a:b], mm[stop:] if stop >= 0 else b""
    return header, body, footer


def default_template() -> tuple[tuple[bytes, bytes, bytes], str]:
    """heat2d_large's records where ``$CLTUI_HEAT2D_DIR`` has its log (the densest real
    log: the strictest baseline), else pyopencl_lib_pocl's."""
    h = Path(os.environ.get("CLTUI_HEAT2D_DIR", "/tmp/heat2d/heat2d_large"))
    if (h / "clintercept_log.txt").is_file():
        return heat2d_template(h), "heat2d_large's records"
    return split_template(), "pyopencl_lib_pocl's records"


def intact(size: int, template: tuple[bytes, bytes, bytes] | None = None) -> bytes:
    """A valid log of exactly ``size`` bytes (the body repeated, counters renumbered; the
    last repetition cut at a line end and padded with a comment-like line)."""
    header, body, footer = template or split_template()
    pieces = _NUM.split(body)
    texts, prefixes = pieces[0::3], pieces[1::3]
    numbers = [int(n) for n in pieces[2::3]]
    period = max(numbers) - min(numbers) + 1 if numbers else 1
    out = bytearray(header)
    room = size - len(footer)
    k = 0
    while len(out) < room:
        delta = k * period
        rep = bytearray(texts[0])
        for i, n in enumerate(numbers):
            rep += prefixes[i]
            rep += b"%d" % (n + delta)
            rep += texts[i + 1]
        out += rep
        k += 1
    del out[room:]
    nl = out.rfind(b"\n")
    cut = nl + 1 if nl >= 0 else 0
    pad = room - cut
    del out[cut:]
    if pad:
        out += (b"#" * (pad - 1) + b"\n") if pad > 1 else b"\n"
    out += footer
    return bytes(out[:size]) if len(out) >= size else bytes(out) + b"\n" * (size - len(out))


def _nul(log: bytes, a: int, b: int) -> bytes:
    return log[:a] + b"\x00" * (b - a) + log[b:]


def _repeated_tags(size: int) -> bytes:
    """Lines of 64 KiB, each one scanner tag repeated (no separator), cycling the tags."""
    out = bytearray()
    i = 0
    while len(out) < size:
        t = TAGS[i % len(TAGS)]
        out += t * (65535 // len(t)) + b"\n"
        i += 1
    return bytes(out[:size])


def _orphans(size: int) -> bytes:
    block = b"".join(ORPHANS)
    return (block * (size // len(block) + 1))[:size]


def _garbage(size: int) -> bytes:
    import numpy as np

    return bytes(np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8).tobytes())


KINDS: dict[str, tuple[str, Callable[[bytes], bytes]]] = {
    "nul_head": ("a NUL run over the first half", lambda g: _nul(g, 0, len(g) // 2)),
    "nul_middle": (
        "a NUL run over the middle half",
        lambda g: _nul(g, len(g) // 4, 3 * len(g) // 4),
    ),
    "nul_tail": ("a NUL run over the last half", lambda g: _nul(g, len(g) // 2, len(g))),
    "nul_runs": (
        "64 NUL runs, a quarter of the log",
        lambda g: _many_nul_runs(g, 64),
    ),
    "huge_line": (
        "the middle half one line",
        lambda g: (
            g[: len(g) // 4]
            + g[len(g) // 4 : 3 * len(g) // 4].replace(b"\n", b" ")
            + g[3 * len(g) // 4 :]
        ),
    ),
    "one_line": ("the whole log one line", lambda g: g.replace(b"\n", b" ")),
    "repeated_tags": ("64 KiB lines of one tag repeated", lambda g: _repeated_tags(len(g))),
    "garbage": ("random bytes", lambda g: _garbage(len(g))),
    "one_byte": ("one byte repeated", lambda g: b"A" * len(g)),
    "all_nul": ("NUL bytes only", lambda g: b"\x00" * len(g)),
}


# not in the benchmark: a log made only of lines the scanner acts on (orphan exits, side
# lines, releases, enqueue lines) is a dense log, not a damaged one: each line costs its
# Python work, ~8x an intact log's per byte (linear; the hang tests use it)
EXTRA_KINDS: dict[str, tuple[str, Callable[[bytes], bytes]]] = {
    "orphan_tags": ("short orphan lines of every tag", lambda g: _orphans(len(g))),
}


def _many_nul_runs(log: bytes, runs: int) -> bytes:
    b = bytearray(log)
    step = len(b) // runs
    width = step // 4
    for i in range(runs):
        a = i * step + step // 3
        b[a : a + width] = b"\x00" * width
    return bytes(b)


def make(kind: str, size: int, template: tuple[bytes, bytes, bytes] | None = None) -> bytes:
    """The pathological log ``kind`` of ``size`` bytes."""
    return {**KINDS, **EXTRA_KINDS}[kind][1](intact(size, template))


# ---------------------------------------------------------------------------- measuring

CHILD = r"""
import json, sys, time
from pathlib import Path
from cltui.capture.log import build_index
best = None
for _ in range(int(sys.argv[2])):  # best of N in this process (small logs: timer noise)
    t0 = time.perf_counter()
    idx = build_index(Path(sys.argv[1]))
    dt = time.perf_counter() - t0
    n = int(len(idx.numbers))
    idx.close()
    best = dt if best is None else min(best, dt)
print(json.dumps({"seconds": best, "enqueues": n}))
"""


def _index_time(log: Path, timeout: float, inner: int = 1) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(log), str(inner)],
        check=True,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    ).stdout
    res: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return res


def _best(log: Path, repeat: int, timeout: float, inner: int) -> dict[str, Any]:
    best: dict[str, Any] | None = None
    for _ in range(repeat):
        r = _index_time(log, timeout, inner)
        if best is None or r["seconds"] < best["seconds"]:
            best = r
    assert best is not None
    return best


def run(
    sizes_mb: tuple[int, ...] = SIZES_MB,
    repeat: int = 2,
    kinds: tuple[str, ...] = tuple(KINDS),
    log: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """One row per (size, kind): best wall times of the intact and the pathological log."""
    template, what = default_template()
    log(f"  pathological: intact logs repeat {what}")
    rows: list[dict[str, Any]] = []
    for mb in sizes_mb:
        size = mb * MB
        timeout = 60.0 + 2.0 * mb  # generous: a hang is reported, not waited for
        inner = 7 if mb <= 4 else 3 if mb <= 64 else 1
        with tempfile.TemporaryDirectory(prefix="cltui-patho-") as tmp:
            good = Path(tmp) / "intact.txt"
            good_bytes = intact(size, template)
            good.write_bytes(good_bytes)
            _index_time(good, timeout)  # warm the page cache
            for kind in kinds:
                bad = Path(tmp) / f"{kind}.txt"
                bad.write_bytes(KINDS[kind][1](good_bytes))
                t_good: float | None = None
                t_bad: float | None = None
                error = ""
                n_good = n_bad = 0
                try:
                    turns = max(repeat, 5) if mb <= 16 else repeat  # small: more noise
                    for r in range(turns):  # the two take turns
                        pair = [(good, True), (bad, False)]
                        for path, is_good in pair if r % 2 == 0 else pair[::-1]:
                            res = _best(path, 1, timeout, inner)
                            if is_good:
                                t_good = min(t_good or res["seconds"], res["seconds"])
                                n_good = res["enqueues"]
                            else:
                                t_bad = min(t_bad or res["seconds"], res["seconds"])
                                n_bad = res["enqueues"]
                except subprocess.TimeoutExpired:
                    error = f"no answer within {timeout:.0f} s (a hang)"
                except subprocess.CalledProcessError as e:
                    tail = (e.stderr or "").strip().splitlines()[-1:] or ["?"]
                    error = f"failed: {tail[0]}"
                finally:
                    bad.unlink(missing_ok=True)
                ratio = t_bad / t_good if t_bad and t_good else None
                row = {
                    "size_mb": mb,
                    "kind": kind,
                    "what": KINDS[kind][0],
                    "intact_s": t_good,
                    "pathological_s": t_bad,
                    "intact_enqueues": n_good,
                    "pathological_enqueues": n_bad,
                    "ratio": ratio,
                    "error": error,
                }
                rows.append(row)
                log(
                    f"  pathological {mb} MB {kind}: "
                    + (error or f"{t_bad:.3f} s vs intact {t_good:.3f} s, ratio {ratio:.2f}")
                )
            del good_bytes
    return rows


def figures(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows as run.py figures (one per size and kind)."""
    out: list[dict[str, Any]] = []
    for r in rows:
        ok = r["ratio"] is not None and r["ratio"] <= GOAL and not r["error"]
        ours = (
            r["error"]
            if r["error"]
            else f"{r['pathological_s']:.3f} s ({r['pathological_enqueues']:,} enqueues found)"
        )
        base = (
            f"{r['intact_s']:.3f} s ({r['intact_enqueues']:,} enqueues)"
            if r["intact_s"] is not None
            else "-"
        )
        out.append(
            {
                "name": f"{r['size_mb']} MB, {r['kind']}: {r['what']}",
                "ours": ours,
                "base": base,
                "ratio": r["ratio"],
                "ratio_def": "pathological / intact index wall time",
                "goal": f"<= {GOAL}",
                "ok": ok,
                "measured": "",
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default=",".join(str(s) for s in SIZES_MB), help="MB, comma list")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--json", type=Path, help="write the rows here")
    ns = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = run(
        tuple(int(s) for s in ns.sizes.split(",") if s),
        ns.repeat,
        tuple(k for k in ns.kinds.split(",") if k),
    )
    if ns.json is not None:
        ns.json.write_text(json.dumps({"raw": rows, "figures": figures(rows)}, indent=1))
    missed = [r for r in rows if r["error"] or r["ratio"] is None or r["ratio"] > GOAL]
    print(f"{len(rows)} logs, {len(missed)} over the goal, {time.perf_counter() - t0:.0f} s")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
