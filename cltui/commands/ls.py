"""``cltui ls DUMPDIR``: one row per enqueue."""

from __future__ import annotations

import re
import sys

import click

from cltui.commands import options
from cltui.commands._common import fail, load_capture, row_json
from cltui.text.escape import escape_controls
from cltui.text.units import fmt_ns


def fmt_size(size: tuple[int, ...] | None) -> str:
    return "NULL" if size is None else "x".join(str(s) for s in size)


@click.command("ls")
@click.argument("dumpdir", type=click.Path())
@click.option("--kernel", "-k", "pattern", help="Only kernels whose name contains PATTERN.")
@click.option("--regex", is_flag=True, help="Treat PATTERN as a regular expression.")
@click.option("--range", "-r", "rng", help="Enqueue numbers: N, A-B, A- or -B (and /KERNEL).")
@click.option("--json", "as_json", is_flag=True, help="A JSON array of rows (docs/cli-json.md).")
def ls_cmd(dumpdir: str, pattern: str | None, regex: bool, rng: str | None, as_json: bool) -> None:
    """List enqueues of DUMPDIR: number, kind, kernel, sizes, device time, data."""
    first = last = None
    if rng:
        spec = options.range_of(rng)
        first, last = spec.first, spec.last
        if spec.kernel and not pattern:
            pattern = spec.kernel
    if regex and pattern:
        try:
            re.compile(pattern)
        except re.error as exc:
            fail(f"bad regular expression {pattern!r}: {exc}")
    cap = load_capture(dumpdir)
    positions = cap.find(pattern, regex=regex, first=first, last=last)
    out = sys.stdout
    if as_json:
        import json

        out.write("[")
        for i, pos in enumerate(positions.tolist()):
            obj = row_json(cap.row(pos))
            out.write(("\n  " if i == 0 else ",\n  ") + json.dumps(obj))
        out.write("\n]\n" if len(positions) else "]\n")
        return
    out.write(f"{'#':>7}  {'kind':<7} {'kernel / call':<32} {'global':<13} {'local':<9} "
              f"{'device':>10}  data\n")
    for pos in positions.tolist():
        row = cap.row(pos)
        name = escape_controls(row.kernel if row.kernel is not None else row.function)
        badges = "".join(
            [
                "P" if row.has_pre else ".",
                "O" if row.has_post else ".",
                "R" if row.has_replay else ".",
                "#" if row.hashes_only else "",
                " recovered" if row.recovered else "",
            ]
        )
        dev = fmt_ns(row.device_time.start_to_end, "-") if row.device_time else "-"
        gsz = fmt_size(row.global_size) if row.global_size is not None else ""
        known = row.kind.label == "kernel" and row.global_size is not None
        lsz = fmt_size(row.local_size) if known else ""
        out.write(f"{row.number:>7}  {row.kind.label:<7} {name[:32]:<32} {gsz:<13} {lsz:<9} "
                  f"{dev:>10}  {badges}\n")
