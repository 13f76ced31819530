"""Unit tests of the TUI's pure parts: OpenCL lexer, styles lookup, formatters, image decode,
buffer statistics, colour detection and the ``open`` command's argument checks."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from pygments.token import Comment, Keyword, Name

from cltui.capture.cltypes import parse_type
from cltui.capture.model import ImageFormat
from cltui.tui.app import wants_ansi
from cltui.tui.format import ellipsize, fmt_bytes, fmt_ns, fmt_size
from cltui.tui.highlight import LineHighlighter, OpenCLLexer, token_style
from cltui.tui.styles import styles_dir, stylesheet_paths
from cltui.tui.widgets.buffer_view import buffer_stats, numeric_view
from cltui.tui.widgets.image_view import image_rgb

REPO = Path(__file__).resolve().parent.parent


def _tokens(src: str) -> dict[str, object]:
    return {v: t for _i, t, v in OpenCLLexer().get_tokens_unprocessed(src) if v.strip()}


def test_lexer_knows_opencl_words() -> None:
    toks = _tokens(
        "__kernel void f(__global const float4* p, __read_only image2d_t img, sampler_t s,"
        " __local uchar16* t) { barrier(CLK_LOCAL_MEM_FENCE); int2 q = convert_int2_sat(p[0].xy);"
        " float v = native_sin(1.0f) + get_global_id(0); }"
    )
    assert toks["__kernel"] is Keyword.Reserved
    assert toks["__read_only"] is Keyword.Reserved
    assert toks["__global"] is Keyword.Namespace and toks["__local"] is Keyword.Namespace
    for t in ("float4", "image2d_t", "sampler_t", "uchar16", "int2"):
        assert toks[t] is Keyword.Type, t
    for b in ("barrier", "convert_int2_sat", "native_sin", "get_global_id"):
        assert toks[b] is Name.Builtin, b
    assert toks["CLK_LOCAL_MEM_FENCE"] is Name.Constant
    assert toks["f"] not in (Name.Builtin, Keyword.Type)
    assert token_style(Keyword.Namespace) != token_style(Name)


def test_line_highlighter_carries_block_comments() -> None:
    src = (
        'int a; /* start\n__global still "comment\n end */ __global int b;\n'
        'char *s = "/*";\nint c;'
    )
    hl = LineHighlighter(src)
    assert [hl.starts_in_comment(i) for i in range(len(hl))] == [False, True, True, False, False]
    middle = hl.highlight(1)
    assert middle.plain == '__global still "comment'
    comment = token_style(Comment)
    assert all(span.style == comment for span in middle.spans)
    last = hl.highlight(2)
    assert last.plain == " end */ __global int b;"
    styles = {last.plain[s.start : s.end]: s.style for s in last.spans}
    assert styles["__global"] == token_style(Keyword.Namespace)
    # a "/*" inside a string opens no comment
    assert not hl.starts_in_comment(4)


def test_line_highlighter_is_lazy_on_megabyte_sources(pyocl_oclgrind: Path) -> None:
    biggest = max(pyocl_oclgrind.glob("CLI_*_source.cl"), key=lambda p: p.stat().st_size)
    source = biggest.read_text(errors="replace")
    assert len(source) > 1_000_000
    # CPU time, side by side: another process's load does not count
    start = time.process_time()
    hl = LineHighlighter(source)
    middle = len(hl) // 2
    text = hl.highlight(middle)
    lazy = time.process_time() - start
    assert text.plain == hl.lines[middle].expandtabs(4)
    start = time.process_time()
    for i in range(0, len(hl), 4):  # a quarter of the lines
        hl.highlight(i)
    quarter = time.process_time() - start
    assert lazy < quarter / 4, (lazy, quarter)  # ~1/100 here: one line, not the whole source


def test_styles_found_in_checkout_and_shipped_in_wheel() -> None:
    assert styles_dir() == REPO / "styles"
    paths = stylesheet_paths()
    assert paths[0].name == "app.tcss" and all(p.suffix == ".tcss" for p in paths)
    pyproject = (REPO / "pyproject.toml").read_text()
    assert '"styles" = "cltui/_styles"' in pyproject


def test_formatters() -> None:
    assert fmt_ns(999) == "999 ns"
    assert fmt_ns(12_345) == "12.3 µs"
    assert fmt_ns(187_000) == "187 µs"
    assert fmt_ns(22_845_184) == "22.8 ms"
    assert fmt_ns(-1) == "" and fmt_ns(None) == ""
    assert fmt_bytes(100) == "100 B" and fmt_bytes(32768) == "32.0 KiB"
    assert fmt_bytes(3 * 1024**3) == "3.0 GiB"
    assert fmt_size((64, 48)) == "64x48" and fmt_size(None) == "-"
    assert ellipsize("heat_stencil", 6) == "heat_…" and ellipsize("ab", 4) == "ab  "


def test_image_rgb_formats() -> None:
    w, h = 4, 2
    rgba = np.zeros((h, w, 4), dtype=np.float32)
    rgba[0, 1] = (1.0, 0.5, 0.0, 1.0)
    fmt = ImageFormat("CL_RGBA", "CL_FLOAT", "CL_MEM_OBJECT_IMAGE2D", w, h, 1, 1)
    out = image_rgb(rgba.view(np.uint8).reshape(-1), (w, h, 1), 128, fmt)
    assert out.shape == (h, w, 3) and out[0, 1].tolist() == [255, 128, 0]
    bgra = np.zeros((h, w, 4), dtype=np.uint8)
    bgra[1, 2] = (10, 20, 30, 255)  # B, G, R, A
    fmt8 = ImageFormat("CL_BGRA", "CL_UNORM_INT8", "CL_MEM_OBJECT_IMAGE2D", w, h, 1, 1)
    out = image_rgb(bgra.reshape(-1), (w, h, 1), 32, fmt8)
    assert out[1, 2].tolist() == [30, 20, 10]
    # single channel 3-D volume of uint (not normalised): stretched to its range, slice z=1
    vol = np.arange(2 * 2 * 2, dtype=np.uint8)
    fmt_r = ImageFormat("CL_R", "CL_UNSIGNED_INT8", "CL_MEM_OBJECT_IMAGE3D", 2, 2, 2, 1)
    z1 = image_rgb(vol, (2, 2, 2), 8, fmt_r, z=1)
    assert z1[:, :, 0].tolist() == [[0, 85], [170, 255]]
    # a short file gives a black picture, not an exception
    assert image_rgb(vol[:3], (2, 2, 2), 8, fmt_r).max() == 0


def test_buffer_stats() -> None:
    pre = np.array([1.0, 2.0, np.nan, 4.0, np.inf, -3.0], dtype=np.float32)
    post = pre.copy()
    post[1] = 7.0
    post[2] = 0.0
    stats = buffer_stats(post.view(np.uint8), parse_type("float"), pre.view(np.uint8))
    assert stats.count == 6 and stats.changed == 2
    assert stats.minimum == -3.0 and stats.maximum == 7.0 and stats.inf == 1 and stats.nan == 0
    assert stats.mean == pytest.approx((1 + 7 + 0 + 4 - 3) / 5)
    pre_stats = buffer_stats(pre.view(np.uint8), parse_type("float"))
    assert pre_stats.nan == 1 and pre_stats.changed is None
    # vectors count lanes, 3-lane vectors skip the padding lane; a struct of numbers has its
    # fields as lanes (in their common type), one with a field that is no number has none
    f3 = np.array([[1, 2, 3, 99], [4, 5, 6, 99]], dtype=np.float32).view(np.uint8).reshape(-1)
    lanes = numeric_view(f3, parse_type("float3"))
    assert lanes is not None and lanes.tolist() == [1, 2, 3, 4, 5, 6]
    pairs = f3.view(np.dtype([("x", "<f4"), ("k", "<i4")]))
    lanes = numeric_view(f3, parse_type("struct { float x; int k; }"))
    assert lanes is not None
    assert lanes.tolist() == [v for p in pairs.tolist() for v in (float(p[0]), float(p[1]))]
    st = buffer_stats(f3, parse_type("struct { float x; int k; }"), f3)
    assert st.minimum == float(lanes.min()) and st.changed == 0 and st.count == 4


def test_wants_ansi() -> None:
    assert wants_ansi({"TERM": "xterm", "COLORTERM": ""})
    assert wants_ansi({"TERM": "linux"})
    assert not wants_ansi({"TERM": "xterm-256color"})
    assert not wants_ansi({"TERM": "xterm", "COLORTERM": "truecolor"})


def test_open_command_rejects_bad_paths(tmp_path: Path) -> None:
    from cltui.cli import main

    runner = CliRunner()
    missing = tmp_path / "nothing"
    result = runner.invoke(main, [str(missing)])
    assert result.exit_code == 2
    assert result.output.strip().startswith(f"cltui: {missing} does not exist (a capture folder")
    a_file = tmp_path / "clintercept_log.txt"
    a_file.write_text("")
    result = runner.invoke(main, ["open", str(a_file)])
    assert result.exit_code == 2 and "is a file, not a capture folder" in result.output
    assert f"give the folder that holds it: {tmp_path}" in result.output
    assert "Traceback" not in result.output


@pytest.mark.child
def test_wheel_ships_styles_and_the_helper_finds_them(tmp_path: Path) -> None:
    import subprocess
    import sys
    import zipfile

    wheel_builder = pytest.importorskip("hatchling.builders.wheel")
    builder = wheel_builder.WheelBuilder(str(REPO))
    (wheel,) = list(builder.build(directory=str(tmp_path / "dist"), versions=["standard"]))
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        zf.extractall(site)
    shipped = {n.rsplit("/", 1)[1] for n in names if n.startswith("cltui/_styles/")}
    assert shipped == {p.name for p in stylesheet_paths()}
    code = "from cltui.tui.styles import styles_dir; print(styles_dir())"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
    )
    assert Path(out.stdout.strip()) == site / "cltui" / "_styles"


def test_comment_starts_skip_comments_whole_and_unclosed_strings_end_at_their_line() -> None:
    from cltui.tui.highlight import _comment_starts

    # a quote inside a comment starts no string (it used to swallow the comment's end)
    assert _comment_starts("/* it's */ x; /* m\nl */ y = \"/*\";\nz", 3) == [False, True, False]
    assert _comment_starts('/* x "*/ b; /* m\nl */', 2) == [False, True]
    # "/*" inside a string, or after an unclosed quote on its line, opens no comment
    assert _comment_starts('s = "/* not";\nx', 2) == [False, False]
    assert _comment_starts('s = "open /*\nx', 2) == [False, False]
    assert _comment_starts("a /* multi\nline\n*/ b", 3) == [False, True, True]
