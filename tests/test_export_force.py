"""``export --force`` replaces only a cltui bundle or an empty folder (issue 26): a user's
folder, the current folder, the home folder and ``/`` are refused with one line, exit 2, and
nothing outside the bundle is deleted."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from cltui.capture import open_capture
from cltui.cli import main as cli_main
from cltui.export import ExportError, export_range
from cltui.export.bundle import BUNDLE_FORMAT, replace_refusal


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _cli(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(cli_main, ["export", *args])
    return r.exit_code, r.output


def test_force_refuses_a_folder_that_is_not_a_bundle(images_svm: Path, tmp_path: Path) -> None:
    mine = tmp_path / "mydir"
    (mine / "sub").mkdir(parents=True)
    (mine / "notes.txt").write_text("mine")
    (mine / "sub" / "deep.txt").write_text("also mine")
    before = _tree(tmp_path)
    code, out = _cli(str(images_svm), "0", "-o", str(mine), "--force")
    assert code == 2, out
    assert f"{mine} is not a cltui bundle: not replacing it" in out
    assert "Traceback" not in out and len(out.strip().splitlines()) == 1
    assert _tree(tmp_path) == before  # nothing deleted, no temp folder left


def test_force_refuses_a_manifest_of_another_format(images_svm: Path, tmp_path: Path) -> None:
    mine = tmp_path / "looks_like"
    mine.mkdir()
    (mine / "manifest.json").write_text(json.dumps({"bundle": {"format": "something-else"}}))
    with pytest.raises(ExportError, match="is not a cltui bundle"):
        export_range(open_capture(images_svm), "0", mine, force=True)
    assert _tree(mine) == ["manifest.json"]


def test_force_refuses_the_current_folder_and_its_parents(
    images_svm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / "work" / "here"
    here.mkdir(parents=True)
    (here / "keep.txt").write_text("x")
    monkeypatch.chdir(here)
    before = _tree(tmp_path)
    for target in (".", "..", str(here)):
        code, out = _cli(str(images_svm), "0", "-o", target, "--force")
        assert code == 2, out
        assert "is the current folder or holds it: not replacing it" in out, out
        assert "Traceback" not in out
    assert _tree(tmp_path) == before


def test_force_refuses_home_even_when_it_looks_like_a_bundle(
    images_svm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("x")
    (home / "manifest.json").write_text(json.dumps({"bundle": {"format": BUNDLE_FORMAT}}))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    (home / ".cache").mkdir()
    monkeypatch.chdir(tmp_path)
    before = _tree(tmp_path)
    for target in (str(home), str(tmp_path)):  # the home, a folder holding it
        code, out = _cli(str(images_svm), "0", "-o", target, "--force")
        assert code == 2, out
        assert "is the home folder or holds it: not replacing it" in out, out
    assert [p for p in _tree(tmp_path) if not p.startswith("home/.cache/")] == before


def test_force_refuses_the_root_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert replace_refusal(Path("/")) == "/ is the root folder: not replacing it"


def test_force_replaces_an_empty_folder_and_a_bundle(images_svm: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (tmp_path / "beside.txt").write_text("untouched")
    code, out = _cli(str(images_svm), "0", "-o", str(empty), "--force")
    assert code == 0, out
    assert json.loads((empty / "manifest.json").read_text())["bundle"]["format"] == BUNDLE_FORMAT
    (empty / "stale.txt").write_text("from the old bundle")
    code, out = _cli(str(images_svm), "0-1", "-o", str(empty), "--force")
    assert code == 0, out
    assert not (empty / "stale.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["beside.txt", "empty"]
    assert (tmp_path / "beside.txt").read_text() == "untouched"


def test_force_refuses_a_manifest_that_is_a_fifo(tmp_path: Path) -> None:
    mine = tmp_path / "b"
    mine.mkdir()
    os.mkfifo(mine / "manifest.json")  # reading it would block: refused, never opened blocking
    assert replace_refusal(mine) == f"{mine} is not a cltui bundle: not replacing it"
