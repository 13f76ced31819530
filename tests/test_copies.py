"""Copies between objects of a replayed range (issue 25, item 6): buffer, rectangle, image
and buffer<->image copies replay as operations in the engine and in both runners of an
exported bundle, a copy into an object before its first use included; a copy that cannot
be replayed says its own reason (never a fill's)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from click.testing import CliRunner

from cltui.capture import open_capture
from cltui.capture.ranges import parse_range
from cltui.cli import main
from cltui.export import export_range
from cltui.replay.plan import build_plan
from tests.analysis_synth import Arg, HostOp, Launch, SynthCapture, write_capture
from tests.test_export_device import _need, cpp_replay, run_cpp, run_py  # noqa: F401 (fixture)

pytestmark = [pytest.mark.device, pytest.mark.child]

W, H = 8, 4
N = W * H

IMAGE_SOURCE = """\
__constant sampler_t S = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_NONE | CLK_FILTER_NEAREST;

__kernel void img_iota(__write_only image2d_t out, int w, int base)
{
    int i = get_global_id(0);
    write_imagei(out, (int2)(i % w, i / w), (int4)(base + i, 0, 0, 0));
}

__kernel void img_double(__read_only image2d_t in, __global int *out, int w)
{
    int i = get_global_id(0);
    out[i] = 2 * read_imagei(in, S, (int2)(i % w, i / w)).x;
}

__kernel void buf_add(__global int *out, __global const int *in, int k)
{
    int i = get_global_id(0);
    out[i] = in[i] + k;
}
"""

St = dict[str, npt.NDArray[Any]]


def _iota(st: St, a: list[Any]) -> None:
    st[a[0]][:] = a[2] + np.arange(N, dtype=np.int32)


def _double(st: St, a: list[Any]) -> None:
    st[a[1]][:] = 2 * st[a[0]]


def _add(st: St, a: list[Any]) -> None:
    st[a[0]][:] = st[a[1]] + np.int32(a[2])


def _img(kernel: str, *args: Arg, before: list[HostOp] | None = None, pre: bool = True) -> Launch:
    sim = {"img_iota": _iota, "img_double": _double, "buf_add": _add}[kernel]
    return Launch(kernel, list(args), N, W, sim, before=before or [], pre=pre)


I, J, A, B = (Arg("buf", x) for x in "IJAB")  # noqa: E741 (the images I and J)  # noqa: E741 (the images I and J)
w = Arg("int", W)


def _spec(launches: list[Launch]) -> SynthCapture:
    z = np.zeros(N, dtype=np.int32)
    bufs = {name: z.copy() for name in "IJAB"}
    return SynthCapture(IMAGE_SOURCE, bufs, launches, images={"I": (W, H), "J": (W, H)})


def every_copy_capture(root: Path) -> Path:
    """Every copy kind between objects of the range 0-9, each replayable:
    0 img_iota(I), 1 img_double(I -> A), [2 CopyImage I->J, 3 CopyImageToBuffer I->B],
    4 img_double(J -> A) (J and B first used after a copy that writes all of them),
    5 buf_add(A <- B + 1), [6 CopyBufferToImage A->J, 7 CopyBufferRect B->A (one row)],
    8 img_double(J -> B), 9 buf_add(B <- A + 0)."""
    launches = [
        _img("img_iota", I, w, Arg("int", 5)),
        _img("img_double", I, A, w),
        _img("img_double", J, A, w, before=[HostOp("copy_image", "J", src="I"),
                                            HostOp("copy_image_to_buffer", "B", src="I")]),
        _img("buf_add", A, B, Arg("int", 1)),
        _img("img_double", J, B, w, before=[
            HostOp("copy_buffer_to_image", "J", src="A"),
            HostOp("copy_rect", "A", src="B", src_origin=(4, 0, 0), dst_origin=(16, 0, 0),
                   region=(32, 1, 1)),
        ]),
        _img("buf_add", B, A, Arg("int", 0)),
    ]  # fmt: skip
    return write_capture(_spec(launches), root)


def unreplayable_copies_capture(root: Path) -> Path:
    """0 img_iota(I), 1 buf_add(A <- B + 1), [2 CopyBufferRect A->B over two rows (the layer
    logs no pitches), 3 CopyImage I->J], 4 buf_add(A <- B + 2), 5 img_double(J -> A) without
    Pre dumps: the range 1-5 does not hold I (the image copy's source)."""
    launches = [
        _img("img_iota", I, w, Arg("int", 5)),
        _img("buf_add", A, B, Arg("int", 1)),
        _img("buf_add", A, B, Arg("int", 2), before=[
            HostOp("copy_rect", "B", src="A", src_origin=(0, 0, 0), dst_origin=(8, 0, 0),
                   region=(8, 2, 1)),
            HostOp("copy_image", "J", src="I"),
        ]),
        _img("img_double", J, A, w, pre=False),
    ]  # fmt: skip
    return write_capture(_spec(launches), root)


def _replay(cap: Path, rng: str, mode: str) -> tuple[int, dict[str, Any]]:
    res = CliRunner().invoke(main, ["replay", str(cap), rng, "--mode", mode, "-d", "pocl",
                                    "--json"])  # fmt: skip
    assert res.exit_code in (0, 1, 3), res.output
    return res.exit_code, json.loads(res.stdout)


def _transfers(report: dict[str, Any]) -> dict[int, tuple[str, Any, bool]]:
    """enqueue -> (function, replayed, done) of every transfer the device run reports."""
    return {
        t["enqueue"]: (t["function"], t["replayed"], t["done"])
        for st in report["devices"][0]["steps"]
        for t in st.get("transfers", [])
    }


@pytest.mark.parametrize("mode", ["chain", "strict"])
def test_every_copy_kind_between_objects_of_the_range_replays(tmp_path: Path, mode: str) -> None:
    """CopyImage, CopyImageToBuffer, CopyBufferToImage and a one-row CopyBufferRect between
    objects of the range run as operations (two of them into objects before their first
    use, which are then checked against their Pre dumps, not loaded from them): PASS."""
    _need("pocl")
    cap = every_copy_capture(tmp_path / "cap")
    code, report = _replay(cap, "0-9", mode)
    assert (code, report["verdict"]["status"]) == (0, "pass"), report["verdict"]["line"]
    assert report["verdict"]["line"].endswith("4/4 host transfers replayed")
    assert _transfers(report) == {
        2: ("clEnqueueCopyImage", "op", True),
        3: ("clEnqueueCopyImageToBuffer", "op", True),
        6: ("clEnqueueCopyBufferToImage", "op", True),
        7: ("clEnqueueCopyBufferRect", "op", True),
    }
    steps = {st["enqueue"]: st for st in report["devices"][0]["steps"]}
    # J and B are first used at 4, after copies that write all of them: the copies are
    # what the kernel reads (checked bit-exact against the captured Pre dumps), no input
    first = steps[4]
    assert [p["status"] for p in first["prechecks"]] == ["equal"]
    assert not any(ld["why"] == "input" for ld in first["loads"])
    assert all(p["status"] == "equal" for st in steps.values() for p in st["prechecks"])


def test_a_copy_into_a_fresh_object_replays_in_the_opencv_capture(opencv: Path) -> None:
    """The real OpenCV capture's clEnqueueCopyBuffer 45 (from buffer 0027, written by
    convertTo 36, into buffer 0030, first read by fft_multi_radix_rows 46) is replayed as an
    operation, its result equals the captured Pre dump of 46, and 46's checks hold."""
    _need("pocl")
    code, report = _replay(opencv, "36-47", "chain")
    assert (code, report["verdict"]["status"]) == (0, "pass"), report["verdict"]["line"]
    assert _transfers(report)[45] == ("clEnqueueCopyBuffer", "op", True)
    st = next(s for s in report["devices"][0]["steps"] if s["enqueue"] == 46)
    assert [(p["label"], p["status"]) for p in st["prechecks"]] == [
        ("arg 0 (buffer 0030)", "equal")
    ]
    assert not [ld for ld in st["loads"] if ld["done"] and ld["why"] != "input"]
    assert all(c["status"] == "equal" for c in st["checks"])


def test_each_unreplayed_copy_says_its_own_reason(tmp_path: Path) -> None:
    """A rectangle copy over two rows (pitches not logged) and an image copy whose source is
    not an object of the range, into an object without a Pre dump: each is named with its
    own reason, not the fill's."""
    cap = unreplayable_copies_capture(tmp_path / "cap")
    plan = build_plan(open_capture(cap), parse_range("1-5"), "strict")
    why = {t["enqueue"]: (t["replayed"], t["why"]) for t in plan.manifest["scope"]["transfers"]}
    assert why == {
        2: (None, "its row and slice pitches are not logged"),
        3: (None, "its source is not an object whose replayed state is known here"),
    }
    assert not any("fill pattern" in n for n in plan.notes), plan.notes
    text = CliRunner().invoke(main, ["replay", str(cap), "1-5", "--mode", "strict", "-d", "pocl"])
    assert text.exit_code == 3, text.output
    assert "3 clEnqueueCopyImage before enqueue 4: not replayed (its source is not" in text.stdout


@pytest.mark.parametrize("mode", ["chain", "strict"])
def test_both_runners_replay_every_copy_kind_as_the_cli_does(
    tmp_path: Path,
    cpp_replay: Path,  # noqa: F811 (the fixture)
    mode: str,
) -> None:
    """replay.py and replay.cpp of the exported range run the same copies and give the CLI's
    verdict, counts and transfer outcomes."""
    _need("pocl")
    cap = every_copy_capture(tmp_path / "cap")
    code, want = _replay(cap, "0-9", mode)
    assert code == 0, want["verdict"]["line"]
    first = tmp_path / "export" / "bundle"
    export_range(open_capture(cap), "0-9", first, mode=mode)
    bundle = tmp_path / "fresh" / "bundle"
    shutil.copytree(first, bundle)
    shutil.rmtree(first.parent)
    for proc in (
        run_py(bundle, "--validate", "--json", "--device", "pocl"),
        run_cpp(cpp_replay, bundle, "--validate", "--json", "--device", "pocl"),
    ):
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        (res,) = json.loads(proc.stdout)
        assert res["verdict"]["line"] == want["verdict"]["line"]
        assert res["verdict"]["counts"] == want["verdict"]["counts"]
        got = {t["enqueue"]: (t["replayed"], t["done"]) for st in res["steps"]
               for t in st.get("transfers", [])}  # fmt: skip
        assert got == {n: (r, d) for n, (_f, r, d) in _transfers(want).items()}


def test_a_copy_runs_after_the_copy_into_its_source_whatever_the_source_gets_later(
    tmp_path: Path,
) -> None:
    """[CopyBuffer B->A, CopyBuffer A->C, WriteBuffer A] before add(C <- A + B): C, first
    used there, is written whole by the second copy, which reads what the first put in A;
    A's own step reloads it (the write), and the first copy still runs before the second
    (it was left out: C got A's old contents)."""
    from tests.analysis_synth import CHAIN_SOURCE, _add, _fill_iota, _scale

    _need("pocl")
    z = np.zeros(N, dtype=np.int32)
    a, b, c = Arg("buf", "A"), Arg("buf", "B"), Arg("buf", "C")
    data = np.arange(100, 100 + N, dtype=np.int32).tobytes()
    launches = [
        Launch("fill_iota", [a, Arg("int", 5)], N, 8, _fill_iota),
        Launch("scale", [b, a, Arg("int", 3)], N, 8, _scale),
        Launch("add", [c, a, b], N, 8, _add, before=[
            HostOp("copy", "A", src="B", size=4 * N),
            HostOp("copy", "C", src="A", size=4 * N),
            HostOp("write", "A", data=data),
        ]),
    ]  # fmt: skip
    spec = SynthCapture(CHAIN_SOURCE, {"A": z.copy(), "B": z.copy(), "C": z.copy()}, launches)
    cap = write_capture(spec, tmp_path / "cap")
    code, report = _replay(cap, "0-5", "chain")
    assert (code, report["verdict"]["status"]) == (0, "pass"), report["verdict"]["line"]
    assert {n: r for n, (_f, r, _d) in _transfers(report).items()} == {2: "op", 3: "op"}
    st = next(s for s in report["devices"][0]["steps"] if s["enqueue"] == 5)
    assert [(p["label"], p["status"]) for p in st["prechecks"]] == [
        ("arg 0 (buffer 0002)", "equal"),
        ("arg 1 (buffer 0000)", "different"),
    ]  # C as the copies left it; A before its reload (the write is not replayed)


def test_both_runners_replay_the_opencv_copy(
    opencv: Path,
    tmp_path: Path,
    cpp_replay: Path,  # noqa: F811 (the fixture)
) -> None:
    """The OpenCV capture's CopyBuffer 45 runs in replay.py and replay.cpp too, with the
    CLI's verdict line."""
    _need("pocl")
    code, want = _replay(opencv, "36-47", "chain")
    assert code == 0, want["verdict"]["line"]
    first = tmp_path / "export" / "bundle"
    export_range(open_capture(opencv), "36-47", first)
    bundle = tmp_path / "fresh" / "bundle"
    shutil.copytree(first, bundle)
    shutil.rmtree(first.parent)
    for proc in (
        run_py(bundle, "--validate", "--json", "--device", "pocl"),
        run_cpp(cpp_replay, bundle, "--validate", "--json", "--device", "pocl"),
    ):
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        (res,) = json.loads(proc.stdout)
        assert res["verdict"]["line"] == want["verdict"]["line"]
        st = next(s for s in res["steps"] if s["enqueue"] == 46)
        assert [(t["enqueue"], t["replayed"], t["done"]) for t in st["transfers"]] == [
            (45, "op", True)
        ]
        assert [p["status"] for p in st["prechecks"]] == ["equal"]
