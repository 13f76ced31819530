"""``cltui devices`` and ``cltui replay`` end to end on the real devices (child processes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cltui.cli import main
from tests.conftest import LIKE_HERE

pytestmark = pytest.mark.device


@pytest.fixture(scope="module", autouse=True)
def _needs_opencl() -> None:
    pytest.importorskip("pyopencl")


def test_devices_json() -> None:
    res = CliRunner().invoke(main, ["devices", "--json"])
    assert res.exit_code == 0, res.output
    devices = json.loads(res.output)
    names = " ".join(d["name"] + " " + d["platform"] for d in devices).lower()
    if "oclgrind" not in names or "pthread" not in names:
        pytest.skip("PoCL and Oclgrind are not both installed")
    by_name = {d["platform"]: d for d in devices}
    assert by_name["Oclgrind"]["svm"] is False  # OpenCL 1.2
    assert by_name["Portable Computing Language"]["svm"] is True
    assert all(":" in d["id"] for d in devices)
    human = CliRunner().invoke(main, ["devices"])
    assert human.exit_code == 0 and "Oclgrind Simulator" in human.output


@pytest.mark.child
def test_unknown_device_exits_2(images_svm: Path) -> None:
    res = CliRunner().invoke(main, ["replay", str(images_svm), "0", "-d", "no-such-gpu"])
    assert res.exit_code == 2
    assert "no device matches 'no-such-gpu'" in res.output


@pytest.mark.child
def test_replay_json_two_devices(images_svm: Path) -> None:
    res = CliRunner().invoke(
        main, ["replay", str(images_svm), "0-3", "-d", "pocl", "-d", "oclgrind", "--json"]
    )
    report = json.loads(res.stdout)
    ids = [d["device"]["id"] for d in report["devices"]]
    assert len(ids) == 2
    statuses = {d["device"]["platform"]: d["status"] for d in report["devices"]}
    assert statuses["Portable Computing Language"] == "ok"
    # sample_linear (LINEAR filtering) differs on Oclgrind by a few ULP; the rest is exact
    grind = next(d for d in report["devices"] if d["device"]["platform"] == "Oclgrind")
    bad = [
        (s["enqueue"], c["label"])
        for s in grind["steps"]
        for c in s["checks"]
        if c["status"] != "equal"
    ]
    assert bad == [(2, "arg 2 (buffer 0003)")]
    assert res.exit_code == 1
    cross = [c for c in report["cross"] if c["status"] != "equal"]
    assert [(c["enqueue"], c["label"]) for c in cross] == [(2, "arg 2 (buffer 0003)")]
    assert cross[0]["result"]["max_ulp"] >= 1


@pytest.mark.child
def test_replay_human_output_and_ulp_tolerance(pyocl_pocl: Path) -> None:
    r = CliRunner()
    res = r.invoke(main, ["replay", str(pyocl_pocl), "22", "-d", "oclgrind"])
    assert res.exit_code == 1
    assert "1331/8192 differ, max 1 ULP" in " ".join(res.output.split())
    res = r.invoke(main, ["replay", str(pyocl_pocl), "22", "-d", "oclgrind", "--ulp", "1"])
    assert res.exit_code == 0, res.output
    res = r.invoke(
        main, ["replay", str(pyocl_pocl), "22", "-d", "oclgrind", "--arg-tol", "0:ulp=1"]
    )
    assert res.exit_code == 0, res.output


@pytest.mark.child
def test_heat2d_window_cli(heat2d: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(
        main,
        [
            "replay",
            str(heat2d),
            "122396-122411",
            "-d",
            "pocl",
            "--repeat",
            "3",
            "--json",
            "--outputs",
            str(tmp_path / "out"),
        ],
    )
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert [c["enqueue"] for c in report["plan"]["changes"]] == [122408]
    dev = report["devices"][0]
    assert len(dev["steps"]) == 13
    assert all(s["timing"]["samples"] == 3 for s in dev["steps"])
    out = dev["steps"][0]["checks"][0]["output"]
    assert out and Path(out).is_file()


@pytest.mark.child
def test_device_by_index_and_progress_api(images_svm: Path) -> None:
    from cltui.capture import open_capture
    from cltui.capture.ranges import parse_range
    from cltui.replay import runner
    from cltui.replay.devices import list_devices, select_devices
    from cltui.replay.plan import build_plan

    pocl = next((d for d in list_devices() if "pthread" in d["name"]), None)
    if pocl is None:
        pytest.skip("no PoCL device")
    assert select_devices([pocl["id"]]) == [pocl]
    assert select_devices(["POCL"]) == [pocl]  # case-insensitive substring
    cap = open_capture(images_svm)
    plan = build_plan(cap, parse_range("0-3"))
    seen: list[dict[str, object]] = []
    job = runner.start(plan.to_manifest(), [pocl], callback=seen.append)
    report = job.wait()
    job.cleanup()
    assert report["ok"]
    steps = [e["enqueue"] for e in seen if e["type"] == "step"]
    assert steps == [0, 1, 2, 3]
    assert seen[-1]["type"] == "done"


@pytest.mark.child
def test_result_rows_for_the_tui(images_svm: Path, tmp_path: Path) -> None:
    """The results screen's rows of a real two-device report: one per checked argument and
    device, then the device-against-device comparisons; timing on each step's first row."""
    from cltui.capture import open_capture
    from cltui.capture.ranges import parse_range
    from cltui.replay import runner
    from cltui.replay.devices import select_devices
    from cltui.replay.plan import build_plan
    from cltui.tui.result_rows import result_rows
    from cltui.tui.screens.replay_progress import ReplayOutcome
    from cltui.tui.screens.replay_request import ReplayRequest

    plan = build_plan(open_capture(images_svm), parse_range("0-3"))
    devs = select_devices(["pocl", "oclgrind"])
    report = runner.run(plan.to_manifest(), devs, save_dir=tmp_path)
    outcome = ReplayOutcome(report, plan.manifest, ReplayRequest(devs), "0-3", tmp_path)
    rows = result_rows(outcome)
    per_dev = sum(len(s["checks"]) for s in plan.steps)
    device_rows = [r for r in rows if r.cross is None]
    assert len(device_rows) == per_dev * len(devs) == 8 * 2
    bad = [r for r in device_rows if r.status != "equal"]
    assert [(r.enqueue, r.label, r.device) for r in bad] == [
        (2, "arg 2 (buffer 0003)", devs[1]["id"])
    ]
    assert bad[0].result["max_ulp"] >= 1
    cross = [r for r in rows if r.cross is not None]
    assert cross and rows[-len(cross) :] == cross  # the comparisons come last
    # one comparison per checked argument; the two devices differ where Oclgrind does
    assert len(cross) == per_dev
    assert {r.device for r in cross} == {f"{devs[1]['id']} vs {devs[0]['id']}"}
    assert [(r.enqueue, r.label, r.status) for r in cross if r.status != "equal"] == [
        (2, "arg 2 (buffer 0003)", "different")
    ]
    for r in device_rows:
        assert r.check is not None and Path(r.check["output"]).is_file()
        assert r.check["data"] in plan.manifest["data"]
    firsts = [r for r in device_rows if r.timing is not None]
    assert len(firsts) == len(plan.steps) * len(devs)
    assert all(r.timing["start_to_end"]["median"] > 0 for r in firsts)  # type: ignore[index]


@pytest.mark.child
@pytest.mark.parametrize(
    ("renamed", "rule", "said"),
    [
        (None, "captured", "{id} {name} is the device the capture ran on"),
        (
            LIKE_HERE,
            "most-alike",
            "the capture ran on {like}, which is not here; "
            "{id} {name} shares the most leading words with it ({words} words)",
        ),
        (
            "Mystery GPU 9000",
            "real-before-simulator",
            "the capture ran on Mystery GPU 9000, which is not here and no device is named like "
            "it; {id} {name} is the first device that is not a simulator",
        ),
    ],
)
def test_without_device_the_capture_s_device_or_the_rule_s_next_choice(
    images_svm: Path, tmp_path: Path, renamed: str | None, rule: str, said: str
) -> None:
    """PoCL is chosen, not Oclgrind (listed first by ocl-icd here), whether the capture's
    device is here, named like PoCL here (another CPU) or unknown; stderr says which and
    why, the JSON's device_choice too."""
    from cltui.replay.devices import list_devices
    from tests.conftest import made_on, named_like_here

    devices = list_devices()
    pocl = [d for d in devices if d["name"].startswith("pthread-")]
    if not pocl:
        pytest.skip("no PoCL CPU device")
    cap = made_on(images_svm, tmp_path, renamed)  # None: this machine's PoCL device
    like, words = named_like_here()
    for extra in (["--json"], []):
        res = CliRunner().invoke(main, ["replay", str(cap), "0-1", *extra])
        assert res.exit_code == 0, res.output
        line = said.format(id=pocl[0]["id"], name=pocl[0]["name"], like=like, words=words)
        assert f"device: {line} (choose with --device)" in res.stderr, res.stderr
    report = json.loads(CliRunner().invoke(main, ["replay", str(cap), "0-1", "--json"]).stdout)
    (res_dev,) = report["devices"]
    assert res_dev["device"]["id"] == pocl[0]["id"]
    assert res_dev["device_choice"] == {"rule": rule, "why": line}
    assert res_dev["runner"] == "cltui"


@pytest.mark.child
def test_a_device_named_with_device_is_the_user_s_choice(images_svm: Path) -> None:
    res = CliRunner().invoke(main, ["replay", str(images_svm), "0", "-d", "oclgrind", "--json"])
    assert res.exit_code in (0, 1), res.output
    (dev,) = json.loads(res.stdout)["devices"]
    assert dev["device_choice"] == {"rule": "user", "why": "chosen with --device oclgrind"}
    assert f"device: {dev['device']['id']} Oclgrind Simulator (chosen with --device oclgrind)" in (
        res.stderr
    )


@pytest.mark.child
def test_replay_cli_reports_hash_checks(images_svm: Path, tmp_path: Path) -> None:
    """A hash-only capture: the table says a mismatch was found by hash, the details say
    which hashes differ; exit 1."""
    import shutil

    from tests.conftest import hash_only_capture

    cap = hash_only_capture(images_svm, tmp_path)
    for folder in ("Enqueue_2_sample_linear", "Enqueue_3_volume_sum"):
        shutil.rmtree(cap / "Replay" / folder)
    res = CliRunner().invoke(main, ["replay", str(cap), "2-3", "-d", "pocl"], terminal_width=200)
    assert res.exit_code == 1, res.output
    assert "different (hash)" in res.output
    assert "enqueue 3 arg 1 (buffer 0005): different: hash " in res.output
    assert "!= captured" in res.output


@pytest.mark.child
@pytest.mark.parametrize(
    ("capture", "rng", "devices"),
    [
        ("images_svm_pocl", "0-3", ["pocl"]),  # images, a sampler; all equal
        ("pyopencl_lib_pocl", "14-22", ["pocl", "oclgrind"]),  # mismatches, cross, timing
    ],
)
def test_replay_json_matches_the_schema(capture: str, rng: str, devices: list[str]) -> None:
    """docs/replay.schema.json (the schema the bundle runners' --json is held to as well)."""
    from tests.conftest import capture_path
    from tests.schemas import validate

    args = ["replay", str(capture_path(capture)), rng, "--json", "--repeat", "2"]
    for d in devices:
        args += ["-d", d]
    res = CliRunner().invoke(main, args)
    assert res.exit_code in (0, 1), res.output
    report = json.loads(res.stdout)
    validate(report)
    assert [d["runner"] for d in report["devices"]] == ["cltui"] * len(devices)
    assert report["devices"][0]["steps"] and report["devices"][0]["loop"]["launches"] > 0
    if len(devices) > 1:
        assert report["cross"] and report["devices"][-1]["status"] == "mismatch"
