"""The range a fleet run exports is one typed value (``EnqueueRange``): its text is read at the
CLI's edge (a bad one is refused there, before any host or export), and one range is one
export-cache entry whatever its text."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cltui.capture.ranges import EnqueueRange, parse_range
from cltui.cli import main
from cltui.fleet.bundle import export_key


def test_a_bad_range_is_refused_before_hosts_or_export(
    images_svm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    missing = tmp_path / "no-such-inventory.ini"  # the range is read before the hosts
    res = CliRunner().invoke(main, ["fleet", str(images_svm), "9-3", "--hosts", str(missing)])
    assert res.exit_code == 2, res.output
    assert "bad range '9-3'" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "cache" / "cltui" / "fleet-exports").exists()  # nothing exported


def test_one_range_is_one_cache_entry(images_svm: Path) -> None:
    key = export_key(images_svm, parse_range("12"), "chain")
    assert export_key(images_svm, parse_range(" 12-12 "), "chain") == key
    assert export_key(images_svm, EnqueueRange(12, 12), "chain") == key
    assert export_key(images_svm, EnqueueRange(12, 13), "chain") != key
    assert export_key(images_svm, EnqueueRange(12, 12), "isolated") != key
