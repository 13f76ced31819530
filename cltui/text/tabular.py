"""Rows as CSV text: the one CSV writer of the commands' ``--format csv`` and their CSV files
(the ``csv`` module's quoting, ``\\n`` line ends)."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

__all__ = ["csv_document"]


def csv_document(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """The header line, then a line per row."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return out.getvalue()
