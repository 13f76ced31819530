"""Verdicts a user can trust: PASS only when every kernel enqueue of the range was replayed
and every output checked; host-side transfers the log shows inside a range are seen,
replayed where the capture allows (fills, copies), and otherwise named, with the checks
that follow them marked (on the real PoCL device, through the CLI)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from cltui.capture.opening import open_capture
from cltui.capture.ranges import parse_range
from cltui.cli import main
from cltui.replay.engine import combine_verdicts, verdict, verdict_exit
from cltui.replay.plan import build_plan
from tests.analysis_synth import (
    CHAIN_SOURCE,
    Arg,
    HostOp,
    Launch,
    SynthCapture,
    _add,
    _fill_iota,
    _scale,
    write_capture,
)

N = 16
SEVEN = np.int32(7).tobytes()


def _capture(tmp: Path, ops: list[HostOp], *, pre: bool = True, post: bool = True) -> Path:
    """0 fill_iota(A), 1 scale(B <- A * 3), [ops], add(C <- A + B) (``pre``/``post``: its
    dumps), add(C <- A + B) again with every dump."""
    z = np.zeros(N, dtype=np.int32)
    a, b, c = Arg("buf", "A"), Arg("buf", "B"), Arg("buf", "C")
    launches = [
        Launch("fill_iota", [a, Arg("int", 5)], N, 8, _fill_iota),
        Launch("scale", [b, a, Arg("int", 3)], N, 8, _scale),
        Launch("add", [c, a, b], N, 8, _add, before=ops, pre=pre, post=post),
        Launch("add", [c, a, b], N, 8, _add),
    ]
    spec = SynthCapture(CHAIN_SOURCE, {"A": z.copy(), "B": z.copy(), "C": z.copy()}, launches)
    return write_capture(spec, tmp / "cap")


def _replay(cap: Path, rng: str, mode: str = "chain") -> tuple[int, dict[str, Any]]:
    res = CliRunner().invoke(
        main, ["replay", str(cap), rng, "--mode", mode, "-d", "pocl", "--json"]
    )
    assert res.exit_code in (0, 1, 3), res.output
    return res.exit_code, json.loads(res.stdout)


def _counts(report: dict[str, Any]) -> dict[str, int]:
    counts: dict[str, int] = report["verdict"]["counts"]
    assert report["devices"][0]["verdict"]["counts"] == counts  # one device: the same
    return counts


@pytest.fixture(scope="module", autouse=True)
def _needs_pocl() -> None:
    cl = pytest.importorskip("pyopencl")
    names = " ".join(p.name for p in cl.get_platforms()).lower()
    if "portable" not in names:
        pytest.skip("PoCL is not installed")


pytestmark = pytest.mark.device


@pytest.mark.child
def test_fill_without_dumps_around_is_not_a_pass(tmp_path: Path) -> None:
    """(a) A FillBuffer between two kernels, no dumps after it: the plan sees it, the
    pattern is unknown (the log does not hold it), so the verdict is INCOMPLETE, exit 3."""
    cap = _capture(
        tmp_path, [HostOp("fill", "A", pattern=SEVEN, size=4 * N)], pre=False, post=False
    )
    plan = build_plan(open_capture(cap), parse_range("0-3"))
    assert plan.manifest["scope"]["transfers"] == [
        {
            "enqueue": 2,
            "function": "clEnqueueFillBuffer",
            "mem": plan.manifest["scope"]["transfers"][0]["mem"],
            "label": "buffer 0000",
            "replayed": None,
            "why": "the fill pattern is not logged and no later dump shows it",
        }
    ]
    assert [(c["enqueue"], c["action"], c["transfers"]) for c in plan.changes] == [
        (3, "unreplayed", [2])
    ]
    code, report = _replay(cap, "0-3")
    assert code == 3 and report["verdict"]["status"] == "incomplete"
    c = _counts(report)
    assert (c["kernels"], c["replayed"], c["transfers"], c["transfers_replayed"]) == (3, 3, 1, 0)
    # 3 add has no Post dump (unchecked: none counted as a check after the write); it read
    # the filled A: the checks of A and of what it wrote (C) follow it, not that of B
    assert c["unchecked"] == 3 and c["after_unreplayed"] == 0
    line = report["verdict"]["line"]
    assert line.startswith("INCOMPLETE: 3/3 kernel enqueues replayed, ")
    assert "0/1 host transfers replayed (1 not)" in line
    st = next(s for s in report["devices"][0]["steps"] if s["enqueue"] == 3)
    assert st["transfers"][0]["enqueue"] == 2 and st["transfers"][0]["done"] is False
    marked = [ch for ch in st["checks"] if ch.get("after_unreplayed") == 2]
    assert [ch["args"] for ch in marked] == [[0], [1]]  # C and A; B does not depend on it
    assert all(ch["summary"].startswith("after unreplayed host write at 2: ") for ch in marked)
    # the text output leads with the verdict and names the transfer, never collapsed
    text = CliRunner().invoke(main, ["replay", str(cap), "0-3", "-d", "pocl"])
    assert text.exit_code == 3
    lines = text.stdout.splitlines()
    assert lines[1] == line
    assert "host transfer 2 clEnqueueFillBuffer before enqueue 3: not replayed" in text.stdout


@pytest.mark.child
@pytest.mark.parametrize("mode", ["chain", "strict"])
def test_fill_and_copy_are_replayed_from_the_capture(tmp_path: Path, mode: str) -> None:
    """A fill whose pattern the next Pre dump shows and a copy from an object of the range
    are replayed as operations, in chain and strict mode: PASS, exit 0."""
    ops = [
        HostOp("fill", "A", pattern=SEVEN, offset=8, size=16),
        HostOp("copy", "B", src="A", offset=0, dst_offset=4, size=12),
    ]
    cap = _capture(tmp_path, ops)
    code, report = _replay(cap, "0-5", mode)
    assert report["verdict"]["status"] == "pass", report["verdict"]["line"]
    assert code == 0
    c = _counts(report)
    assert (c["transfers"], c["transfers_replayed"], c["departed"]) == (2, 2, 0)
    assert c["checked"] == c["outputs"] == c["equal"] == 9
    st = next(s for s in report["devices"][0]["steps"] if s["enqueue"] == 4)
    assert [(t["enqueue"], t["replayed"], t["done"]) for t in st["transfers"]] == [
        (2, "op", True),
        (3, "op", True),
    ]
    # the replayed state before 4 equals the captured Pre: nothing reloaded
    assert [p["status"] for p in st["prechecks"]] == ["equal", "equal"]
    assert not any(ld["done"] for ld in st["loads"] if ld["why"] == "verify")
    assert [ch["action"] for ch in report["plan"]["changes"]] == ["replay", "replay"]


@pytest.mark.child
def test_write_is_reloaded_in_chain_and_departs_in_strict(tmp_path: Path) -> None:
    """A WriteBuffer's data is not in the log: chain mode reloads the next Pre dump (the
    written state, captured: PASS); strict mode never reloads: INCOMPLETE with the
    departure and the checks after the unreplayed write counted."""
    data = np.arange(100, 100 + N, dtype=np.int32).tobytes()
    cap = _capture(tmp_path, [HostOp("write", "B", data=data, size=len(data))])
    code, report = _replay(cap, "0-4", "chain")
    assert (code, report["verdict"]["status"]) == (0, "pass"), report["verdict"]["line"]
    assert report["plan"]["changes"][0]["action"] == "reload"
    assert _counts(report)["transfers_replayed"] == 1
    code, report = _replay(cap, "0-4", "strict")
    assert (code, report["verdict"]["status"]) == (3, "incomplete")
    c = _counts(report)
    assert (c["departed"], c["transfers_replayed"], c["different"]) == (1, 0, 4)
    assert c["after_unreplayed"] == 4  # both adds' C and B: B follows the write at 2, and
    # C is written from it; A (read only, not written to) does not depend on it
    assert "1 departed from the capture" in report["verdict"]["line"]


@pytest.mark.child
def test_kernel_without_post_dumps_is_incomplete(tmp_path: Path) -> None:
    """(c) A kernel whose outputs the capture did not dump: INCOMPLETE, exit 3, counts."""
    cap = _capture(tmp_path, [], post=False)
    code, report = _replay(cap, "0-3")
    assert code == 3
    c = _counts(report)
    assert (c["kernels"], c["replayed"], c["skipped"]) == (4, 4, 0)
    assert (c["outputs"], c["checked"], c["unchecked"], c["equal"]) == (9, 6, 3, 6)
    assert report["verdict"]["line"] == (
        "INCOMPLETE: 4/4 kernel enqueues replayed, 6/9 outputs checked (6 equal, 3 unchecked)"
    )
    unchecked = [
        ch["label"] for s in report["devices"][0]["steps"] for ch in s["checks"]
        if ch["status"] == "unchecked"
    ]  # fmt: skip
    assert len(unchecked) == 3


@pytest.mark.child
def test_full_range_on_pocl_still_passes(pyocl_pocl: Path) -> None:
    """(b) pyopencl_lib_pocl 14-38: every enqueue replayed and checked: PASS, exit 0 (its
    CopyBuffer at 15 fills a buffer before its first use: covered by that input)."""
    code, report = _replay(pyocl_pocl, "14-38")
    assert code == 0, report["verdict"]["line"]
    c = _counts(report)
    assert c["kernels"] == c["replayed"] == 23 and c["unchecked"] == 0
    assert c["checked"] == c["outputs"] == c["equal"] > 0
    assert (c["transfers"], c["transfers_replayed"]) == (1, 1)
    assert report["verdict"]["line"].startswith("PASS: 23/23 kernel enqueues replayed, ")


@pytest.mark.child
def test_heat2d_host_write_verdicts(heat2d: Path) -> None:
    """(d) heat2d 122396-122411: the WriteBuffer at 122407 is reloaded from the next Pre dump
    in chain mode (captured data: PASS); strict mode departs there: INCOMPLETE, not PASS."""
    code, report = _replay(heat2d, "122396-122411", "chain")
    assert (code, report["verdict"]["status"]) == (0, "pass"), report["verdict"]["line"]
    assert report["plan"]["changes"][0]["action"] == "reload"
    assert "122407 WriteBuffer" in report["plan"]["changes"][0]["by"]
    code, report = _replay(heat2d, "122396-122411", "strict")
    assert (code, report["verdict"]["status"]) == (3, "incomplete")
    c = _counts(report)
    assert c["departed"] >= 1 and c["after_unreplayed"] > 0
    assert c["transfers"] == 1 and c["transfers_replayed"] == 0


def test_verdict_rules_are_pure() -> None:
    """The rules on hand-made results: failure dominates; an error is not a pass."""
    plan = {
        "steps": [{"enqueue": 1, "checks": [{"mem": "a"}, {"mem": "b"}]}],
        "scope": {"kernels": [{"enqueue": 1, "replayed": True},
                              {"enqueue": 2, "replayed": False}], "transfers": []},
    }  # fmt: skip
    ok = {"steps": [{"checks": [{"status": "equal"}, {"status": "equal"}]}]}
    v = verdict(plan, ok)
    assert v["status"] == "incomplete" and verdict_exit(v["status"]) == 3
    assert v["line"] == (
        "INCOMPLETE: 1/2 kernel enqueues replayed (1 skipped), 2/2 outputs checked (2 equal)"
    )
    bad = {"steps": [{"checks": [{"status": "different"}, {"status": "equal"}]}]}
    assert verdict(plan, bad)["status"] == "fail"
    crash = {"steps": [], "error": "enqueue 1 crashed the driver (SIGSEGV)", "status": "crash"}
    vc = verdict(plan, crash)
    assert vc["status"] == "fail" and vc["line"].startswith("FAIL: crash: enqueue 1 crashed")
    err = verdict(plan, {"steps": [], "error": "build failed"})
    assert err["status"] == "error" and verdict_exit("error") == 1
    both = combine_verdicts([v, verdict(plan, bad)], ["0:0", "1:0"])
    assert both["status"] == "fail" and both["counts"]["equal"] == 3
    assert both["line"].startswith("FAIL on 1 of 2 devices: 0:0: INCOMPLETE")
    two = combine_verdicts([verdict(plan, bad), verdict(plan, bad)], ["0:0", "1:0"])
    assert two["line"].startswith("FAIL on 2 devices: 0:0: FAIL")


@pytest.mark.child
def test_copy_into_an_object_before_its_first_use_is_replayed(tmp_path: Path) -> None:
    """A copy into C before the first kernel that uses C, which has no Pre dump: the copy's
    source is known (A), so it is replayed as an operation and the range passes."""
    cap = _capture(tmp_path, [HostOp("copy", "C", src="A", size=4 * N)], pre=False)
    plan = build_plan(open_capture(cap), parse_range("0-4"), "strict")
    assert [(t["enqueue"], t["replayed"]) for t in plan.manifest["scope"]["transfers"]] == [
        (2, "op")
    ]
    code, report = _replay(cap, "0-4", "strict")
    assert (code, report["verdict"]["status"]) == (0, "pass"), report["verdict"]["line"]
    assert _counts(report)["transfers_replayed"] == 1
