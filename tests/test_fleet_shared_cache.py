"""Hosts that share one work folder (an NFS home, one machine listed twice): four hosts fill
one cold cache at once, six times over (``CLTUI_STRESS_ROUNDS=N`` for a soak).  Each makes
the bundle whole there and at once reads it back whole (every file against SHA256SUMS),
while the others are still writing: a reader never sees half a bundle, writers of the same
content agree (one tree, nothing nested in it, no temporary folder left).  Through plain
local shell transports (``sh -c {cmd}``): the host's side of the cache is the shell script
ssh would carry."""

from __future__ import annotations

import os
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cltui.capture import open_capture
from cltui.export import export_range
from cltui.fleet.cache import BundleFiles, bundle_files, shell_path, sync
from cltui.fleet.inventory import Host
from cltui.fleet.transport import Transport

pytestmark = [pytest.mark.child, pytest.mark.slow]

HOSTS = 4
ROUNDS = int(os.environ.get("CLTUI_STRESS_ROUNDS", "6"))  # a soak: CLTUI_STRESS_ROUNDS=100


@pytest.fixture(scope="module")
def bundle(images_svm: Path, tmp_path_factory: pytest.TempPathFactory) -> BundleFiles:
    out = tmp_path_factory.mktemp("shared-bundle") / "b"
    export_range(open_capture(images_svm), "0-3", out)
    return bundle_files(out)


def _host(i: int, tmp_path: Path, work: Path) -> Transport:
    host = Host(name=f"node{i}", address=f"node{i}", transport="sh -c {cmd}", workdir=str(work))
    return Transport(host, tmp_path)


def _fill_and_read(t: Transport, files: BundleFiles, work: Path, start: threading.Barrier
                   ) -> str:
    """One host: the bundle made whole, then read back whole; "" or what went wrong."""
    start.wait()
    _stats, failed = sync(t, files, str(work), has_bundle=False, timeout=120)
    if failed is not None:
        return f"{t.host.name}: sync failed ({failed.rc}): {failed.err}"
    tree = f"{shell_path(str(work))}/bundles/{files.id}"
    res = t.run(f"cd {tree} && [ -f .complete ] && sha256sum -c --quiet SHA256SUMS", timeout=120)
    if res.rc != 0:
        return f"{t.host.name}: the bundle read back broken: {res.err} {res.out.decode()}"
    return ""


def test_four_hosts_fill_one_cold_cache_at_once(bundle: BundleFiles, tmp_path: Path) -> None:
    work = tmp_path / "shared-home" / ".cache" / "cltui-fleet"
    for n in range(ROUNDS):
        shutil.rmtree(work, ignore_errors=True)  # cold
        hosts = [_host(i, tmp_path, work) for i in range(HOSTS)]
        start = threading.Barrier(HOSTS)
        with ThreadPoolExecutor(HOSTS) as ex:
            said = list(ex.map(_fill_and_read, hosts, [bundle] * HOSTS, [work] * HOSTS,
                               [start] * HOSTS))
        assert not any(said), (n, said)
        trees = sorted(p.name for p in (work / "bundles").iterdir())
        assert trees == [bundle.id], (n, trees)  # one tree: the writers agreed
        inside = {p.name for p in (work / "bundles" / bundle.id).iterdir()}
        assert inside == {r.split("/")[0] for r, _h, _s in bundle.files} | {".complete"}, n
        assert not list(work.glob("incoming.*")), n  # every writer's temporary folder went
