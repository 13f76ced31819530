"""Host files in bundles: only header-like text files reached by ``#include`` are copied, each
listed with its host path; system and credentials folders never; ``--no-host-includes`` none.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from textual.widgets import Checkbox, Input, Label

from cltui.capture import open_capture
from cltui.capture.confine import host_header_refusal
from cltui.cli import main
from cltui.export.includes import preview_host_includes
from tests.conftest import copy_capture
from tests.test_tui_export import record_notes
from tests.test_tui_replay import SIZE, aio, loaded, select, wait_for

OPTIONS = "CLI_0000_4804838E_0000_A7B10208_options.txt"
SOURCE = "CLI_0000_4804838E_source.cl"


def _crafted(images_svm: Path, tmp_path: Path, include_dir: str, include: str) -> Path:
    """images_svm_pocl whose program says ``-I <include_dir>`` and ``#include "<include>"``."""
    cap = copy_capture(images_svm, tmp_path / "cap")
    (cap / OPTIONS).write_text(f"-I {include_dir}")
    src = (cap / SOURCE).read_text()
    (cap / SOURCE).write_text(f'#include "{include}"\n{src}')
    return cap


def _export(cap: Path, out: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    r = CliRunner().invoke(main, ["export", str(cap), "0-2", "-o", str(out), "--json", *extra])
    text = CliRunner().invoke(
        main, ["export", str(cap), "0-2", "-o", str(out) + "-text", *extra]
    ).stdout
    return r.exit_code, json.loads(r.stdout) if r.exit_code == 0 else {}, text


def _all_bytes(folder: Path) -> list[bytes]:
    return [f.read_bytes() for f in folder.rglob("*") if f.is_file()]


def test_etc_passwd_is_never_bundled(images_svm: Path, tmp_path: Path) -> None:
    passwd = Path("/etc/passwd")
    if not passwd.is_file():
        pytest.skip("no /etc/passwd here")
    cap = _crafted(images_svm, tmp_path, "/etc", "passwd")
    code, info, text = _export(cap, tmp_path / "b")
    assert code == 0
    assert info["host_files"] == []
    (refused,) = info["refused_includes"]
    assert refused["include"] == "passwd" and refused["host_path"] == "/etc/passwd"
    assert "system folder" in refused["why"]
    assert "refused host file: #include 'passwd' -> /etc/passwd" in text
    assert "may not build from source" in text
    secret = passwd.read_bytes()
    assert secret not in _all_bytes(tmp_path / "b")
    assert not (tmp_path / "b" / "kernels" / "include").exists()
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["bundle"]["refused_includes"] == info["refused_includes"]
    assert manifest["bundle"]["host_files"] == []
    # the tar holds no /etc file either
    tar = tmp_path / "b.tar"
    r = CliRunner().invoke(main, ["export", str(cap), "0-2", "--tar", str(tar)])
    assert r.exit_code == 0, r.output
    with tarfile.open(tar) as t:
        for m in t.getmembers():
            assert "passwd" not in m.name and "etc" not in Path(m.name).parts
            if m.isfile():
                f = t.extractfile(m)
                assert f is not None and f.read() != secret


def test_a_real_include_dir_is_bundled_and_listed(images_svm: Path, tmp_path: Path) -> None:
    inc = tmp_path / "myinc"
    (inc / "sub").mkdir(parents=True)
    (inc / "defs.h").write_text('#include "sub/more.clh"\n#define SCALE_DEF 1\n')
    (inc / "sub" / "more.clh").write_text("#define MORE 2\n")
    cap = _crafted(images_svm, tmp_path, str(inc), "defs.h")
    code, info, text = _export(cap, tmp_path / "b")
    assert code == 0
    hosts = {h["host_path"]: h for h in info["host_files"]}
    assert set(hosts) == {str(inc / "defs.h"), str(inc / "sub" / "more.clh")}
    assert hosts[str(inc / "defs.h")]["bundle_path"] == "kernels/include/0/defs.h"
    assert info["refused_includes"] == []
    assert (tmp_path / "b" / "kernels/include/0/sub/more.clh").read_text() == "#define MORE 2\n"
    assert f"host file: {inc / 'defs.h'} -> kernels/include/0/defs.h" in text
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["bundle"]["host_files"] == info["host_files"]
    # the dialog's preview lists the same files
    pv = preview_host_includes(open_capture(cap), 0, 2)
    assert sorted(pv.copied) == sorted(hosts)
    # --no-host-includes: nothing copied, each include refused, the captured -I kept
    code, info, text = _export(cap, tmp_path / "n", "--no-host-includes")
    assert code == 0
    assert info["host_files"] == []
    (refused,) = info["refused_includes"]
    assert refused["host_path"] == str(inc / "defs.h")
    assert "--no-host-includes" in refused["why"]
    assert not (tmp_path / "n" / "kernels" / "include").exists()
    manifest = json.loads((tmp_path / "n" / "manifest.json").read_text())
    assert all(f"-I {inc}" in p["options"] for p in manifest["programs"].values())


def test_only_header_like_text(tmp_path: Path) -> None:
    (tmp_path / "ok.h").write_text("#define A 1\n")
    (tmp_path / "data.bin").write_bytes(b"\x00\x01")
    (tmp_path / "fake.h").write_bytes(b"\x00\x01binary")
    (tmp_path / "big.h").write_bytes(b"/" * ((1 << 20) + 1))
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "keys.h").write_text("secret")
    assert host_header_refusal(tmp_path / "ok.h") is None
    assert "not named like a header" in str(host_header_refusal(tmp_path / "data.bin"))
    assert "NUL" in str(host_header_refusal(tmp_path / "fake.h", b"\x00\x01binary"))
    assert "larger than" in str(host_header_refusal(tmp_path / "big.h"))
    assert "credentials" in str(host_header_refusal(tmp_path / ".ssh" / "keys.h"))
    assert "system folder" in str(host_header_refusal("/proc/self/environ"))
    # a link named like a header that leads into /etc is judged by where it leads
    (tmp_path / "sneaky.h").symlink_to("/etc/hostname")
    assert "system folder" in str(host_header_refusal(tmp_path / "sneaky.h"))


@aio
async def test_export_dialog_lists_and_refuses_host_headers(
    images_svm: Path, tmp_path: Path
) -> None:
    inc = tmp_path / "myinc"
    inc.mkdir()
    (inc / "defs.h").write_text("#define SCALE_DEF 1\n")
    cap = _crafted(images_svm, tmp_path, str(inc), "defs.h")
    from cltui.tui.app import make_app
    from cltui.tui.screens.export_dialog import ExportDialog
    from cltui.tui.screens.main import MainScreen

    out = tmp_path / "bundle"
    async with make_app(cap).run_test(size=SIZE) as pilot:
        notes = record_notes(pilot.app)
        main_screen = await loaded(pilot)
        await select(pilot, main_screen, 0, 2)
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ExportDialog))
        dialog = pilot.app.screen
        listing = str(dialog.query_one("#export-host-files", Label).render())
        assert f"Host header: {inc / 'defs.h'}" in listing
        dialog.query_one("#export-folder", Input).value = str(out)
        dialog.query_one("#export-host-includes", Checkbox).value = False
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, MainScreen), 60)
        await wait_for(pilot, lambda: any(n.startswith("Exported") for n in notes), 10)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["bundle"]["host_files"] == []
    assert manifest["bundle"]["refused_includes"][0]["host_path"] == str(inc / "defs.h")
    (note,) = [n for n in notes if n.startswith("Exported")]
    assert "refused: the bundle may not build from source" in note
