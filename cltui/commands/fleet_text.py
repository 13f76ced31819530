"""``cltui fleet``'s text report: the verdict line first, the matrix (rich: as wide as the
terminal, rows that differ first, device columns paged), then per column its first
divergence, its fault and why, the columns against each other, the explanations of their
first divergences (--explain), the hosts (what did not run, bytes sent and received)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cltui.commands._common import echo, escape_tree, text_console
from cltui.fleet.matrix import cell_style, cell_text


def _short(text: str, n: int = 24) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


ARG_W = 40  # the argument column at most
GOOD = ("equal", "within")


def _col_width(col: Mapping[str, Any], rows: list[Mapping[str, Any]], i: int) -> int:
    """A device column's width: its head (id and the shortened names) and its cells."""
    dev = col["device"]
    head = [col["id"], _short(dev["name"]), _short(dev["platform"]), _short(dev["driver"])]
    return max([len(h) for h in head] + [len(cell_text(r["cells"][i])) for r in rows]) + 3


def pages(widths: list[int], room: int) -> list[range]:
    """The device columns split into pages that fit ``room`` characters each (at least
    one column a page)."""
    out: list[range] = []
    start, used = 0, 0
    for i, w in enumerate(widths):
        if i > start and used + w > room:
            out.append(range(start, i))
            start, used = i, 0
        used += w
    if widths:
        out.append(range(start, len(widths)))
    return out


def print_fleet(report: Mapping[str, Any]) -> None:
    """The report as text: the matrix as wide as the terminal (``$COLUMNS``, 80 for a
    pipe), rows that differ anywhere first, the device columns paged when they do not fit."""
    from rich.markup import escape
    from rich.table import Table

    rep = escape_tree(report)
    echo(rep["verdict"]["line"])
    console = text_console(highlight=False)
    cols = rep["columns"]
    if cols:
        rows = sorted(rep["rows"], key=lambda r: all(c["status"] in GOOD for c in r["cells"]))
        arg_w = min(ARG_W, max([len(f"{r['kernel']} {r['label']}") for r in rows] + [8])) + 3
        room = max(20, console.width - arg_w - 10 - 4)
        widths = [_col_width(c, rows, i) for i, c in enumerate(cols)]
        split = pages(widths, room)
        for n, page in enumerate(split, 1):
            title = "fleet: against the capture" + (
                f" (devices {page.start + 1}-{page.stop} of {len(cols)}, page {n}/{len(split)})"
                if len(split) > 1 else "")
            table = Table(title=title, show_lines=False)
            table.add_column("enqueue", justify="right", no_wrap=True, min_width=7)
            table.add_column("argument", no_wrap=True, max_width=ARG_W)
            for i in page:
                dev = cols[i]["device"]
                head = f"{cols[i]['id']}\n{_short(dev['name'])}\n{_short(dev['platform'])}\n" \
                    f"{_short(dev['driver'])}"
                table.add_column(escape(head), no_wrap=True)
            for row in rows:
                cells = [row["cells"][i] for i in page]
                texts = [f"[{cell_style(c)}]{escape(cell_text(c))}[/]"
                         if cell_style(c) else escape(cell_text(c)) for c in cells]
                table.add_row(str(row["enqueue"]), escape(f"{row['kernel']} {row['label']}"),
                              *texts)
            console.print(table)
    for col in rep["columns"]:
        lines = [col["verdict"]["line"]]
        if col["first_divergent"] is not None:
            lines.append(f"first divergent enqueue: {col['first_divergent']}")
        if col["error"]:
            lines.append(f"{col.get('fault') or col['status']}: {col['error']}")
        echo(f"{col['id']} ({col['runner']}): " + "; ".join(lines))
    _print_cross(rep)
    _print_explain(rep)
    base = rep.get("baseline")
    if base:
        echo(f"baseline {base['path']}: {len(base['known'])} known, {len(base['new'])} new, "
             f"{len(base['fixed'])} fixed")
        for what in ("new", "fixed"):
            for item in base[what]:
                echo(f"  {what}: {item}")
    for h in rep["hosts"]:
        if h["status"] != "ok":
            echo(f"host {h['name']}: {h['status']}: {h['reason']}")
        else:
            sent = h["sent"]
            what = ("bundle cached" if sent["cached"]
                    else f"bundle: {sent['files']} files, {sent['bytes']} bytes")
            echo(f"host {h['name']}: {len(h['devices'])} devices, {what}; "
                 f"{h['bytes_sent']} bytes sent, {h['bytes_received']} received; "
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


def _print_explain(rep: Mapping[str, Any]) -> None:
    """Each column's explanation (cltui explain's report, indented), or why it has none."""
    from cltui.analysis.explain.text import text_lines

    for e in rep.get("explain") or []:
        echo("")
        if e["report"] is None:
            echo(f"explain {e['line']}")
            continue
        echo(f"explain {e['column']}: its first divergence from {e['reference']}, enqueue "
             f"{e['enqueue']} {e['kernel']} (A: {e['reference']}, B: {e['column']}, both "
             "replayed on their hosts)")
        for line in text_lines(e["report"]):
            echo(f"  {line}" if line else "")
