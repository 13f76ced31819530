"""``cltui explain`` of a kernel of about 1,000 lines on PoCL vs Oclgrind (issue 30: <= 60 s).

A copy of ``planted_divergence_pocl`` (in a temporary folder, removed at the end) whose
``contraction`` kernel (enqueue 1, 4,096 work-items) is replaced by a generated one of
``--lines`` lines with the same arguments: a chain of multiplies and adds, one ``mad`` in
the middle (where PoCL and Oclgrind part: PoCL does not fuse it, Oclgrind does), the
chain carried on to the output.  Times the whole command (the runs, the controlled
rebuilds, the instrumentation and the traced runs on both devices) and checks that the
report names the ``mad`` line.  Run with ``nice``: ``nice -n 10 .venv/bin/python
benchmarks/bench_explain.py``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from click.testing import CliRunner

from cltui.cli import main

SOURCE = Path(__file__).resolve().parents[1] / "../shared/captures/planted_divergence_pocl"
KERNEL_FILE = "CLI_0000_58A0D811_source.cl"


def kernel(lines: int) -> tuple[str, int]:
    """The generated kernel and the line of its ``mad``."""
    head = ["", "__kernel void contraction(__global const float *a, __global const float *b,",
            "                          __global const float *c, __global float *out)", "{",
            "    size_t i = get_global_id(0);", "    float x0 = a[i] + b[i];"]  # fmt: skip
    body: list[str] = []
    n = lines - len(head) - 3
    mid = n // 2
    mad_line = 0
    for k in range(1, n):
        if k == mid:
            body.append(f"    float x{k} = mad(x{k - 1}, b[i], c[i]);")
            mad_line = len(head) + len(body)
        elif k % 2:
            body.append(f"    float x{k} = x{k - 1} * 0.99990f;")
        else:
            body.append(f"    float x{k} = x{k - 1} + 0.00010f;")
    tail = [f"    out[i] = x{n - 1} * x{n - 1};", "}", ""]
    return "\n".join(head + body + tail), mad_line


def main_() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1000)
    args = ap.parse_args()
    src, mad_line = kernel(args.lines)
    tmp = Path(tempfile.mkdtemp(prefix="cltui-bench-explain-"))
    try:
        cap = tmp / "cap"
        shutil.copytree(SOURCE.resolve(), cap)
        (cap / KERNEL_FILE).write_text(src)
        t0 = time.perf_counter()
        res = CliRunner().invoke(main, ["explain", str(cap), "1", "-d", "pocl", "-d",
                                        "oclgrind", "--json"])  # fmt: skip
        took = time.perf_counter() - t0
        rep = json.loads(res.stdout)
        line = rep.get("line", {})
        print(f"kernel: {src.count(chr(10))} lines, {line.get('sites')} statements recorded, "
              f"{len(line.get('items', []))} work-items traced")
        print(f"verdict: {rep['verdict']['line'][:160]}")
        print(f"which line: {line.get('text')}")
        named = line.get("site", {}).get("line") == mad_line
        print(f"names the mad's line {mad_line}: {'yes' if named else 'NO'}")
        print(f"explain took {took:.1f} s (exit {res.exit_code})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main_()
