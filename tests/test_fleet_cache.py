"""The content-addressed cache on a host, through a plain local shell transport (a template
``sh -c {cmd}``: no ssh needed): only what the host lacks is sent, a damaged bundle is refused
here, and the host keeps its most recently used bundles and the contents they link."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from cltui.capture import open_capture
from cltui.export import export_range
from cltui.fleet.cache import KEEP_BUNDLES, CacheError, bundle_files, sync
from cltui.fleet.inventory import Host
from cltui.fleet.transport import Transport


@pytest.fixture(scope="module")
def bundle(images_svm: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cache-bundle") / "b"
    export_range(open_capture(images_svm), "0-3", out)
    return out


def _local(tmp_path: Path) -> tuple[Transport, str]:
    work = str(tmp_path / "host-work")
    host = Host(name="here", address="here", transport="sh -c {cmd}", workdir=work)
    return Transport(host, tmp_path), work


@pytest.mark.child
def test_only_what_the_host_lacks_is_sent_and_the_tree_is_whole(
    bundle: Path, tmp_path: Path
) -> None:
    t, work = _local(tmp_path)
    files = bundle_files(bundle)
    some = sorted({h for _r, h, _s in files.files})[:5]
    (Path(work) / "objects").mkdir(parents=True)
    for rel, digest, _s in files.files:  # the host holds five contents already
        if digest in some:
            (Path(work) / "objects" / digest).write_bytes((bundle / rel).read_bytes())
    stats, failed = sync(t, files, work, has_bundle=False, timeout=60)
    assert failed is None
    assert stats.files_sent == len({h for _r, h, _s in files.files}) - 5
    tree = Path(work) / "bundles" / files.id
    assert (tree / ".complete").is_file()
    for rel, _digest, _size in files.files:
        assert (tree / rel).read_bytes() == (bundle / rel).read_bytes()
    again, failed = sync(t, files, work, has_bundle=True, timeout=60)
    assert failed is None and again.files_sent == 0 and again.bytes_sent == 0


def test_a_damaged_bundle_is_refused_before_anything_is_sent(
    bundle: Path, tmp_path: Path
) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(bundle, copy)
    victim = next((copy / "data").iterdir())
    victim.write_bytes(victim.read_bytes()[:-1] + b"\xff")
    with pytest.raises(CacheError, match="does not match its sum in SHA256SUMS"):
        bundle_files(copy)


@pytest.mark.child
def test_the_host_keeps_its_recent_bundles_and_their_contents(
    bundle: Path, tmp_path: Path
) -> None:
    t, work = _local(tmp_path)
    w = Path(work)
    old = time.time() - 7200
    for i in range(KEEP_BUNDLES + 3):  # older bundles, each linking one content
        obj = w / "objects" / f"{i:064x}"
        obj.parent.mkdir(parents=True, exist_ok=True)
        obj.write_text(str(i))
        b = w / "bundles" / f"old{i:02d}"
        b.mkdir(parents=True)
        os.link(obj, b / "data.bin")
        os.utime(obj, (old, old))
        os.utime(b, (old + i, old + i))
    orphan = w / "objects" / ("f" * 64)
    orphan.write_text("no bundle links me")
    os.utime(orphan, (old, old))
    files = bundle_files(bundle)
    _stats, failed = sync(t, files, work, has_bundle=False, timeout=60)
    assert failed is None
    kept = sorted(p.name for p in (w / "bundles").iterdir())
    assert len(kept) == KEEP_BUNDLES and files.id in kept
    assert "old00" not in kept and f"old{KEEP_BUNDLES + 2:02d}" in kept  # oldest went first
    assert not orphan.exists() and not (w / "objects" / f"{0:064x}").exists()
    assert (w / "objects" / f"{KEEP_BUNDLES + 2:064x}").exists()
