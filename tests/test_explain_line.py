"""cltui explain's "which line": the instrumentation (libclang, pure) and the first diverging
statement on PoCL vs Oclgrind for the planted_divergence_pocl capture (its README gives each
kernel's line) and the pyopencl library's sin_kernel (1 ULP apart on Oclgrind)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cltui.analysis.explain.instrument import instrument
from cltui.analysis.explain.line import parse_items
from cltui.cli import main
from tests.conftest import capture_path
from tests.explain_cli import explain_json, line_of

KERNEL = """
float twice(float x) { float y = x * 2.0f; y += 1.0f; return y; }
__kernel void k(__global float4 *o, read_only image2d_t im, sampler_t s,
                __local float *tile, write_only image2d_t out)
{
    int2 c = (int2)(get_global_id(0), 0);
    float4 v = read_imagef(im, s, c);
    v.x = twice(v.y);
    tile[get_local_id(0)] = v.x;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < 4; k++) { v.y += tile[k]; }
    write_imagef(out, c, v);
    o[get_global_id(0)] = v;
}
__kernel void other(__global float *p) { p[0] = twice(p[1]); }
"""


def test_instrument_records_inits_assignments_calls_images_and_local_memory() -> None:
    inst = instrument(KERNEL, "k", "-D UNUSED=1", [(3, 0, 0), (4, 0, 0)])
    sites = {(s.line, s.target): s for s in inst.sites}
    assert (2, "y") in sites and sites[2, "y"].function == "twice"  # a called function
    assert sites[7, "v"].expr == "read_imagef(im, s, c)" and sites[7, "v"].lanes == 4
    assert [o.text for o in sites[7, "v"].operands] == ["c"]  # the image and sampler are no values
    assert sites[8, "v.x"].operands[0].text == "v.y"  # a vector component
    assert sites[9, "tile[get_local_id(0)]"].operands[0].text == "v.x"  # __local memory
    assert {o.text for o in sites[11, "v.y"].operands} == {"v.y", "tile[k]"}
    assert sites[12, "out"].what == "write_image"
    src = inst.source
    assert "float twice(float x, __global uint *cltui_t, uint *cltui_s)" in src
    assert "twice(v.y, cltui_t, cltui_s)" in src  # from the traced kernel
    assert "twice(p[1], (__global uint *)0, (uint *)0)" in src  # from a kernel not traced
    assert "write_only image2d_t out, __global uint *cltui_trace)" in src
    assert "get_global_id(0) == 4ul" in src
    # no line moves: the original's line numbers stay the instrumented kernel's
    tail = src[src.index("#line"):].split("\n", 1)[1]
    assert tail.count("\n") == KERNEL[KERNEL.index("float twice"):].count("\n")


def test_items_are_global_ids() -> None:
    assert parse_items(["5", "3,1 7,2,1", "5"]) == [(5, 0, 0), (3, 1, 0), (7, 2, 1)]
    with pytest.raises(Exception, match="X, X,Y or X,Y,Z"):
        parse_items(["a,b"])


# enqueue -> the README's first diverging line (enqueue 4: sin on line 7, where it agrees
# exp on line 8)
PLANTED_LINES = {1: (8, "f"), 4: (7, "s"), 7: (6, "n"), 10: (6, "u")}


@pytest.mark.child
@pytest.mark.device
@pytest.mark.parametrize("enqueue", sorted(PLANTED_LINES))
def test_explain_names_the_planted_line(planted: Path, enqueue: int) -> None:
    code, rep = explain_json(planted, enqueue)
    line = line_of(rep)
    assert code == 1 and line["status"] == "found", line["text"]
    assert (line["site"]["line"], line["site"]["target"]) == PLANTED_LINES[enqueue]
    first = line["first"]
    assert first["a"] != first["b"] and first["operands_equal"] is True
    assert line["same_outputs"] == {"a": True, "b": True}
    assert line["chosen"] == "automatic" and len(line["items"]) > 1


@pytest.mark.child
@pytest.mark.device
def test_explain_line_text_markdown_and_given_items(planted: Path, tmp_path: Path) -> None:
    md = tmp_path / "r.md"
    res = CliRunner().invoke(main, ["explain", str(planted), "1", "-d", "pocl", "-d",
                                    "oclgrind", "--items", "3 4", "--markdown", str(md)])
    assert res.exit_code == 1, res.output
    assert "which line: line 8 (contraction): f = mad(m, b[i], c[i])" in res.output
    assert "  8 |     float f = mad(m, b[i], c[i]);\n    |               ^^^^^^^^^^^^^^^^^^" in (
        res.output)
    assert "operand m = " in res.output and "traced work-items (given): (3), (4)" in res.output
    text = md.read_text()
    assert "## Which line" in text and "| work-item | `f` on" in text


@pytest.mark.child
@pytest.mark.device
def test_explain_line_control_and_relaxed_division(planted: Path) -> None:
    code, rep = explain_json(planted, 16)
    assert code == 0 and line_of(rep)["status"] == "no-divergence"
    # a counting trace keeps PoCL from vectorising, and its scalar division is exact: the
    # dense trace (no counter, no branch, no operands) computes the original's outputs
    _, rep = explain_json(planted, 13)
    line = line_of(rep)
    assert line["status"] == "found" and line["site"]["line"] == 6, line["text"]
    assert line["recording"].startswith("dense") and line["first"]["earlier_agree"] is True
    assert line["same_outputs"] == {"a": True, "b": True}
    assert "every statement before it agrees" in line["text"]


@pytest.mark.child
@pytest.mark.device
def test_explain_line_of_the_pyopencl_sin_kernel() -> None:
    code, rep = explain_json(capture_path("pyopencl_lib_pocl"), 22)
    line = line_of(rep)
    assert code == 1 and line["status"] == "found", line["text"]
    assert line["site"]["line"] == 18 and line["site"]["expr"] == "sin(y[i])"
    assert line["first"]["operands_equal"] is True


@pytest.mark.child
@pytest.mark.device
def test_explain_line_through_images_local_memory_and_barriers() -> None:
    images = capture_path("images_svm_pocl")
    # a read through a LINEAR sampler: the devices' filtering differs by up to 2 ULP
    code, rep = explain_json(images, 2)
    line = line_of(rep)
    assert code == 1 and line["status"] == "found", line["text"]
    assert line["site"]["line"] == 12 and line["site"]["expr"] == "read_imagef(src, s, uv)"
    assert line["site"]["type"] == "float4" and line["first"]["operands_equal"] is True
    # and why: the linear filter done in the kernel, in float, removes it (the same rebuild
    # removes NVIDIA's 98,172-ULP difference on an H200: docs/explain-examples/)
    assert rep["why"]["cause"] == "linear-filter" and rep["why"]["within_spec"] is None
    # image reads and writes, __local memory and a barrier: the instrumented kernels compute
    # the original's outputs on both devices, and the traces agree
    for enqueue, items, sites in ((0, "1,1 2,3", 6), (6, "1 2 200", 4)):
        code, rep = explain_json(images, enqueue, "--items", items)
        line = line_of(rep)
        assert code == 0 and line["status"] == "no-difference", line["text"]
        assert line["same_outputs"] == {"a": True, "b": True} and line["sites"] == sites
        assert line["text"] == "the traced statements agree for every chosen work-item"


def test_the_walk_tells_a_parting_expression_from_an_upstream_operand() -> None:
    from cltui.analysis.explain.line import _first
    from cltui.analysis.explain.trace import Entry

    inst = instrument("__kernel void k(__global float *a, __global float *o)\n"
                      "{ float s = a[0] * 2.0f; float t = s + a[1]; o[0] = t; }\n",
                      "k", "", [(0, 0, 0)])  # fmt: skip
    s_site, t_site = inst.sites[0], inst.sites[1]
    assert [o.text for o in t_site.operands] == ["s", "a[1]"]

    def trace(s_bits: int, a1_bits: int, t_bits: int) -> list[Entry]:
        return [Entry(s_site.id, 0, 1, 0, 7, 0), Entry(s_site.id, 0, 0, 0, s_bits, 0),
                Entry(t_site.id, 0, 1, 0, s_bits, 0), Entry(t_site.id, 0, 2, 0, a1_bits, 0),
                Entry(t_site.id, 0, 0, 0, t_bits, 0)]  # fmt: skip

    here = _first(inst.sites, trace(1, 2, 3), trace(1, 2, 4))
    assert here is not None and (here["kind"], here["line"]) == ("here", 2)
    assert here["operands_equal"] is True
    up = _first(inst.sites, trace(1, 2, 3), trace(1, 5, 4))  # a[1] differs: from memory
    assert up is not None and (up["kind"], up["operand"]) == ("upstream", "a[1]")
    first = _first(inst.sites, trace(1, 2, 3), trace(9, 2, 3))  # s differs first
    assert first is not None and first["site"] == s_site.id
    assert _first(inst.sites, trace(1, 2, 3), trace(1, 2, 3)) is None


def test_statements_a_macro_expands_to_are_not_instrumented() -> None:
    src = ("#define SQ(x) ((x)*(x))\n#define UPD(v) tmp += v * 2.0f;\n"
           "#define DECL float w = 3.0f;\n"
           "__kernel void k(__global float *a, __global float *o) {\n"
           "  float tmp = SQ(a[0]);\n  UPD(a[1])\n  DECL\n  tmp += w;\n  o[0] = tmp;\n}\n")
    inst = instrument(src, "k", "", [(0, 0, 0)])
    assert [(s.line, s.target) for s in inst.sites] == [(5, "tmp"), (8, "tmp"), (9, "o[0]")]
    assert "UPD(a[1])\n  DECL\n" in inst.source  # the macros' calls are left as they are


def test_the_watch_run_checks_every_store_to_memory() -> None:
    from cltui.analysis.explain.source import Base
    from cltui.analysis.explain.watch import Reader, Target, watch_source

    src = ("__kernel void k(__global float *o, __local float *t)\n{\n"
           "  __local float tile[8];\n  float p = 1.0f;\n  int l = get_local_id(0);\n"
           "  tile[l] = p;\n  barrier(CLK_LOCAL_MEM_FENCE);\n  o[l] = tile[7 - l] + p;\n}\n")
    w = watch_source(src, "k", "", [Target(Base("o", 0, None), 8),
                                    Target(Base("tile", None, 32), 4, (1, 0, 0))],
                     Reader((3, 0, 0), 3, 1))  # fmt: skip
    text = w.source
    # every store to memory is compared with the watched addresses; private ones are not
    assert "tile[l] = p; cltui_wst(cltui_t, cltui_s, 2u, 0u, (ulong)&(tile[l])" in text
    assert "o[l] = tile[7 - l] + p; cltui_wst(cltui_t, cltui_s, 3u, 0u, (ulong)&(o[l])" in text
    assert "(ulong)&(p)" not in text and "(ulong)&(l)" not in text
    # work-item 3's read of tile[7 - l] on line 8; barriers counted
    assert ("if (get_global_id(0) == 3ul && get_global_id(1) == 0ul && get_global_id(2) == 0ul)"
            " cltui_wst(cltui_t, cltui_s, 3u, 1u, (ulong)&(tile[7 - l])") in text
    assert "barrier(CLK_LOCAL_MEM_FENCE); if (cltui_s != 0) cltui_s[0] += 1u;" in text
    # the parameter's address at the start; the __local array's after its declaration, in
    # work-group 1 only
    assert "ulong w = (ulong)(o) + 8ul; cltui_s[1]" in text
    assert ("__local float tile[8]; { ulong w = (get_group_id(0) == 1ul && get_group_id(1) == "
            "0ul && get_group_id(2) == 0ul) ? (ulong)(tile) + 4ul : 0xFFFFFFFFFFFFFFFFul;") in text
    assert w.words == 2 + 8 * 4096 and w.items == []
