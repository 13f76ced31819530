"""``cltui fleet --list-hosts INVENTORY``: each host of an inventory (``--limit`` applied) and
its OpenCL devices, found by the path a fleet run takes to them; and the hosts a run takes."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from cltui.commands._common import echo, emit_json, escape_tree, fail

if TYPE_CHECKING:
    from cltui.fleet.inventory import Host


def chosen_hosts(inventory: str, limit: str | None) -> list[Host]:
    """The inventory's hosts that ``limit`` names (all without one); bad input exits 2."""
    from cltui.fleet.hostvars import LimitError, limit_hosts
    from cltui.fleet.inventory import read_inventory

    hosts = read_inventory(inventory)
    if limit is None:
        return hosts
    try:
        return limit_hosts(hosts, limit)
    except LimitError as exc:
        fail(f"{exc} ({inventory})")


def print_hosts(inventory: str, limit: str | None, runner: str | None, timeout: float,
                jobs: int, as_json: bool) -> None:
    """List the hosts and their devices; exit 0 when every host answered, 3 when one did
    not (its status and reason said)."""
    from cltui.errors import EXIT_INCOMPLETE
    from cltui.fleet.discover import discover_devices

    hosts = chosen_hosts(inventory, limit)
    found = discover_devices(hosts, runner=runner, timeout=min(timeout, 60.0), jobs=jobs)
    doc: list[dict[str, Any]] = [{
        "name": f.host.name, "address": f.host.address, "groups": list(f.host.groups),
        "runner": f.runner, "status": f.status, "reason": f.reason,
        "devices": [{"id": d["id"], "name": d.get("name", ""),
                     "platform": d.get("platform", ""),
                     "driver": d.get("driver") or d.get("version", "")} for d in f.devices],
    } for f in found]
    if as_json:
        emit_json({"inventory": inventory, "limit": limit, "hosts": doc})
    else:
        for h in escape_tree(doc):
            groups = f" [{', '.join(h['groups'])}]" if h["groups"] else ""
            if h["status"] != "ok":
                echo(f"{h['name']}{groups}: {h['status']}: {h['reason']}")
                continue
            echo(f"{h['name']}{groups}: {len(h['devices'])} devices ({h['runner']} runner)")
            for d in h["devices"]:
                echo(f"  {h['name']}:{d['id']}  {d['name']}  ({d['platform']}, "
                     f"driver {d['driver']})")
    if any(f.status != "ok" for f in found):
        sys.exit(EXIT_INCOMPLETE)


__all__ = ["chosen_hosts", "print_hosts"]
