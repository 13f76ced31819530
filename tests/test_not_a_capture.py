"""A path that is no capture: ``NotACapture`` with one line saying what a capture holds;
every command taking DUMPDIR (and the app) exits 2 with that line, no traceback."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from cltui.capture import CaptureError, NotACapture, check_capture_folder, open_capture
from cltui.cli import main
from tests.conftest import copy_capture

HOLDS = "clintercept_log.txt, clintercept_report.txt, memDump*/, SetKernelArg/, Replay/"


def _bad_paths(tmp_path: Path) -> dict[str, Path]:
    empty = tmp_path / "empty"
    empty.mkdir()
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "notes.txt").write_text("hello\n")
    (junk / "data.bin").write_bytes(os.urandom(4096))
    (junk / "clintercept").mkdir()  # near misses of the layer's names
    (junk / "Replay.txt").write_text("x")
    (junk / "sub").mkdir()
    a_file = tmp_path / "file.txt"
    a_file.write_bytes(os.urandom(100))
    return {"empty": empty, "junk": junk, "file": a_file, "missing": tmp_path / "missing"}


@pytest.mark.parametrize("kind", ["empty", "junk", "file", "missing"])
def test_not_a_capture_says_what_a_capture_holds(tmp_path: Path, kind: str) -> None:
    path = _bad_paths(tmp_path)[kind]
    with pytest.raises(NotACapture) as info:
        open_capture(path)
    line = str(info.value)
    assert "\n" not in line and str(path) in line
    assert HOLDS in line and "cliloader" in line
    assert isinstance(info.value, CaptureError)
    with pytest.raises(NotACapture):
        check_capture_folder(path)


def test_a_damaged_capture_is_still_a_capture(images_svm: Path, tmp_path: Path) -> None:
    """No log, no report: the dump folders alone make a capture (it opens from them)."""
    cap_dir = copy_capture(images_svm, tmp_path)
    (cap_dir / "clintercept_log.txt").unlink()
    (cap_dir / "clintercept_report.txt").unlink()
    check_capture_folder(cap_dir)
    cap = open_capture(cap_dir)
    assert len(cap) > 0
    # only one program source left: still the layer's, not "not a capture"
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "CLI_0000_1234ABCD_source.cl").write_text("kernel void k() {}\n")
    check_capture_folder(lone)
    with pytest.raises(CaptureError) as info:
        open_capture(lone)
    assert not isinstance(info.value, NotACapture)


def test_a_folder_of_captures_names_them(images_svm: Path, tmp_path: Path) -> None:
    copy_capture(images_svm, tmp_path)
    with pytest.raises(NotACapture, match="captures inside it: images_svm_pocl"):
        open_capture(tmp_path)


def test_control_characters_in_the_name_are_escaped(tmp_path: Path) -> None:
    odd = tmp_path / "a\x1b[31mred\x07"
    odd.mkdir()
    with pytest.raises(NotACapture) as info:
        open_capture(odd)
    assert "\x1b" not in str(info.value) and "\x07" not in str(info.value)
    assert "\\x1b[31mred\\x07" in str(info.value)


COMMANDS = [
    ["info", "{p}"],
    ["info", "--json", "{p}"],
    ["ls", "{p}"],
    ["show", "{p}", "0"],
    ["replay", "{p}", "0"],
    ["export", "{p}", "0", "-o", "{out}"],
    ["check", "{p}", "0"],
    ["shrink", "{p}", "0", "-d", "0:0"],
    ["explain", "{p}", "1", "-d", "0:0", "-d", "0:1"],
    ["diverge", "{p}", "{p}"],
    ["fleet", "{p}", "0", "--hosts", "{p}"],
    ["open", "{p}"],
    ["{p}"],
]


@pytest.mark.child
@pytest.mark.parametrize("kind", ["empty", "junk", "file", "missing"])
def test_every_command_exits_2_with_the_line(tmp_path: Path, kind: str) -> None:
    path = _bad_paths(tmp_path)[kind]
    with pytest.raises(NotACapture) as info:
        check_capture_folder(path)
    expected = f"cltui: {info.value}\n"
    for template in COMMANDS:
        args = [a.format(p=path, out=tmp_path / "out") for a in template]
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 2, (args, r.output)
        assert r.stderr == expected, (args, r.stderr)
        assert "Traceback" not in r.output and not r.stdout, args


def test_append_pid_folders_still_open(images_svm: Path, tmp_path: Path) -> None:
    copy_capture(images_svm, tmp_path).rename(tmp_path / "app.4242")
    check_capture_folder(tmp_path / "app")  # DUMPDIR.<pid>: the app picks one
    assert len(open_capture(tmp_path / "app")) > 0


@pytest.mark.child
def test_the_app_exits_2_on_a_folder_that_is_no_capture(tmp_path: Path) -> None:
    """``make_app`` on such a folder (the CLI checks first; the app checks again)."""
    from cltui.tui.app import make_app

    empty = _bad_paths(tmp_path)["empty"]

    async def go() -> tuple[int | None, str | None]:
        app = make_app(empty)
        async with app.run_test() as pilot:
            for _ in range(300):
                if app.return_code is not None:
                    break
                await pilot.pause(0.02)
        return app.return_code, app.exit_line

    code, line = asyncio.run(go())
    assert code == 2
    assert line is not None and line.startswith(f"{empty} is not a capture folder: expected")
