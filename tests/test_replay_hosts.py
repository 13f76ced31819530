"""The replay dialog's remote rows (pure): labels, values, ticks as remembered, a failed host
as one disabled row, what a request takes from the ticks and what is remembered."""

from __future__ import annotations

from cltui.fleet.discover import HostDevices
from cltui.fleet.inventory import Host
from cltui.tui.screens.replay_hosts import (
    remote_rows,
    remote_settings,
    remote_value,
    split_remote,
    ticked_by_host,
)

POCL = {"id": "1:0", "name": "pthread-cpu", "platform": "Portable Computing Language"}
GRIND = {"id": "0:0", "name": "Oclgrind Simulator", "platform": "Oclgrind"}
FOUND = [
    HostDevices(Host("a/b", "a"), "python", "ok", "", (GRIND, POCL)),
    HostDevices(Host("gone\x1b[2J", "g"), "python", "unreachable", "no route\nto host"),
]


def test_rows_are_labelled_ticked_and_a_failed_host_is_one_disabled_row() -> None:
    rows = remote_rows(FOUND, [])
    assert [(r.prompt.plain, r.value, r.ticked, r.disabled) for r in rows] == [
        ("a/b: 0:0 Oclgrind Simulator (Oclgrind)", "@a/b/0:0", True, False),
        ("a/b: 1:0 pthread-cpu (Portable Computing Language)", "@a/b/1:0", True, False),
        ("gone\\x1b[2J: ✗ unreachable: no route\\x0ato host", "@gone\x1b[2J/!", False, True),
    ]
    assert split_remote(remote_value("a/b", "1:0")) == ("a/b", "1:0")
    assert split_remote("1:0") is None


def test_ticks_as_remembered_and_the_request_per_host() -> None:
    remembered = [{"host": "a/b", "name": "pthread-cpu", "platform": POCL["platform"]},
                  {"name": "Oclgrind Simulator", "platform": "Oclgrind"}]  # a local one
    rows = remote_rows(FOUND, remembered)
    assert [r.value for r in rows if r.ticked] == ["@a/b/1:0"]
    hosts = ticked_by_host(["0:0", "@a/b/1:0", "@gone\x1b[2J/!"])
    assert hosts == {"a/b": ("1:0",)}
    assert remote_settings(FOUND, hosts) == [remembered[0]]
