"""Names from a capture are shown with control characters escaped (CLI text, errors, the app);
``--json`` keeps them exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cltui.cli import main
from cltui.text.escape import escape_controls
from tests.conftest import copy_capture
from tests.test_tui_replay import SIZE, aio, loaded

EVIL = "down\x1b[31msample\x07\u202e"
SHOWN = "down\\x1b[31msample\\x07\\u202e"
RAW = ("\x1b", "\x07", "\u202e")


def test_escape_controls() -> None:
    assert escape_controls("plain name_1 µ é 漢") == "plain name_1 µ é 漢"
    assert escape_controls(EVIL) == SHOWN
    assert escape_controls("a\rb\x00c\x7fd\x9be\u2066f\u200fg") == (
        "a\\x0db\\x00c\\x7fd\\x9be\\u2066f\\u200fg"
    )
    assert escape_controls("a\nb\tc") == "a\\x0ab\\x09c"
    assert escape_controls("a\nb\x1b", keep_newlines=True) == "a\nb\\x1b"
    assert escape_controls("back\\slash") == "back\\slash"
    # linear: a long run of controls escapes in one pass
    assert len(escape_controls("\x1b" * 100_000)) == 400_000


@pytest.fixture
def evil(tmp_path: Path, images_svm: Path) -> Path:
    """images_svm_pocl whose log names its first kernel ``down ESC[31m sample BEL RLO``."""
    cap = copy_capture(images_svm, tmp_path)
    log = cap / "clintercept_log.txt"
    log.write_bytes(log.read_bytes().replace(b"downsample", EVIL.encode()))
    return cap


def _run(*args: str) -> tuple[int, str, str]:
    # color=True: click would otherwise strip ANSI sequences itself and hide a raw ESC
    r = CliRunner().invoke(main, list(args), color=True)
    return r.exit_code, r.stdout, r.stderr


def _clean(text: str) -> None:
    for ch in RAW:
        assert ch not in text, repr(text[:300])


def test_cli_text_escapes_and_json_is_exact(evil: Path) -> None:
    code, out, err = _run("ls", str(evil))
    assert code == 0 and SHOWN in out
    _clean(out + err)
    code, out, err = _run("info", str(evil))
    assert code == 0 and SHOWN in out
    _clean(out + err)
    code, out, err = _run("show", str(evil), "0")
    assert code == 0 and f"enqueue 0  kernel  {SHOWN}" in out
    _clean(out + err)
    code, out, err = _run("ls", str(evil), "--json")
    assert code == 0
    assert json.loads(out)[0]["kernel"] == EVIL  # exact
    code, out, err = _run("show", str(evil), "0", "--json")
    assert code == 0 and json.loads(out)["kernel"] == EVIL
    code, out, err = _run("ls", str(evil), "--kernel", "sample\x07")
    _clean(out + err)


def test_error_lines_escape(tmp_path: Path) -> None:
    bad = tmp_path / f"no{EVIL}such"
    code, out, err = _run("show", str(bad), "0")
    assert code == 2
    assert SHOWN in err
    _clean(out + err)


@pytest.mark.child
@aio
async def test_app_renders_no_raw_control(evil: Path) -> None:
    from cltui.tui.app import make_app
    from cltui.tui.widgets.enqueue_list import EnqueueList

    async with make_app(evil).run_test(size=SIZE) as pilot:
        main_screen = await loaded(pilot)
        await pilot.pause()
        lst = main_screen.query_one(EnqueueList)
        lines = ["".join(seg.text for seg in lst.render_line(y)) for y in range(6)]
        assert any(SHOWN in ln for ln in lines), lines
        _clean("".join(lines))
        # the whole screen as drawn (list, panes, status line, notices)
        screen_text = pilot.app.export_screenshot()
        _clean(screen_text)
        assert "\\x1b[31msample" in screen_text or SHOWN[:8] in screen_text
    from cltui.capture import open_capture
    from cltui.tui.widgets.detail_panes import enqueue_summary

    summary = enqueue_summary(open_capture(evil).enqueue(0))
    assert SHOWN in summary
    _clean(summary)
