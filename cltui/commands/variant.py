"""``cltui variant list|show|delete DUMPDIR [NAME]``: the variants saved for a capture (in
the user's data folder, never inside the capture)."""

from __future__ import annotations

from typing import Any

import click

from cltui.commands._common import echo, emit_json, fail


@click.group("variant")
def variant_cmd() -> None:
    """The variants saved for a capture (cltui try --save, cltui sweep): list, show, delete.
    A saved variant runs again with cltui try DUMPDIR RANGE --variant NAME and exports
    with cltui export ... --variant NAME."""


def _capture(dumpdir: str) -> str:
    from cltui.capture.model import CaptureError
    from cltui.capture.opening import check_capture_folder

    try:
        check_capture_folder(dumpdir)
    except CaptureError as exc:  # the one not-a-capture line of every command
        fail(str(exc))
    return dumpdir


@variant_cmd.command("list")
@click.argument("dumpdir", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="An array: name, range, changes, problem.")
def list_cmd(dumpdir: str, as_json: bool) -> None:
    """The capture's saved variants, one line each."""
    from cltui.replay.experiment.store import list_variants

    rows: list[dict[str, Any]] = []
    for name, var, problem in list_variants(_capture(dumpdir)):
        rows.append({
            "name": name,
            "range": var.range if var else None,
            "lines": var.describe() if var else [],
            "problem": problem or None,
        })  # fmt: skip
    if as_json:
        emit_json(rows)
        return
    if not rows:
        echo("no saved variant for this capture (cltui try ... --save NAME)")
    for r in rows:
        what = r["problem"] or "; ".join(r["lines"])
        echo(f"{r['name']}  range {r['range']}  {what}")


@variant_cmd.command("show")
@click.argument("dumpdir", type=click.Path())
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="The variant's JSON (sources inline).")
def show_cmd(dumpdir: str, name: str, as_json: bool) -> None:
    """One saved variant: its range, its changes, what it got where it was measured (a
    sweep's best), its patches and sources."""
    from cltui.replay.experiment.store import load_result, load_variant
    from cltui.replay.experiment.variant import VariantError

    try:
        cap = _capture(dumpdir)
        var = load_variant(cap, name)
        result = load_result(cap, name)
    except VariantError as exc:
        fail(str(exc))
    if as_json:
        emit_json({**var.to_dict(), **({"result": result} if result else {})})
        return
    echo(f"variant {var.name}  range {var.range}" + (f"  kernel {var.kernel}" if var.kernel
                                                        else ""))  # fmt: skip
    for line in var.describe():
        echo(f"  {line}")
    if result:
        echo(f"  measured: {_result_text(result)}")
    for p in var.programs:
        echo(f"--- {p.program or 'program'} ({'diff' if p.patch is not None else 'source'})")
        echo((p.patch if p.patch is not None else p.source or "").rstrip("\n"))


def _result_text(result: dict[str, Any]) -> str:
    """``on <device> (driver <driver>), <date>: pass, 1.2 µs against 1.4 µs for the
    capture's own side by side (-12.3%, faster)``."""
    from cltui.text.units import fmt_ns

    dev = result.get("device") or {}
    vs = result.get("vs_capture") or {}
    a, b, rel = vs.get("a"), vs.get("b"), vs.get("relative")
    parts = [str(result.get("verdict", "?"))]
    num = (int, float)
    if isinstance(a, num) and isinstance(b, num) and isinstance(rel, num):
        parts.append(f"{fmt_ns(b)} against {fmt_ns(a)} for the capture's own side by side "
                     f"({rel * 100:+.1f}%, {vs.get('reading', '')})")  # fmt: skip
    return (f"on {dev.get('name', '?')} (driver {dev.get('driver') or '?'}), "
            f"{result.get('date', '?')}: " + ", ".join(parts))


@variant_cmd.command("delete")
@click.argument("dumpdir", type=click.Path())
@click.argument("name")
def delete_cmd(dumpdir: str, name: str) -> None:
    """Remove a saved variant."""
    from cltui.replay.experiment.store import delete_variant
    from cltui.replay.experiment.variant import VariantError

    try:
        folder = delete_variant(_capture(dumpdir), name)
    except VariantError as exc:
        fail(str(exc))
    echo(f"deleted variant {name} ({folder})")
