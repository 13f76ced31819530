"""The child-process runner: crashes and hangs are reported with their enqueue, the parent lives.

The plans here are built by hand (no capture needed) over tests/fixtures/replay/faults.cl.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cltui.replay import runner
from cltui.replay.engine import PLAN_FORMAT, PLAN_VERSION

pytestmark = pytest.mark.device

FIXTURES = Path(__file__).parent / "fixtures" / "replay"


def _devices(name: str) -> list[dict[str, Any]]:
    pytest.importorskip("pyopencl")
    from cltui.replay.devices import DeviceError, select_devices

    try:
        return select_devices([name])
    except DeviceError:
        pytest.skip(f"no {name} device")


def _plan(tmp: Path, steps: list[dict[str, Any]], memory: dict[str, Any]) -> dict[str, Any]:
    shutil.copy(FIXTURES / "faults.cl", tmp / "faults.cl")
    data = {"faults.cl": {"path": "faults.cl", "size": (tmp / "faults.cl").stat().st_size}}
    for st in steps:
        for c in st.get("checks", []):
            if c.get("data"):
                data[c["data"]] = {"path": c["data"], "size": 0}
    return {
        "format": PLAN_FORMAT,
        "version": PLAN_VERSION,
        "source": {"capture": str(tmp), "range": "synthetic", "mode": "chain"},
        "tolerance": {"atol": 0, "rtol": 0, "ulp": 0},
        "data": data,
        "programs": {
            "p0": {"label": "faults.cl", "source": "faults.cl", "options": "", "binaries": []}
        },
        "memory": memory,
        "steps": steps,
        "changes": [],
        "notes": [],
    }


def _step(n: int, kernel: str, args: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    return {
        "enqueue": n,
        "kernel": kernel,
        "program": "p0",
        "global": [64],
        "local": None,
        "offset": None,
        "args": args,
        "loads": [],
        "prechecks": [],
        "checks": [],
        **kw,
    }


def _fill(n: int, value: int, expect: str | None = None) -> dict[str, Any]:
    checks = []
    if expect:
        checks.append(
            {
                "mem": "m0",
                "args": [0],
                "label": "arg 0 (buffer m0)",
                "data": expect,
                "dtype": "<i4",
                "shape": None,
            }
        )
    return _step(
        n,
        "fill",
        [
            {"index": 0, "kind": "buffer", "mem": "m0"},
            {"index": 1, "kind": "scalar", "hex": np.int32(value).tobytes().hex()},
        ],
        checks=checks,
    )


@pytest.mark.child
def test_fill_passes_and_progress_streams(tmp_path: Path) -> None:
    dev = _devices("pocl")
    (tmp_path / "seven.bin").write_bytes(np.full(64, 7, np.int32).tobytes())
    plan = _plan(tmp_path, [_fill(5, 7, "seven.bin")], {"m0": {"kind": "buffer", "size": 256}})
    job = runner.start(plan, dev, save_dir=tmp_path / "out")
    events = list(job.events())
    kinds = [e["type"] for e in events]
    assert kinds[0] == "device" and kinds[-1] == "done"
    assert {"type": "step", "i": 0, "n": 1, "enqueue": 5, "device": dev[0]["id"]} in events
    report = job.report
    assert report is not None and report["ok"]
    res = report["devices"][0]
    assert res["status"] == "ok"
    check = res["steps"][0]["checks"][0]
    assert check["status"] == "equal"
    assert np.array_equal(np.fromfile(check["output"], np.int32), np.full(64, 7, np.int32))


@pytest.mark.child
def test_mismatch_is_reported_with_typed_first_difference(tmp_path: Path) -> None:
    dev = _devices("pocl")
    want = np.full(64, 7, np.int32)
    want[9] = 8
    (tmp_path / "want.bin").write_bytes(want.tobytes())
    plan = _plan(tmp_path, [_fill(3, 7, "want.bin")], {"m0": {"kind": "buffer", "size": 256}})
    report = runner.run(plan, dev, save_dir=tmp_path / "out")
    assert not report["ok"]
    check = report["devices"][0]["steps"][0]["checks"][0]
    assert check["status"] == "different"
    first = check["result"]["first"]
    assert (first["index"], first["expected"], first["actual"]) == (9, 8, 7)
    assert check["result"]["n_diff"] == 1


@pytest.mark.child
def test_wild_pointer_crash_names_the_enqueue(tmp_path: Path) -> None:
    dev = _devices("pocl")
    plan = _plan(
        tmp_path,
        [_fill(40, 1), _step(41, "wild", [{"index": 0, "kind": "buffer", "mem": "m0"}])],
        {"m0": {"kind": "buffer", "size": 256}},
    )
    report = runner.run(plan, dev, save_dir=tmp_path / "out", timeout=60)
    res = report["devices"][0]
    assert res["status"] == "crash", res
    assert res["failed_enqueue"] == 41
    assert "enqueue 41 crashed the driver" in res["error"]
    assert not report["ok"]
    # the parent keeps working: a good plan replays right after
    (tmp_path / "seven.bin").write_bytes(np.full(64, 7, np.int32).tobytes())
    good = _plan(tmp_path, [_fill(5, 7, "seven.bin")], {"m0": {"kind": "buffer", "size": 256}})
    assert runner.run(good, dev, save_dir=tmp_path / "out2")["ok"]


def spin_plan(tmp: Path) -> dict[str, Any]:
    """Enqueue 7 fills a flag with 0; enqueue 8 (``spin``) waits for it forever."""
    return _plan(
        tmp,
        [
            _fill(7, 0),
            _step(
                8,
                "spin",
                [
                    {"index": 0, "kind": "buffer", "mem": "m0"},
                    {"index": 1, "kind": "buffer", "mem": "m1"},
                ],
            ),
        ],
        {"m0": {"kind": "buffer", "size": 256}, "m1": {"kind": "buffer", "size": 256}},
    )


@pytest.mark.child
def test_endless_kernel_times_out_and_is_named(tmp_path: Path) -> None:
    dev = _devices("pocl")
    report = runner.run(spin_plan(tmp_path), dev, save_dir=tmp_path / "out", timeout=4)
    res = report["devices"][0]
    assert res["status"] == "hang", res
    assert res["failed_enqueue"] == 8
    assert "enqueue 8 did not finish within 4 s" in res["error"]


@pytest.mark.child
def test_cancel_stops_the_child(tmp_path: Path) -> None:
    dev = _devices("pocl")
    plan = _plan(
        tmp_path,
        [
            _step(
                8,
                "spin",
                [
                    {"index": 0, "kind": "buffer", "mem": "m0"},
                    {"index": 1, "kind": "buffer", "mem": "m1"},
                ],
            )
        ],
        {"m0": {"kind": "buffer", "size": 256}, "m1": {"kind": "buffer", "size": 256}},
    )
    job = runner.start(plan, dev, save_dir=tmp_path / "out", timeout=60)
    for ev in job.events():
        if ev["type"] == "step":
            job.cancel()
    assert job.report is not None
    res = job.report["devices"][0]
    assert res["status"] == "cancelled" and res["failed_enqueue"] == 8


@pytest.mark.child
def test_build_failure_is_a_one_line_error(tmp_path: Path) -> None:
    dev = _devices("pocl")
    plan = _plan(tmp_path, [_fill(1, 1)], {"m0": {"kind": "buffer", "size": 256}})
    (tmp_path / "faults.cl").write_text("__kernel void fill(__global int* o, int v) { oops }")
    plan["data"]["faults.cl"]["path"] = "faults.cl"
    report = runner.run(plan, dev, data_root=tmp_path, save_dir=tmp_path / "out")
    res = report["devices"][0]
    assert res["status"] == "error"
    assert res["error"].startswith("faults.cl: build failed on")


@pytest.mark.child
@pytest.mark.parametrize(
    ("source", "said"),
    [  # PoCL here has no cl_khr_fp16: a half source that fails for another reason
        ("__kernel void fill(__global int* o, int v)\n{\n#ifdef cl_khr_fp16\n  half h = 1;\n"
         "#endif\n  o[0] = v\n}", "faults.cl:6:"),
        ("#ifdef cl_khr_fp16\n#define H half\n#endif\n"
         "__kernel void fill(__global int* o, int v) { o[0] = v; }", "-cl-bogus-option"),
    ],
)  # fmt: skip
def test_a_build_failure_says_its_cause_at_the_source_line(
    tmp_path: Path, source: str, said: str
) -> None:
    """A syntax error or a bad option in a program whose source uses half, on a device
    without cl_khr_fp16: 'build failed' with the build log's first error, its position in
    the program's own source file (not the driver's temp file), never the fp16 claim."""
    dev = _devices("pocl")
    plan = _plan(tmp_path, [_fill(1, 1)], {"m0": {"kind": "buffer", "size": 256}})
    (tmp_path / "faults.cl").write_text(source)
    plan["data"]["faults.cl"]["path"] = "faults.cl"
    if "bogus" in said:
        plan["programs"]["p0"]["options"] = "-cl-bogus-option"
    report = runner.run(plan, dev, data_root=tmp_path, save_dir=tmp_path / "out")
    res = report["devices"][0]
    assert res["status"] == "error", res
    assert res["error"].startswith("faults.cl: build failed on"), res["error"]
    assert said in res["error"] and "fp16" not in res["error"], res["error"]
    assert "tempfile" not in res["error"] and "kcache" not in res["error"], res["error"]


@pytest.mark.child
def test_hash_only_dumps_are_compared_by_hash(images_svm: Path, tmp_path: Path) -> None:
    """A capture made with DumpBufferHashes: Post dumps hold the layer's 64-bit hash."""
    from cltui.capture import open_capture
    from cltui.capture.ranges import parse_range
    from cltui.replay.plan import build_plan
    from tests.conftest import hash_only_capture

    dev = _devices("pocl")
    cap_dir = hash_only_capture(images_svm, tmp_path)
    # with the Replay folder there, its raw Post dump is preferred over the hash
    plan = build_plan(open_capture(cap_dir), parse_range("2-3"))
    checks = {(s["enqueue"], c["label"]): c for s in plan.steps for c in s["checks"]}
    assert checks[(3, "arg 1 (buffer 0005)")]["data"].startswith("Replay/Enqueue_3_")
    for folder in ("Enqueue_2_sample_linear", "Enqueue_3_volume_sum"):
        shutil.rmtree(cap_dir / "Replay" / folder)
    plan = build_plan(open_capture(cap_dir), parse_range("2-3"))
    checks = {(s["enqueue"], c["label"]): c for s in plan.steps for c in s["checks"]}
    assert "hash64" in checks[(3, "arg 1 (buffer 0005)")]
    report = runner.run(plan.to_manifest(), dev, save_dir=tmp_path / "out")
    res = {
        (s["enqueue"], c["label"]): c for s in report["devices"][0]["steps"] for c in s["checks"]
    }
    assert res[(2, "arg 2 (buffer 0003)")]["status"] == "equal"
    assert res[(2, "arg 2 (buffer 0003)")]["summary"] == "hash matches"
    assert res[(3, "arg 1 (buffer 0005)")]["status"] == "different"
    assert res[(3, "arg 1 (buffer 0005)")]["summary"].startswith("hash ")
    assert not report["ok"]
    # the results screen shows the hash verdict where a value check shows its first difference
    from cltui.tui.result_rows import COLUMNS, result_rows
    from cltui.tui.screens.replay_progress import ReplayOutcome
    from cltui.tui.screens.replay_request import ReplayRequest

    outcome = ReplayOutcome(report, plan.manifest, ReplayRequest(dev), "2-3", tmp_path)
    first = COLUMNS.index("first difference")
    shown = {(r.enqueue, r.label): str(r.cells()[first]) for r in result_rows(outcome)}
    assert shown[(2, "arg 2 (buffer 0003)")] == "hash matches"
    assert shown[(3, "arg 1 (buffer 0005)")] == res[(3, "arg 1 (buffer 0005)")]["summary"]


@pytest.mark.parametrize("name", ["pocl", "oclgrind"])
def test_the_device_hash_kernel_is_the_layer_s_hash(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hash-only checks hash the replayed bytes with a one-work-item kernel on the device;
    it must give cli_hash64's value (the layer's hash) for every length, tails included."""
    import cltui.replay.engine as engine_mod
    from cltui.capture.hashing import cli_hash64

    dev = _devices(name)[0]
    plan = {"format": PLAN_FORMAT, "version": 1, "programs": {}, "memory": {}, "steps": []}
    eng = engine_mod.Engine(plan, dev, lambda _key: np.zeros(0, np.uint8))
    eng.prepare()
    hashing = eng.launcher.checker.hashing
    gen = np.random.default_rng(7)
    sizes = [0, 1, 2, 3, 4, 5, 7, 8, 4099] + ([(1 << 20) + 3] if name == "pocl" else [])
    for n in sizes:
        data = gen.integers(0, 256, n, dtype=np.uint8)
        assert hashing.device_hash64(data) == cli_hash64(data), n
    # the kernel walks the data in launches of HASH64_CHUNK_WORDS words: cross boundaries
    import cltui.replay.engine.hashing as hashing_mod

    monkeypatch.setattr(hashing_mod, "HASH64_CHUNK_WORDS", 3)
    data = gen.integers(0, 256, 4 * 10 + 2, dtype=np.uint8)
    events: list[dict[str, Any]] = []
    hashing.progress = events.append
    assert hashing.device_hash64(data, 7) == cli_hash64(data)
    # a progress event after each launch (the runner's no-progress timeout sees them)
    assert [(e["type"], e["enqueue"], e["done"], e["of"]) for e in events] == [
        ("hash", 7, 12, 44), ("hash", 7, 24, 44), ("hash", 7, 36, 44), ("hash", 7, 44, 44)
    ]
    # a simulator uses the host hasher when one is given (Oclgrind runs the chain slowly)
    zeros = np.zeros(8, np.uint8)
    hashing.hasher = lambda _b: 42
    want = (42, "host") if name == "oclgrind" else (cli_hash64(zeros), "device")
    assert hashing.hash64(zeros) == want


@pytest.mark.parametrize("name", ["pocl", "oclgrind"])
def test_1d_images_and_arrays(tmp_path: Path, name: str) -> None:
    from cltui.replay.engine import dir_loader, run_plan

    dev = _devices(name)[0]
    shutil.copy(FIXTURES / "images1d.cl", tmp_path / "images1d.cl")
    texels = np.arange(16 * 3 * 4, dtype=np.uint8)
    (tmp_path / "img.bin").write_bytes(texels.tobytes())
    want1 = texels[: 16 * 4].astype(np.uint32)
    want2 = texels.astype(np.uint32)
    (tmp_path / "want1.bin").write_bytes(want1.tobytes())
    (tmp_path / "want2.bin").write_bytes(want2.tobytes())
    fmt = {"order": "CL_RGBA", "type": "CL_UNSIGNED_INT8", "element_size": 4}
    plan = {
        "format": PLAN_FORMAT,
        "version": PLAN_VERSION,
        "source": {"capture": str(tmp_path), "range": "synthetic", "mode": "isolated"},
        "tolerance": {},
        "data": {
            k: {"path": k, "size": 0} for k in ("images1d.cl", "img.bin", "want1.bin", "want2.bin")
        },
        "programs": {
            "p": {"label": "images1d.cl", "source": "images1d.cl", "options": "", "binaries": []}
        },
        "memory": {
            "i1": {
                "kind": "image",
                "size": 64,
                "image": {**fmt, "image_type": "CL_MEM_OBJECT_IMAGE1D", "shape": [16, 1, 1]},
            },
            "i2": {
                "kind": "image",
                "size": 192,
                "image": {**fmt, "image_type": "CL_MEM_OBJECT_IMAGE1D_ARRAY", "shape": [16, 3, 1]},
            },
            "o1": {"kind": "buffer", "size": 256},
            "o2": {"kind": "buffer", "size": 768},
        },
        "steps": [
            {
                "enqueue": 0,
                "kernel": "row1d",
                "program": "p",
                "global": [16],
                "local": None,
                "offset": None,
                "args": [
                    {"index": 0, "kind": "image", "mem": "i1"},
                    {"index": 1, "kind": "buffer", "mem": "o1"},
                ],
                "loads": [{"mem": "i1", "data": "img.bin", "why": "input"}],
                "prechecks": [],
                "checks": [
                    {
                        "mem": "o1",
                        "args": [1],
                        "label": "out",
                        "data": "want1.bin",
                        "dtype": "(4,)<u4",
                    }
                ],
            },
            {
                "enqueue": 1,
                "kernel": "rows1d",
                "program": "p",
                "global": [16, 3],
                "local": None,
                "offset": None,
                "args": [
                    {"index": 0, "kind": "image", "mem": "i2"},
                    {"index": 1, "kind": "buffer", "mem": "o2"},
                ],
                "loads": [{"mem": "i2", "data": "img.bin", "why": "input"}],
                "prechecks": [],
                "checks": [
                    {
                        "mem": "o2",
                        "args": [1],
                        "label": "out",
                        "data": "want2.bin",
                        "dtype": "(4,)<u4",
                    },
                    {
                        "mem": "i2",
                        "args": [0],
                        "label": "img",
                        "data": "img.bin",
                        "dtype": "(4,)|u1",
                        "shape": [16, 3, 1],
                    },
                ],
            },
        ],
    }
    res = run_plan(plan, dev, dir_loader(plan, tmp_path), repeat=2)
    assert res["error"] is None, res["error"]
    statuses = [c["status"] for s in res["steps"] for c in s["checks"]]
    assert statuses == ["equal", "equal", "equal"]
