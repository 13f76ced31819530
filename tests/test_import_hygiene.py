"""The capture model stays UI- and device-free; the CLI stays light for --help."""

from __future__ import annotations

import subprocess
import sys

import pytest

FORBIDDEN_IN_CAPTURE = ("textual", "pyopencl", "rich", "click", "cltui.tui", "cltui.replay")


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return set(out.split())


def _top(mods: set[str], names: tuple[str, ...]) -> set[str]:
    return {m for m in mods for n in names if m == n or m.startswith(n + ".")}


def test_capture_imports_no_ui_or_device_library() -> None:
    mods = _modules_after(
        "import cltui.capture, cltui.capture.capture, cltui.capture.model\n"
        "from cltui.capture import open_capture"
    )
    assert not _top(mods, FORBIDDEN_IN_CAPTURE)


@pytest.mark.parametrize("argv", [["--help"], ["ls", "--help"], ["info", "--help"]])
def test_cli_help_imports_neither_textual_nor_pyopencl(argv: list[str]) -> None:
    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom cltui.cli import main\n"
        f"r = CliRunner().invoke(main, {argv!r})\nassert r.exit_code == 0, r.output\n"
    )
    mods = _modules_after(code)
    assert not _top(mods, ("textual", "pyopencl"))


def test_opening_a_capture_from_the_cli_does_not_import_textual(tmp_path: object) -> None:
    from tests.conftest import capture_path

    cap = capture_path("images_svm_pocl")
    code = (
        "from click.testing import CliRunner\nfrom cltui.cli import main\n"
        f"r = CliRunner().invoke(main, ['ls', {str(cap)!r}])\nassert r.exit_code == 0, r.output\n"
    )
    mods = _modules_after(code)
    assert not _top(mods, ("textual", "pyopencl"))
