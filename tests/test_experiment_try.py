"""``cltui try`` end to end on real PoCL: a one-line kernel change that keeps the results,
one that breaks a check (FAIL whatever its speed), a diff that does not apply, a saved
variant run again by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cltui.cli import main
from tests.experiment_workers import count_workers
from tests.schemas import validate

pytestmark = [pytest.mark.device, pytest.mark.child]

LINE = "            z[i] = a*x[i] + b;\n"
SAME = "@@ -18 +18 @@\n-" + LINE + "+            z[i] = b + a*x[i];\n"
BROKEN = "@@ -18 +18 @@\n-" + LINE + "+            z[i] = a*x[i] + b + 1;\n"


@pytest.fixture(scope="module", autouse=True)
def _needs_pocl() -> None:
    cl = pytest.importorskip("pyopencl")
    if not any("Portable" in p.name for p in cl.get_platforms()):
        pytest.skip("PoCL is not installed")


@pytest.fixture(autouse=True)
def _data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLTUI_DATA_DIR", str(tmp_path / "data"))


def _try(*args: str, repeat: int = 5) -> tuple[int, dict]:
    res = CliRunner().invoke(main, ["try", *args, "-d", "pocl", "--repeat", str(repeat),
                                    "--json"])  # fmt: skip
    assert res.exit_code in (0, 1, 3), res.output
    report = json.loads(res.stdout)
    validate(report, "cli.schema.json", "try")
    return res.exit_code, report


def test_equal_change_passes(pyocl_pocl: Path, tmp_path: Path) -> None:
    patch = tmp_path / "same.patch"
    patch.write_text(SAME)
    code, report = _try(str(pyocl_pocl), "23", "--patch", str(patch), "--save", "same")
    assert code == 0
    assert report["verdict"]["status"] == "pass"
    assert report["verdict"]["line"].startswith("PASS: ")
    dev = report["devices"][0]
    assert dev["a"]["verdict"]["status"] == dev["b"]["verdict"]["status"] == "pass"
    assert dev["timing"]["n"] == 4 and dev["steps"][0]["kernel"] == "axpb"
    assert report["variant"]["lines"] == ["the range's program: a unified diff"]
    # saved, and run again by name
    code, again = _try(str(pyocl_pocl), "23", "--variant", "same")
    assert code == 0 and again["variant"]["name"] == "same"


def test_broken_change_fails_whatever_its_speed(pyocl_pocl: Path, tmp_path: Path) -> None:
    patch = tmp_path / "broken.patch"
    patch.write_text(BROKEN)
    code, report = _try(str(pyocl_pocl), "23", "--patch", f"p17={patch}")
    assert code == 1
    assert report["verdict"]["status"] == "fail"
    assert "does not pass its checks" in report["verdict"]["line"]
    dev = report["devices"][0]
    assert dev["a"]["verdict"]["status"] == "pass"
    checks_b = {c["label"]: c["status"] for c in dev["b"]["result"]["steps"][0]["checks"]}
    assert checks_b == {"arg 0 (buffer 0015)": "different", "arg 3 (buffer 0004)": "equal"}
    text = CliRunner().invoke(main, ["try", str(pyocl_pocl), "23", "--patch", str(patch),
                                     "-d", "pocl", "--repeat", "3"])  # fmt: skip
    assert text.exit_code == 1
    assert text.output.splitlines()[0].startswith("device:")  # stderr first in CliRunner
    assert "FAIL: 1 output different" in text.output and "different 8192/8192" in text.output


def test_local_size_of_a_chained_range(pyocl_pocl: Path) -> None:
    code, report = _try(str(pyocl_pocl), "22-31", "--local", "64")
    assert code == 0
    assert len(report["devices"][0]["steps"]) == 10
    assert report["variant"]["lines"] == ["every kernel: local 64"]


def test_diff_that_does_not_apply_is_one_line(pyocl_pocl: Path, tmp_path: Path) -> None:
    patch = tmp_path / "bad.patch"
    patch.write_text(SAME.replace("a*x[i] + b;", "a*x[i] + c;", 1))
    res = CliRunner().invoke(main, ["try", str(pyocl_pocl), "23", "--patch", str(patch)])
    assert res.exit_code == 2
    assert res.output.strip().splitlines()[-1].startswith(
        "cltui: hunk 1 does not apply to program 0017: line 18 is")


def test_broken_change_on_oclgrind_too(pyocl_pocl: Path, tmp_path: Path) -> None:
    cl = pytest.importorskip("pyopencl")
    if not any(p.name == "Oclgrind" for p in cl.get_platforms()):
        pytest.skip("Oclgrind is not installed")
    patch = tmp_path / "broken.patch"
    patch.write_text(BROKEN)
    res = CliRunner().invoke(main, ["try", str(pyocl_pocl), "23", "--patch", str(patch),
                                    "--local", "64", "-d", "oclgrind", "-d", "pocl",
                                    "--repeat", "2", "--json"])  # fmt: skip
    assert res.exit_code == 1, res.output
    report = json.loads(res.stdout)
    validate(report, "cli.schema.json", "try")
    assert [d["device"]["platform"] for d in report["devices"]] == [
        "Oclgrind", "Portable Computing Language"]
    for dev in report["devices"]:
        assert dev["a"]["verdict"]["status"] == "pass"
        assert dev["b"]["verdict"]["status"] == "fail"
        assert dev["timing"]["reading"] == "too few runs" and dev["timing"]["lo"] is None
    assert report["verdict"]["line"].startswith("FAIL on 2 devices")


def test_a_variant_that_hangs_is_killed_and_named(pyocl_pocl: Path, tmp_path: Path) -> None:
    src = (pyocl_pocl / "CLI_0017_9C70697D_source.cl").read_text()
    hang = tmp_path / "hang.cl"
    hang.write_text(src.replace("i < n; i += gsize)", "i < n; i += 0)"))
    res = CliRunner().invoke(main, ["try", str(pyocl_pocl), "23", "--source", str(hang),
                                    "-d", "pocl", "--timeout", "3", "--repeat", "3", "--json"])
    assert res.exit_code == 1, res.output
    report = json.loads(res.stdout)
    validate(report, "cli.schema.json", "try")
    dev = report["devices"][0]
    assert dev["b"]["result"]["status"] == "hang"
    assert dev["b"]["result"]["failed_enqueue"] == 23
    assert report["verdict"]["line"].startswith(
        "FAIL: hang: enqueue 23 did not finish within 3 s")
    # A was checked before B hung the process: its checks stand
    assert dev["a"]["verdict"]["status"] == "pass"


def test_a_variant_that_crashes_names_its_enqueue_and_keeps_what_it_checked(
    pyocl_pocl: Path, tmp_path: Path
) -> None:
    """B's kernel at 23 writes far outside its buffer: the process dies of SIGSEGV on it;
    the line names enqueue 23 and where its stack went, and 22 (checked before) counts."""
    src = (pyocl_pocl / "CLI_0017_9C70697D_source.cl").read_text()
    assert src.count(LINE) == 1
    wild = tmp_path / "wild.cl"
    wild.write_text(src.replace(LINE, "            z[i + (1L << 40)] = a*x[i] + b;\n"))
    res = CliRunner().invoke(main, ["try", str(pyocl_pocl), "22-24", "--source",
                                    f"p17={wild}", "-d", "pocl", "--repeat", "3"])
    assert res.exit_code == 1, res.output
    head = [x for x in res.stdout.splitlines() if not x.startswith(("device:", "A and B"))]
    assert head[0].startswith("FAIL: crash: enqueue 23 crashed the driver (SIGSEGV); "
                              "1/3 kernel enqueues replayed, 2/7 outputs checked "
                              "(2 equal, 5 unchecked)"), res.stdout
    said = next(x for x in head if " B: enqueue 23 crashed the driver (SIGSEGV)" in x)
    log = Path(said.split("the experiment process's output: ", 1)[1].rstrip(")"))
    assert "Segmentation fault" in log.read_text()  # the stack: never on the screen
    assert "Traceback" not in res.stdout and "Fatal Python error" not in res.stdout


def test_the_noise_floor_is_calibrated_once_per_device(
    pyocl_pocl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first A/B on a device runs A against A (a no-op change) and keeps its spread as
    the minimum effect; the next uses it; --min-effect overrides it; a difference below it
    reads "within noise" without a percentage."""
    monkeypatch.setenv("CLTUI_CACHE_DIR", str(tmp_path / "cache"))
    patch = tmp_path / "same.patch"
    patch.write_text(SAME)
    workers = count_workers(monkeypatch)
    res = CliRunner().invoke(main, ["try", str(pyocl_pocl), "23", "--patch", str(patch),
                                    "-d", "pocl", "--repeat", "8"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "calibrating the A/B noise floor" in res.stderr
    # the calibration's process went on to the A/B (it was two processes)
    assert len(workers) == 1, workers
    assert "noise floor: " in res.stdout and "(A/A calibration on this device" in res.stdout
    kept = json.loads((tmp_path / "cache" / "ab-noise.json").read_text())
    (entry,) = kept.values()
    assert entry["range"] == "23" and entry["repeat"] == 8 and entry["min_effect"] > 0
    code, report = _try(str(pyocl_pocl), "23", "--patch", str(patch), repeat=8)
    noise = report["devices"][0]["noise"]
    assert noise["source"] == "calibration" and noise["min_effect"] == entry["min_effect"]
    code, report = _try(str(pyocl_pocl), "23", "--patch", str(patch), "--min-effect", "99",
                        repeat=8)  # fmt: skip
    assert code == 0
    dev = report["devices"][0]
    assert dev["noise"]["source"] == "--min-effect" and dev["noise"]["min_effect"] == 0.99
    assert dev["timing"]["reading"] == "within noise" and dev["timing"]["min_effect"] == 0.99
    assert "within noise: " in report["verdict"]["line"]
    assert "% faster" not in report["verdict"]["line"]
    assert "% slower" not in report["verdict"]["line"]
