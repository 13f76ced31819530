"""``cltui info DUMPDIR``: what a capture holds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from cltui.commands._common import echo, emit_json, load_capture


def _print_tree(data: Any, indent: int = 0) -> None:
    pad = "  " * indent
    if isinstance(data, dict):
        for key, value in data.items():
            if isinstance(value, dict | list) and value:
                echo(f"{pad}{key}:")
                _print_tree(value, indent + 1)
            else:
                echo(f"{pad}{key}: {_scalar(value)}")
    elif isinstance(data, list):
        for item in data:
            if isinstance(item, dict):
                first = True
                for key, value in item.items():
                    lead = "- " if first else "  "
                    first = False
                    if isinstance(value, dict | list) and value:
                        echo(f"{pad}{lead}{key}:")
                        _print_tree(value, indent + 2)
                    else:
                        echo(f"{pad}{lead}{key}: {_scalar(value)}")
            else:
                echo(f"{pad}- {_scalar(item)}")


def _scalar(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, list | dict):
        return "none" if not value else str(value)
    return str(value)


@click.command("info")
@click.argument("dumpdir", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="JSON object (see docs/cli-json.md).")
def info_cmd(dumpdir: str, as_json: bool) -> None:
    """Summarise DUMPDIR: programs, devices, counts per kind and kernel, timing, data."""
    cap = load_capture(dumpdir, quiet=as_json)
    data = cap.info()
    data["problems"] = [str(p) for p in cap.problems]
    if as_json:
        emit_json(data)
    else:
        shown: dict[str, object] = dict(data)
        rec = data.get("recovery")
        if rec:
            echo(f"lost: {rec['line']}")
            shown["recovery"] = _recovery_text(rec)
        _print_tree(shown)


def _recovery_text(rec: Mapping[str, object]) -> dict[str, object]:
    """The ``recovery`` object with its [first, last] runs written as ``0-1,3,5-9``."""
    from cltui.capture.recovery import range_text

    out: dict[str, object] = {}
    for key, value in rec.items():
        if key == "line":
            continue
        if isinstance(value, list) and all(isinstance(v, list) for v in value):
            out[key] = range_text([(int(a), int(b)) for a, b in value], 1 << 30) or "none"
        else:
            out[key] = value
    return out
