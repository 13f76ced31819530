"""Every command's --json output against the JSON Schemas in docs/ (Draft 2020-12).

``docs/replay.schema.json``: ``cltui replay`` and both bundle runners (tests in
test_replay_cli.py and test_export_device.py); ``docs/cli.schema.json``: the other commands of
docs/cli-json.md, one definition each.  The schemas are checked to reject what breaks them.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cltui.cli import main
from tests.schemas import validate


def _json(*args: str, codes: tuple[int, ...] = (0,)) -> Any:
    res = CliRunner().invoke(main, list(args))
    assert res.exit_code in codes, res.output
    return json.loads(res.stdout)


def test_ls_info_show_match_the_schema(images_svm: Path, opencv: Path) -> None:
    for cap in (images_svm, opencv):
        validate(_json("ls", str(cap), "--json"), "cli.schema.json", "ls")
        validate(_json("info", str(cap), "--json"), "cli.schema.json", "info")
    for n in ("0", "2", "4", "9"):  # kernels with images, a sampler, SVM; a map; a read
        validate(_json("show", str(images_svm), n, "--json"), "cli.schema.json", "show")


def test_show_history_matches_the_schema_and_says_the_neighbours(
    images_svm: Path, pyocl_pocl: Path
) -> None:
    shown = _json("show", str(pyocl_pocl), "22", "--json")
    validate(shown, "cli.schema.json", "show")
    by_index = {a["index"]: a for a in shown["args"]}
    assert "history" not in by_index[1]  # a scalar
    h = by_index[2]["history"]
    assert h["last_writer"]["enqueue"] == 5 and h["next_reader"]["enqueue"] == 23
    assert h["event_count"] == len(h["events"]) == 9 and not h["events_truncated"]
    assert h["events"][-1]["what"].startswith("released")  # the log's release ends its life
    read = _json("show", str(images_svm), "9", "--json")
    validate(read, "cli.schema.json", "show")
    assert read["transfer"]["history"]["last_writer"]["enqueue"] == 3
    text = CliRunner().invoke(main, ["show", str(pyocl_pocl), "22"]).output
    assert "last writer: 5 (axpbyz arg 0" in text and "next reader: 23 (axpb arg 3" in text


@pytest.mark.child
@pytest.mark.device
def test_devices_export_check_shrink_diverge_match_the_schema(
    images_svm: Path, pyocl_pocl: Path, pyocl_oclgrind: Path, tmp_path: Path
) -> None:
    validate(_json("devices", "--json"), "cli.schema.json", "devices")
    out = tmp_path / "bundle"
    validate(
        _json("export", str(images_svm), "0-3", "-o", str(out), "--json"),
        "cli.schema.json",
        "export",
    )
    validate(
        _json("check", str(images_svm), "0-3", "--json", codes=(0, 1)), "cli.schema.json", "check"
    )
    shrunk = _json("shrink", str(pyocl_pocl), "20-22", "-d", "oclgrind", "--json", codes=(1,))
    validate(shrunk, "cli.schema.json", "shrink")
    diverged = _json("diverge", str(pyocl_pocl), str(pyocl_oclgrind), "--json", codes=(0, 1))
    validate(diverged, "cli.schema.json", "diverge")


def _runner_result() -> dict[str, Any]:
    return {
        "runner": "replay.cpp",
        "verdict": {
            "status": "incomplete",
            "line": "INCOMPLETE: 1/1 kernel enqueues replayed, 0/1 outputs checked (1 unchecked)",
            "counts": {"kernels": 1, "replayed": 1, "outputs": 1, "checked": 0, "unchecked": 1},
        },
        "device": {"id": "1:0", "platform": "P", "name": "D", "version": "OpenCL 3.0"},
        "device_choice": {"rule": "captured", "why": "1:0 D is the device the capture ran on"},
        "status": "ok",
        "ok": True,
        "error": None,
        "failed_enqueue": None,
        "repeat": 1,
        "loop": {"launches": 1, "host_ns_per_repetition": None},
        "builds": {"p0": {"how": "source", "seconds": 0.1}},
        "notes": [],
        "steps": [
            {
                "enqueue": 3,
                "kernel": "k",
                "status": "pass",
                "checks": [
                    {"mem": "m", "args": [0], "label": "arg 0", "status": "unchecked",
                     "output": None}
                ],
                "prechecks": [],
                "loads": [{"mem": "m", "why": "input", "note": "", "done": True}],
                "timing": {
                    "queued_to_submit": None,
                    "submit_to_start": None,
                    "start_to_end": {"min": 1, "median": 1, "max": 1},
                    "host_enqueue": None,
                    "samples": 1,
                },
            }
        ],
    }


@pytest.mark.parametrize(
    "breakage",
    [
        "no runner",
        "no device_choice",
        "unknown rule",
        "no status",
        "ok but failed",
        "error without a message",
        "no failed_enqueue",
        "no loop",
        "no builds",
        "a check without status",
        "a step without timing",
        "a verdict without counts",
        "no verdict",
    ],
)
def test_the_replay_schema_rejects_what_breaks_the_contract(breakage: str) -> None:
    good = [_runner_result()]
    validate(good)
    bad = copy.deepcopy(good)
    r = bad[0]
    if breakage == "no runner":
        del r["runner"]
    elif breakage == "no device_choice":
        del r["device_choice"]
    elif breakage == "unknown rule":
        r["device_choice"]["rule"] = "random"
    elif breakage == "no status":
        del r["status"]
    elif breakage == "ok but failed":
        r["ok"] = False  # status still "ok"
    elif breakage == "error without a message":
        r["status"], r["ok"] = "error", False
    elif breakage == "no failed_enqueue":
        del r["failed_enqueue"]
    elif breakage == "no loop":
        del r["loop"]
    elif breakage == "no builds":
        del r["builds"]
    elif breakage == "a check without status":
        del r["steps"][0]["checks"][0]["status"]
    elif breakage == "a step without timing":
        del r["steps"][0]["timing"]
    elif breakage == "a verdict without counts":
        r["verdict"] = {"status": "pass", "line": "PASS"}
    elif breakage == "no verdict":
        del r["verdict"]
    with pytest.raises(AssertionError, match="schema violation"):
        validate(bad)
    with pytest.raises(AssertionError, match="schema violation"):
        validate({"plan": {}, "devices": bad})  # the CLI's report: the same device results
