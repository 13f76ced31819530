"""Plans (no device needed): ranges, modes, missing data said exactly, CLI input errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cltui.capture import open_capture
from cltui.capture.ranges import EnqueueRange, RangeError, parse_range
from cltui.cli import main
from cltui.replay.plan import PlanError, build_plan
from cltui.replay.tolerance import parse_arg_tolerances
from tests.conftest import copy_capture


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("12", EnqueueRange(12, 12)),
        ("12-40", EnqueueRange(12, 40)),
        ("12-", EnqueueRange(12, None)),
        ("-40", EnqueueRange(None, 40)),
        ("12-40/saxpy", EnqueueRange(12, 40, "saxpy")),
        (" 7 / run ", EnqueueRange(7, 7, "run")),
    ],
)
def test_parse_range(text: str, want: EnqueueRange) -> None:
    assert parse_range(text) == want


@pytest.mark.parametrize("text", ["", "x", "40-12", "1 2", "-", "/saxpy", "1-2-3"])
def test_parse_range_rejects(text: str) -> None:
    with pytest.raises(RangeError):
        parse_range(text)


def test_arg_tol_parsing() -> None:
    assert parse_arg_tolerances(("0:ulp=2,atol=1e-6", "3:rtol=0.1")) == {
        0: {"ulp": 2, "atol": 1e-6},
        3: {"rtol": 0.1},
    }
    assert parse_arg_tolerances(("1:ULP=1", "1:atol=0.5")) == {1: {"ulp": 1, "atol": 0.5}}
    for bad in ("x:ulp=1", "0:foo=1", "0:ulp=a", "0", "0:ulp=1.5", "0:atol=-1", "0:rtol=inf"):
        with pytest.raises(ValueError):
            parse_arg_tolerances((bad,))
    # a huge spec is named in a short line, whatever part of it is wrong
    for huge in ("0:ulp=" + "9" * 100_000 + "x", "9" * 100_000 + ":ulp=1", "0:" + "a" * 100_000):
        with pytest.raises(ValueError) as info:
            parse_arg_tolerances((huge,))
        assert len(str(info.value)) < 200


def test_kernel_filter_and_manifest_is_json(images_svm: Path) -> None:
    cap = open_capture(images_svm)
    plan = build_plan(cap, parse_range("0-8/svm"))
    assert plan.enqueues == [6, 7]
    m = json.loads(json.dumps(plan.to_manifest()))
    assert m["format"] == "cltui-replay-plan" and m["version"] == 1
    assert m["source"]["range"] == "0-8/svm"
    for key, entry in m["data"].items():
        assert (images_svm / entry["path"]).is_file(), key
    # 7 continues from 6 (same SVM allocation): loaded once, checked twice
    assert [len(s["loads"]) for s in m["steps"]] == [1, 0]
    assert [len(s["checks"]) for s in m["steps"]] == [1, 1]


def test_isolated_loads_every_pre_dump(images_svm: Path) -> None:
    cap = open_capture(images_svm)
    plan = build_plan(cap, parse_range("0-8"), "isolated")
    pre_files = sorted(p.name for p in (images_svm / "memDumpPreEnqueue").iterdir())
    loaded = sorted(
        Path(plan.manifest["data"][ld["data"]]["path"]).name
        for s in plan.steps
        for ld in s["loads"]
    )
    assert loaded == pre_files  # 13 Pre dumps, one load each


def test_missing_dumps_are_named_exactly(images_svm: Path, tmp_path: Path) -> None:
    cap_dir = copy_capture(images_svm, tmp_path)
    for folder in (cap_dir / "memDumpPreEnqueue", cap_dir / "Replay/Enqueue_3_volume_sum/Pre"):
        (folder / "Enqueue_0003_Kernel_volume_sum_Arg_1_Buffer_0005.bin").unlink()
    for folder in (cap_dir / "memDumpPostEnqueue", cap_dir / "Replay/Enqueue_8_gather_rgba/Post"):
        (folder / "Enqueue_0008_Kernel_gather_rgba_Arg_2_Buffer_0008.bin").unlink()
    plan = build_plan(open_capture(cap_dir), parse_range("0-"))
    assert (
        "enqueue 3: no Pre dump of argument 1 (buffer 0005); it starts zero-filled, and what "
        "depends on it is unchecked (its input is unknown)"
    ) in plan.notes
    assert "enqueue 8: no Post dump of argument 2 (buffer 0008): not checked" in plan.notes
    assert plan.enqueues == [0, 1, 2, 3, 6, 7, 8]  # the steps still run


def test_nothing_to_replay(images_svm: Path) -> None:
    cap = open_capture(images_svm)
    with pytest.raises(PlanError, match="no kernel enqueue in range 9-10"):
        build_plan(cap, parse_range("9-10"))
    with pytest.raises(PlanError, match="of kernel 'nosuch'"):
        build_plan(cap, parse_range("0-/nosuch"))
    with pytest.raises(PlanError, match="unknown mode"):
        build_plan(cap, parse_range("0"), "sideways")


@pytest.mark.child
def test_cli_bad_input_exits_2(images_svm: Path, tmp_path: Path) -> None:
    r = CliRunner()
    res = r.invoke(main, ["replay", str(images_svm), "40-12"])
    assert res.exit_code == 2 and "bad range '40-12'" in res.output
    res = r.invoke(main, ["replay", str(images_svm), "9-10"])
    assert res.exit_code == 2 and "no kernel enqueue in range 9-10" in res.output
    res = r.invoke(main, ["replay", str(tmp_path / "nope"), "0"])
    assert res.exit_code == 2
    res = r.invoke(main, ["replay", str(images_svm), "0", "--arg-tol", "zz"])
    assert res.exit_code == 2 and "bad --arg-tol" in res.output
    assert "Traceback" not in res.output


def test_1d_image_marked_2d_by_the_layer_is_replayed_as_1d(tmp_path: Path) -> None:
    """Without a log, the only format is Replay's Image_MetaData, which says IMAGE2D for a
    1D image (capture-format §6.2): the kernel signature's image1d_t wins."""
    from cltui.capture.model import ArgKind, Dump, Enqueue, EnqueueKind, EnqueueRow, KernelArg
    from cltui.replay.engine.compare import Tolerance
    from cltui.replay.plan.base import PlanState
    from cltui.replay.plan.memory import mem

    folder = tmp_path / "Replay" / "Enqueue_0_k"
    folder.mkdir(parents=True)
    (folder / "enqueueNumber.txt").write_text("0\n")
    (folder / "kernelName.txt").write_text("k")
    (folder / "Image_MetaData_0.txt").write_text("16\n1\n1\n4\n64\n0\n4314\n4277\n4337")
    dump = Dump(tmp_path / "x.raw", 0, "k", 0, 7, True, (16, 1, 1), 32)
    row = EnqueueRow(
        0,
        EnqueueKind.KERNEL,
        "clEnqueueNDRangeKernel",
        "k",
        (16,),
        None,
        None,
        True,
        True,
        True,
        False,
    )
    enq = Enqueue(row=row, line="", queue=None, event=None, global_offset=None, replay_dir=folder)
    arg = KernelArg(
        index=0, kind=ArgKind.IMAGE, size=8, type_name="__read_only image1d_t", pre=dump
    )

    class _Cap:
        path = tmp_path

    b = PlanState(_Cap(), "chain", Tolerance(), {})
    mid, problem = mem(b, enq, arg)
    assert problem is None
    image = b.memory[mid]["image"]
    assert image["image_type"] == "CL_MEM_OBJECT_IMAGE1D"
    assert image["shape"] == [16, 1, 1] and image["element_size"] == 4
    assert (image["order"], image["type"]) == ("CL_RGBA", "CL_UNSIGNED_INT8")
    assert b.memory[mid]["label"] == "image 0007"


def test_build_plan_from_a_set_of_enqueues_with_holes(tmp_path: Path) -> None:
    from cltui.replay.plan import set_text
    from tests.analysis_synth import chain_capture, write_capture

    cap = open_capture(write_capture(chain_capture(), tmp_path / "c"))
    whole = build_plan(cap, parse_range("0-5")).to_manifest()
    listed = build_plan(cap, [5, 3, 0, 1, 2, 4, 4]).to_manifest()
    assert listed["source"]["range"] == "0-5"
    assert {k: v for k, v in listed.items() if k != "source"} == {
        k: v for k, v in whole.items() if k != "source"
    }
    holes = build_plan(cap, [4, 1]).to_manifest()
    assert [s["enqueue"] for s in holes["steps"]] == [1, 4]
    assert holes["source"]["range"] == "1,4"
    # 4 reads C, which the left-out 2 and 3 made: it comes from 4's own Pre dump
    assert any(ld["mem"] and ld["why"] == "input" and "Enqueue_0004" in ld["data"]
               for ld in holes["steps"][1]["loads"])
    with pytest.raises(PlanError, match="the set is empty"):
        build_plan(cap, [])
    with pytest.raises(PlanError, match="no enqueue 99 in this capture"):
        build_plan(cap, [1, 99])
    assert set_text([9, 1, 2, 3, 5, 7, 8]) == "1-3,5,7-9"
