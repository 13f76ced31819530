"""What the test suite costs, by file and by test: ``CLTUI_TEST_COSTLOG=FILE ./dev test``,
then ``python scripts/suite_cost.py FILE [N]`` (the N costliest files and tests; 30).

Cost is CPU seconds: the pytest worker's own (its threads included) plus the children it
reaped during the test (tests/tiers.py).  On 2 cores the suite's wall time cannot be below
half its total; the files at the top are where cutting pays."""

from __future__ import annotations

import sys
from collections import Counter


def main(argv: list[str]) -> int:
    if not argv or len(argv) > 2:
        print(__doc__, file=sys.stderr)
        return 2
    top = int(argv[1]) if len(argv) > 1 else 30
    own: Counter[str] = Counter()
    kids: Counter[str] = Counter()
    wall: Counter[str] = Counter()
    tests: Counter[str] = Counter()
    count: Counter[str] = Counter()
    with open(argv[0], encoding="utf-8") as f:
        for line in f:
            node, w, c, k = line.rstrip("\n").split("\t")
            name = node.split("::", 1)[0]
            own[name] += float(c)
            kids[name] += float(k)
            wall[name] += float(w)
            tests[node] += float(c) + float(k)
            count[name] += 1
    total = sum(own.values()) + sum(kids.values())
    print(f"{len(tests)} tests: {total:.0f} CPU s ({sum(own.values()):.0f} in the workers, "
          f"{sum(kids.values()):.0f} in their children), {sum(wall.values()):.0f} s of wall")
    print(f"{'cpu s':>7} {'self':>6} {'kids':>6} {'wall':>6} {'cum %':>6} {'tests':>5}  file")
    cum = 0.0
    for name, cost in Counter({n: own[n] + kids[n] for n in own}).most_common(top):
        cum += cost
        print(f"{cost:7.1f} {own[name]:6.1f} {kids[name]:6.1f} {wall[name]:6.1f} "
              f"{100 * cum / total:6.1f} {count[name]:5d}  {name}")
    print()
    for node, cost in tests.most_common(top):
        print(f"{cost:7.1f}  {node}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
