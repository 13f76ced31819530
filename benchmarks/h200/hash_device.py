"""The engine's device hash (hash-only dumps) on another device: correct, and how fast.

    python3 benchmarks/h200/hash_device.py --device nvidia [--big-mb 64]

Prints JSON: ``ratio`` (bench_compare's figure: the kernel vs ``cli_hash64`` in Python on 1
and 4 MiB), ``lengths_equal`` (the kernel's hash equals ``cli_hash64`` for lengths with
every tail), and ``big`` (one large buffer: the kernel's time, its launches, the Python
hash's time, and whether the two agree).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench_compare

from cltui.capture.hashing import cli_hash64
from cltui.replay import engine as eng_mod
from cltui.replay.engine.hashing import HASH64_CHUNK_WORDS


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="pocl")
    ap.add_argument("--big-mb", type=int, default=64)
    ns = ap.parse_args()
    out: dict[str, object] = {"ratio": bench_compare.hashing((1, 4), 3, ns.device)}
    dev = eng_mod.resolve_devices([ns.device])[0]
    plan = {"format": eng_mod.PLAN_FORMAT, "version": 1, "programs": {}, "memory": {}, "steps": []}
    eng = eng_mod.Engine(plan, dev, lambda _key: np.zeros(0, np.uint8))
    eng.prepare()
    gen = np.random.default_rng(5)
    lengths = (0, 1, 2, 3, 5, 4099, (1 << 20) + 1)
    out["lengths_equal"] = all(
        eng._device_hash64(d) == cli_hash64(d)
        for d in (gen.integers(0, 256, n, dtype=np.uint8) for n in lengths)
    )
    big = gen.integers(0, 256, ns.big_mb << 20, dtype=np.uint8)
    t0 = time.perf_counter()
    h = eng._device_hash64(big)
    t1 = time.perf_counter()
    same = h == cli_hash64(big)
    t2 = time.perf_counter()
    words = big.size // 4
    out["big"] = {
        "mb": ns.big_mb,
        "device": dev["name"],
        "device_s": t1 - t0,
        "launches": -(-words // HASH64_CHUNK_WORDS),
        "python_s": t2 - t1,
        "equal": same,
    }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
