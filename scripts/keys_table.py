"""Write the README's keys table from the bindings (between its keys markers).

    .venv/bin/python scripts/keys_table.py          # rewrite README.md
    .venv/bin/python scripts/keys_table.py --check  # exit 1 when README.md differs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cltui.tui.keys_table import README_BEGIN, README_END, markdown_table

README = Path(__file__).resolve().parent.parent / "README.md"


def with_table(text: str, table: str) -> str:
    """``text`` with what lies between the markers replaced by ``table``."""
    start, end = text.find(README_BEGIN), text.find(README_END)
    if start < 0 or end < start:
        raise SystemExit(f"keys_table: no {README_BEGIN!r} ... {README_END!r} in README.md")
    return text[: start + len(README_BEGIN)] + "\n\n" + table + "\n" + text[end:]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only say whether README.md is current")
    ap.add_argument("--readme", type=Path, default=README)
    args = ap.parse_args()
    text = args.readme.read_text(encoding="utf-8")
    new = with_table(text, markdown_table())
    if args.check:
        if new != text:
            print(f"{args.readme}: the keys table differs from the bindings; "
                  "run scripts/keys_table.py", file=sys.stderr)
            return 1
        return 0
    if new != text:
        args.readme.write_text(new, encoding="utf-8")
        print(f"{args.readme}: keys table written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
