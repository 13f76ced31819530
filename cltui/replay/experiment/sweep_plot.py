"""A sweep's results as a table and a picture (pure): the time per value of each dimension
(the fastest correct point that has the value), as text bars (the CLI and the app), as an
SVG file (``--plot``, no plotting library), and every row as CSV (``--csv``).

A point's value of a dimension comes from its changes: ``--param NAME`` (its value), a
``--define K`` (``-D K``), ``--options`` (the option, or ``none``: the list's baseline) and
the local or global size; the capture's own configuration is the reference line.
"""

from __future__ import annotations

from html import escape as _html
from typing import Any

from cltui.text.escape import escape_controls
from cltui.text.tabular import csv_document
from cltui.text.units import fmt_ns

__all__ = ["bars_text", "csv_rows", "csv_text", "dimensions_of", "per_value", "svg_text"]

NONE = "none"


def _values(changes: dict[str, Any]) -> dict[str, str]:
    out = {str(k): str(v) for k, v in (changes.get("params") or {}).items()}
    out.update({f"-D {k}": str(v) for k, v in (changes.get("defines") or {}).items()})
    added = (changes.get("options") or {}).get("add") or []
    if added:
        out["options"] = " ".join(str(o) for o in added)
    for size in changes.get("sizes") or []:
        for key in ("local", "global"):
            if size.get(key):
                out[key] = "x".join(str(v) for v in size[key])
    return out


def dimensions_of(rows: list[dict[str, Any]]) -> list[str]:
    """The dimensions the points vary, in the order they first appear."""
    dims: dict[str, None] = {}
    for r in rows:
        if r["id"] != "capture":
            dims.update(dict.fromkeys(_values(r.get("changes") or {})))
    return list(dims)


Series = list[tuple[str, list[tuple[str, float]]]]  # (dimension, [(value, time)])


def per_value(summary: dict[str, Any]) -> tuple[float | None, Series]:
    """(the capture's own time, [(dimension, [(value, the fastest correct time)])]): each
    dimension's values in the order of the grid; a value no correct point has is left out."""
    ranked = summary.get("ranking") or []
    capture = next((r["time"]["median"] for r in ranked if r["id"] == "capture"), None)
    changed = [r for r in ranked if r["id"] != "capture" and r["time"]["median"] is not None]
    dims = dimensions_of(summary.get("rows") or [])
    order = {d: list(dict.fromkeys(_values(r.get("changes") or {}).get(d, NONE)
                                   for r in summary.get("rows") or [] if r["id"] != "capture"))
             for d in dims}  # fmt: skip
    out: Series = []
    for d in dims:
        best: dict[str, float] = {}
        for r in changed:
            v = _values(r["changes"]).get(d, NONE)
            best[v] = min(best.get(v, float("inf")), float(r["time"]["median"]))
        out.append((d, [(v, best[v]) for v in _sorted(order[d]) if v in best]))
    return capture, out


def _sorted(values: list[str]) -> list[str]:
    """Numbers in their order (the grid's order otherwise)."""
    try:
        return sorted(values, key=float)
    except ValueError:
        return values


def bars_text(summary: dict[str, Any], width: int = 30) -> list[str]:
    """Text bars: one line per value of each dimension (its fastest correct time)."""
    capture, raw = per_value(summary)
    dims = [(escape_controls(d), [(escape_controls(v), t) for v, t in vals]) for d, vals in raw]
    top = max([t for _d, vals in dims for _v, t in vals] + [capture or 0.0], default=0.0)
    if top <= 0:
        return []
    label_w = max([len(d) for d, _ in dims] + [7])
    value_w = max([len(v) for _d, vals in dims for v, _t in vals] + [1])
    lines = ["time per value (the fastest correct point with it, each timed apart):"]
    if capture is not None:
        lines.append(f"{'capture':<{label_w}} {'':>{value_w}} {_bar(capture, top, width)} "
                     f"{fmt_ns(capture)}")  # fmt: skip
    for d, vals in dims:
        for i, (v, t) in enumerate(vals):
            lines.append(f"{d if i == 0 else '':<{label_w}} {v:>{value_w}} "
                         f"{_bar(t, top, width)} {fmt_ns(t)}")  # fmt: skip
    return lines


def _bar(t: float, top: float, width: int) -> str:
    eighths = round(t / top * width * 8)
    full, part = divmod(eighths, 8)
    return ("█" * full + (" ▏▎▍▌▋▊▉"[part] if part else "")).ljust(width)


def escape(text: str) -> str:
    """Text for the SVG: control characters shown escaped (XML allows none), then XML's."""
    return _html(escape_controls(text))


def svg_text(summary: dict[str, Any], title: str = "") -> str:
    """An SVG bar chart per dimension (the fastest correct time per value), the capture's
    own time as a dashed line."""
    capture, dims = per_value(summary)
    top = max([t for _d, vals in dims for _v, t in vals] + [capture or 0.0], default=0.0) or 1.0
    width, left, bar_h, gap = 720, 170, 18, 6
    plot_w = width - left - 110
    y = 40
    body: list[str] = []
    for d, vals in dims:
        body.append(f'<text x="10" y="{y + 14}" font-weight="bold">{escape(d)}</text>')
        y += 22
        top_y = y
        for v, t in vals:
            w = max(t / top * plot_w, 1.0)
            body.append(f'<text x="{left - 8}" y="{y + 13}" text-anchor="end">{escape(v)}</text>'
                         f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar_h}" '
                         f'fill="#4a7fb5"><title>{escape(d)}={escape(v)}: {fmt_ns(t)}</title>'
                         f'</rect><text x="{left + w + 6:.1f}" y="{y + 13}">{fmt_ns(t)}</text>')
            y += bar_h + gap
        if capture is not None:
            cx = left + capture / top * plot_w
            body.append(f'<line x1="{cx:.1f}" y1="{top_y - 3}" x2="{cx:.1f}" y2="{y - gap + 3}" '
                        'stroke="#c0392b" stroke-dasharray="4 3"><title>the capture\'s own: '
                        f'{fmt_ns(capture)}</title></line>')
        y += 14
    head = escape(title or "sweep: the fastest correct time per value")
    note = (f"dashed: the capture's own configuration ({fmt_ns(capture)})"
            if capture is not None else "")  # fmt: skip
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y + 24}" '
            f'font-family="sans-serif" font-size="12">'
            f'<rect width="100%" height="100%" fill="white"/>'
            f'<text x="10" y="20" font-size="14" font-weight="bold">{head}</text>'
            + "".join(body) +
            f'<text x="10" y="{y + 12}" fill="#555">{escape(note)}</text></svg>\n')  # fmt: skip


def csv_rows(summary: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """Every row: device, point, status, configuration, one column per dimension, its time
    (median and 95 % interval, ns), its reading against the capture's (apart, and side by
    side where re-measured), why it failed; the header first."""
    rows = summary.get("rows") or []
    dims = dimensions_of(rows)
    ranked = {(r["device"], r["id"]): r for r in summary.get("ranking") or []}
    header = ["device", "point", "status", "configuration", *dims, "median_ns", "lo_ns",
              "hi_ns", "runs", "vs_capture", "side_by_side", "side_by_side_diff_ns", "best",
              "why"]  # fmt: skip
    out: list[list[Any]] = []
    for r in rows:
        vals = _values(r.get("changes") or {})
        rk = ranked.get((r["device"], r["id"])) or {}
        vs, pair = rk.get("vs_capture") or {}, rk.get("paired") or {}
        t = r["time"]
        out.append([r["device"], r["id"], r["status"], r["label"],
                    *(vals.get(d, "" if r["id"] == "capture" else NONE) for d in dims),
                    _num(t["median"]), _num(t["lo"]), _num(t["hi"]), t["n"],
                    vs.get("reading", ""), pair.get("reading", ""), _num(pair.get("diff")),
                    "yes" if r["id"] == summary.get("best_id") else "", r["why"]])  # fmt: skip
    return header, out


def csv_text(summary: dict[str, Any]) -> str:
    """:func:`csv_rows` as CSV text (the one CSV writer, :mod:`cltui.text.tabular`)."""
    return csv_document(*csv_rows(summary))


def _num(v: Any) -> str:
    return "" if v is None else f"{float(v):.0f}"
