"""Pathological kernel sources: ``parse_program`` of each next to an intact source of the same
size, in the same run, the two taking turns, each in a fresh child process (no cache).

The intact source is the largest real one of the shared captures (pyopencl's 1.6 MB
``CLI_0055`` of ``pyopencl_lib_oclgrind``), repeated whole: 1 and 2 copies (``--copies``).
Each pathological source has exactly its size:

    python benchmarks/pathological_sources.py [--copies 1,2] [--turns 2] [--kinds K,...]
                                              [--json out.json]

The goal is linear time: each pathological source's parse time grows from the smallest to
the largest size no faster than the intact source's (ratio of the growths <= 1.5).  Its time
against the intact source of the same size is shown too: a source made of one-character
tokens costs more per byte than real code (pcpp spends ~10 us a token, and a real source's
function bodies are blanked before it), but linearly.  Exit 0 when every growth is within the
goal, 1 otherwise.
Set ``CLTUI_SHARED`` when the shared captures are not in ``../shared``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GOAL = 1.5
SOURCE = "pyopencl_lib_oclgrind/CLI_0055_EF2E4E14_source.cl"


def _shared() -> Path:
    return Path(os.environ.get("CLTUI_SHARED") or ROOT.parent / "shared")


def _fit(unit: bytes, size: int) -> bytes:
    return (unit * (size // max(1, len(unit)) + 1))[:size]


def _random(size: int) -> bytes:
    return random.Random(1).randbytes(size)


_KERNEL = b"__kernel void k(__global float* a) { a[0] = 1; }\n"


def _long_line(head: bytes, unit: bytes, tail: bytes, size: int) -> bytes:
    """``head unit unit ... tail`` as one line, then a kernel: ``size`` bytes in all."""
    body = _fit(unit, size - len(head) - len(tail) - 1 - len(_KERNEL))
    return head + body + tail + b"\n" + _KERNEL


def _control_lines(size: int) -> bytes:
    return _fit(b"\x1b[31m{ /* \x07 binary ( ' \"\n", size)


KINDS: dict[str, tuple[str, Callable[[bytes], bytes]]] = {
    "unclosed_dq": ('one line of `"\\` pairs (a string literal tried at every quote)',
                    lambda t: _fit(b'"\\', len(t))),
    "unclosed_sq": ("one line of `'\\` pairs (a char literal tried at every quote)",
                    lambda t: _fit(b"'\\", len(t))),
    "random_bytes": ("random bytes", lambda t: _random(len(t))),
    "control_lines": ("lines of control characters, open braces, comments and quotes",
                      lambda t: _control_lines(len(t))),
    "one_line": ("the intact source with its line breaks turned into spaces",
                 lambda t: t.replace(b"\n", b" ")),
    "one_word": ("one identifier as long as the file", lambda t: _fit(b"a", len(t))),
    "open_braces": ("`{` repeated", lambda t: _fit(b"{", len(t))),
    "open_parens": ("`f(` repeated: a declaration that never closes",
                    lambda t: _fit(b"f(", len(t))),
    "defines": ("`#define A A` lines (self-referencing macros)",
                lambda t: _fit(b"#define A A\nA\n", len(t))),
    "long_statement": ("one file-scope statement on one line (`float x = 0 + a*b ...;`), then a "
                       "kernel", lambda t: _long_line(b"float x = 0", b" + a*b", b";", len(t))),
    "long_define": ("one `#define` line as long as the file (a table), then a kernel",
                    lambda t: _long_line(b"#define TABLE ", b"1.0f, ", b"", len(t))),
}

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from cltui.capture.signature import parse_program
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
t1 = time.perf_counter()
prog = parse_program(text, "")
t2 = time.perf_counter()
import resource
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": t2 - t1, "kernels": len(prog.kernels), "peak_mb": peak}))
"""


def _time(path: Path, timeout: float) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)],
        check=True, capture_output=True, text=True, timeout=timeout, env=env,
    ).stdout  # fmt: skip
    res: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return res


def run(copies: tuple[int, ...] = (1, 2), turns: int = 2,
        log: Callable[[str], None] = print,
        kinds: tuple[str, ...] = ()) -> list[dict[str, Any]]:  # fmt: skip
    """One row per (size, kind): best wall times of the intact and the pathological source."""
    real = (_shared() / "captures" / SOURCE).read_bytes()
    rows: list[dict[str, Any]] = []
    for n in copies:
        good_bytes = real * n
        timeout = 120.0 * n
        with tempfile.TemporaryDirectory(prefix="cltui-patho-src-") as tmp:
            good = Path(tmp) / "intact.cl"
            good.write_bytes(good_bytes)
            for kind, (what, make) in KINDS.items():
                if kinds and kind not in kinds:
                    continue
                bad = Path(tmp) / f"{kind}.cl"
                data = make(good_bytes)
                assert len(data) == len(good_bytes), kind
                bad.write_bytes(data)
                best = {True: float("inf"), False: float("inf")}
                found = {True: 0, False: 0}
                peak = {True: 0.0, False: 0.0}  # the child's peak RSS, MB (python included)
                error = ""
                try:
                    for r in range(turns):
                        pair = [(good, True), (bad, False)]
                        for path, is_good in pair if r % 2 == 0 else pair[::-1]:
                            res = _time(path, timeout)
                            best[is_good] = min(best[is_good], res["seconds"])
                            found[is_good] = res["kernels"]
                            peak[is_good] = max(peak[is_good], res["peak_mb"])
                except subprocess.TimeoutExpired:
                    error = f"no answer within {timeout:.0f} s (a hang)"
                except subprocess.CalledProcessError as e:
                    tail = (e.stderr or "").strip().splitlines()[-1:] or ["?"]
                    error = f"failed: {tail[0]}"
                ratio = None if error else best[False] / best[True]
                rows.append({
                    "size_mb": round(len(good_bytes) / 2**20, 1), "kind": kind, "what": what,
                    "intact_s": best[True], "pathological_s": None if error else best[False],
                    "intact_kernels": found[True], "pathological_kernels": found[False],
                    "ratio": ratio, "error": error,
                    "intact_peak_mb": peak[True], "pathological_peak_mb": peak[False],
                })  # fmt: skip
                log(
                    f"  source {rows[-1]['size_mb']} MB {kind}: "
                    + (error or f"{best[False]:.3f} s vs intact {best[True]:.3f} s, "
                       f"ratio {ratio:.2f}; peak RSS {peak[False]:.0f} MB vs {peak[True]:.0f}")
                )  # fmt: skip
    return rows


def figures(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One run.py figure per kind: how its time grows from the smallest to the largest size,
    against how the intact source's grows (1.0: exactly as linear as the intact parse)."""
    out: list[dict[str, Any]] = []
    for kind in dict.fromkeys(r["kind"] for r in rows):
        mine = sorted((r for r in rows if r["kind"] == kind), key=lambda r: r["size_mb"])
        lo, hi = mine[0], mine[-1]
        error = next((r["error"] for r in mine if r["error"]), "")
        growth = None
        if not error and lo is not hi:
            bad = hi["pathological_s"] / lo["pathological_s"]
            growth = bad / (hi["intact_s"] / lo["intact_s"])
        ok = growth is not None and growth <= GOAL
        ours = error or ", ".join(
            f"{r['size_mb']} MB {r['pathological_s']:.2f} s ({r['ratio']:.1f}x intact)"
            for r in mine
        )
        out.append({
            "name": f"{kind}: {lo['what']}",
            "ours": ours,
            "base": ", ".join(f"{r['size_mb']} MB {r['intact_s']:.2f} s" for r in mine),
            "ratio": growth,
            "ratio_def": "growth of its parse time from the smallest to the largest size / "
                         "the intact source's growth",
            "goal": f"<= {GOAL}",
            "ok": ok,
            "measured": "",
        })  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--copies", default="1,2", help="copies of the real source, comma list")
    ap.add_argument("--turns", type=int, default=2)
    ap.add_argument("--kinds", default="", help="only these kinds, comma list")
    ap.add_argument("--json", type=Path, help="write the rows here")
    ns = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = run(tuple(int(c) for c in ns.copies.split(",") if c), ns.turns,
               kinds=tuple(k for k in ns.kinds.split(",") if k))
    if ns.json is not None:
        ns.json.write_text(json.dumps({"raw": rows, "figures": figures(rows)}, indent=1))
    missed = [f for f in figures(rows) if not f["ok"]]
    print(f"{len(rows)} sources, {len(missed)} kinds over the goal, "
          f"{time.perf_counter() - t0:.0f} s")  # fmt: skip
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
