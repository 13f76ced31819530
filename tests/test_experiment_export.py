"""``cltui export --variant``: a saved variant's bundle carries its changes (manifest, README)
and both runners (replay.py and the C++ replay) validate it on PoCL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cltui.cli import main
from cltui.replay.experiment.store import save_variant
from cltui.replay.experiment.variant import ProgramChange, SizeChange, Variant
from tests.schemas import validate
from tests.test_export_device import _need, both, cpp_replay  # noqa: F401  (a fixture)

pytestmark = [pytest.mark.device, pytest.mark.child]

PATCH = ("@@ -18 +18 @@\n-            z[i] = a*x[i] + b;\n"
         "+            z[i] = b + a*x[i];\n")  # fmt: skip


def test_variant_bundle_validates_in_both_runners(
    pyocl_pocl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpp_replay: Path  # noqa: F811
) -> None:
    _need("pocl")
    monkeypatch.setenv("CLTUI_DATA_DIR", str(tmp_path / "data"))
    var = Variant("22-31", kernel="axpb", programs=(ProgramChange("", patch=PATCH),),
                  options_add=("-cl-mad-enable",), sizes=(SizeChange("*", local_size=(64,)),))
    save_variant(pyocl_pocl, var, "win")
    out = tmp_path / "bundle"
    res = CliRunner().invoke(main, ["export", str(pyocl_pocl), "22-31", "-o", str(out),
                                    "--variant", "win", "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    info = json.loads(res.stdout)
    validate(info, "cli.schema.json", "export")
    assert info["variant"] == ["the program of axpb: a unified diff",
                               "build option added: -cl-mad-enable", "every kernel: local 64"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["variant"]["name"] == "win"
    assert {tuple(s["local"]) for s in manifest["steps"]} == {(64,)}
    axpb = {s["program"] for s in manifest["steps"] if s["kernel"] == "axpb"}
    for pid in axpb:
        src = manifest["data"][manifest["programs"][pid]["source"]]
        assert "origin" not in src or not Path(src["path"]).is_absolute()
        assert "z[i] = b + a*x[i];" in (out / src["path"]).read_text()
        assert "-cl-mad-enable" in manifest["programs"][pid]["options"]
    readme = (out / "README.md").read_text()
    assert "carries the variant `win`" in readme and "- every kernel: local 64" in readme
    py, cpp = both(out, cpp_replay, "pocl")
    assert py[0]["ok"] and cpp[0]["ok"]
    assert py[0]["verdict"]["status"] == cpp[0]["verdict"]["status"] == "pass"
    # a variant the range does not fit is one line, exit 2
    save_variant(pyocl_pocl, Variant("22-31", sizes=(SizeChange("nope", local_size=(8,)),)), "bad")
    res = CliRunner().invoke(main, ["export", str(pyocl_pocl), "22-31", "-o",
                                    str(tmp_path / "b2"), "--variant", "bad"])  # fmt: skip
    assert res.exit_code == 2 and "no kernel 'nope'" in res.output


def test_sweep_winner_bundle_validates_in_both_runners(
    pyocl_pocl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpp_replay: Path  # noqa: F811
) -> None:
    _need("pocl")
    monkeypatch.setenv("CLTUI_DATA_DIR", str(tmp_path / "data"))
    res = CliRunner().invoke(main, ["sweep", str(pyocl_pocl), "22-31", "--local", "32,64",
                                    "--options=-cl-mad-enable", "-d", "pocl", "--repeat", "3",
                                    "--save", "winner", "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    sweep = json.loads(res.stdout)
    # the fastest correct point that changes something (named BEST only when measurably
    # faster than the capture's own configuration: then the sweep saved it as "winner")
    won = next(r for r in sweep["ranking"] if r["id"] != "capture")
    if sweep["best"] != "winner":
        save_variant(pyocl_pocl, Variant.from_dict(
            {"format": "cltui-variant", "range": "22-31", **won["changes"]}), "winner")
    out = tmp_path / "winner"
    res = CliRunner().invoke(main, ["export", str(pyocl_pocl), "22-31", "-o", str(out),
                                    "--variant", "winner", "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["variant"] == won["lines"]
    py, cpp = both(out, cpp_replay, "pocl")
    assert py[0]["verdict"]["status"] == cpp[0]["verdict"]["status"] == "pass"
