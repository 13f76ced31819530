"""Regenerate ``screenshots/*.svg``: every screen of the app on the real shared captures.

    .venv/bin/python scripts/screenshots.py [--captures ../shared/captures] [--out screenshots]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual.pilot import Pilot

from cltui.tui.app import CltuiApp, make_app

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Scene:
    name: str
    capture: str
    size: tuple[int, int]
    jump: int | None = None
    keys: list[str] = field(default_factory=list)
    text: str = ""
    after: list[str] = field(default_factory=list)
    capture_b: str | None = None  # a second capture (divergence marks)


SCENES = [
    Scene("01-list-args", "pyopencl_lib_pocl", (120, 36), jump=14),
    Scene("02-list-80x24", "opencv_tapi_pocl", (80, 24), jump=11),
    Scene("03-source", "pyopencl_lib_pocl", (120, 36), jump=14, keys=["1", "full_stop"]),
    Scene("04-build-log", "opencv_tapi_pocl", (120, 36), jump=31, keys=["1", "tab", "o"]),
    Scene("05-args-struct", "pyopencl_lib_oclgrind", (120, 36), jump=14, keys=["2"]),
    Scene("06-buffer-typed", "pyopencl_lib_pocl", (120, 36), jump=22,
          keys=["3", "tab", "right_square_bracket"]),
    Scene("07-buffer-struct-format", "pyopencl_lib_pocl", (120, 36), jump=14,
          keys=["3", "f", "ctrl+a", "ctrl+k"], text="struct { float x; int k; }",
          after=["enter"]),
    Scene("08-buffer-hex", "images_svm_pocl", (120, 36), jump=2, keys=["3", "tab", "x"]),
    Scene("09-image", "images_svm_pocl", (120, 36), jump=0, keys=["4"]),
    Scene("10-image-3d", "images_svm_pocl", (120, 36), jump=3, keys=["4"]),
    Scene("11-timing", "pyopencl_lib_pocl", (120, 36), jump=23, keys=["5"]),
    Scene("12-range-visual", "pyopencl_lib_pocl", (120, 36), jump=9,
          keys=["shift+down", "shift+down", "m", "v", "down", "down"]),
    Scene("13-filter", "pyopencl_lib_pocl", (120, 36), keys=["slash"], text="re:^scan"),
    Scene("14-kinds", "opencv_tapi_pocl", (120, 36), keys=["t"]),
    Scene("15-jump", "opencv_tapi_pocl", (120, 36), keys=["colon"], text="63"),
    Scene("16-help", "images_svm_pocl", (120, 36), keys=["question_mark"]),
    Scene("17-palette", "images_svm_pocl", (120, 36), keys=["ctrl+p"], text="jump"),
    # range commands (cltui/tui/range_commands.py): replay, results, three-way diff, export,
    # check, diverge
    Scene("18-replay-dialog", "images_svm_pocl", (120, 36), jump=0,
          keys=["shift+down"] * 8 + ["r"]),
    Scene("19-replay-results", "pyopencl_lib_pocl", (140, 36), jump=20,
          keys=["shift+down"] * 4 + ["r", "space", "ctrl+r"]),
    Scene("20-replay-diff", "pyopencl_lib_pocl", (140, 36), jump=22,
          keys=["r", "space", "ctrl+r", "enter"]),
    Scene("21-export-dialog", "images_svm_pocl", (120, 36), jump=0,
          keys=["shift+down"] * 8 + ["e"]),
    Scene("22-check-findings", "opencv_tapi_pocl", (120, 36), jump=4, keys=["C", "down"]),
    Scene("23-diverge", "pyopencl_lib_pocl", (120, 36), keys=["d"],
          capture_b="pyopencl_lib_oclgrind"),
    # a damaged capture: enqueues rebuilt from the dump files (~), and a replay of 14-38 whose
    # verdict says what the log lost
    Scene("24-damaged-list", "pyopencl_lib_coldcache", (120, 36), jump=14),
    # its problems dialog: the highlighted problem's whole text below the table (issue 31)
    Scene("37-damaged-problems", "pyopencl_lib_coldcache", (120, 36), keys=["p", "down", "down"]),
    Scene("25-damaged-replay", "pyopencl_lib_coldcache", (140, 36), jump=14,
          keys=["shift+down"] * 22 + ["r", "ctrl+r"]),
    # issue 17: the history of the selected argument's object (H), copy (y) and save (s)
    Scene("26-history", "pyopencl_lib_pocl", (120, 36), jump=22, keys=["3", "full_stop", "H"]),
    Scene("27-copy", "pyopencl_lib_pocl", (120, 36), jump=22, keys=["3", "shift+down", "y"]),
    Scene("28-save", "images_svm_pocl", (120, 36), jump=0, keys=["4", "s"]),
    # experiments (cltui/tui/experiment.py): the dialog, an A/B of local 64, a local-size sweep
    Scene("29-experiment-dialog", "pyopencl_lib_pocl", (120, 36), jump=22,
          keys=["shift+down"] * 9 + ["X"]),
    Scene("30-ab-results", "pyopencl_lib_pocl", (140, 36), jump=22,
          keys=["shift+down"] * 9 + ["X"] + ["tab"] * 4, text="64", after=["enter"]),
    Scene("31-sweep", "pyopencl_lib_pocl", (140, 36), jump=22,
          keys=["shift+down"] * 9 + ["X"] + ["tab"] * 4, text="16,32,64,8192",
          after=["ctrl+s"]),
    # L: launch latency of 14-38 measured on this machine (Python engine, C++ runner, floor,
    # delay ladder), then the Latency view
    Scene("32-latency", "pyopencl_lib_pocl", (150, 48), jump=14,
          keys=["shift+down"] * 24 + ["L"]),
    # layouts (issue 17): side by side from 160 columns, stacked and narrow, the pixel cursor
    Scene("33-wide-200x50", "pyopencl_lib_pocl", (200, 50), jump=22,
          keys=["3", "tab", "right_square_bracket"]),
    Scene("34-narrow-60x20", "pyopencl_lib_pocl", (60, 20), jump=14),
    Scene("35-image-cursor", "images_svm_pocl", (120, 36), jump=0,
          keys=["4", "tab", "right", "right", "right", "shift+down"]),
    # the list filtered as the words are typed (matches marked), and sorted by device time
    Scene("38-filter-language", "pyopencl_lib_pocl", (120, 36), keys=["slash"],
          text="axpb time>2us has:dumps"),
    Scene("39-sorted-by-time", "pyopencl_lib_pocl", (120, 36), jump=22, keys=["S"]),
]


async def settle(pilot: Pilot[None]) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()


async def shoot(scene: Scene, captures: Path, out: Path) -> Path:
    app = make_app(captures / scene.capture,
                   captures / scene.capture_b if scene.capture_b else None,
                   remember=False)  # the same picture whatever the last session did
    async with app.run_test(size=scene.size) as pilot:
        assert isinstance(app, CltuiApp)
        while app.main.capture is None and app.main.error is None:
            await pilot.pause(0.01)
        await settle(pilot)
        if scene.jump is not None:
            app.main.jump_to(scene.jump)
            await settle(pilot)
        for key in scene.keys:
            await pilot.press(key)
            await settle(pilot)
        for ch in scene.text:
            await pilot.press(ch if ch != " " else "space")
        await settle(pilot)
        for key in scene.after:
            await pilot.press(key)
            await settle(pilot)
        path = out / f"{scene.name}.svg"
        app.save_screenshot(filename=path.name, path=str(out))
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--captures", type=Path, default=REPO.parent / "shared" / "captures")
    ap.add_argument("--out", type=Path, default=REPO / "screenshots")
    ap.add_argument("--only", default="", help="substring of the scene names to shoot")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for scene in SCENES:
        if args.only and args.only not in scene.name:
            continue
        if not (args.captures / scene.capture).is_dir():
            print(f"skip {scene.name}: no capture {scene.capture}")
            continue
        print(asyncio.run(shoot(scene, args.captures, args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
