"""The feasibility pre-flight on the real PoCL and Oclgrind devices: a feasible range says so;
ranges made infeasible in a copied capture (a local size over Oclgrind's maximum, a
reqd_work_group_size the launch contradicts, an allocation over Oclgrind's
CL_DEVICE_MAX_MEM_ALLOC_SIZE) or a copied bundle (-cl-std over the device's OpenCL C) say
what cannot run and why: ``cltui feasible``, ``cltui replay`` (the enqueue is not launched,
the replay does not crash) and the exported replay.py run from a copy of the bundle."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cltui.capture import open_capture
from cltui.capture.ranges import parse_range
from cltui.cli import main
from cltui.export import export_range
from tests.conftest import copy_capture
from tests.schemas import validate
from tests.test_export_device import cpp_replay, run_cpp, run_py

__all__ = ["cpp_replay"]

LOG = "clintercept_log.txt"
SVM_SCALE_6 = "global_work_size = < 1024 >, local_work_size = < 64 >; EnqueueCounter: 6"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


@pytest.fixture
def big_local(images_svm: Path, tmp_path: Path) -> Path:
    """images_svm_pocl with enqueue 6 (svm_scale) launched with a local size of 2048:
    over Oclgrind's 1024 (the svm buffer holds 1024 floats: global stays 1024 on PoCL ...
    a non-uniform launch, which neither device supports either)."""
    cap = copy_capture(images_svm, tmp_path)
    _edit(cap / LOG, SVM_SCALE_6, SVM_SCALE_6.replace("< 64 >", "< 2048 >").replace(
        "< 1024 >", "< 2048 >"))  # fmt: skip
    sizes = cap / "Replay" / "Enqueue_6_svm_scale" / "worksizes.txt"
    sizes.write_text(sizes.read_text().replace("1024", "2048", 1).replace("64", "2048", 1))
    return cap


def _feasible(*args: str) -> tuple[int, dict[str, Any]]:
    res = CliRunner().invoke(main, ["feasible", *args, "--json"])
    assert res.exit_code in (0, 3), res.output
    out = json.loads(res.stdout)
    validate(out, "cli.schema.json", "feasible")
    return res.exit_code, out


def _only(out: dict[str, Any], device: str) -> list[dict[str, Any]]:
    (dev,) = [d for d in out["devices"] if device in d["device"]["name"].lower()]
    found: list[dict[str, Any]] = dev["cannot_run"]
    return found


@pytest.mark.child
def test_a_feasible_range_says_so_on_both_devices(images_svm: Path) -> None:
    code, out = _feasible(str(images_svm), "0-", "--all-devices")
    assert code == 0 and out["status"] == "ok", out["line"]
    assert out["line"] == "CAN RUN: all 7 kernel enqueues on 2 devices"
    assert all(d["runnable"] == 7 and d["facts"]["max_work_group_size"] for d in out["devices"])
    text = CliRunner().invoke(main, ["feasible", str(images_svm), "0-", "-d", "pocl"])
    assert text.exit_code == 0 and "all 7 kernel enqueues can run" in text.stdout
    assert text.stdout.splitlines()[0].startswith("CAN RUN: all 7 kernel enqueues"), text.stdout


@pytest.mark.child
def test_a_damaged_range_is_not_a_can_run(tmp_path: Path) -> None:
    """pyopencl_lib_coldcache lost enqueues 0-100 to a NUL run: of 14-38 the recovered
    kernels can run, but 2 enqueues lost with the log were not checked: INCOMPLETE, exit 3."""
    from tests.conftest import CAPTURES

    cap = copy_capture(CAPTURES / "pyopencl_lib_coldcache", tmp_path)
    code, out = _feasible(str(cap), "14-38", "-d", "pocl")
    assert code == 3 and out["status"] == "incomplete", out["line"]
    assert out["line"].startswith("INCOMPLETE: the 23 kernel enqueues checked can run")
    assert out["line"].endswith("not checked: 2 enqueues lost with the log")


@pytest.mark.child
def test_a_local_size_over_the_device_maximum(big_local: Path) -> None:
    code, out = _feasible(str(big_local), "6-8", "-d", "oclgrind")
    assert code == 3 and out["status"] == "cannot-run"
    found = _only(out, "oclgrind")
    assert {f["enqueue"] for f in found} == {6}
    kinds = {f["kind"] for f in found}
    assert {"work-group-size", "work-item-size"} <= kinds
    assert any(f["reason"] == "local size 2048 (2048) > CL_DEVICE_MAX_WORK_GROUP_SIZE 1024 on "
               "Oclgrind Simulator" for f in found)  # fmt: skip
    assert out["devices"][0]["runnable"] == 2
    text = CliRunner().invoke(main, ["feasible", str(big_local), "6-8", "-d", "oclgrind"])
    assert text.exit_code == 3
    # the verdict leads, and ends the output again after the table
    assert text.stdout.startswith("CANNOT RUN: 1/3 cannot run on 0:0 Oclgrind Simulator")
    words = text.stdout.split()
    line = words[: words.index("==")]  # the (wrapped) verdict line, up to the first device
    assert words[-len(line) :] == line


@pytest.mark.cmake
def test_latency_leaves_out_what_cannot_run(big_local: Path) -> None:
    """``cltui latency`` on a range with a launch that cannot run: the launch is named, left
    out of both runners' loops (the C++ floor too), per-launch costs divide by the launches
    made, and the exit code says INCOMPLETE (3)."""
    res = CliRunner().invoke(main, ["latency", str(big_local), "6-8", "-d", "oclgrind",
                                    "--repeat", "3", "--delays", "0,1000", "--json"])  # fmt: skip
    rep = json.loads(res.stdout)
    validate(rep, "cli.schema.json", "latency")
    assert res.exit_code == 3, rep
    (dev,) = rep["devices"]
    assert dev["error"] is None and dev["notes"] == [], dev
    assert {f["enqueue"] for f in dev["cannot_run"]} == {6} and dev["launched"] == 2
    assert dev["engine"]["launches"] == 2 * 3
    if shutil.which("cmake") and shutil.which("c++"):
        assert dev["native"] is not None and dev["native"]["launches"] == 2 * 3
        assert all(r["ratio_to_floor"] and r["passes"] == 3 for r in dev["runners"])
    text = CliRunner().invoke(main, ["latency", str(big_local), "6-8", "-d", "oclgrind",
                                     "--repeat", "3", "--delays", "0", "--no-native"])  # fmt: skip
    assert text.exit_code == 3
    assert text.stdout.splitlines()[1].startswith(
        "INCOMPLETE on Oclgrind Simulator: 1 of 3 kernel launches cannot run there, not "
        "launched and not in its figures (enqueue 6 svm_scale: local size 2048"
    ), text.stdout


@pytest.mark.child
def test_replay_does_not_launch_what_cannot_run(big_local: Path) -> None:
    res = CliRunner().invoke(main, ["replay", str(big_local), "6-8", "-d", "oclgrind", "--json"])
    report = json.loads(res.stdout)
    validate(report)
    assert res.exit_code == 3, report["verdict"]["line"]
    (dev,) = report["devices"]
    # "mismatch": enqueue 7's check differs, as after an unreplayed host write; the
    # verdict is incomplete, not failed (the difference follows what did not run)
    assert dev["status"] == "mismatch" and {f["enqueue"] for f in dev["cannot_run"]} == {6}
    steps = {st["enqueue"]: st for st in dev["steps"]}
    assert steps[6]["status"] == "cannot-run" and steps[6]["timing"]["samples"] == 0
    assert all(c["status"] == "unchecked" and c["summary"].startswith("cannot run: local size")
               for c in steps[6]["checks"])  # fmt: skip
    # enqueue 7 reads the svm buffer enqueue 6 should have scaled: its check is marked
    (after,) = steps[7]["checks"]
    assert after["after_cannot_run"] == 6
    assert after["summary"].startswith("after enqueue 6, which cannot run here: ")
    assert all("after_cannot_run" not in c for c in steps[8]["checks"])
    counts = report["verdict"]["counts"]
    assert counts["cannot_run"] == 1 and counts["replayed"] == 2 and counts["kernels"] == 3
    assert counts["after_cannot_run"] == 1
    assert report["verdict"]["status"] == "incomplete"
    line = report["verdict"]["line"]
    assert line.startswith("INCOMPLETE: enqueue 6 (svm_scale) cannot run here: local size 2048")
    assert "2/3 kernel enqueues replayed (1 cannot run on this device)" in line
    assert dev["loop"]["launches"] == 2
    text = CliRunner().invoke(main, ["replay", str(big_local), "6-8", "-d", "oclgrind"])
    assert "enqueue 6 (svm_scale) cannot run: local size 2048" in " ".join(text.stdout.split())


@pytest.mark.child
def test_the_exported_runners_say_the_same(
    big_local: Path, tmp_path: Path, cpp_replay: Path
) -> None:
    first = tmp_path / "out" / "bundle"
    export_range(open_capture(big_local), parse_range("6-8"), first)
    bundle = tmp_path / "fresh" / "bundle"
    shutil.copytree(first, bundle)
    shutil.rmtree(first.parent)
    proc = run_py(bundle, "--validate", "--json", "--device", "oclgrind")
    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr[-2000:]
    results = json.loads(proc.stdout)
    validate(results)
    (res,) = results
    assert res["runner"] == "replay.py" and {f["enqueue"] for f in res["cannot_run"]} == {6}
    assert res["steps"][0]["status"] == "cannot-run"
    assert res["verdict"]["counts"]["cannot_run"] == 1
    text = run_py(bundle, "--device", "oclgrind")
    assert "enqueue 6 svm_scale: cannot run (work-item-size): local size 2048" in text.stdout
    assert "enqueue 6 svm_scale: CANNOT RUN (not launched)" in text.stdout
    # replay.cpp: the same findings, steps, verdict (counts and line)
    cpp = run_cpp(cpp_replay, bundle, "--validate", "--json", "--device", "oclgrind")
    assert cpp.returncode == 3, cpp.stdout[-2000:] + cpp.stderr[-2000:]
    (cres,) = json.loads(cpp.stdout)
    validate([cres])
    assert cres["cannot_run"] == res["cannot_run"]
    assert [s["status"] for s in cres["steps"]] == [s["status"] for s in res["steps"]]
    assert cres["verdict"] == res["verdict"]
    cchecks = [c for s in cres["steps"] for c in s["checks"]]
    pchecks = [c for s in res["steps"] for c in s["checks"]]
    assert [c.get("after_cannot_run") for c in cchecks] == [
        c.get("after_cannot_run") for c in pchecks]
    assert cchecks[0]["summary"] == pchecks[0]["summary"]
    assert cres["loop"]["launches"] == res["loop"]["launches"] == 2
    # the bundle on its own: cltui feasible BUNDLE
    code, out = _feasible(str(bundle), "-d", "oclgrind")
    assert code == 3 and out["source"]["kind"] == "bundle"
    assert {f["enqueue"] for f in _only(out, "oclgrind")} == {6}


@pytest.mark.child
def test_an_opencl_c_version_the_device_lacks(images_svm: Path, tmp_path: Path) -> None:
    """A copied bundle's manifest edited to build with -cl-std=CL3.0 (Oclgrind: C 1.2)."""
    bundle = tmp_path / "bundle"
    export_range(open_capture(images_svm), parse_range("6-7"), bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    for prog in manifest["programs"].values():
        prog["options"] = (prog.get("options") or "") + " -cl-std=CL3.0"
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    code, out = _feasible(str(bundle), "-d", "oclgrind")
    assert code == 3
    found = _only(out, "oclgrind")
    assert [f["kind"] for f in found] == ["opencl-c-version"] * 2
    assert "-cl-std=CL3.0; Oclgrind Simulator supports OpenCL C 1.0, 1.1, 1.2" in found[0]["reason"]


@pytest.mark.child
def test_reqd_work_group_size_from_the_built_kernel(
    images_svm: Path, tmp_path: Path, cpp_replay: Path
) -> None:
    """svm_scale declared with reqd_work_group_size(32,1,1), launched with 64: what only the
    built kernel says (CL_KERNEL_COMPILE_WORK_GROUP_SIZE), on PoCL; both runners."""
    cap = copy_capture(images_svm, tmp_path)
    decl = "__kernel void svm_scale("
    for src in [*cap.glob("CLI_*_source.cl"), *cap.glob("Replay/*/kernel.cl")]:
        if decl in src.read_text():
            _edit(src, decl, "__kernel __attribute__((reqd_work_group_size(32, 1, 1))) "
                  "void svm_scale(")  # fmt: skip
    code, out = _feasible(str(cap), "6-7", "-d", "pocl")
    assert code == 3
    found = _only(out, "pthread")
    assert [(f["enqueue"], f["kind"]) for f in found] == [
        (6, "reqd-work-group-size"), (7, "reqd-work-group-size")]
    assert found[0]["reason"] == "local size 64x1x1 contradicts reqd_work_group_size(32x1x1)"
    bundle = tmp_path / "bundle"
    export_range(open_capture(cap), parse_range("6-7"), bundle)
    for proc in (run_py(bundle, "--json", "--device", "pocl"),
                 run_cpp(cpp_replay, bundle, "--json", "--device", "pocl")):  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
        (res,) = json.loads(proc.stdout)
        assert res["cannot_run"] == found and res["loop"]["launches"] == 0
        assert res["verdict"]["counts"]["cannot_run"] == 2


@pytest.mark.child
def test_an_allocation_over_the_device_maximum(images_svm: Path, tmp_path: Path) -> None:
    """gather_rgba's 256-byte output buffer made 200 MB in the log: over Oclgrind's
    CL_DEVICE_MAX_MEM_ALLOC_SIZE (128 MiB), within PoCL's."""
    cap = copy_capture(images_svm, tmp_path)
    _edit(cap / LOG, "flags = CL_MEM_WRITE_ONLY (2), size = 256, host_ptr = (nil); "
          "EnqueueCounter: 8", "flags = CL_MEM_WRITE_ONLY (2), size = 200000000, "
          "host_ptr = (nil); EnqueueCounter: 8")  # fmt: skip
    code, out = _feasible(str(cap), "8", "-d", "oclgrind", "-d", "pocl")
    assert code == 3
    (found,) = _only(out, "oclgrind")
    assert found["kind"] == "max-alloc"
    assert "200,000,000 bytes > CL_DEVICE_MAX_MEM_ALLOC_SIZE 134,217,728" in found["reason"]
    assert _only(out, "pthread") == []
    res = CliRunner().invoke(main, ["replay", str(cap), "8", "-d", "oclgrind", "--json"])
    report = json.loads(res.stdout)
    assert res.exit_code == 3 and report["devices"][0]["status"] == "ok"
    assert report["devices"][0]["steps"][0]["status"] == "cannot-run"


@pytest.mark.child
def test_half_arithmetic_without_cl_khr_fp16(
    images_svm: Path, tmp_path: Path, cpp_replay: Path
) -> None:
    """svm_scale made to compute in half: neither PoCL nor Oclgrind has cl_khr_fp16, the
    program does not build on either; the pre-flight says why (the source uses half) instead
    of a build error, every enqueue of that program cannot run, nothing crashes."""
    cap = copy_capture(images_svm, tmp_path)
    old = "    tmp[l] = data[i] * k;"
    for src in [*cap.glob("CLI_*_source.cl"), *cap.glob("Replay/*/kernel.cl")]:
        if old in src.read_text():
            _edit(src, old, "    half hk = (half)k;\n    tmp[l] = data[i] * (float)(hk * hk);")
    code, out = _feasible(str(cap), "6-8", "--all-devices")
    assert code == 3 and out["status"] == "cannot-run"
    for dev in out["devices"]:
        assert dev["runnable"] == 0
        kinds = {(f["enqueue"], f["kind"]) for f in dev["cannot_run"]}
        assert kinds == {(6, "fp16"), (7, "fp16"), (8, "fp16")}
        reason = dev["cannot_run"][0]["reason"]
        assert reason.startswith(f"the source uses half, {dev['device']['name']} lacks "
                                 "cl_khr_fp16 (build: ")  # fmt: skip
        assert "half" in reason.split("(build: ", 1)[1]
    res = CliRunner().invoke(main, ["replay", str(cap), "6-8", "-d", "pocl", "--json"])
    report = json.loads(res.stdout)
    assert res.exit_code == 3 and report["devices"][0]["error"] is None
    assert [s["status"] for s in report["devices"][0]["steps"]] == ["cannot-run"] * 3
    bundle = tmp_path / "bundle"
    export_range(open_capture(cap), parse_range("6-8"), bundle)
    for proc in (run_py(bundle, "--json", "--validate", "--device", "pocl"),
                 run_cpp(cpp_replay, bundle, "--json", "--validate", "--device", "pocl")):
        assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr[-2000:]
        (dres,) = json.loads(proc.stdout)
        assert [f["kind"] for f in dres["cannot_run"]] == ["fp16"] * 3
        assert dres["verdict"]["counts"]["cannot_run"] == 3


def _small_kernel_group(monkeypatch: pytest.MonkeyPatch, kernel: str, size: int) -> None:
    """The built kernel ``kernel`` reports CL_KERNEL_WORK_GROUP_SIZE ``size``, as NVIDIA's
    OpenCL reports 256 for every kernel (no local device reports less than its maximum)."""
    from cltui.replay.engine import facts, preflight

    def small(kern: Any, dev: Any) -> Any:
        got = facts.kernel_facts(kern, dev)
        return {**got, "work_group_size": size} if kern.function_name == kernel else got

    monkeypatch.setattr(preflight, "kernel_facts", small)


def _svm_plan(images_svm: Path) -> tuple[Any, Any]:
    from cltui.replay.engine import dir_loader
    from cltui.replay.plan import build_plan

    cap = open_capture(images_svm)
    m = build_plan(cap, parse_range("6-8"), "chain").to_manifest()
    return m, dir_loader(m, cap.path)


def test_a_local_size_over_the_kernels_work_group_size_is_launched(
    images_svm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over CL_KERNEL_WORK_GROUP_SIZE the launch decides: the pre-flight does not refuse the
    step; the driver (PoCL) accepts it, the step is checked, a note says so; ``cltui
    feasible``'s check lists it under ``at_launch``, not as cannot run."""
    from cltui.replay.devices import select_devices
    from cltui.replay.engine import check_feasible, run_plan

    _small_kernel_group(monkeypatch, "svm_scale", 16)
    m, loader = _svm_plan(images_svm)
    (pocl,) = select_devices(["pocl"])
    res = run_plan(m, pocl, loader)
    assert res["error"] is None and res["cannot_run"] == [] and res["ok"], res
    assert [n for n in res["notes"] if "driver accepted" in n] == [
        f"enqueues 6 (svm_scale), 7 (svm_scale): local size 64 (64) > kernel work-group size 16 on "
        f"{pocl['name']} (CL_KERNEL_WORK_GROUP_SIZE); the driver accepted the launch"
    ]
    feas = check_feasible(m, pocl, loader)
    assert feas["status"] == "ok" and feas["cannot_run"] == []
    assert [(f["enqueue"], f["kind"]) for f in feas["at_launch"]] == [
        (6, "kernel-work-group-size"), (7, "kernel-work-group-size")
    ]


def test_a_refused_launch_the_preflight_left_to_the_driver_cannot_run(
    images_svm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver refuses such a launch (CL_INVALID_WORK_GROUP_SIZE, as drivers that
    enforce the query do; simulated at the pyopencl call, the device is PoCL): the step is
    cannot-run with the pre-flight's reason and the driver's answer, the check after it that
    reads its output is marked, and the replay goes on."""
    import pyopencl as cl

    from cltui.replay.devices import select_devices
    from cltui.replay.engine import run_plan

    _small_kernel_group(monkeypatch, "svm_scale", 16)
    real = cl.enqueue_nd_range_kernel

    refused: list[int] = []

    def refusing(queue: Any, kernel: Any, *args: Any, **kw: Any) -> Any:
        if kernel.function_name == "svm_scale" and not refused:  # enqueue 6's launch only
            refused.append(1)
            raise cl.LogicError(cl._cl._ErrorRecord(  # type: ignore[attr-defined]
                "clEnqueueNDRangeKernel failed: INVALID_WORK_GROUP_SIZE",
                cl.status_code.INVALID_WORK_GROUP_SIZE, "clEnqueueNDRangeKernel"))
        return real(queue, kernel, *args, **kw)

    monkeypatch.setattr(cl, "enqueue_nd_range_kernel", refusing)
    m, loader = _svm_plan(images_svm)
    (pocl,) = select_devices(["pocl"])
    res = run_plan(m, pocl, loader, repeat=3)
    assert res["error"] is None, res["error"]
    ((f),) = res["cannot_run"]
    assert f["enqueue"] == 6 and f["kind"] == "kernel-work-group-size"
    assert f["reason"].endswith("; the driver refused the launch (CL_INVALID_WORK_GROUP_SIZE)")
    steps = {st["enqueue"]: st for st in res["steps"]}
    assert steps[6]["status"] == "cannot-run" and steps[6]["timing"]["samples"] == 0
    assert steps[8]["status"] in ("pass", "fail") and steps[8]["timing"]["samples"] == 3
    assert any(n.startswith("enqueue 7 (svm_scale): local size 64") for n in res["notes"])
    (after,) = steps[7]["checks"]
    assert after.get("after_cannot_run") == 6, after
