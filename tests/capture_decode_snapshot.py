"""Snapshot every decoded enqueue of the shared captures, to check that a change to the
decoding (``Capture.enqueue``, ``LogIndex.kernel_args_at``) leaves the results identical.

    python tests/capture_decode_snapshot.py write OUT.jsonl [fwd|rev|shuf]
    python tests/capture_decode_snapshot.py compare A.jsonl B.jsonl

``write`` decodes every enqueue of the four small captures and ~4,300 of heat2d (the first
1,500, 122000-123499, the last 500 and 800 random ones) in the given order and writes one
JSON line per enqueue (row, line, handles, program, every argument field, the Pre/Post dump
paths, problems) with the time taken per capture; ``compare`` exits 1 on any difference.
Not a test (pytest does not collect it): run it before and after a change.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

from cltui.capture import Enqueue, open_capture

SHARED = Path(os.environ.get("CLTUI_SHARED", Path(__file__).resolve().parents[2] / "shared"))
SMALL = ["images_svm_pocl", "opencv_tapi_pocl", "pyopencl_lib_pocl", "pyopencl_lib_oclgrind"]
HEAT2D = Path(os.environ.get("CLTUI_HEAT2D_DIR", "/tmp/heat2d/heat2d_large"))


def _text(x: Any) -> str:
    return x.hex() if isinstance(x, bytes) else repr(x)


def canonical(e: Enqueue) -> dict[str, Any]:
    d: dict[str, Any] = {
        "row": repr(e.row),
        "line": e.line,
        "queue": e.queue,
        "event": e.event,
        "global_offset": repr(e.global_offset),
        "program": repr(e.program),
        "kernel_handle": e.kernel_handle,
        "replay_dir": str(e.replay_dir),
        "device": e.device,
        "mem": repr(e.mem),
        "dst_mem": repr(e.dst_mem),
        "offset": e.offset,
        "nbytes": e.nbytes,
        "blocking": e.blocking,
        "problems": [repr(p) for p in e.problems],
    }
    d["args"] = [{k: _text(getattr(a, k)) for k in a.__slots__} for a in e.args]
    return d


def write(out_path: str, order: str) -> None:
    caps = [SHARED / "captures" / s for s in SMALL]
    if (HEAT2D / "clintercept_log.txt").is_file():
        caps.append(HEAT2D)
    with open(out_path, "w") as out:
        for path in caps:
            cap = open_capture(path)
            n = len(cap)
            pos = list(range(n))
            if path == HEAT2D:
                pos = list(range(1500)) + list(range(122000, 123500)) + list(range(n - 500, n))
                pos = sorted(set(pos + random.Random(7).sample(range(n), 800)))
            if order == "rev":
                pos.reverse()
            elif order == "shuf":
                random.Random(3).shuffle(pos)
            t = time.perf_counter()
            res = {}
            for p in pos:
                num = int(cap.numbers[p])
                res[num] = canonical(cap.enqueue(num))
            dt = time.perf_counter() - t
            print(f"{path.name}: {len(pos)} enqueues, {dt / len(pos) * 1e3:.3f} ms each")
            for num in sorted(res):
                out.write(json.dumps({"cap": path.name, "n": num, **res[num]}, sort_keys=True))
                out.write("\n")
            cap.close()


def compare(a_path: str, b_path: str) -> int:
    def load(p: str) -> dict[tuple[str, int], dict[str, Any]]:
        with open(p) as f:
            return {(d["cap"], d["n"]): d for d in map(json.loads, f)}

    a, b = load(a_path), load(b_path)
    bad = 0 if a.keys() == b.keys() else 1
    for k in sorted(a.keys() & b.keys()):
        if a[k] != b[k]:
            bad += 1
            if bad <= 5:
                fields = [f for f in a[k] if a[k][f] != b[k].get(f)]
                print(f"{k[0]} enqueue {k[1]} differs in {', '.join(fields)}")
    print(f"{len(a)} / {len(b)} enqueues compared, {bad} differ")
    return 1 if bad else 0


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "write":
        write(argv[1], argv[2] if len(argv) > 2 else "fwd")
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        return compare(argv[1], argv[2])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
