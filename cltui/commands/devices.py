"""``cltui devices``: the OpenCL devices replay can use."""

from __future__ import annotations

import click

from cltui.commands._common import echo, emit_json


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
        echo("no OpenCL device found (is an ICD installed?)")
        return
    for d in devices:
        echo(
            f"{d['id']:>5}  {d['name']}  [{d['platform']}; {d['version']}; "
            f"SVM {'yes' if d['svm'] else 'no'}; images {'yes' if d['images'] else 'no'}; "
            f"max work-group {d['max_work_group_size']}]"
        )
