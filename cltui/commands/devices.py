"""``cltui devices``: the OpenCL devices replay can use."""

from __future__ import annotations

import click

from cltui.commands._common import emit_json


@click.command("devices")
@click.option("--json", "as_json", is_flag=True, help="A JSON list of devices.")
def devices_cmd(as_json: bool) -> None:
    """List the OpenCL devices (P:D index, name, platform, SVM and image support).

    Use the P:D index or a case-insensitive name substring with ``cltui replay --device``.
    """
    from cltui.replay.devices import list_devices

    devices = list_devices()
    if as_json:
        emit_json(devices)
        return
    if not devices:
        click.echo("no OpenCL device found (is an ICD installed?)")
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for col in ("id", "device", "platform", "version", "SVM", "images", "max WG"):
        table.add_column(col)
    for d in devices:
        table.add_row(
            d["id"],
            d["name"],
            d["platform"],
            d["version"],
            "yes" if d["svm"] else "no",
            "yes" if d["images"] else "no",
            str(d["max_work_group_size"]),
        )
    Console().print(table)
