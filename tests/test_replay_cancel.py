"""Partial results survive a cancel (issue 17): the steps that finished before it keep their
checks, in the app's results screen and in ``cltui replay``'s report on ctrl-c (exit 130), with
a verdict that says INCOMPLETE: cancelled and counts.  Real PoCL: a plan whose enqueue 40 fills
a buffer (checked) and whose enqueue 41 spins until it is killed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from cltui.cli import main
from cltui.replay import runner
from cltui.tui.app import make_app
from cltui.tui.screens.replay_progress import ProgressScreen
from tests.conftest import copy_capture
from tests.schemas import validate
from tests.test_tui_replay import (
    SIZE,
    aio,
    device_id,
    loaded,
    open_dialog,
    results_screen,
    table_rows,
    wait_for,
)

pytestmark = [pytest.mark.device, pytest.mark.child]

LINE = "INCOMPLETE: cancelled (enqueue 41); 1/2 kernel enqueues replayed, 1/1 outputs checked"


def _plan(tmp: Path) -> Any:
    from cltui.replay.plan import Plan
    from tests.test_replay_runner import _fill, _plan, _step

    np.zeros(64, dtype=np.int32).tofile(tmp / "zeros.bin")
    args = [{"index": 0, "kind": "buffer", "mem": "m0"},
            {"index": 1, "kind": "buffer", "mem": "m1"}]
    memory: dict[str, Any] = {"m0": {"kind": "buffer", "size": 256},
                              "m1": {"kind": "buffer", "size": 256}}
    manifest = _plan(tmp, [_fill(40, 0, "zeros.bin"), _step(41, "spin", args)], memory)
    return Plan(manifest, tmp)


@aio
async def test_cancel_keeps_the_finished_steps_on_the_results_screen(
    images_svm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("cltui.replay.plan.build_plan", lambda *a, **k: _plan(tmp_path))
    loop = asyncio.get_running_loop()
    async with make_app(images_svm).run_test(size=SIZE) as pilot:
        main_screen = await loaded(pilot)
        dialog = await open_dialog(pilot)
        dialog.select_devices([device_id(dialog, "pthread")])
        dialog.action_accept()  # the default 60 s timeout: only cancel can end it soon
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ProgressScreen), 10)
        progress = pilot.app.screen
        assert isinstance(progress, ProgressScreen)
        await wait_for(pilot, lambda: "enqueue 41 (spin)" in progress.last_text, 30)
        started = loop.time()
        await pilot.press("escape")
        results = await results_screen(pilot)
        assert loop.time() - started < 15
        summary = results.summary().plain
        assert summary.startswith(LINE + " (1 equal)")
        rows = table_rows(results)
        assert [r[0] for r in rows] == ["40", "41"]
        assert rows[0][4] == "equal" and rows[1][4] == "cancelled"
        await pilot.press("escape")
        await wait_for(pilot, lambda: pilot.app.screen is main_screen, 10)


def test_ctrl_c_prints_what_finished_and_exits_130(
    images_svm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cap = copy_capture(images_svm, tmp_path)  # the CLI reads the plan's files from the capture
    monkeypatch.setattr("cltui.replay.plan.build_plan", lambda *a, **k: _plan(cap))
    events = runner.ReplayJob.events

    def interrupted(job: runner.ReplayJob) -> Iterator[dict[str, Any]]:
        for ev in events(job):
            yield ev
            if ev["type"] == "step" and ev.get("enqueue") == 41:
                raise KeyboardInterrupt  # ctrl-c while enqueue 41 spins

    monkeypatch.setattr(runner.ReplayJob, "events", interrupted)
    res = CliRunner().invoke(main, ["replay", str(cap), "0-8", "--timeout", "60",
                                    "--json"])
    assert res.exit_code == 130, res.output
    report = json.loads(res.stdout)
    validate(report, "replay.schema.json")
    assert report["verdict"]["line"].startswith(LINE)
    assert report["verdict"]["status"] == "incomplete"
    (dev,) = report["devices"]
    assert dev["status"] == "cancelled" and dev["partial"] is True
    assert [s["enqueue"] for s in dev["steps"]] == [40]
    assert dev["steps"][0]["checks"][0]["status"] == "equal"
    assert "interrupted" in res.stderr
    text = CliRunner().invoke(main, ["replay", str(cap), "0-8", "--timeout", "60"])
    assert text.exit_code == 130 and LINE in text.stdout
