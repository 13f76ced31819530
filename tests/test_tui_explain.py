"""Pilot tests of ``e`` (explain) on the replay results and in the three-way diff, the
divergence maps (pure), and the saved Markdown report with its minimal bundle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Static

from cltui.tui.app import make_app
from cltui.tui.screens.diff import DiffScreen
from cltui.tui.screens.explain import ExplainScreen, map_text, source_lines
from cltui.tui.screens.prompt import PromptScreen
from cltui.tui.widgets.divergence_map import diff_mask, heat_map, strip_map
from tests import planted_synth
from tests.test_tui_replay import (
    SIZE,
    aio,
    device_id,
    loaded,
    open_dialog,
    results_screen,
    select,
    wait_for,
)


def test_strip_map_marks_differing_runs_and_the_cursor() -> None:
    mask = np.zeros(100, dtype=bool)
    mask[10] = True  # one of the ten elements of cell 1
    mask[90:100] = True  # all of cell 9
    text = strip_map(mask, 10, cursor=55)
    assert len(text.plain) == 10
    assert text.plain[0] == "·" and text.plain[1] == "▁" and text.plain[9] == "█"
    assert any("reverse" in str(span.style) for span in text.spans if span.start == 5)


def test_heat_map_is_red_where_texels_differ() -> None:
    mask = np.zeros(8 * 4, dtype=bool)
    mask[0] = True  # texel (0, 0)
    text = heat_map(mask, np.linspace(0, 1, 32), 8, 4)
    assert text.plain == "▀" * 8 + "\n" + "▀" * 8 + "\n"
    first = str(text.spans[0].style)
    assert first.startswith("rgb(255,0,0) on rgb(") or "rgb(2" in first.split(" on ")[0]
    assert "rgb(" in str(text.spans[1].style) and ",0,0)" not in str(text.spans[1].style).split(
        " on ")[0]  # (1, 0) is grey


def test_diff_mask_counts_a_missing_tail_as_differing() -> None:
    assert diff_mask(b"\0\0\1\1", b"\0\0\1\2\3\3", 2).tolist() == [False, True, True]


def test_source_lines_mark_the_diverging_line() -> None:
    src = "\n".join(f"line {k}" for k in range(1, 21))
    got = source_lines(src, 10)
    assert got[0].startswith("      6") and "▶    10  line 10" in got and len(got) == 9

    from cltui.tui.screens.explain import _line_number

    line: dict[str, Any] = {"status": "upstream", "site": {"line": 9}}
    assert _line_number({"line": line}) == 9
    line["walk"] = {"status": "found", "site": {"line": 7}}  # upstream, where they part
    assert _line_number({"line": line}) == 7


@pytest.mark.child
@pytest.mark.device
def test_image_output_gets_a_heat_map_over_the_picture(tmp_path: Path) -> None:
    from cltui.analysis.explain.engine import explain_with_runs
    from cltui.capture import open_capture
    from cltui.replay.devices import select_devices

    cap = open_capture(planted_synth.write("image_nan", tmp_path / "cap"))
    runs, report = explain_with_runs(cap, 0, select_devices(["pocl", "oclgrind"]))
    text = map_text(runs, report)
    assert "heat map over the picture (64 x 16" in text.plain, report
    assert text.plain.count("▀") == 64 * 8  # 16 texel rows, two a character
    assert any("rgb(2" in str(s.style).split(" on ")[0] for s in text.spans)  # red cells


async def _explained(pilot: Pilot[Any]) -> ExplainScreen:
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, ExplainScreen), 120)
    screen = pilot.app.screen
    assert isinstance(screen, ExplainScreen)
    await pilot.pause()
    return screen


@pytest.mark.child
@aio
async def test_explain_from_the_results_and_the_diff_and_save_the_report(
    pyocl_pocl: Path, tmp_path: Path
) -> None:
    async with make_app(pyocl_pocl).run_test(size=SIZE) as pilot:
        main = await loaded(pilot)
        await select(pilot, main, 22, 22)
        dialog = await open_dialog(pilot)
        dialog.select_devices([device_id(dialog, "oclgrind")])
        await pilot.pause()
        dialog.action_accept()
        results = await results_screen(pilot)
        assert "e" in {b.key for b in results.BINDINGS}  # type: ignore[union-attr]
        await pilot.press("f")  # the differing row
        await pilot.press("e")  # explain: Oclgrind against the capture's own device, PoCL
        shown = await _explained(pilot)
        verdict = str(shown.query_one("#explain-verdict", Static).render())
        assert verdict.startswith("DIVERGES: enqueue 22 (sin_kernel)") and "built-in" in verdict
        body = str(shown.query_one("#explain-body", Static).render())
        assert "why: built-in accuracy (sin ≤ 4 ULP)" in body and "worst: index" in body
        assert "strip map (8,192 items" in str(shown.query_one("#explain-map", Static).render())
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, PromptScreen))
        target = tmp_path / "bug" / "report.md"
        target.parent.mkdir()
        pilot.app.screen.query_one(Input).value = str(target)
        await pilot.press("enter")
        await wait_for(pilot, lambda: target.is_file(), 60)
        text = target.read_text()
        assert text.startswith("# Kernel `sin_kernel`: diverges") and "## Attached" in text
        assert (tmp_path / "bug" / "report_bundle" / "replay.py").is_file()
        assert "__kernel" in (tmp_path / "bug" / "report_kernel.cl").read_text()
        await pilot.press("escape")
        # the same key in the three-way diff, which shows the strip map at its cursor
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, DiffScreen))
        diff = pilot.app.screen
        assert isinstance(diff, DiffScreen)
        await pilot.pause()
        strip = diff.query_one("#diff-strip", Static)
        assert strip.display and "▁" in str(strip.render())
        cursor = diff.query_one("DiffView").cursor  # type: ignore[attr-defined]
        await pilot.press("e")
        shown = await _explained(pilot)
        assert f"the diff's cursor, item {cursor:,}, reversed" in str(
            shown.query_one("#explain-map", Static).render())
