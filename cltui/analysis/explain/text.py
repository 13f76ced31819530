"""The explanation as text: lines for the terminal (:func:`text_lines`) and a Markdown
report ready for a driver bug report (:func:`markdown`), both from the report dict of
:func:`~cltui.analysis.explain.analyse.explain_report`."""

from __future__ import annotations

from typing import Any

from cltui.analysis.explain.linetext import line_lines, line_markdown, value_text

__all__ = ["markdown", "text_lines", "value_text"]


def _spec_word(why: dict[str, Any]) -> str:
    w = why.get("within_spec")
    return ("within the OpenCL specification" if w is True else
            "outside the OpenCL specification" if w is False else
            "not settled by the OpenCL specification")  # fmt: skip


def _histogram(m: dict[str, Any]) -> str:
    return "  ".join(f"{k}: {v:,}" for k, v in m["histogram"].items())


def _worst(m: dict[str, Any], names: tuple[str, str]) -> list[str]:
    out: list[str] = []
    for e in m["worst"]:
        where = f"index {e['index']}"
        if e["item"] != e["index"] or e["lane"]:
            where += f" (item {e['item']}, lane {e['lane']})"
        if e["coords"] is not None:
            where += f" (texel {', '.join(str(c) for c in e['coords'])})"
        dist = f" ({e['distance']:g} {m['unit']})" if e["distance"] is not None else ""
        out.append(f"{where}: {names[0]} {value_text(e['a'], m['dtype'])}, {names[1]} "
                   f"{value_text(e['b'], m['dtype'])}, capture "
                   f"{value_text(e['capture'], m['dtype'])}{dist}")  # fmt: skip
    return out


def _rebuild_lines(why: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for t in why.get("rebuilds", []):
        left = f" ({t['differ']:,} elements differ)" if t["differ"] is not None else ""
        err = f": {t['error']}" if t["error"] else ""
        out.append(f"{t['id']} ({t['change']}): {t['outcome']}{left}{err}")
    return out


def _order_line(report: dict[str, Any], why: dict[str, Any]) -> str:
    order = why.get("order") or {}
    how = why.get("order_runs") or {}
    parts = []
    for key in [k for k in ("a", "b") if k in report["devices"]]:
        name = report["devices"][key]["name"]
        v = order.get(key)
        differs = "differs" + (f" (with {how[key]})" if how.get(key) else "")
        parts.append(f"{name}: " + (differs if v else "same outputs" if v is False
                                    else "not run"))  # fmt: skip
    each = " on each device" if len(parts) > 1 else ""
    return f"a second run and a run in reverse work-item order{each}: " + "; ".join(parts)


def text_lines(report: dict[str, Any]) -> list[str]:
    """The terminal report: the verdict first, then where and why."""
    devs = report["devices"]
    b = devs.get("b")
    names = (devs["a"]["name"], b["name"] if b else "")
    lines = [report["verdict"]["line"],
             f"enqueue {report['enqueue']}: kernel {report['kernel']} ({report['program']}), "
             f"build options: {report['options'] or '(none)'}",
             f"A: {names[0]} ({devs['a']['id']})" + (f"   B: {names[1]} ({b['id']})"
                                                      if b else "")]  # fmt: skip
    for w in report["where"]:
        m = w["map"]
        most = f" (max {m['max']:g} {m['unit']})" if m["max"] is not None else ""
        lines += ["", f"where: {w['label']} ({m['dtype']}): {m['differ']:,} of "
                  f"{m['elements']:,} elements differ{most}"]
        if m["histogram"]:
            lines.append(f"  {m['unit']}: {_histogram(m)}")
        lines.append(f"  pattern: {m['pattern']['text']}")
        lines += [f"  worst: {x}" for x in _worst(m, ("A", "B"))]
        lines.append(f"  against the capture: A {w['capture']['a']}; B {w['capture']['b']}")
    why = report.get("why")
    if why and "text" in why:
        lines += ["", f"why: {why['text']}", f"  {_spec_word(why)}: {why['spec']}"]
        lines += [f"  rebuild {x}" for x in _rebuild_lines(why)]
    if why:
        lines.append(f"  {_order_line(report, why)}")

    return lines + line_lines(report)


def markdown(report: dict[str, Any]) -> str:
    """The report in Markdown, for a driver bug report."""
    devs = report["devices"]
    out = [f"# Kernel `{report['kernel']}`: {report['verdict']['status'].replace('-', ' ')}",
           "", f"**{report['verdict']['line']}**", "",
           f"- Capture: `{report['capture']}`, enqueue {report['enqueue']} "
           f"({report['program']})",
           f"- Build options: `{report['options'] or '(none)'}`",
           f"- Device A: {devs['a']['name']} (`{devs['a']['id']}`)",
           *([f"- Device B: {devs['b']['name']} (`{devs['b']['id']}`)"] if "b" in devs
             else []),
           "- Replayed in isolation from the capture's own inputs (its Pre dumps)."]
    for w in report["where"]:
        m = w["map"]
        most = f", max {m['max']:g} {m['unit']}" if m["max"] is not None else ""
        out += ["", f"## Where: {w['label']}", "",
                f"{m['differ']:,} of {m['elements']:,} elements ({m['dtype']}) differ{most}. "
                f"Pattern: {m['pattern']['text']}.", ""]
        if m["histogram"]:
            out += ["| " + " | ".join(m["histogram"]) + " |",
                    "|" + "---|" * len(m["histogram"]),
                    "| " + " | ".join(f"{v:,}" for v in m["histogram"].values()) + " |", ""]
        out += ["| element | A | B | capture | distance |", "|---|---|---|---|---|"]
        for e in m["worst"]:
            dist = f"{e['distance']:g} {m['unit']}" if e["distance"] is not None else "-"
            out.append(f"| {e['index']} | {value_text(e['a'], m['dtype'])} | "
                       f"{value_text(e['b'], m['dtype'])} | "
                       f"{value_text(e['capture'], m['dtype'])} | {dist} |")  # fmt: skip
        out += ["", f"Against the capture: A {w['capture']['a']}; B {w['capture']['b']}."]
    why = report.get("why")
    if why and "text" in why:
        out += ["", "## Why", "", f"Cause: {why['text']}.", "",
                f"Specification: {_spec_word(why)} ({why['spec']}).", ""]
        if why.get("rebuilds"):
            out += ["Controlled rebuilds, each run on both devices:", ""]
            out += [f"- {x}" for x in _rebuild_lines(why)]
    if why:
        line = _order_line(report, why)
        out += ["", f"{line[:1].upper()}{line[1:]}."]

    return "\n".join(out + line_markdown(report)) + "\n"
