"""benchmarks/run.py: the parts that do not measure (parsing, the H200 tables, the report)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def run_mod() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "benchmarks" / "run.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_parse_tui_output(run_mod: ModuleType) -> None:
    row = {
        "label": "synthetic (in memory)",
        "rows": 10000,
        "first_paint_s": 0.58,
        "noop_ms": 80.0,
        "keys_ms": {"down": [3.5, 40.0, 2.0]},
    }
    text = "\n".join(
        [
            "skipping heat2d: no log under /nonexistent",
            run_mod._TUI_TAG + json.dumps(row),
            run_mod._TUI_TAG + "{not json",
            run_mod._TUI_TAG + json.dumps({"label": "no first paint"}),
            "synthetic (in memory): 10,000 enqueues",
        ]
    )
    assert run_mod.parse_tui_output(text) == [row]
    assert run_mod.parse_tui_output("nothing here\n") == []


def _engine_result(device: str, platform: str, start_to_end: float) -> dict[str, object]:
    timing = {s: {"median": 10.0} for s in ("queued_to_submit", "submit_to_start", "host_enqueue")}
    timing["start_to_end"] = {"median": start_to_end}
    return {
        "device": {"name": device, "platform": platform},
        "ok": True,
        "error": None,
        "steps": [
            {
                "enqueue": 22,
                "kernel": "sin_kernel",
                "status": "pass",
                "timing": timing,
                "checks": [
                    {
                        "label": "arg 0 (buffer 0014)",
                        "status": "within",
                        "result": {
                            "max_abs": 1e-7,
                            "max_ulp": 1.0,
                            "n_diff": 3,
                            "elements": 8192,
                            "first": {"where": "[0]", "expected": -0.9271314, "actual": -0.9271315},
                        },
                    }
                ],
            }
        ],
    }


def test_h200_engine_results_rendered_against_pocl(
    run_mod: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = tmp_path / "h200"
    d.mkdir()
    doc = {
        "command": "python replay.py --device NVIDIA --json",
        "results": [
            _engine_result("NVIDIA H200", "NVIDIA CUDA", 500.0),
            _engine_result(
                "pthread-skylake-avx512-AMD EPYC", "Portable Computing Language", 2000.0
            ),
        ],
    }
    (d / "pyocl.json").write_text(json.dumps(doc))
    monkeypatch.setattr(run_mod, "RESULTS_H200", d)
    monkeypatch.setattr(run_mod, "ROOT", tmp_path)
    text = "\n".join(run_mod.render_h200())
    assert "NVIDIA H200" in text and "sin_kernel" in text
    # the H200 row, next to PoCL's verdict and stages (500 ns against 2000 ns: 0.25x)
    row = "| 22 | sin_kernel | arg 0 (buffer 0014) | within | 3/8,192 | 1e-07 | 1 | "
    assert row + "[0]: -0.9271314 / -0.9271315 | within |" in text
    assert "| 500 (0.25x) |" in text and "| 10.0 (1.00x) |" in text
    assert "*NVIDIA H200, replay.py*: 1/1 enqueues pass" in text


def test_h200_generic_json_and_none(
    run_mod: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_mod, "RESULTS_H200", tmp_path / "absent")
    assert "No results yet" in "\n".join(run_mod.render_h200())
    d = tmp_path / "h200"
    d.mkdir()
    (d / "upload.json").write_text(
        json.dumps({"upload": [{"bytes": 4096, "mb_s": 900.5, "pinned_mb_s": 1000.0}]})
    )
    (d / "broken.json").write_text("{")
    monkeypatch.setattr(run_mod, "RESULTS_H200", d)
    monkeypatch.setattr(run_mod, "ROOT", tmp_path)
    text = "\n".join(run_mod.render_h200())
    assert "| bytes | mb_s | pinned_mb_s |" in text and "| 4096 | 900.5 | 1000.0 |" in text
    assert "`broken.json`: cannot read (JSONDecodeError)" in text
    up = {
        "bundle": "b1",
        "device": "NVIDIA H200",
        "inputs": 3,
        "input_bytes": 32772,
        "engine_gb_s": 0.40,
        "pinned_gb_s": 0.52,
        "ratio_engine_vs_pinned": 0.77,
        "scaled_bytes": 268435456,
        "scaled_engine_gb_s": 54.2,
        "scaled_pinned_gb_s": 54.6,
        "scaled_ratio_engine_vs_pinned": 0.99,
    }
    (d / "b1.upload.json").write_text(json.dumps(up))
    text = "\n".join(run_mod.render_h200())
    assert (
        "| b1 | NVIDIA H200 | 3 | 32772 | 0.40 | 0.52 | 0.77 | **MISSED** | 256 MiB | 54.2 | "
        "54.6 | 0.99 | met |"
    ) in text


def test_report_marks_missed_goals(run_mod: ModuleType) -> None:
    figs = [
        run_mod.figure("fast thing", "1 s", "base 2 s", 2.0, "base / ours", ">= 1", True),
        run_mod.figure("slow thing", "9 s", "base 1 s", 0.11, "base / ours", ">= 0.4", False),
        run_mod.figure("info", "3", "4", None, "-"),
    ]
    results = {
        "compare": {"figures": figs},
        "export": {"error": "bench_export.py exited 1: boom", "figures": []},
    }
    text = run_mod.render(results, {"CPU": "x"}, "cmd", 12.0, "2026-01-01 00:00 UTC")
    assert "| slow thing | 9 s | base 1 s | 0.11 | base / ours | >= 0.4 | **MISSED** |" in text
    assert "| fast thing | 1 s | base 2 s | 2.00 | base / ours | >= 1 | met |" in text
    assert "| info | 3 | 4 | - | - | - | - |" in text
    assert "Not measured: bench_export.py exited 1: boom" in text
    missed = text.split("## Goals missed in this run")[1].split("##")[0]
    assert "slow thing" in missed and "fast thing" not in missed


def test_render_only_rewrites_from_saved_json(
    run_mod: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fig = run_mod.figure(
        "rss", "160 MB", "find 2 GB", 1.07, "RSS / goal", "<= 150 MB", False, "160 MB"
    )
    saved = {
        "date": "2026-01-01 00:00 UTC",
        "command": ".venv/bin/python benchmarks/run.py",
        "machine": {"CPU": "test cpu"},
        "total_s": 321.0,
        "results": {"index": {"figures": [fig]}},
    }
    src = tmp_path / "saved.json"
    src.write_text(json.dumps(saved))
    monkeypatch.setattr(run_mod, "ROOT", tmp_path)
    monkeypatch.setattr(run_mod, "RESULTS_H200", tmp_path / "none")
    assert run_mod.main(["--render-only", str(src)]) == 0
    text = (tmp_path / "BENCHMARKS.md").read_text()
    assert "| CPU | test cpu |" in text and "Total run time: 321 s" in text
    assert "| <= 150 MB | **MISSED** (160 MB) |" in text
    assert "- Capture index: rss: 160 MB, goal <= 150 MB" in text
    assert run_mod.main(["--render-only", str(tmp_path / "absent.json")]) == 2


def test_splice_rewrites_only_its_section(run_mod: ModuleType) -> None:
    fig = run_mod.figure("1 MB, nul_head: x", "0.1 s", "0.1 s", 1.0, "p / i", "<= 1.5", True)
    old = "# t\n\n## Export\n\nkeep me\n\n## Goals missed in this run\n\nNone.\n"
    new = run_mod.splice_section(old, "pathological", {"figures": [fig]}, "today")
    assert new.startswith("# t\n\n## Export\n\nkeep me\n\n## Pathological inputs\n")
    assert "\nMeasured today, on its own.\n\n| figure |" in new
    assert new.endswith("## Goals missed in this run\n\nNone.\n")
    again = run_mod.splice_section(new, "pathological", {"figures": [fig]}, "later")
    assert again.count("## Pathological inputs") == 1 and "Measured later" in again
    assert "keep me" in again and "Measured today" not in again


def test_a_full_rewrite_keeps_the_other_scripts_sections(run_mod: ModuleType) -> None:
    """run.py renders its own sections; those of bench_fleet.py, bench_history.py, ... that
    it does not render stay in BENCHMARKS.md (they were dropped by a full run)."""
    old = "# old\n\n## Capture index\n\nold figures\n\n## Fleet replay over ssh\n\nfleet\n"
    new = "# cltui benchmarks\n\n## Capture index\n\nnew figures\n"
    text = run_mod.keep_foreign(new, old)
    assert "new figures" in text and "old figures" not in text
    assert text.endswith("## Fleet replay over ssh\n\nfleet\n")
    assert run_mod.keep_foreign(new, "") == new
