"""Variants as data: the unified diff applied strictly, options and defines, work sizes and
scalars on a real capture's plan, the store in the user's data folder (no device)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cltui.capture import open_capture
from cltui.capture.ranges import parse_range
from cltui.cli import main
from cltui.replay.engine.schema import Manifest
from cltui.replay.experiment.apply import apply_variant, edit_options
from cltui.replay.experiment.patch import PatchError, apply_patch
from cltui.replay.experiment.store import delete_variant, list_variants, load_variant, save_variant
from cltui.replay.experiment.variant import (
    ProgramChange,
    ScalarChange,
    SizeChange,
    Variant,
    VariantError,
    parse_size,
)
from cltui.replay.plan import build_plan
from tests.schemas import validate

SRC = "a\nb\nc\nd\ne\n"
DIFF = "--- x.cl\n+++ y.cl\n@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n"


def test_patch_applies_exactly() -> None:
    assert apply_patch(SRC, DIFF) == "a\nb\nC\nd\ne\n"
    two = DIFF + "@@ -5 +5,2 @@\n-e\n+e\n+f\n"
    assert apply_patch(SRC, two) == "a\nb\nC\nd\ne\nf\n"


def test_patch_that_does_not_apply_is_one_line() -> None:
    with pytest.raises(PatchError) as err:
        apply_patch(SRC.replace("c", "x"), DIFF, "program 0017")
    msg = str(err.value)
    assert "\n" not in msg
    assert "hunk 1 does not apply to program 0017: line 3 is 'x'" in msg
    with pytest.raises(PatchError, match="no hunk"):
        apply_patch(SRC, "just text\n")
    with pytest.raises(PatchError, match="header says"):
        apply_patch(SRC, "@@ -2,3 +2,3 @@\n b\n-c\n+C\n")


def test_options_and_defines() -> None:
    var = Variant("0", options_add=("-cl-mad-enable",), options_remove=("-cl-fast-relaxed-math",),
                  defines=(("VWM", "4"),))  # fmt: skip
    out = edit_options("-cl-fast-relaxed-math -D VWM=2 -DOTHER=1 -I '/a b'", var)
    assert out == "-DOTHER=1 -I '/a b' -cl-mad-enable -D VWM=4"
    assert edit_options("-DVWM", var).endswith("-D VWM=4")
    assert parse_size("16x8") == (16, 8)
    with pytest.raises(ValueError):
        parse_size("16y8")


@pytest.fixture(scope="module")
def plan(pyocl_pocl: Path) -> Manifest:
    cap = open_capture(pyocl_pocl)
    return build_plan(cap, parse_range("22-31")).to_manifest()


def test_apply_sizes_scalars_and_source(plan: Manifest, pyocl_pocl: Path, tmp_path: Path) -> None:
    var = Variant(
        "22-31", name="v", kernel="axpb",
        programs=(ProgramChange("", patch=(
            "@@ -18 +18 @@\n-            z[i] = a*x[i] + b;\n+            z[i] = b + a*x[i];\n")),),
        defines=(("K", "1"),),
        sizes=(SizeChange("axpb", local_size=(64,)),),
        scalars=(ScalarChange("23", 5, "2"),),
    )  # fmt: skip
    out = apply_variant(plan, var, pyocl_pocl, tmp_path)
    assert plan["steps"][1]["local"] == [128]  # the plan given is not changed
    axpb = [s for s in out["steps"] if s["kernel"] == "axpb"]
    assert [s["local"] for s in axpb] == [[64], [64]]
    assert all(s["local"] == [128] for s in out["steps"] if s["kernel"] != "axpb")
    b = next(a for a in axpb[0]["args"] if a["index"] == 5)
    assert b["hex"] == "0200000000000000" and b["value"] == 2
    for pid in {s["program"] for s in axpb}:
        spec = out["programs"][pid]
        ref = out["data"][str(spec["source"])]
        assert ref.get("origin") == "variant" and Path(ref["path"]).is_relative_to(tmp_path)
        assert "z[i] = b + a*x[i];" in Path(ref["path"]).read_text()
        assert spec["options"].endswith("-D K=1")
    assert out["variant"]["name"] == "v"
    assert any(n.startswith("variant: kernel axpb: local 64") for n in out["notes"])


def test_apply_refuses_what_does_not_fit(plan: Manifest, pyocl_pocl: Path, tmp_path: Path) -> None:
    bad = [
        (Variant("22-31", sizes=(SizeChange("nope", local_size=(8,)),)), "no kernel 'nope'"),
        (Variant("22-31", sizes=(SizeChange("23", local_size=(8, 8)),)), "2-dimensional local"),
        (Variant("22-31", scalars=(ScalarChange("23", 0, "1"),)), "not a scalar"),
        (Variant("22-31", scalars=(ScalarChange("23", 5, "x"),)), "does not fit"),
        (Variant("22-31", programs=(ProgramChange("", source="x"),)), "builds"),
        (Variant("22-31", programs=(ProgramChange("p999", source="x"),)), "p999"),
    ]
    for var, words in bad:
        with pytest.raises(VariantError, match=words):
            apply_variant(plan, var, pyocl_pocl, tmp_path)


def test_store_roundtrip(pyocl_pocl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLTUI_DATA_DIR", str(tmp_path / "data"))
    var = Variant("23", programs=(ProgramChange("p17", patch=DIFF),),
                  options_add=("-cl-mad-enable",), sizes=(SizeChange("*", local_size=(32,)),))
    folder = save_variant(pyocl_pocl, var, "mad")
    assert folder.is_relative_to(tmp_path / "data" / "variants")
    assert not any(p.name == "variants" for p in pyocl_pocl.iterdir())
    back = load_variant(pyocl_pocl, "mad")
    assert back.programs == var.programs and back.sizes == var.sizes and back.name == "mad"
    assert json.loads((folder / "variant.json").read_text())["programs"][0]["file"].endswith(
        ".patch")
    res = CliRunner().invoke(main, ["variant", "list", str(pyocl_pocl), "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    validate(rows, "cli.schema.json", "variant_list")
    assert [r["name"] for r in rows] == ["mad"]
    res = CliRunner().invoke(main, ["variant", "show", str(pyocl_pocl), "mad", "--json"])
    shown = json.loads(res.stdout)
    validate(shown, "cli.schema.json", "variant_show")
    assert shown["programs"] == [{"program": "p17", "source": None, "patch": DIFF}]
    res = CliRunner().invoke(main, ["variant", "show", str(pyocl_pocl), "mad"])
    assert "build option added: -cl-mad-enable" in res.output and "+C" in res.output
    assert "measured" not in res.output  # saved by try: no result
    # a sweep's best keeps what it got: device, driver, date, verdict, timing
    got = {"device": {"id": "1:0", "name": "pthread-x", "platform": "PoCL", "version": "3.0",
                      "driver": "6.0"}, "date": "2026-12-04T16:00:00+00:00", "verdict": "pass",
           "time": {"median": 1500.0, "lo": 1400.0, "hi": 1600.0, "n": 9},
           "vs_capture": {"a": 2000.0, "b": 1500.0, "diff": -500.0, "lo": -600.0, "hi": -400.0,
                          "relative": -0.25, "n": 9, "reading": "faster"}}  # fmt: skip
    save_variant(pyocl_pocl, var, "mad", result=got)
    res = CliRunner().invoke(main, ["variant", "show", str(pyocl_pocl), "mad"])
    assert ("measured: on pthread-x (driver 6.0), 2026-12-04T16:00:00+00:00: pass, 1.5 µs "
            "against 2 µs for the capture's own side by side (-25.0%, faster)") in res.output, (
        res.output)
    res = CliRunner().invoke(main, ["variant", "show", str(pyocl_pocl), "mad", "--json"])
    shown = json.loads(res.stdout)
    validate(shown, "cli.schema.json", "variant_show")
    assert shown["result"] == got
    assert load_variant(pyocl_pocl, "mad") == dataclasses.replace(back, name="mad")
    assert [n for n, _v, _p in list_variants(pyocl_pocl)] == ["mad"]
    delete_variant(pyocl_pocl, "mad")
    assert list_variants(pyocl_pocl) == []
    res = CliRunner().invoke(main, ["variant", "delete", str(pyocl_pocl), "mad"])
    assert res.exit_code == 2 and "no variant 'mad'" in res.output
    with pytest.raises(VariantError, match="not a variant name"):
        save_variant(pyocl_pocl, var, "../x")
