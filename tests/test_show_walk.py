"""``cltui show`` (text and ``--json``) over every enqueue of every shared capture.

heat2d_large has 204,011 enqueues: a spread sample of a few hundred plus its dumped window
122380-122419.  Each enqueue goes through the function the command runs (one opened capture);
a handful go through the real CLI for the exit code.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cltui.capture import open_capture
from cltui.cli import main
from cltui.commands.show import show_enqueue
from tests.conftest import CAPTURES, capture_path

ALL_SMALL = [
    "images_svm_pocl",
    "opencv_tapi_pocl",
    "pyopencl_lib_pocl",
    "pyopencl_lib_oclgrind",
    "pyopencl_lib_coldcache",
]


def _strict(text: str) -> Any:
    """JSON as any parser reads it (no NaN / Infinity extensions)."""

    def no_constant(name: str) -> Any:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=no_constant)


def _walk(capsys: pytest.CaptureFixture[str], path: Path, numbers: list[int]) -> None:
    cap = open_capture(path)
    for n in numbers:
        try:
            show_enqueue(cap, n, True)
        except SystemExit as exc:  # fail() exits 2: an enqueue of the list must show
            pytest.fail(f"{path.name} enqueue {n}: show --json exited {exc.code}")
        out = capsys.readouterr().out
        d = _strict(out)
        assert d["number"] == n
        try:
            show_enqueue(cap, n, False)
        except SystemExit as exc:
            pytest.fail(f"{path.name} enqueue {n}: show exited {exc.code}")
        text = capsys.readouterr().out
        assert text.startswith(f"enqueue {n} ")
        assert "\x1b" not in text
        # what the log does not hold is left out or named, never Python's None
        assert re.search(r"\bNone\b", text) is None, f"{path.name} enqueue {n}: {text}"


@pytest.mark.slow  # seconds each: the full tier's (./dev test --fast leaves it)
@pytest.mark.parametrize("name", ALL_SMALL)
def test_show_every_enqueue(capsys: pytest.CaptureFixture[str], name: str) -> None:
    path = capture_path(name)
    cap = open_capture(path)
    _walk(capsys, path, [int(n) for n in cap.numbers])


@pytest.mark.child
def test_show_heat2d_sample_and_dumped_window(
    capsys: pytest.CaptureFixture[str], heat2d: Path
) -> None:
    cap = open_capture(heat2d)
    numbers = [int(n) for n in cap.numbers]
    step = max(1, len(numbers) // 300)
    sample = sorted({*numbers[::step], numbers[-1], *range(122380, 122420)})
    _walk(capsys, heat2d, sample)


@pytest.mark.parametrize("name", ["pyopencl_lib_pocl", "pyopencl_lib_oclgrind"])
@pytest.mark.parametrize("number", [96, 98])
def test_show_json_complex_arguments(name: str, number: int) -> None:
    """cfloat_t scalars are objects of their two fields, as the struct they are."""
    path = CAPTURES / name
    if not path.is_dir():
        pytest.skip(f"{name} not found")
    r = CliRunner().invoke(main, ["show", str(path), str(number), "--json"])
    assert r.exit_code == 0, r.output
    d = _strict(r.stdout)
    values = {a["name"]: a.get("value") for a in d["args"]}
    assert values["a"] == ({"real": 0.5, "imag": -0.25} if number == 96 else
                           {"real": 1.0, "imag": 0.0})
    r = CliRunner().invoke(main, ["show", str(path), str(number)])
    assert r.exit_code == 0
    assert "a: private cfloat_t = {real=" in r.stdout


def test_show_json_kernel_line(pyocl_pocl: Path) -> None:
    """``program.kernel_line`` is the line where the kernel's definition starts."""
    r = CliRunner().invoke(main, ["show", str(pyocl_pocl), "96", "--json"])
    assert r.exit_code == 0
    prog = json.loads(r.stdout)["program"]
    line = prog["kernel_line"]
    source = Path(prog["source"]).read_text().splitlines()
    assert line == 8  # CLI_0062_1DFD1265_source.cl: "__kernel void axpb(__global cfloat_t ..."
    assert source[line - 1].strip().startswith("__kernel void axpb(")
    text = CliRunner().invoke(main, ["show", str(pyocl_pocl), "96"]).stdout
    assert f"{Path(prog['source']).name}:{line}" in text
