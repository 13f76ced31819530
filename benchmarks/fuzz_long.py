"""The long bad-input campaign: N mutated captures (default 100,000) through the Python API.

Each input is one named mutation (``tests/fuzz_mutations.py``: truncations, byte flips, NUL
runs, duplicated and deleted lines, deleted and zero-length files, huge numbers, long words,
non-UTF-8, control characters, symlinks) of a small shared capture, read as ``ls``, ``show``
(``--json`` too), ``info`` and a whole-range replay plan would, in worker processes, each input
under a deadline.  Prints progress and a summary, writes the summary as JSON::

    python benchmarks/fuzz_long.py                      # 100,000 inputs, 2 workers
    python benchmarks/fuzz_long.py -n 5000 --seed 7 --json /tmp/fuzz.json
    python benchmarks/fuzz_long.py --repro 'images_svm_pocl long_word 1234'

Exit 0 when no input gave a traceback, a hang or a read outside the capture, 1 otherwise.
Set ``CLTUI_SHARED`` when the shared captures are not in ``../shared``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests import fuzz_mutations as fm  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--inputs", type=int, default=100_000, help="inputs to try")
    ap.add_argument("-j", "--workers", type=int, default=2, help="worker processes")
    ap.add_argument("--seed", type=int, default=1, help="the campaign's seed")
    ap.add_argument(
        "--deadline", type=float, default=20.0,
        help="CPU seconds per input (10x that in wall time) before it counts as a hang",
    )
    ap.add_argument(
        "--rare-every", type=int, default=400,
        help="every Nth input damages a larger capture (pyopencl_lib_pocl, opencv_tapi_pocl)",
    )
    ap.add_argument(
        "--skip", default="", help="comma-separated mutation kinds to leave out (exploring)"
    )
    ap.add_argument(
        "--max-minutes", type=float, default=None,
        help="start no new input after this long (the summary says how many ran)",
    )
    ap.add_argument("--max-hangs", type=int, default=None, help="stop after this many hangs")
    ap.add_argument(
        "--json", type=Path, default=Path("fuzz_long.json"), help="where the summary goes"
    )
    ap.add_argument("--repro", metavar="'CAPTURE KIND SEED'", help="run one input, say why")
    args = ap.parse_args(argv)

    if args.repro:
        spec = fm.Spec.parse(args.repro)
        result = fm.run_one(spec)
        print(f"{spec}: {result['desc']}  ({result['seconds']:.3f} s)")
        for f in result["findings"]:
            print(f"{f['what']}: {f['signature']}\n{f['detail']}")
        return 1 if result["findings"] else 0

    last = [0.0]
    seen: set[str] = set()

    def progress(s: fm.Summary) -> None:
        for key, sig in s.signatures.items():  # each new kind of finding as soon as it is seen
            if key not in seen:
                seen.add(key)
                print(f"  new: {key}  repro: {sig['repro']}", file=sys.stderr, flush=True)
        if s.seconds - last[0] >= 30:
            last[0] = s.seconds
            rate = s.inputs / max(s.seconds, 1e-9)
            eta = (args.inputs - s.inputs) / max(rate, 1e-9)
            print(
                f"  {s.inputs:,}/{args.inputs:,} inputs, {rate:.0f}/s, {s.tracebacks} tracebacks, "
                f"{s.hangs} hangs, {s.outside} outside reads, ~{eta / 60:.0f} min left",
                file=sys.stderr, flush=True,
            )

    skip = {k for k in args.skip.split(",") if k}
    if skip - set(fm.KINDS):
        ap.error(f"unknown kinds: {', '.join(sorted(skip - set(fm.KINDS)))}")
    kinds = tuple(k for k in fm.KINDS if k not in skip)
    t0 = time.time()
    inputs = fm.specs(args.inputs, args.seed, rare_every=args.rare_every, kinds=kinds)
    if args.max_minutes is not None:
        end = time.monotonic() + 60 * args.max_minutes
        inputs = itertools.takewhile(lambda _s: time.monotonic() < end, inputs)
    summary = fm.run_campaign(
        inputs,
        workers=args.workers,
        deadline=args.deadline,
        max_hangs=args.max_hangs,
        seed=args.seed,
        progress=progress,
    )
    data = summary.to_dict()
    data["started"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0))
    data["kinds"] = list(kinds)
    data["inputs_asked"] = args.inputs
    args.json.write_text(json.dumps(data, indent=1) + "\n")
    print(summary.report())
    print(f"summary: {args.json}")
    return 0 if summary.clean else 1


if __name__ == "__main__":
    sys.exit(main())
