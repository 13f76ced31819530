"""Export benchmarks: ``export_range`` on real captures.

1. Bundle data size against the sum of the unique contents it must hold: every data file
   the range's plan references (inputs, expected outputs), hashed here independently with
   sha256; distinct contents summed.  The ratio bundle/unique is 1.00 when deduplication
   is exact; the sum of all references (what a copy without deduplication would hold) is
   given too.
2. Time to export the range against a plain copy (``shutil.copyfile``) of every file the
   plan references into a fresh folder, the two taking turns; best of N each.

    .venv/bin/python benchmarks/bench_export.py CAPTURE RANGE [--repeat 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cltui.capture import open_capture
from cltui.capture.ranges import parse_range
from cltui.export import export_range
from cltui.replay.plan import build_plan


def _referenced(manifest: dict[str, Any]) -> tuple[set[str], set[str]]:
    """(data keys of program sources/binaries, data keys of buffer contents)."""
    prog: set[str] = set()
    for p in manifest["programs"].values():
        if p.get("source"):
            prog.add(p["source"])
        for b in p.get("binaries", []):
            prog.add(b["data"])
    return prog, set(manifest["data"]) - prog


def run(capture: Path, rng_text: str, label: str, repeat: int = 3) -> dict[str, Any]:
    cap = open_capture(capture)
    try:
        plan = build_plan(cap, parse_range(rng_text))
        manifest = plan.to_manifest()
        prog_keys, data_keys = _referenced(manifest)
        root = Path(cap.path)
        digests: dict[str, int] = {}
        all_refs = 0
        for key in data_keys:
            path = root / manifest["data"][key]["path"]
            blob = path.read_bytes()
            all_refs += len(blob)
            digests.setdefault(hashlib.sha256(blob).hexdigest(), len(blob))
        unique_bytes = sum(digests.values())
        files = [root / manifest["data"][k]["path"] for k in sorted(data_keys | prog_keys)]

        best_export = best_copy = float("inf")
        result = None
        with tempfile.TemporaryDirectory(prefix="cltui-bench-export-") as tmp:
            for r in range(repeat):
                for which in ("export", "copy") if r % 2 == 0 else ("copy", "export"):
                    out = Path(tmp) / f"{which}{r}"
                    t0 = time.perf_counter()
                    if which == "export":
                        result = export_range(cap, rng_text, out, langs="python,cpp")
                        best_export = min(best_export, time.perf_counter() - t0)
                    else:
                        out.mkdir()
                        for i, f in enumerate(files):
                            shutil.copyfile(f, out / f"{i}.bin")
                        best_copy = min(best_copy, time.perf_counter() - t0)
                    shutil.rmtree(out)
        assert result is not None
        return {
            "label": label,
            "range": rng_text,
            "kernels": result.steps,
            "enqueues": f"{result.enqueues[0]}-{result.enqueues[-1]}",
            "data_refs": len(data_keys),
            "all_refs_bytes": all_refs,
            "unique_files": len(digests),
            "unique_bytes": unique_bytes,
            "bundle_data_files": result.data_files,
            "bundle_data_bytes": result.data_bytes,
            "size_ratio": result.data_bytes / unique_bytes if unique_bytes else float("nan"),
            "bundle_files": result.files,
            "export_s": best_export,
            "copy_s": best_copy,
            "copied_files": len(files),
            "time_ratio": best_export / best_copy,
            "repeat": repeat,
        }
    finally:
        cap.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("capture", type=Path)
    ap.add_argument("range")
    ap.add_argument("--repeat", type=int, default=3)
    ns = ap.parse_args(argv)
    print(json.dumps(run(ns.capture, ns.range, ns.capture.name, ns.repeat), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
