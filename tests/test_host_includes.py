"""Host files in bundles: a folder the capture names is never read; headers come from pyopencl's
own package and the folders the user names (``--include-dir``), only header-like text files
reached by ``#include``, each listed with its host path; system and credentials folders never.
"""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from textual.widgets import Input, Label

from cltui.capture import open_capture
from cltui.capture.confine import host_header_refusal
from cltui.capture.ranges import EnqueueRange
from cltui.cli import main
from cltui.export.includes import is_pyopencl_dir, preview_host_includes
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


def test_a_captured_system_folder_is_not_read(images_svm: Path, tmp_path: Path) -> None:
    """``-I /etc`` + ``#include "passwd"``: /etc is not read (nothing is copied, nothing is
    looked up there); one line says so, and --include-dir /etc is refused file by file."""
    passwd = Path("/etc/passwd")
    if not passwd.is_file():
        pytest.skip("no /etc/passwd here")
    cap = _crafted(images_svm, tmp_path, "/etc", "passwd")
    code, info, text = _export(cap, tmp_path / "b")
    assert code == 0
    assert info["host_files"] == [] and info["refused_includes"] == []
    assert info["missing_includes"] == [{"program": "program 0000", "include": "passwd"}]
    assert info["unread_include_dirs"] == [
        {"dir": "/etc", "programs": ["program 0000"], "missing": ["passwd"]}
    ]
    assert (
        "note: include folder /etc (named by the capture) was not read: a capture does not "
        "choose host files for a bundle; not in the bundle: #include 'passwd'"
    ) in text
    assert "--include-dir /etc" in text
    secret = passwd.read_bytes()
    assert secret not in _all_bytes(tmp_path / "b")
    assert not (tmp_path / "b" / "kernels" / "include").exists()
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    for key in ("host_files", "refused_includes", "missing_includes", "unread_include_dirs"):
        assert manifest["bundle"][key] == info[key]
    readme = (tmp_path / "b" / "README.md").read_text()
    assert "- `/etc`: the source's includes not in the bundle: `passwd`" in readme
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
    # a user who names /etc gets the confine rule: refused, listed, not copied
    code, info, text = _export(cap, tmp_path / "u", "--include-dir", "/etc")
    assert code == 0 and info["host_files"] == [] and info["unread_include_dirs"] == []
    (refused,) = info["refused_includes"]
    assert refused["include"] == "passwd" and refused["host_path"] == "/etc/passwd"
    assert "system folder" in refused["why"]
    assert "refused host file: #include 'passwd' -> /etc/passwd" in text
    assert secret not in _all_bytes(tmp_path / "u")


def test_a_captured_include_dir_is_bundled_only_when_the_user_names_it(
    images_svm: Path, tmp_path: Path
) -> None:
    inc = tmp_path / "myinc"
    (inc / "sub").mkdir(parents=True)
    (inc / "defs.h").write_text('#include "sub/more.clh"\n#define SCALE_DEF 1\n')
    (inc / "sub" / "more.clh").write_text("#define MORE 2\n")
    cap = _crafted(images_svm, tmp_path, str(inc), "defs.h")
    # the capture names an existing folder whose header the source includes: nothing is copied
    code, info, text = _export(cap, tmp_path / "n")
    assert code == 0
    assert info["host_files"] == [] and info["refused_includes"] == []
    assert info["missing_includes"] == [{"program": "program 0000", "include": "defs.h"}]
    (unread,) = info["unread_include_dirs"]
    assert unread["dir"] == str(inc) and unread["missing"] == ["defs.h"]
    assert f"include folder {inc} (named by the capture) was not read" in text
    assert f"--include-dir {inc}" in text
    assert not (tmp_path / "n" / "kernels" / "include").exists()
    assert b"SCALE_DEF" not in b"".join(_all_bytes(tmp_path / "n"))
    manifest = json.loads((tmp_path / "n" / "manifest.json").read_text())
    assert all(f"-I {inc}" in p["options"] for p in manifest["programs"].values())
    pv = preview_host_includes(open_capture(cap), EnqueueRange(0, 2))
    assert pv.copied == [] and pv.unread == {str(inc): ["defs.h"]} and pv.missing == ["defs.h"]
    # --include-dir: the user's folder is read, its headers bundled and listed
    code, info, text = _export(cap, tmp_path / "b", "--include-dir", str(inc))
    assert code == 0
    hosts = {h["host_path"]: h for h in info["host_files"]}
    assert set(hosts) == {str(inc / "defs.h"), str(inc / "sub" / "more.clh")}
    assert hosts[str(inc / "defs.h")]["bundle_path"] == "kernels/include/0/defs.h"
    assert {h["origin"] for h in hosts.values()} == {"include-dir"}
    assert info["refused_includes"] == info["missing_includes"] == []
    assert info["unread_include_dirs"] == []  # the user named the captured folder itself
    assert (tmp_path / "b" / "kernels/include/0/sub/more.clh").read_text() == "#define MORE 2\n"
    assert f"host file (include-dir): {inc / 'defs.h'} -> kernels/include/0/defs.h" in text
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["bundle"]["host_files"] == info["host_files"]
    readme = (tmp_path / "b" / "README.md").read_text()
    assert "- `kernels/include/0/defs.h` from a folder the exporting user named" in readme
    pv = preview_host_includes(open_capture(cap), EnqueueRange(0, 2), [inc])
    assert sorted(p for p, _o in pv.copied) == sorted(hosts) and pv.unread == {}
    # a folder of another name is searched too (the captured one is then still not read)
    other = tmp_path / "elsewhere"
    shutil.copytree(inc, other)
    code, info, _text = _export(cap, tmp_path / "o", "--include-dir", str(other))
    assert code == 0 and info["missing_includes"] == []
    assert {h["host_path"] for h in info["host_files"]} == {
        str(other / "defs.h"), str(other / "sub" / "more.clh")
    }
    assert info["unread_include_dirs"][0]["missing"] == []
    # the bundle's own folders come first in its build options: its headers win over the
    # captured folder's on a machine that has that folder too
    from cltui.replay.feasibility import load_bundle

    for prog in load_bundle(tmp_path / "o")["programs"].values():
        opts = prog["options"]
        assert opts.startswith(f"-I {tmp_path / 'o' / 'kernels' / 'include' / '0'}"), opts
        assert opts.index(str(tmp_path / "o")) < opts.index(f"-I {inc}"), opts
    # --no-host-includes cannot be combined with --include-dir; a missing folder is one line
    r = CliRunner().invoke(main, ["export", str(cap), "0-2", "-o", str(tmp_path / "x"),
                                  "--no-host-includes", "--include-dir", str(inc)])  # fmt: skip
    assert r.exit_code == 2 and "--no-host-includes" in r.output
    r = CliRunner().invoke(main, ["export", str(cap), "0-2", "-o", str(tmp_path / "x"),
                                  "--include-dir", str(tmp_path / "nope")])  # fmt: skip
    assert r.exit_code == 2 and "not a folder" in r.output and "Traceback" not in r.output


def test_a_pyopencl_looking_folder_stands_for_the_local_package(
    images_svm: Path, tmp_path: Path
) -> None:
    """``-I <anything>/pyopencl/cl`` is pyopencl's own folder here, not the captured one: a
    header planted in the captured folder is not bundled."""
    fake = tmp_path / "evil" / "pyopencl" / "cl"
    fake.mkdir(parents=True)
    (fake / "planted.h").write_text("#define PLANTED 1\n")
    cap = _crafted(images_svm, tmp_path, str(fake), "planted.h")
    code, info, _text = _export(cap, tmp_path / "b")
    assert code == 0 and info["host_files"] == [] and info["unread_include_dirs"] == []
    assert info["missing_includes"] == [{"program": "program 0000", "include": "planted.h"}]
    assert b"PLANTED" not in b"".join(_all_bytes(tmp_path / "b"))
    assert is_pyopencl_dir(r"C:\venv\Lib\site-packages\pyopencl\cl")  # a Windows capture's
    assert not is_pyopencl_dir("/home/me/pyopencl/cl2") and not is_pyopencl_dir("/x/cl")


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


@pytest.mark.child
@aio
async def test_export_dialog_reads_only_the_users_folders(images_svm: Path, tmp_path: Path) -> None:
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

        def listing() -> str:
            return str(dialog.query_one("#export-host-files", Label).render())

        assert f"Not read (the capture names it): {inc}" in listing()
        assert "Not in the bundle: #include 'defs.h'" in listing()
        assert "Header (" not in listing()
        dialog.query_one("#export-folder", Input).value = str(out)
        dialog.query_one("#export-include-dirs", Input).value = str(tmp_path / "nope")
        await pilot.pause()
        assert f"Not a folder: {tmp_path / 'nope'}" in listing()
        await pilot.press("enter")
        await pilot.pause()
        assert "not a folder" in str(dialog.query_one("#export-error", Label).render())
        dialog.query_one("#export-include-dirs", Input).value = str(inc)
        await pilot.pause()
        assert f"Header (your folder): {inc / 'defs.h'}" in listing()
        assert "Not read" not in listing() and "Not in the bundle" not in listing()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, MainScreen), 60)
        await wait_for(pilot, lambda: any(n.startswith("Exported") for n in notes), 10)
    manifest = json.loads((out / "manifest.json").read_text())
    (host,) = manifest["bundle"]["host_files"]
    assert host["host_path"] == str(inc / "defs.h") and host["origin"] == "include-dir"
    assert manifest["bundle"]["missing_includes"] == []
    (note,) = [n for n in notes if n.startswith("Exported")]
    assert f"host headers copied: {inc / 'defs.h'}" in note


def test_thousands_of_missing_includes_are_counted_not_listed(tmp_path: Path) -> None:
    """A source of 3,000 distinct includes found nowhere (each line twice): every name once in
    ``missing`` (the manifest's list), 10 in the one-line message and 50 in the bundle README,
    each with the count of the rest."""
    from cltui.export.includes import resolve_includes, unread_line
    from cltui.export.readme import _headers

    src = b"".join(b"#include <z%05d.h>\n" % i for i in range(3000)) * 2
    inc = resolve_includes(src, f"-I {tmp_path}")
    assert inc.missing == [f"z{i:05d}.h" for i in range(3000)]
    assert inc.unread == [str(tmp_path)]
    line = unread_line(str(tmp_path), inc.missing)
    assert "'z00009.h' and 2,990 more (the manifest lists them)" in line
    assert "z00010" not in line
    manifest: Any = {"bundle": {"missing_includes": [{"program": "p", "include": m}
                                                     for m in inc.missing],
                                "unread_include_dirs": [{"dir": str(tmp_path),
                                                         "missing": inc.missing}]}}  # fmt: skip
    text = "\n".join(_headers(manifest))
    assert text.count("(found in no bundled folder)") == 50
    assert "- and 2,950 more (`manifest.json` lists them all)" in text
    assert "`z00049.h` and 2,950 more" in text
