"""``discover_devices``: the devices of an inventory's hosts over the fleet's transport (real
sshd hosts), each host's failure in the fleet's own statuses and one-line reasons, and
cancellation through a :class:`CancelToken`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cltui.fleet.discover import discover_devices, lister_bundle
from cltui.fleet.inventory import read_inventory
from cltui.progress import CancelToken
from tests.fleet_setup import one_vendor
from tests.sshd_hosts import HostSpec, SshHosts

pytestmark = [pytest.mark.device, pytest.mark.child]


def test_discover_lists_each_hosts_devices_or_says_why_not(
    ssh_hosts: Callable[[list[HostSpec]], SshHosts], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    icd = one_vendor(tmp_path, monkeypatch, "pocl")
    nopy = tmp_path / "python-without-site"
    nopy.write_text(f"#!/bin/sh\nexec {sys.executable} -S \"$@\"\n")
    nopy.chmod(0o755)
    hosts = ssh_hosts([HostSpec("pocl", env={"OCL_ICD_VENDORS": str(icd)}),
                       HostSpec("refused", refuse_key=True), HostSpec("down", down=True)])
    work = tmp_path / "work"
    lines = [f"{n} ansible_host=127.0.0.1 ansible_port={hosts[h].port} cltui_workdir={work / n}"
             + extra for n, h, extra in (
                 ("pocl", "pocl", ""), ("refused", "refused", ""), ("down", "down", ""),
                 ("nopy", "pocl", f" ansible_python_interpreter={nopy}"))]
    inv = tmp_path / "lab.ini"
    inv.write_text("[lab]\n" + "\n".join(lines) + "\n\n[lab:vars]\n"
                   f"ansible_ssh_common_args=\"-F {hosts.config}\"\n"
                   f"ansible_python_interpreter={sys.executable}\n")
    found = discover_devices(read_inventory(inv), timeout=30)
    by = {hd.host.name: hd for hd in found}
    assert [hd.host.name for hd in found] == ["pocl", "refused", "down", "nopy"]
    assert by["pocl"].status == "ok", by["pocl"].reason
    assert [(d["id"], d["platform"]) for d in by["pocl"].devices] == [
        ("0:0", "Portable Computing Language")]
    assert (by["refused"].status, by["down"].status) == ("authentication", "unreachable")
    assert by["nopy"].status == "missing-dependency"
    assert "numpy" in by["nopy"].reason and "\n" not in by["nopy"].reason
    assert all(not by[n].devices for n in ("refused", "down", "nopy"))
    # the lister's files wait in the host's cache, by sha256, for the range's bundle
    objects = {p.name for p in (work / "pocl" / "objects").iterdir()}
    listed = (lister_bundle() / "SHA256SUMS").read_text().split()[0::2]
    assert set(listed) <= objects

    token = CancelToken()
    token.cancel("test")
    (gone,) = discover_devices(read_inventory(inv)[:1], timeout=30, cancel=token)
    assert gone.status == "cancelled" and not gone.devices
