"""Issue 29's Done-when on PoCL: CLBlast-style XaxpyFaster and Xgemv (tests/clblast_synth.py)
tuned end to end by ``cltui sweep --param ... --local NAME``: every point runs with its kernel
really rebuilt (reqd_work_group_size follows WGS), what the device cannot run is refused, a
BEST only when measurably faster side by side, the winner exported as a bundle both runners
validate; a results file of another grid reuses its matching points."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from cltui.cli import main
from cltui.replay.experiment.store import load_variant, save_variant, variants_root
from cltui.replay.experiment.variant import Variant
from tests.clblast_synth import AXPY, GEMV, write_clblast_capture
from tests.test_export_device import _need, both, cpp_replay  # noqa: F401  (a fixture)

pytestmark = [pytest.mark.device, pytest.mark.child]


@pytest.fixture
def clblast(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    _need("pocl")
    monkeypatch.setenv("CLTUI_DATA_DIR", str(tmp_path / "data"))
    return write_clblast_capture(tmp_path / "cap")


def _sweep(*args: str, repeat: int = 5) -> tuple[int, dict, str]:  # type: ignore[type-arg]
    res = CliRunner().invoke(main, ["sweep", *args, "-d", "pocl", "--repeat", str(repeat),
                                    "--json"])  # fmt: skip
    assert "Traceback" not in res.output, res.output
    return res.exit_code, json.loads(res.stdout) if res.stdout.strip() else {}, res.stderr


def _compile_size(source: str, kernel: str) -> list[int]:
    """The kernel's reqd_work_group_size as PoCL reports it once built."""
    cl = pytest.importorskip("pyopencl")
    plat = next(p for p in cl.get_platforms() if "Portable" in p.name)
    dev = plat.get_devices()[0]
    ctx = cl.Context([dev])
    knl = getattr(cl.Program(ctx, source).build(), kernel)
    return list(knl.get_work_group_info(cl.kernel_work_group_info.COMPILE_WORK_GROUP_SIZE, dev))


def test_xaxpyfaster_tuned_end_to_end(clblast: Path, tmp_path: Path,
                                      cpp_replay: Path) -> None:  # noqa: F811  # fmt: skip
    results, table, plot = tmp_path / "r.jsonl", tmp_path / "s.csv", tmp_path / "s.svg"
    rc, out, err = _sweep(str(clblast), str(AXPY), "--param", "WGS=64,128,256,8192",
                          "--param", "VW=1,2,4", "--local", "WGS", "--results", str(results),
                          "--csv", str(table), "--plot", str(plot), "--save", "clb",
                          repeat=8)  # fmt: skip
    assert rc == 0, err
    assert "the capture's own configuration already: WGS=64, VW=1, local 64" in err
    status = {r["label"]: r["status"] for r in out["rows"]}
    assert len(status) == 1 + 3 * 4 - 1
    # every point the device can run is correct: with a -D the source's #define WGS 64
    # would have won, and reqd_work_group_size(64) refuses a launch of local 128 or 256
    assert {s for lbl, s in status.items() if "8192" not in lbl} == {"pass"}, status
    assert {s for lbl, s in status.items() if "8192" in lbl} == {"refused"}, status
    why = next(r["why"] for r in out["rows"] if r["status"] == "refused")
    assert "8192" in why and "enqueue 8" in why, why
    # the fastest three ran again beside the capture's own, paired
    assert 1 <= len(out["confirmed"]) <= 3
    assert all(c["diff"]["n"] == 7 for c in out["confirmed"].values())  # enough for a reading
    if out["best_id"] is not None:  # BEST only when faster side by side
        best = next(r for r in out["ranking"] if r["id"] == out["best_id"])
        assert best["paired"]["reading"] == "faster"
        assert out["verdict"]["line"].startswith("BEST: ")
        saved = json.loads((Path(out["best_folder"]) / "variant.json").read_text())
        assert saved["result"]["device"]["name"] and saved["result"]["date"]
        assert saved["result"]["verdict"] == "pass"
        assert saved["result"]["vs_capture"]["reading"] == "faster"
    else:
        assert out["verdict"]["line"].startswith("NO BETTER VARIANT: 8 correct configurations")
        assert not (variants_root()).exists() or not any(variants_root().rglob("variant.json"))
    # CSV: one line per row, a column per dimension; the SVG is well-formed
    lines = list(csv.DictReader(table.open()))
    assert len(lines) == len(out["rows"])
    assert {ln["WGS"] for ln in lines} == {"", "64", "128", "256", "8192"}
    assert ET.fromstring(plot.read_text()).tag.endswith("svg")
    assert "WGS" in plot.read_text()

    # the kernel really is rebuilt: its compile work-group size follows WGS
    winner = out["best_id"] or next(r["id"] for r in out["ranking"] if r["id"] != "capture")
    won = next(r for r in out["ranking"] if r["id"] == winner)
    if out["best_id"] is None:
        save_variant(clblast, Variant.from_dict({"format": "cltui-variant", "range": str(AXPY),
                                                 **won["changes"]}), "clb")  # fmt: skip
    wgs = int(won["changes"]["params"]["WGS"])
    bundle = tmp_path / "bundle"
    res = CliRunner().invoke(main, ["export", str(clblast), str(AXPY), "-o", str(bundle),
                                    "--variant", "clb", "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    manifest = json.loads((bundle / "manifest.json").read_text())
    (step,) = manifest["steps"]
    assert step["local"] == [wgs]
    src = manifest["data"][manifest["programs"][step["program"]]["source"]]["path"]
    text = (bundle / src).read_text()
    assert f"#define WGS {wgs}\n" in text
    assert _compile_size(text, "XaxpyFaster") == [wgs, 1, 1]
    original = (clblast / next(p.name for p in clblast.glob("CLI_*_source.cl"))).read_text()
    assert _compile_size(original, "XaxpyFaster") == [64, 1, 1]
    py, cpp = both(bundle, cpp_replay, "pocl")
    assert py[0]["verdict"]["status"] == cpp[0]["verdict"]["status"] == "pass"
    assert load_variant(clblast, "clb").params == tuple(won["changes"]["params"].items())

    # another grid over the same results file: the points that match are not run again
    rc, out, err = _sweep(str(clblast), str(AXPY), "--param", "WGS=64,128",
                          "--param", "VW=1,2,4,8", "--local", "WGS", "--results", str(results),
                          "--save", "clb2")  # fmt: skip
    assert rc == 0, err
    assert "2 of 8 points to run (6 done before)" in err, err
    assert {r["label"] for r in out["rows"]} >= {"WGS=64, VW=8, local 64",
                                                 "WGS=128, VW=8, local 128"}
    assert "6 rows of the results file belong to points outside this grid" in (
        out["verdict"]["line"])


def test_xgemv_tuned_and_a_patch_in_every_point(clblast: Path, tmp_path: Path,
                                                cpp_replay: Path) -> None:  # noqa: F811  # fmt: skip
    rc, out, err = _sweep(str(clblast), str(GEMV), "--param", "WGS1=64,128,256",
                          "--param", "WPT1=1,2,4", "--local", "WGS1", "--save", "gemv")  # fmt: skip
    assert rc == 0, err
    assert len(out["rows"]) == 9
    assert {r["status"] for r in out["rows"]} == {"pass"}, [
        (r["label"], r["why"]) for r in out["rows"] if r["status"] != "pass"]
    # the best (or, with none measurably faster, the fastest) point's bundle, both runners
    won = next(r for r in out["ranking"] if r["id"] == (out["best_id"] or next(
        x["id"] for x in out["ranking"] if x["id"] != "capture")))
    if out["best_id"] is None:
        save_variant(clblast, Variant.from_dict({"format": "cltui-variant", "range": str(GEMV),
                                                 **won["changes"]}), "gemv")  # fmt: skip
    bundle = tmp_path / "gemv"
    res = CliRunner().invoke(main, ["export", str(clblast), str(GEMV), "-o", str(bundle),
                                    "--variant", "gemv"])  # fmt: skip
    assert res.exit_code == 0, res.output
    manifest = json.loads((bundle / "manifest.json").read_text())
    (step,) = manifest["steps"]
    src = manifest["data"][manifest["programs"][step["program"]]["source"]]["path"]
    wgs1 = int(won["changes"]["params"]["WGS1"])
    assert _compile_size((bundle / src).read_text(), "Xgemv") == [wgs1, 1, 1]
    py, cpp = both(bundle, cpp_replay, "pocl")
    assert py[0]["verdict"]["status"] == cpp[0]["verdict"]["status"] == "pass"
    # --patch in a sweep: in every point but the capture's own; --param rewrites the result
    patch = tmp_path / "swap.patch"
    patch.write_text("@@ -56 +56 @@\n-      ygm[id] = ygm[id] + alpha * xgm[id];\n"
                     "+      ygm[id] = alpha * xgm[id] + ygm[id];\n")  # fmt: skip
    rc, out, err = _sweep(str(clblast), str(AXPY), "--patch", str(patch), "--param", "VW=1,4",
                          "--options=-cl-mad-enable")  # fmt: skip
    assert rc == 0, err
    labels = {r["label"]: r["status"] for r in out["rows"]}
    assert labels == {"capture": "pass", "diff program, VW=1": "pass",
                      "diff program, VW=4": "pass",
                      "diff program, -cl-mad-enable, VW=1": "pass",
                      "diff program, -cl-mad-enable, VW=4": "pass"}, labels
