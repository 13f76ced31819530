"""The replay dialog's remote rows: the devices of an inventory's hosts (found by
:func:`cltui.fleet.discover.discover_devices`, over the fleet's own transport) listed after the
local ones, ``host: P:D name (platform)``; a host that did not answer is one disabled row with
the fleet's status and reason.  A remote row's value is ``@host/P:D``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from rich.text import Text

from cltui.text.escape import escape_controls

if TYPE_CHECKING:
    from cltui.fleet.discover import HostDevices

__all__ = [
    "REMOTE", "RemoteRow", "remote_rows", "remote_settings", "remote_value", "split_remote",
    "ticked_by_host",
]

REMOTE = "@"


class RemoteRow(NamedTuple):
    prompt: Text
    value: str
    ticked: bool
    disabled: bool = False


def remote_value(host: str, device_id: str) -> str:
    return f"{REMOTE}{host}/{device_id}"


def split_remote(value: str) -> tuple[str, str] | None:
    """``(host, P:D)`` of a remote row's value; None for a local row."""
    if not value.startswith(REMOTE):
        return None
    host, _, dev = value[1:].rpartition("/")
    return host, dev


def ticked_by_host(values: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The ticked remote devices per host name, in the order ticked."""
    out: dict[str, list[str]] = {}
    for v in values:
        if (hit := split_remote(v)) is not None and hit[1] != "!":
            out.setdefault(hit[0], []).append(hit[1])
    return {h: tuple(ids) for h, ids in out.items()}


def remote_rows(
    found: Sequence[HostDevices], remembered: Sequence[dict[str, str]]
) -> list[RemoteRow]:
    """One row per device of each host that answered, ticked as remembered (the devices of
    the last replay on that host) or else all; one disabled row per host that did not."""
    rows: list[RemoteRow] = []
    for hd in found:
        name = hd.host.name
        if hd.status != "ok":
            why = escape_controls(f"{name}: ✗ {hd.status}: {hd.reason}")
            rows.append(RemoteRow(Text(why, "red"), remote_value(name, "!"), False, True))
            continue
        again = {(d.get("name"), d.get("platform")) for d in remembered if d.get("host") == name}
        for d in hd.devices:
            tick = (d["name"], d["platform"]) in again if again else True
            label = escape_controls(f"{name}: {d['id']} {d['name']} ({d['platform']})")
            rows.append(RemoteRow(Text(label), remote_value(name, d["id"]), tick))
    return rows


def remote_settings(
    found: Sequence[HostDevices], hosts: dict[str, tuple[str, ...]]
) -> list[dict[str, str]]:
    """The ticked remote devices to remember: host, name and platform (ids can change)."""
    return [{"host": hd.host.name, "name": str(d["name"]), "platform": str(d["platform"])}
            for hd in found for d in hd.devices if d["id"] in hosts.get(hd.host.name, ())]
