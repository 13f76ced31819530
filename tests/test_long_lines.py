"""A multi-MB source line costs a small multiple of its size: file-scope statements and
``#define`` bodies longer than 64 KiB that declare no kernel or type are left out of the
signature parse (pcpp held ~100 bytes per byte of them), with a warning; everything else of
the source reads as before (kernels, their lines, macros still defined)."""

from __future__ import annotations

import contextlib
import io
import tracemalloc
from pathlib import Path

import pytest

from cltui.capture import signature
from cltui.capture.preprocess import LONG_STATEMENT, drop_long_statements
from cltui.cli import main
from tests.conftest import copy_capture

MB = 1 << 20
KERNEL = "__kernel void k(__global float* a, int n) { a[0] = 1; }\n"


def _fit(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


SOURCES = {
    "expression": lambda n: "float x = 0" + _fit(" + a*b", n) + ";\n" + KERNEL,
    "define": lambda n: "#define TABLE " + _fit("1.0f, ", n) + "\n#ifdef TABLE\n" + KERNEL
                        + "#endif\n",
    "declarations": lambda n: "float " + _fit("v1, ", n) + "v0;\n" + KERNEL,
    "body": lambda n: KERNEL.replace("a[0] = 1;", "a[0] = 0" + _fit(" + a[1]*a[2]", n) + ";"),
    "initializer": lambda n: "__constant float t[] = {" + _fit("1.0f, ", n) + "0};\n" + KERNEL,
}


@pytest.mark.parametrize("kind", sorted(SOURCES))
def test_a_long_line_costs_a_small_multiple_of_its_size(kind: str) -> None:
    src = SOURCES[kind](4 * MB)
    signature._parse_program_cached.cache_clear()
    tracemalloc.start()
    try:
        res = signature.parse_program(src)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10 * len(src), f"{kind}: {peak / len(src):.1f} bytes a byte"
    assert list(res.kernels) == ["k"]
    k = res.kernels["k"]
    assert [p.name for p in k.params] == ["a", "n"]
    assert k.span is not None and k.name_line == k.span[0] == src[:src.index("__kernel")].count(
        "\n") + 1


def test_what_is_left_out_keeps_lines_directives_and_kernels() -> None:
    long_expr = "0" + _fit(" + x", LONG_STATEMENT)
    text = ("#define A 1\n"
            f"float y = {long_expr}\n#if A\n + 1\n#endif\n;\n"   # directives inside it
            f"typedef struct {{ int f; }} big_t; float z = {long_expr};\n"
            f"__kernel void k(big_t b) {{}} float w = {long_expr};\n")
    warnings: list[str] = []
    out = drop_long_statements(text, warnings)
    assert out.count("\n") == text.count("\n")
    assert "#if A\n" in out and "#endif\n" in out
    assert "typedef struct { int f; } big_t;" in out and "__kernel void k(big_t b) {}" in out
    assert len(out) < 1000
    assert [w.split(":")[0] for w in warnings] == ["line 2", "line 7", "line 8"]
    assert "left out of the signature parse" in warnings[0]
    # a kernel in a long statement is kept; a short text is the same object
    keep = f"__kernel void q(int a[{long_expr}]);\n"
    assert drop_long_statements(keep, []) is keep
    assert drop_long_statements(KERNEL, []) is KERNEL


def test_show_json_on_a_capture_with_a_multi_mb_line(images_svm: Path, tmp_path: Path) -> None:
    cap = copy_capture(images_svm, tmp_path)
    line = "float x = 0" + _fit(" + a*b", 4 * MB) + ";\n"
    total = 0
    for p in [*cap.glob("*_source.cl"), *cap.glob("Replay/*/kernel.cl")]:
        p.write_text(line + p.read_text())
        total += p.stat().st_size
    assert total > 8 * 4 * MB * 0.9  # the program source and each replay folder's copy
    out = io.StringIO()
    tracemalloc.start()
    try:
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            main(["show", "--json", str(cap), "0"], standalone_mode=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert '"kernel": "downsample"' in out.getvalue()
    # every copy of the line is read (8 files): the peak is about their sum, not 100x it
    assert peak < 3 * total, f"{peak / total:.1f} bytes a byte of the sources"


def test_the_source_view_highlights_a_long_line_in_a_small_multiple_of_its_size() -> None:
    from rich.console import Console

    from cltui.tui.highlight import HIGHLIGHT_LIMIT, LineHighlighter

    line = "float x = 0" + _fit(" + a*b", 4 * MB) + ";"
    tracemalloc.start()
    try:
        hl = LineHighlighter(line + "\n" + KERNEL)
        text = hl.highlight(0)
        segments = list(text.render(Console(width=200)))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10 * len(line), f"{peak / len(line):.1f} bytes a byte"
    assert "".join(s.text for s in segments) == line  # all of it shown, the tail plain
    assert text.spans[0].end <= 5 and text.spans[0].style  # 'float' highlighted
    assert all(sp.end <= HIGHLIGHT_LIMIT for sp in text.spans)
    assert hl.highlight(1).plain == KERNEL.rstrip("\n")  # short lines as before
