"""``cltui fleet``'s text report: the verdict line first, the matrix (rich), then per column
its first divergence, what could not run and why, the columns against each other, and the
hosts that did not run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cltui.commands._common import echo, escape_tree
from cltui.fleet.matrix import cell_text

_STYLE = {"equal": "green", "within": "cyan", "different": "bold red", "cannot-run": "magenta",
          "not-reached": "dim", "unchecked": "yellow"}


def _short(text: str, n: int = 24) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def print_fleet(report: Mapping[str, Any]) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    rep = escape_tree(report)
    echo(rep["verdict"]["line"])
    console = Console(highlight=False)
    if not console.is_terminal:  # a file or a pipe: as wide as the matrix, never wrapped
        console = Console(highlight=False, width=max(100, 44 + 16 * len(rep["columns"])))
    if rep["columns"]:
        table = Table(title="fleet: against the capture", show_lines=False)
        table.add_column("enqueue", justify="right", no_wrap=True, min_width=7)
        table.add_column("argument", no_wrap=True, max_width=40)
        for col in rep["columns"]:
            dev = col["device"]
            head = f"{col['id']}\n{_short(dev['name'])}\n{_short(dev['platform'])}\n" \
                f"{_short(dev['driver'])}"
            table.add_column(escape(head), no_wrap=True)
        for row in rep["rows"]:
            cells = [f"[{_STYLE.get(c['status'], '')}]{cell_text(c)}[/]" if
                     _STYLE.get(c["status"]) else cell_text(c) for c in row["cells"]]
            table.add_row(str(row["enqueue"]), escape(f"{row['kernel']} {row['label']}"), *cells)
        console.print(table)
    for col in rep["columns"]:
        lines = [col["verdict"]["line"]]
        if col["first_divergent"] is not None:
            lines.append(f"first divergent enqueue: {col['first_divergent']}")
        if col["error"]:
            lines.append(f"{col.get('fault') or col['status']}: {col['error']}")
        echo(f"{col['id']} ({col['runner']}): " + "; ".join(lines))
    _print_cross(rep)
    for h in rep["hosts"]:
        if h["status"] != "ok":
            echo(f"host {h['name']}: {h['status']}: {h['reason']}")
        else:
            sent = h["sent"]
            what = ("bundle cached" if sent["cached"]
                    else f"sent {sent['files']} files, {sent['bytes']} bytes")
            echo(f"host {h['name']}: {len(h['devices'])} devices, {what}, "
                 f"{h['seconds']:.1f} s")
    echo(rep["verdict"]["line"])


def _print_cross(rep: Mapping[str, Any]) -> None:
    """Across columns: per pair, how many outputs differ and the worst ULP."""
    pairs: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for x in rep["cross"]:
        pairs.setdefault((x["a"], x["b"]), []).append(x)
    for (a, b), xs in pairs.items():
        diff = [x for x in xs if x["status"] == "different"]
        within = [x for x in xs if x["status"] == "within"]
        ulps = [float(x["max_ulp"]) for x in xs if x.get("max_ulp") is not None]
        worst = f", max {max(ulps):g} ULP" if ulps and max(ulps) > 0 else ""
        head = f"{b} vs {a}: {len(xs)} outputs compared, {len(diff)} different, " \
            f"{len(within)} within{worst}"
        if diff:
            head += f"; first at enqueue {diff[0]['enqueue']} {diff[0]['label']}"
        echo(head)
