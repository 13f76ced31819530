"""``cltui sweep`` on real PoCL: a local-size sweep finds correct sizes and skips the one the
device refuses, a results file resumes (points done are not run again), the points and the
ranking (pure)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cltui.cli import main
from cltui.replay.experiment.sweep import SweepSpec, load_results, point_id, points
from cltui.replay.experiment.variant import VariantError
from tests.experiment_workers import count_workers
from tests.schemas import validate


def test_points_cross_product_and_sample() -> None:
    spec = SweepSpec("0-3", local=((16,), (32,)), options=("-cl-mad-enable",),
                     defines=(("VWM", ("2", "4", "8")),))  # fmt: skip
    pts = points(spec)
    # the option list tries "no option" too: 2 locals x (none, -cl-mad-enable) x 3 values
    assert len(pts) == 1 + 2 * 2 * 3 and pts[0].empty
    assert len({point_id(p) for p in pts}) == len(pts)
    assert pts[1].short() == "-D VWM=2, local 16"
    assert pts[4].short() == "-cl-mad-enable, -D VWM=2, local 16"
    alone = points(SweepSpec("0-3", options=("-cl-fast-relaxed-math", "-cl-mad-enable")))
    assert [p.short() for p in alone] == ["capture", "-cl-fast-relaxed-math", "-cl-mad-enable"]
    sample = points(spec, budget=3, seed=7)
    assert len(sample) == 3 and sample[0].empty
    assert [point_id(p) for p in sample] == [point_id(p) for p in points(spec, 3, 7)]


def test_results_file_of_another_sweep_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"sweep": {"range": "1-2", "capture": "/c"}}) + "\n")
    with pytest.raises(VariantError, match="range 1-2"):
        load_results(path, SweepSpec("0-3"), "/c")
    path.write_text(json.dumps({"sweep": {"range": "0-3", "capture": "/c"}}) + "\n{\"id\": ")
    assert load_results(path, SweepSpec("0-3"), "/c") == []  # a row cut short: run again


@pytest.fixture
def _pocl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cl = pytest.importorskip("pyopencl")
    if not any("Portable" in p.name for p in cl.get_platforms()):
        pytest.skip("PoCL is not installed")
    monkeypatch.setenv("CLTUI_DATA_DIR", str(tmp_path / "data"))


def _sweep(*args: str) -> tuple[int, dict, str]:
    res = CliRunner().invoke(main, ["sweep", *args, "-d", "pocl", "--repeat", "4", "--json"])
    assert res.exit_code in (0, 1), res.output
    report = json.loads(res.stdout)
    validate(report, "cli.schema.json", "sweep")
    return res.exit_code, report, res.stderr


@pytest.mark.child
@pytest.mark.device
@pytest.mark.usefixtures("_pocl")
def test_sweep_finds_correct_local_sizes_and_resumes(
    pyocl_pocl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workers = count_workers(monkeypatch)
    results = tmp_path / "results.jsonl"
    code, report, _err = _sweep(str(pyocl_pocl), "23", "--local", "32,64,8192",
                                "--results", str(results))  # fmt: skip
    assert code == 0
    # one process ran the points and then confirmed the best two (it was two before)
    assert len(workers) == 1, workers
    assert {k.split("/", 1)[1] for k in report["confirmed"]} == {
        r["id"] for r in report["rows"] if r["label"] in ("local 32", "local 64")}
    assert all(c["status"] == "pass" for c in report["confirmed"].values()), report["confirmed"]
    status = {r["label"]: r["status"] for r in report["rows"]}
    assert status == {"capture": "pass", "local 32": "pass", "local 64": "pass",
                      "local 8192": "refused"}  # fmt: skip
    refused = next(r for r in report["rows"] if r["status"] == "refused")
    assert "local size 8192" in refused["why"] and "CL_DEVICE_MAX_WORK" in refused["why"], refused
    assert {r["label"] for r in report["ranking"]} == {"capture", "local 32", "local 64"}
    medians = [r["time"]["median"] for r in report["ranking"]]
    assert medians == sorted(medians)
    # BEST only when measurably faster than the capture's own configuration; else none
    if report["best_id"] is not None:
        won = next(r for r in report["ranking"] if r["id"] == report["best_id"])
        assert won["vs_capture"]["reading"] == "faster", won
        assert report["best"] == "sweep-best" and Path(report["best_folder"]).is_dir()
        assert report["verdict"]["line"].startswith("BEST: local ")
    else:
        assert all(r["vs_capture"]["reading"] != "faster"
                   for r in report["ranking"] if r["id"] != "capture")  # fmt: skip
        assert report["verdict"]["line"].startswith("NO BETTER VARIANT: 2 correct ")
        assert report["best"] is None
    # resume: the four rows are in the file; only the new point runs
    assert len(results.read_text().splitlines()) == 1 + 4
    code, again, err = _sweep(str(pyocl_pocl), "23", "--local", "32,64,8192,16",
                              "--results", str(results))  # fmt: skip
    assert "1 of 5 points to run (4 done before)" in err
    assert len(again["rows"]) == 5
    assert {r["label"] for r in again["rows"]} >= {"local 16", "local 8192"}
    assert len(results.read_text().splitlines()) == 1 + 5


@pytest.mark.child
@pytest.mark.device
@pytest.mark.usefixtures("_pocl")
def test_ctrl_c_keeps_rows_and_the_same_command_resumes(pyocl_pocl: Path, tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    results = tmp_path / "results.jsonl"
    values = ["--local", "8,16,32,64,128,256,512,1024", "--define", "SWEEP_T=1,2,3,4"]
    args = [sys.executable, "-m", "cltui", "sweep", str(pyocl_pocl), "23", *values, "-d", "pocl",
            "--repeat", "30", "--results", str(results)]  # fmt: skip
    env = {**os.environ, "CLTUI_DATA_DIR": str(tmp_path / "data")}
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if results.exists() and len(results.read_text().splitlines()) >= 3:
            proc.send_signal(signal.SIGINT)
            break
        time.sleep(0.02)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-2000:]
    assert "INTERRUPTED" in out
    kept = len(results.read_text().splitlines()) - 1
    assert 2 <= kept < 33
    code, report, err = _sweep(str(pyocl_pocl), "23", *values, "--results", str(results))
    assert code == 0
    assert f"{33 - kept} of 33 points to run ({kept} done before)" in err
    assert len(report["rows"]) == 33 and not report["interrupted"]
    assert len(results.read_text().splitlines()) == 1 + 33


@pytest.mark.child
@pytest.mark.device
@pytest.mark.usefixtures("_pocl")
def test_a_point_that_hangs_is_named_and_the_sweep_goes_on(pyocl_pocl: Path,
                                                           tmp_path: Path) -> None:  # fmt: skip
    from cltui.capture import open_capture
    from cltui.capture.ranges import parse_range
    from cltui.replay.devices import select_devices
    from cltui.replay.experiment.apply import apply_variant
    from cltui.replay.experiment.runs import SweepRun
    from cltui.replay.experiment.variant import ProgramChange, SizeChange, Variant
    from cltui.replay.plan import build_plan

    base = build_plan(open_capture(pyocl_pocl), parse_range("23")).to_manifest()
    src = (pyocl_pocl / "CLI_0017_9C70697D_source.cl").read_text()
    fifo = tmp_path / "never-written"
    os.mkfifo(fifo)  # the compiler waits on it for ever (no CPU, no memory)
    pts = [
        Variant("23"),
        Variant("23", programs=(ProgramChange("p17", source=src.replace("i += gsize)",
                                                                        "i += 0)")),)),
        Variant("23", programs=(ProgramChange("p17", source=f'#include "{fifo}"\n' + src),)),
        Variant("23", sizes=(SizeChange("*", local_size=(64,)),)),
    ]  # fmt: skip
    plans = {point_id(v): apply_variant(base, v, pyocl_pocl, tmp_path) for v in pts}
    # 8 s: a loaded machine's build is no hang
    with SweepRun(SweepSpec("23"), pyocl_pocl, pts, plans, select_devices(["pocl"]), [], None,
                  repeat=3, timeout=8.0) as run:  # fmt: skip
        rows = list(run.rows())
        # the process started after the hangs confirms: the capture's and local 64, paired
        confirmed = run.confirm()
    assert [r["status"] for r in rows] == ["pass", "hang", "hang", "pass"], rows
    # the first process hung while the kernel spun and the next point's build waited on
    # the fifo: either may be the cause; the spinning point runs again alone, then the
    # fifo's point, its build ahead, is the one its process waited on: each is named
    assert rows[1]["why"].startswith("hang: enqueue 23 did not finish within 8 s"), rows[1]
    assert rows[2]["why"].startswith("hang: the build of its programs (built ahead) did "
                                     "not finish within 8 s"), rows[2]
    assert rows[3]["label"] == "local 64"
    assert [(k.split("/", 1)[1], c["status"]) for k, c in confirmed.items()] == [
        (rows[3]["id"], "pass")], confirmed


@pytest.mark.child
@pytest.mark.device
@pytest.mark.usefixtures("_pocl")
def test_a_sweep_not_confirmed_ends_its_process_when_closed(
    pyocl_pocl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweep's process waits to confirm; closed without a confirmation (an interrupted
    sweep), it ends by itself (its stdin closed, no kill)."""
    from cltui.capture import open_capture
    from cltui.capture.ranges import parse_range
    from cltui.replay.devices import select_devices
    from cltui.replay.experiment.apply import apply_variant
    from cltui.replay.experiment.runs import SweepRun
    from cltui.replay.experiment.variant import SizeChange, Variant
    from cltui.replay.plan import build_plan

    workers = count_workers(monkeypatch)
    base = build_plan(open_capture(pyocl_pocl), parse_range("23")).to_manifest()
    pts = [Variant("23"), Variant("23", sizes=(SizeChange("*", local_size=(64,)),))]
    plans = {point_id(v): apply_variant(base, v, pyocl_pocl, tmp_path) for v in pts}
    run = SweepRun(SweepSpec("23"), pyocl_pocl, pts, plans, select_devices(["pocl"]), [], None,
                   repeat=3)  # fmt: skip
    assert [r["status"] for r in run.rows()] == ["pass", "pass"]
    assert len(workers) == 1 and workers[0].poll() is None  # waiting for its confirmation
    run.close()
    assert workers[0].wait(timeout=60) == 0


@pytest.mark.child
@pytest.mark.device
@pytest.mark.usefixtures("_pocl")
def test_opencv_filter_is_correct_only_at_its_own_local_size(opencv: Path) -> None:
    """OpenCV builds col_filter for its 16x16 work-group: other sizes break a check (shown as
    fail, not ranked), 64x64 does not divide the global size (refused), 16x16 is the
    capture's own configuration (not run twice)."""
    code, report, err = _sweep(str(opencv), "7-8", "--kernel", "col_filter",
                               "--local", "8x8,16x16,32x32,64x64")  # fmt: skip
    assert code == 1  # no correct variant
    assert "the capture's own configuration already: col_filter local 16x16" in err
    status = {r["label"]: r["status"] for r in report["rows"]}
    assert status == {"capture": "pass", "col_filter local 8x8": "fail",
                      "col_filter local 32x32": "fail", "col_filter local 64x64": "refused"}
    assert report["verdict"]["line"].startswith("NO CORRECT VARIANT: only the capture's own")
    assert [r["label"] for r in report["ranking"]] == ["capture"]
    assert report["best"] is None


def test_a_confirmation_whose_capture_run_crashed_says_how() -> None:
    """The capture's own configuration, run again beside the best points, crashed: each point
    says that it could not be confirmed, and why (the capture's line), not only that it 'did
    not pass again'."""
    from cltui.replay.experiment.runs import _confirmed
    from cltui.replay.outcome import failed

    dev: Any = {"id": "1:0", "name": "d", "platform": "p", "version": "v", "driver": "x"}
    base: Any = {"steps": [{"enqueue": 1, "kernel": "k", "args": [], "checks": [{"mem": "a"}],
                            "prechecks": [], "loads": []}],
                 "scope": {"kernels": [{"enqueue": 1, "kernel": "k", "replayed": True}]}}
    crashed = failed(dev, "crash", "enqueue 1 crashed the driver (SIGSEGV)", 1)
    events = {"A": {"type": "point", "id": "A", "result": crashed, "times": []},
              "p1": {"type": "point", "id": "p1", "result": crashed, "times": []}}
    out = _confirmed(base, dev, events, {"p1": base})
    assert out["1:0/p1"]["status"] == "error"
    assert out["1:0/p1"]["why"] == (
        "the capture's own configuration did not pass again: FAIL: crash: enqueue 1 crashed "
        "the driver (SIGSEGV); 0/1 kernel enqueues replayed, 0/1 outputs checked (1 unchecked)")
