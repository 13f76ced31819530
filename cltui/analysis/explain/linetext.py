"""The ``line`` section (:mod:`.line`) as terminal lines and as Markdown."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

__all__ = ["item_text", "line_lines", "line_markdown", "value_text"]

_DTYPE = {"float": "float32", "double": "float64", "half": "float16"}


def value_text(v: Any, dtype: str) -> str:
    """A value as its type prints it shortest (a float32 as float32, not as a double)."""
    if v is None:
        return "-"
    base = dtype.split("x")[0]
    if isinstance(v, float) and base in ("float16", "float32", "float64"):
        return str(np.dtype(base).type(v))
    return str(v)


def _vals(vs: list[Any], kind: str) -> str:
    dt = _DTYPE.get(kind, kind)
    parts = [value_text(v, dt) for v in vs]
    return parts[0] if len(parts) == 1 else "(" + ", ".join(parts) + ")"


def item_text(item: list[int] | tuple[int, ...]) -> str:
    """A work-item's (or work-group's) ids, the trailing zeros left out: ``(3)``, ``(3, 1)``."""
    item = list(item)
    while len(item) > 1 and item[-1] == 0:
        item = item[:-1]
    return "(" + ", ".join(str(i) for i in item) + ")"


def _marker(src: str, site: dict[str, Any]) -> str:
    start = max(int(site["column"]) - 1, 0)
    width = max(int(site["end_column"]) - int(site["column"]), 1)
    pad = "".join(ch if ch == "\t" else " " for ch in src[:start])
    return pad + "^" * min(width, max(len(src) - start, 1))


def _operands(sec: dict[str, Any], names: tuple[str, str]) -> list[str]:
    f = sec["first"]
    kind = sec["site"]["type"].rstrip("0123456789")
    out = []
    for o in f.get("operands", []):
        if o["equal"]:
            out.append(f"{o['text']} = {_vals(o['a'], kind)} on both")
        else:
            out.append(f"{o['text']}: {names[0]} {_vals(o['a'], kind)}, "
                       f"{names[1]} {_vals(o['b'], kind)}")  # fmt: skip
    return out


def _verdict(sec: dict[str, Any]) -> str:
    st = sec["status"]
    if st == "found" and sec["first"].get("earlier_agree"):
        return ("every statement recorded before it agrees for this work-item (operands not "
                "recorded): the devices part here")
    if st == "found":
        return ("its operands are equal on both devices: the devices part at this expression"
                if sec["first"]["operands"] else
                "it reads no recorded operand: the devices part at this expression")
    if st == "upstream":
        return "an operand already differs: the cause is upstream (the walk continues there)"
    return "the control flow differs (a branch's condition differs on the devices)"


def _per_line(sec: dict[str, Any]) -> str:
    c = Counter(f"line {p['first']['line']}" if p["first"] else "no difference"
                for p in sec.get("per_item", []))  # fmt: skip
    return "; ".join(f"{k}: {v} work-item{'s' if v != 1 else ''}" for k, v in c.items())


def _same(sec: dict[str, Any], names: tuple[str, str]) -> str:
    same = sec.get("same_outputs") or {}
    parts = [f"{n} " + ("same as the original's" if same.get(k) else
                        "DIFFERENT from the original's (the trace may not show what the "
                        "original computes)" if same.get(k) is False else "not compared")
             for k, n in zip("ab", names, strict=True)]  # fmt: skip
    return "instrumented kernel's outputs: " + "; ".join(parts)


def _traced(sec: dict[str, Any]) -> str:
    items = ", ".join(item_text(i) for i in sec["items"])
    out = f"traced work-items ({sec['chosen']}): {items}"
    if "sites" in sec:
        out += f"; {sec['sites']} statements recorded"
        if sec.get("skipped"):
            out += f", {sec['skipped']} not (not a value, or not pure)"
    if sec.get("recording"):
        out += f"; recorded {sec['recording']}"
    if sec.get("dropped"):
        out += f"; {sec['dropped']} entries beyond the trace buffer dropped"
    return out


def line_lines(report: dict[str, Any]) -> list[str]:
    """The terminal lines of the report's ``line`` section (none when it has none)."""
    sec = report.get("line")
    if not sec:
        return []
    names = ("A", "B")
    out = ["", f"which line: {sec['text']}"]
    if sec["status"] == "race":
        return out + [f"  {x}" for x in _race_lines(sec)]
    if sec["status"] in ("found", "upstream", "paths"):
        site = sec["site"]
        num = str(site["line"])
        out += [f"  {num} | {sec['source_line']}",
                f"  {' ' * len(num)} | {_marker(sec['source_line'], site)}"]
        f = sec["first"]
        if "a" in f:
            kind = site["type"].rstrip("0123456789")
            out.append(f"  work-item {item_text(sec['item'])}: {site['target']} is "
                       f"{_vals(f['a'], kind)} on A, {_vals(f['b'], kind)} on B")  # fmt: skip
            out += [f"  operand {x}" for x in _operands(sec, names)]
        out.append(f"  {_verdict(sec)}")
    if sec.get("walk"):
        out += [f"  {x}" for x in _walk_lines(sec["walk"], names)]
    return out + [f"  {x}" for x in _closing(sec, names)]


def _closing(sec: dict[str, Any], names: tuple[str, str]) -> list[str]:
    """The section's last sentences, either medium's: the first difference per traced
    work-item, what was traced, outputs that are the same."""
    out = [f"first difference per traced work-item: {_per_line(sec)}"] if sec.get("per_item") \
        else []  # fmt: skip
    out.append(_traced(sec))
    if sec.get("same_outputs"):
        out.append(_same(sec, names))
    return out


def _walk_lines(walk: dict[str, Any], names: tuple[str, str]) -> list[str]:
    """The upstream walk: a line a step, then the statement where the devices part."""
    out = ["the walk upstream:"]
    out += [f"  {k}. {step['text']}" for k, step in enumerate(walk["steps"], start=1)]
    if walk["status"] == "found":
        site, f = walk["site"], walk["first"]
        num = str(site["line"])
        kind = site["type"].rstrip("0123456789")
        out += [f"  {num} | {walk['source_line']}",
                f"  {' ' * len(num)} | {_marker(walk['source_line'], site)}",
                f"  work-item {item_text(walk['item'])}: {site['target']} is "
                f"{_vals(f['a'], kind)} on A, {_vals(f['b'], kind)} on B"]  # fmt: skip
        out += [f"  operand {x}" for x in _operands({"first": f, "site": site}, names)]
    return out


def _race_lines(sec: dict[str, Any], shown: int = 4) -> list[str]:
    """The racing writes: each statement's source line marked once, then the work-items
    that ran it and what each wrote where (``shown`` of them, then how many more)."""
    out: list[str] = []
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for w in sec.get("writes", []):
        groups.setdefault((w["element"], w["base"], w["site"]["id"]), []).append(w)
    for ws in groups.values():
        w = ws[0]
        num = str(w["line"])
        out += [f"{num} | {w['source_line']}",
                f"{' ' * len(num)} | {_marker(w['source_line'], w['site'])}"]
        out += [f"work-item {item_text(x['item'])} (work-group {item_text(x['group'])}) writes "
                f"{x['value_text']} to element {x['element']} of {x['base']}"
                for x in ws[:shown]]  # fmt: skip
        if len(ws) > shown:
            out.append(f"and {len(ws) - shown} more work-items on this line")
    return out


def line_markdown(report: dict[str, Any]) -> list[str]:
    """The Markdown lines of the report's ``line`` section."""
    sec = report.get("line")
    if not sec:
        return []
    devs = report["devices"]
    names = (devs["a"]["name"], devs["b"]["name"] if "b" in devs else "")
    out = ["", "## Which line", "", f"{sec['text'][:1].upper()}{sec['text'][1:]}."]
    if sec["status"] == "race":
        return [*out, "", "```c", *_race_lines(sec), "```"]
    if sec["status"] in ("found", "upstream", "paths"):
        site = sec["site"]
        num = str(site["line"])
        out += ["", "```c", f"{num} | {sec['source_line']}",
                f"{' ' * len(num)} | {_marker(sec['source_line'], site)}", "```", ""]
        f = sec["first"]
        if "a" in f:
            kind = site["type"].rstrip("0123456789")
            out += [f"| work-item | `{site['target']}` on {names[0]} | on {names[1]} |",
                    "|---|---|---|",
                    f"| {item_text(sec['item'])} | {_vals(f['a'], kind)} | "
                    f"{_vals(f['b'], kind)} |", ""]  # fmt: skip
            out += [f"- operand {x}" for x in _operands(sec, names)]
        out += [f"- {_verdict(sec)}"]
    if sec.get("walk"):
        out += ["", "```", *_walk_lines(sec["walk"], names), "```", ""]
    return out + [f"- {x[:1].upper()}{x[1:]}" for x in _closing(sec, names)]
