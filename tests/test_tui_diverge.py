"""Two captures side by side: divergence marks in both lists and the jump keys (``d``/``D``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cltui.analysis.diverge import diverge as _REAL_DIVERGE
from cltui.progress import CancelToken, ProgressEvent
from cltui.tui.app import CltuiApp, make_app
from cltui.tui.two_captures import MARKS, shared_opener
from tests.test_tui_replay import SIZE, aio, loaded, wait_for

_REPORTS: dict[tuple[str, str], Any] = {}


def cached_diverge(cap_a: Any, cap_b: Any, *args: Any, **kwargs: Any) -> Any:
    """The real :func:`diverge`, computed once per pair of captures in a test session."""
    from cltui.analysis import diverge as mod

    key = (str(cap_a.path), str(cap_b.path))
    if key not in _REPORTS:
        _REPORTS[key] = _REAL_DIVERGE(cap_a, cap_b, *args, **kwargs)
    report = _REPORTS[key]
    assert isinstance(report, mod.DivergeReport)
    return report


def post_differs(a: Path, b: Path, number: int) -> bool:
    """Whether any Post dump of enqueue ``number`` differs between the two captures (raw)."""
    files_a = sorted((a / "memDumpPostEnqueue").glob(f"Enqueue_{number:04d}_*"))
    files_b = sorted((b / "memDumpPostEnqueue").glob(f"Enqueue_{number:04d}_*"))
    assert [f.name for f in files_a] == [f.name for f in files_b]
    return any(
        not np.array_equal(np.fromfile(fa, np.uint8), np.fromfile(fb, np.uint8))
        for fa, fb in zip(files_a, files_b, strict=True)
    )


@pytest.mark.child
@aio
async def test_two_captures_marked_and_d_jumps_to_first_divergent(
    pyocl_pocl: Path, pyocl_oclgrind: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("cltui.analysis.diverge.diverge", cached_diverge)
    # independent facts from the raw dumps: enqueues up to 21 have identical Post dumps, 22 not
    assert not any(post_differs(pyocl_pocl, pyocl_oclgrind, n) for n in (0, 1, 3, 20, 21))
    assert post_differs(pyocl_pocl, pyocl_oclgrind, 22)
    app = make_app(pyocl_pocl, pyocl_oclgrind)
    async with app.run_test(size=SIZE) as pilot:
        assert isinstance(app, CltuiApp)
        main = await loaded(pilot)
        bindings = main.active_bindings
        await wait_for(pilot, lambda: app.divergence is not None and app.divergence.ready, 60)
        await pilot.pause()
        assert main.active_bindings["d"].enabled is True
        assert bindings["C"].enabled is True
        lst = main.enqueue_list
        assert lst.mark_fn is not None
        cap = main.capture
        assert cap is not None
        mark = lst.mark_fn
        assert mark(cap.position_of(22) or 0) == MARKS["different"]
        assert mark(cap.position_of(21) or 0) == MARKS["identical"]
        assert main.state()["cursor"] == 0
        await pilot.press("d")
        await pilot.pause()
        assert main.state()["cursor"] == 22
        await pilot.press("D")  # the next divergent one after 22
        await pilot.pause()
        assert main.state()["cursor"] == 25
        await pilot.press("d")
        await pilot.pause()
        assert main.state()["cursor"] == 22
        # capture B: the same marks once it is shown, and d works there too
        await pilot.press("c")
        main_b = await loaded(pilot)
        assert main_b is not main and main_b.label == "B: "
        await wait_for(pilot, lambda: main_b.enqueue_list.mark_fn is not None, 10)
        cap_b = main_b.capture
        assert cap_b is not None
        mark_b = main_b.enqueue_list.mark_fn
        assert mark_b is not None
        assert mark_b(cap_b.position_of(22) or 0) == MARKS["different"]
        await pilot.press("d")
        await pilot.pause()
        assert main_b.state()["cursor"] == 22


@pytest.mark.child
@aio
async def test_one_capture_has_no_divergence_keys(pyocl_pocl: Path) -> None:
    app = make_app(pyocl_pocl)
    async with app.run_test(size=SIZE) as pilot:
        main = await loaded(pilot)
        assert main.enqueue_list.mark_fn is None
        d = main.active_bindings.get("d")
        assert d is None or d.enabled is False
        await pilot.press("d")
        await pilot.pause()
        assert main.state()["cursor"] == 0


def test_shared_opener_opens_each_path_once(tmp_path: Path) -> None:

    calls: list[Path] = []

    def fake(path: Path, progress: object, cancel: CancelToken) -> object:
        calls.append(path)
        return object()

    once = shared_opener(fake)  # type: ignore[arg-type]
    cancel = CancelToken()
    seen: list[float | None] = []

    def progress(event: ProgressEvent) -> None:
        seen.append(event.fraction)

    a1 = once(tmp_path, progress, cancel)
    a2 = once(tmp_path / ".", progress, cancel)
    b = once(tmp_path.parent, progress, cancel)
    assert a1 is a2 and b is not a1
    assert calls == [tmp_path, tmp_path.parent]
    assert seen == [1.0]  # the second caller is told it is complete
