"""``cltui show``'s text: the enqueue's JSON object (:mod:`cltui.commands.show`) as lines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cltui.commands._common import echo
from cltui.text.escape import escape_controls

if TYPE_CHECKING:
    from cltui.commands.show import ArgJSON, HistoryJSON

__all__ = ["print_text"]


def _neighbours_text(h: HistoryJSON) -> str:
    """``last writer 5 (axpbyz arg 0) · next reader 23 (axpb arg 3)`` for the text show."""
    if "error" in h:
        return f"history: {h['error']}"
    parts = []
    near = (("last writer", h.get("last_writer")), ("next reader", h.get("next_reader")))
    for name, event in near:
        if event is None:
            parts.append(f"{name}: none")
        else:
            where = event["enqueue"] if event["enqueue"] is not None else "its creation"
            parts.append(f"{name}: {where} ({escape_controls(event['what'])})")
    count = f"{h['event_count']} events" if "event_count" in h else "all events"
    return " · ".join(parts) + f"  [{count}: cltui show --json]"


def _fmt(value: Any) -> str:
    """Human form of a decoded value: shortest float text, vectors, structs."""
    if isinstance(value, float):
        import numpy as np

        f32 = np.float32(value)
        # shortest text that reads back as the same float32 (or float64) value
        return str(f32) if float(f32) == value else repr(value)
    if isinstance(value, list):
        return "(" + ", ".join(_fmt(v) for v in value) + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={_fmt(v)}" for k, v in value.items()) + "}"
    return str(value)


def print_text(d: dict[str, Any]) -> None:
    """What ``cltui show`` prints without ``--json``: the enqueue's JSON object as text."""
    title = d["kernel"] or d["function"]
    echo(f"enqueue {d['number']}  {d['kind']}  {title}")
    if d.get("recovered"):
        from cltui.capture.recovery import sources_text

        echo(
            f"  recovered: the log lost this enqueue; rebuilt from "
            f"{sources_text(d.get('recovered_from', []))}"
        )
    if d.get("device"):
        echo(f"  device:   {d['device']}")
    if d.get("global_size"):
        off = f"  offset {d['global_offset']}" if d.get("global_offset") else ""
        echo(f"  global:   {d['global_size']}  local: {d['local_size'] or 'NULL'}{off}")
    elif d.get("recovered") and d["kind"] == "kernel":
        echo("  global:   unknown (lost with the log; no Replay/ folder holds the work sizes)")
    dt = d.get("device_time_ns")
    if dt:
        echo(
            f"  time:     queued->submit {dt['queued_to_submit']} ns, submit->start "
            f"{dt['submit_to_start']} ns, start->end {dt['start_to_end']} ns"
        )
    prog = d.get("program")
    if prog:
        where = prog["source"] or "(no source file)"
        line = f":{prog['kernel_line']}" if prog.get("kernel_line") else ""
        echo(f"  program:  {prog['number']:04d} {prog['hash']}  {where}{line}")
        if prog["build_options"]:
            echo(f"  options:  {prog['build_options']}")
    if d.get("replay_folder"):
        echo(f"  replay:   {d['replay_folder']}")
    if "transfer" in d:
        t = d["transfer"]
        said = _transfer_text(t)
        if said:
            echo(f"  memory:   {said}")
        if "history" in t:
            echo(f"      {_neighbours_text(t['history'])}")
    for a in d["args"]:
        _print_arg(a)
    for p in d["problems"]:
        echo(f"  problem:  {p}")


def _transfer_text(t: dict[str, Any]) -> str:
    """What a transfer's log line says of its memory (a copy: source -> destination), each
    part only when the log holds it ("" for none: a marker)."""
    src, dst = t.get("memory_object"), t.get("destination")
    what = f"{src or '?'} -> {dst}" if dst else (src or "object not in the log")
    parts = [f"{k} {t[key]}" for k, key in (("offset", "offset"), ("bytes", "bytes"))
             if t[key] is not None]  # fmt: skip
    return "  ".join([what, *parts]) if parts or src or dst else ""


def _print_arg(a: ArgJSON) -> None:
    """One argument of ``show``: its declaration, value or object, and its dumps."""
    name = a["name"] or f"arg{a['index']}"
    typ = " ".join(x for x in (a["address_space"], a["access"], a["type"]) if x)
    line = f"  [{a['index']}] {name}: {typ or a['kind']}"
    if "value" in a:
        line += f" = {_fmt(a['value'])}"
    elif "local_bytes" in a:
        line += f"  ({a['local_bytes']} bytes local)"
    elif "sampler" in a:
        line += f" = {a['sampler']}"
    elif "memory_object" in a:
        mo = a["memory_object"]
        line += f"  {mo['kind']} {mo['handle']} {mo['bytes']} bytes"
    echo(line)
    if "history" in a:
        echo(f"      {_neighbours_text(a['history'])}")
    for which, dump in (("pre", a.get("pre")), ("post", a.get("post"))):
        if not dump:
            continue
        desc = f"      {which:<4} {dump['bytes']} bytes"
        if dump.get("hash_only"):
            desc += f"  hash {dump.get('hash')}"
        elif s := dump.get("stats"):
            desc += f"  {dump['dtype']} x{dump['elements']}"
            if "min" in s:
                desc += f"  min {s['min']:.6g} max {s['max']:.6g} mean {s['mean']:.6g}"
            if s.get("nan") or s.get("inf"):
                desc += f"  nan {s['nan']} inf {s['inf']}"
        echo(desc)
