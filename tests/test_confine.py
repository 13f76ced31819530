"""Nothing is read through a link that leads out of the capture folder (cltui.capture.confine).

Each case is a copy of images_svm_pocl with one file or folder replaced by a symlink to a
host file outside it: the capture still opens, the link is a problem, and the host file's
contents reach no output.  A link that stays inside the capture is followed.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from cltui.capture import open_capture
from cltui.capture.confine import OutsideCapture, check_inside, leaves
from cltui.capture.replayfolder import read_replay_folder
from cltui.cli import main
from tests.conftest import copy_capture

SECRET = "SECRET-HOST-TEXT-4242"
OPTIONS = "CLI_0000_4804838E_0000_A7B10208_options.txt"
SOURCE = "CLI_0000_4804838E_source.cl"
POST_DUMP = "memDumpPostEnqueue/Enqueue_0002_Kernel_sample_linear_Arg_2_Buffer_0003.bin"


@pytest.fixture
def cap_and_host(tmp_path: Path, images_svm: Path) -> tuple[Path, Path]:
    cap = copy_capture(images_svm, tmp_path / "cap")
    host = tmp_path / "host"
    host.mkdir()
    (host / "secret.txt").write_text(SECRET + "\n")
    (host / "secret.bin").write_bytes((SECRET * 1000).encode()[:19200])
    return cap, host


def _relink(path: Path, target: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
    path.symlink_to(target)


def _show(cap: Path, n: int) -> tuple[dict[str, object], str, str]:
    r = CliRunner().invoke(main, ["show", str(cap), str(n), "--json"])
    assert r.exit_code == 0, r.output
    t = CliRunner().invoke(main, ["show", str(cap), str(n)])
    assert t.exit_code == 0, t.output
    assert SECRET not in r.stdout and SECRET not in t.stdout
    return json.loads(r.stdout), t.stdout, t.stderr


def _outside_problems(cap: Path) -> list[str]:
    c = open_capture(cap)
    return [str(p) for p in c.problems if "leads outside the capture" in str(p)]


def test_helper_refuses_only_what_leaves(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("a")
    (tmp_path / "out.txt").write_text("o")
    (root / "in_link").symlink_to(root / "a.txt")
    (root / "out_link").symlink_to(tmp_path / "out.txt")
    (root / "sub" / "up").symlink_to("../a.txt")
    (root / "sub" / "escape").symlink_to("../../out.txt")
    assert leaves(root, root / "in_link") is None
    assert leaves(root, root / "sub" / "up") is None
    assert leaves(root, root / "out_link") == str((tmp_path / "out.txt").resolve())
    with pytest.raises(OutsideCapture, match="leads outside the capture"):
        check_inside(root, root / "sub" / "escape")
    # a sibling whose name starts like the root is outside
    (tmp_path / "root2").mkdir()
    (tmp_path / "root2" / "x").write_text("x")
    (root / "twin").symlink_to(tmp_path / "root2" / "x")
    assert leaves(root, root / "twin") is not None
    # a capture opened through a link to it: its own files are inside
    (tmp_path / "alias").symlink_to(root)
    assert leaves(tmp_path / "alias", tmp_path / "alias" / "a.txt") is None


def test_symlinked_dump(cap_and_host: tuple[Path, Path]) -> None:
    cap, host = cap_and_host
    _relink(cap / POST_DUMP, host / "secret.bin")
    d, _, _ = _show(cap, 2)
    arg2 = next(a for a in d["args"] if a["index"] == 2)  # type: ignore[attr-defined]
    # the Post data now comes from the capture's own Replay folder, never the host file
    assert arg2["post"] is None or "/Replay/" in arg2["post"]["file"]
    assert any(POST_DUMP in p for p in _outside_problems(cap))


def test_symlinked_options_file(cap_and_host: tuple[Path, Path]) -> None:
    cap, host = cap_and_host
    _relink(cap / OPTIONS, host / "secret.txt")
    d, _, err = _show(cap, 2)
    assert d["program"]["build_options"] == ""  # type: ignore[index]
    assert "leads outside the capture" in err and OPTIONS in err
    assert any(OPTIONS in p for p in _outside_problems(cap))


def test_symlinked_source(cap_and_host: tuple[Path, Path]) -> None:
    cap, host = cap_and_host
    _relink(cap / SOURCE, host / "secret.txt")
    c = open_capture(cap)
    assert all(SECRET not in c.program_source(p) for p in c.programs)
    assert any(SOURCE in p for p in _outside_problems(cap))
    _show(cap, 2)


def test_symlinked_log(cap_and_host: tuple[Path, Path]) -> None:
    cap, host = cap_and_host
    shutil.copy(cap / "clintercept_log.txt", host / "log.txt")
    _relink(cap / "clintercept_log.txt", host / "log.txt")
    c = open_capture(cap)  # opens from the dump files
    assert c.log is None
    assert len(c) > 0
    assert any("clintercept_log.txt" in p for p in _outside_problems(cap))


def test_links_whose_target_name_is_too_long(cap_and_host: tuple[Path, Path]) -> None:
    """A dangling link to a 300-character name: ``Path.is_file`` raises ENAMETOOLONG; the log
    and the report become problems, the capture opens from its dump files."""
    cap, _ = cap_and_host
    for name in ("clintercept_log.txt", "clintercept_report.txt"):
        _relink(cap / name, Path("x" * 300))
    c = open_capture(cap)
    assert c.log is None and c.report is None and len(c) > 0
    why = {p.where: p.message for p in c.problems}
    assert "cannot look at it" in why["clintercept_log.txt"]
    assert "cannot look at it" in why["clintercept_report.txt"]
    r = CliRunner().invoke(main, ["info", str(cap)])
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output


def test_symlinked_report(cap_and_host: tuple[Path, Path]) -> None:
    cap, host = cap_and_host
    shutil.copy(cap / "clintercept_report.txt", host / "report.txt")
    _relink(cap / "clintercept_report.txt", host / "report.txt")
    c = open_capture(cap)
    assert c.report is None
    assert any("clintercept_report.txt" in p for p in _outside_problems(cap))


def test_symlinked_replay_file(cap_and_host: tuple[Path, Path]) -> None:
    cap, host = cap_and_host
    folder = cap / "Replay" / "Enqueue_2_sample_linear"
    _relink(folder / "buildOptions.txt", host / "secret.txt")
    _relink(folder / "kernel.cl", host / "secret.txt")
    rf = read_replay_folder(folder)
    assert rf.build_options is None and rf.kernel_source is None
    msgs = [str(p) for p in rf.problems if "leads outside the capture" in str(p)]
    assert len(msgs) == 2
    # the same through the capture: the enqueue still shows, its replay folder's options
    # did not come from the host file
    d, _, _ = _show(cap, 2)
    assert any("leads outside the capture" in str(p) for p in d["problems"])  # type: ignore[attr-defined]


def test_symlinked_subfolder(cap_and_host: tuple[Path, Path]) -> None:
    cap, host = cap_and_host
    shutil.copytree(cap / "memDumpPostEnqueue", host / "post")
    _relink(cap / "memDumpPostEnqueue", host / "post")
    c = open_capture(cap)
    assert len(c.dumps.post) == 0
    assert len(c.dumps.pre) > 0  # the rest of the capture opens
    assert any("memDumpPostEnqueue" in p for p in _outside_problems(cap))
    d, _, _ = _show(cap, 2)
    posts = [a["post"] for a in d["args"] if a["post"]]  # type: ignore[attr-defined]
    assert all("/Replay/" in p["file"] for p in posts)


def test_symlinked_replay_subfolder(cap_and_host: tuple[Path, Path]) -> None:
    cap, host = cap_and_host
    shutil.copytree(cap / "Replay" / "Enqueue_2_sample_linear", host / "rf")
    _relink(cap / "Replay" / "Enqueue_2_sample_linear", host / "rf")
    c = open_capture(cap)
    assert 2 not in c.dumps.replay
    assert any("Enqueue_2_sample_linear" in p for p in _outside_problems(cap))


def test_links_inside_the_capture_are_followed(cap_and_host: tuple[Path, Path]) -> None:
    cap, _host = cap_and_host
    (cap / "spare").mkdir()
    os.replace(cap / OPTIONS, cap / "spare" / "opts.txt")
    (cap / OPTIONS).symlink_to(Path("spare") / "opts.txt")
    os.replace(cap / POST_DUMP, cap / "spare" / "post.bin")
    (cap / POST_DUMP).symlink_to(cap / "spare" / "post.bin")
    assert _outside_problems(cap) == []
    d, _, _ = _show(cap, 2)
    assert "pyopencl/cl" in d["program"]["build_options"]  # type: ignore[index]
    arg2 = next(a for a in d["args"] if a["index"] == 2)  # type: ignore[attr-defined]
    assert arg2["post"]["bytes"] == 19200
