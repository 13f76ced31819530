"""signature: kernel signatures parsed from the real captures' sources with their build options."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from cltui.capture.cltypes import CType
from cltui.capture.preprocess import skeletonize
from cltui.capture.signature import (
    KernelSignature,
    Param,
    kernel_span,
    param_spans,
    parse_build_options,
    parse_kernels,
    parse_program,
)

REPO = Path(__file__).resolve().parent.parent


def _programs(capture: Path) -> list[tuple[Path, str]]:
    """(source, options text) for every CLI_*_source.cl, options from the same P4_H8 prefix."""
    out = []
    for src in sorted(capture.glob("CLI_*_source.cl")):
        prefix = src.name[: -len("_source.cl")]
        opts = sorted(capture.glob(f"{prefix}_*_options.txt"))
        out.append((src, opts[0].read_text() if opts else ""))
    assert out, f"no sources in {capture}"
    return out


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8", "replace")


def _is_written(source: str, name: str) -> bool:
    return re.search(r"\b" + re.escape(name) + r"\s*\(", source) is not None


def _check_capture(capture: Path) -> int:
    n = 0
    for src, options in _programs(capture):
        text = _read(src)
        res = parse_program(text, options)
        assert res.kernels, f"{src.name}: no kernels"
        assert all(_is_written(text, name) for name in res.kernels), src.name
        assert res.missing_includes == [], (src.name, res.missing_includes)
        for k in res.kernels.values():
            for p in k.params:
                assert p.ctype.kind != "unknown", (src.name, k.name, p)
                assert p.ctype.size, (src.name, k.name, p)
            span = kernel_span(text, k.name, near=k.name_line)
            assert span == k.span
            assert span is not None and span[0] <= k.name_line <= span[1], (src.name, k.name)
            assert span[0] == k.line, (src.name, k.name, span, k.line)
            n += 1
    return n


def _check_replays(capture: Path) -> int:
    """Param counts vs Argument*.bin + Local*.txt; type names vs ArgumentDataTypes.txt."""
    checked = 0
    for d in sorted((capture / "Replay").iterdir()):
        source = (d / "kernel.cl").read_bytes().rstrip(b"\0").decode("utf-8", "replace")
        options = (d / "buildOptions.txt").read_text().strip()
        name = (d / "kernelName.txt").read_text()
        k = parse_kernels(source, options)[name]
        files = [f.name for f in d.iterdir() if re.fullmatch(r"(Argument\d+\.bin|Local\d+\.txt)",
                                                             f.name)]
        assert len(files) == len(k.params), (d.name, files, k.params)
        for f in files:
            idx = int(re.findall(r"\d+", f)[0])
            assert k.params[idx].is_local == f.startswith("Local"), (d.name, f)
            if f.startswith("Argument") and not k.params[idx].is_pointer \
                    and k.params[idx].ctype.kind in ("scalar", "vector", "struct"):
                assert (d / f).stat().st_size == k.params[idx].ctype.size, (d.name, f)
        types = d / "ArgumentDataTypes.txt"
        if types.is_file() and types.stat().st_size:
            names = [x for x in types.read_text().split("\n") if x]
            assert names == [p.type_name for p in k.params], d.name
        checked += 1
    return checked


def test_images_svm(images_svm: Path) -> None:
    assert _check_capture(images_svm) == 5
    assert _check_replays(images_svm) == 7
    src, options = _programs(images_svm)[0]
    ks = parse_kernels(_read(src), options)
    ds = ks["downsample"].params
    assert [(p.name, p.ctype.name, p.access, p.address_space) for p in ds] == [
        ("src", "image2d_t", "read_only", "global"), ("dst", "image2d_t", "write_only", "global")]
    sl = ks["sample_linear"].params
    assert [p.ctype.kind for p in sl] == ["image", "sampler", "vector", "scalar"]
    assert sl[2].is_pointer and sl[2].ctype.name == "float4"
    assert sl[2].type_text == "__global float4 *"
    assert sl[2].dtype == np.dtype((np.float32, (4,)))
    assert ks["volume_sum"].params[0].ctype.name == "image3d_t"
    svm = ks["svm_scale"].params
    assert [(p.address_space, p.is_pointer) for p in svm] == [
        ("global", True), ("private", False), ("local", True)]
    g = ks["gather_rgba"].params
    assert g[1].is_const and g[1].ctype.name == "int2" and g[2].ctype.name == "uchar4"
    assert g[2].dtype == np.dtype((np.uint8, (4,)))


def test_opencv(opencv: Path) -> None:
    assert _check_capture(opencv) >= 34
    _check_replays(opencv)
    # types that exist only through -D: KF's srcT=uchar16 / workT=int16 ...
    for src, options in _programs(opencv):
        if "-D OP_ABSDIFF" in options:
            ks = parse_kernels(_read(src), options)
            assert "srcT1=uchar16" in options
            assert any(p.ctype.name == "uchar" for k in ks.values() for p in k.params)
            return
    pytest.fail("OP_ABSDIFF program not found")


@pytest.mark.slow  # CPU seconds on a real capture: the full tier's (./dev test --fast leaves it)
def test_pyopencl_pocl(pyocl_pocl: Path) -> None:
    _check_capture(pyocl_pocl)
    _check_replays(pyocl_pocl)
    found = set()
    for src, options in _programs(pyocl_pocl):
        ks = parse_kernels(_read(src), options)
        if "clip_by_rank" in ks:
            p = ks["clip_by_rank"].params[6]
            assert (p.name, p.ctype.name, p.ctype.kind, p.ctype.size) == (
                "p", "clip_params_t", "struct", 16)
            assert [(f.name, f.ctype.name, f.offset) for f in p.ctype.fields] == [
                ("scale", "float", 0), ("offset", "float", 4), ("lo", "int", 8), ("hi", "int", 12)]
            found.add("clip")
        for k in ks.values():
            if any(p.ctype.name == "cfloat_t" for p in k.params):
                p = next(p for p in k.params if p.ctype.name == "cfloat_t")
                assert p.dtype == np.dtype(np.complex64)
                found.add("cfloat")
            if k.name == "run" and any(p.is_local for p in k.params):
                assert [p.address_space for p in k.params] == ["global", "global", "local",
                                                                "local"]
                assert [p.ctype.name for p in k.params] == ["float", "int", "float", "int"]
                found.add("bitonic")
            if "reqd_work_group_size" in k.attributes:
                assert re.fullmatch(r"\d+, \d+, \d+", k.attributes["reqd_work_group_size"])
                found.add("reqd")
    assert found == {"clip", "cfloat", "bitonic", "reqd"}


@pytest.mark.slow  # CPU seconds on a real capture: the full tier's (./dev test --fast leaves it)
def test_pyopencl_oclgrind(pyocl_oclgrind: Path) -> None:
    _check_capture(pyocl_oclgrind)
    assert _check_replays(pyocl_oclgrind) > 0


def test_heat2d(heat2d: Path) -> None:
    assert _check_capture(heat2d) >= 3
    _check_replays(heat2d)


def test_largest_source_is_fast(pyocl_oclgrind: Path) -> None:
    src = max(pyocl_oclgrind.glob("CLI_*_source.cl"), key=lambda p: p.stat().st_size)
    assert src.stat().st_size > 1_000_000
    prefix = src.name[: -len("_source.cl")]
    options = next(pyocl_oclgrind.glob(f"{prefix}_*_options.txt")).read_text()
    text = _read(src) + "\n// uncached\n"
    t = time.process_time()  # CPU time: another process's load does not count
    res = parse_program(text, options)
    elapsed = time.process_time() - t
    assert res.kernels and not res.preprocessed_fully
    assert elapsed < 5.0, elapsed  # a hang detector: the parse is ~0.2 s, a quadratic one minutes


# --------------------------------------------------------------------------- synthetic sources

REAL_SRC = """
#if VW == 4
typedef real4 realM;
#else
typedef real realM;
#endif
typedef struct { real a; int n; } pair_t;

__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void axpy(__global const realM* restrict x,
          __global realM *y,   // output
          const real alpha,
          pair_t p,
          __local volatile int* scratch)
{
    int i = get_global_id(0);
    if (i < 2) { y[i] = x[i] * alpha; }
}
"""


def test_macros_and_typedefs_from_options() -> None:
    ks = parse_kernels(REAL_SRC, "-D real=float -Dreal4=float4 -D VW=4")
    k = ks["axpy"]
    assert isinstance(k, KernelSignature) and k.attributes == {"reqd_work_group_size": "64, 1, 1"}
    x, y, alpha, p, scratch = k.params
    assert isinstance(x, Param)
    assert (x.ctype.name, x.is_const, x.is_restrict, x.is_pointer) == ("float4", True, True, True)
    assert x.type_text == "__global const realM * restrict"
    assert x.type_name == "realM*"
    assert (y.ctype.name, y.address_space, y.name) == ("float4", "global", "y")
    assert (alpha.ctype.name, alpha.is_pointer, alpha.is_const) == ("float", False, True)
    assert (p.ctype.name, p.ctype.size, p.ctype.align) == ("pair_t", 8, 4)
    assert (scratch.address_space, scratch.is_volatile, scratch.ctype.name) == (
        "local", True, "int")
    assert k.line == 9 and k.name_line == 10 and k.span == (9, 18)
    other = parse_kernels(REAL_SRC, "-D real=double -D VW=1")["axpy"]
    assert other.params[0].ctype.name == "double"
    assert other.params[3].ctype.size == 16


@pytest.mark.parametrize(
    "options",
    ['-D real=float -D real4=float4 -D VW=4', '-Dreal=float -Dreal4=float4 -DVW=4',
     '-D "real=float" -D real4=float4 -D VW=4 -D UNUSED',
     '-D real=float -D real4=float4 -D VW=4 -D X -U X -Dfoo'],
)
def test_option_spellings(options: str) -> None:
    assert parse_kernels(REAL_SRC, options)["axpy"].params[0].ctype.name == "float4"


def test_undef_and_unknown_type() -> None:
    k = parse_kernels(REAL_SRC, "-D real=float -D VW=4 -U real")["axpy"]
    assert k.params[0].ctype.kind == "unknown"  # real4 unknown: never an exception
    assert k.params[0].ctype.size is None
    res = parse_program(REAL_SRC, "-D VW=1")
    assert any("unknown type" in w for w in res.warnings)


def test_parse_build_options() -> None:
    o = parse_build_options('-D a=1 -Db -D c -U d -Ue -I /x/y -I/z -cl-std=CL2.0 '
                            '-D "q=two words" -cl-fast-relaxed-math -D k=f(a,b);g()')
    assert o.macros == [("D", "a", "1"), ("D", "b", "1"), ("D", "c", "1"), ("U", "d", None),
                        ("U", "e", None), ("D", "q", "two words"), ("D", "k", "f(a,b);g()")]
    assert o.include_dirs == ["/x/y", "/z"]
    assert o.cl_std == 200 and o.fast_math
    assert parse_build_options('-D "unterminated').macros == [("D", '"unterminated', "1")]


def test_includes(tmp_path: Path) -> None:
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "types.h").write_text("typedef struct { short a; short b; } two_t;\n")
    src = '#include "types.h"\n#include <nope.h>\n__kernel void f(__global two_t* t) {}\n'
    res = parse_program(src, f"-I {inc}")
    assert res.kernels["f"].params[0].ctype.size == 4
    assert res.missing_includes == ["nope.h"]
    res2 = parse_program(src, f"-I{inc}")
    assert res2.kernels["f"].params[0].ctype.size == 4
    res3 = parse_program(src, "", include_dirs=[str(inc)])
    assert res3.kernels["f"].params[0].ctype.size == 4
    res4 = parse_program(src, "-I /does/not/exist")
    assert res4.kernels["f"].params[0].ctype.kind == "unknown"
    assert "types.h" in res4.missing_includes
    assert any("/does/not/exist" in w for w in res4.warnings)


@pytest.mark.child
def test_pyopencl_include_fallback_without_importing_pyopencl() -> None:
    code = (
        "import sys\n"
        "from cltui.capture.signature import parse_program\n"
        "src = '#include <pyopencl-complex.h>\\n"
        "__kernel void k(__global cfloat_t *z, cfloat_t a) { z[0] = cfloat_mul(a, a); }\\n'\n"
        "r = parse_program(src, '-I /home/someone/venv/lib/python3.11/site-packages/pyopencl/cl')\n"
        "assert r.missing_includes == [], r.missing_includes\n"
        "assert [p.ctype.name for p in r.kernels['k'].params] == ['cfloat_t', 'cfloat_t']\n"
        "assert 'pyopencl' not in sys.modules\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_kernel_defined_through_macros() -> None:
    src = ("#define KERNEL __kernel\n#define GLOBAL_MEM __global\n"
           "#define REQD(X) __attribute__((reqd_work_group_size(X, 1, 1)))\n"
           "typedef uint key_t;\n\n"
           "KERNEL\nREQD(16)\nvoid scan(GLOBAL_MEM key_t *keys, int n)\n{\n  keys[0] = n;\n}\n"
           "void helper(__global float *kernel) { }\n"
           "kernel void plain(image2d_t img, read_write image2d_t rw, sampler_t s,\n"
           "                  __constant float *c) { }\n")
    ks = parse_kernels(src, "")
    assert set(ks) == {"scan", "plain"}
    assert ks["scan"].attributes == {"reqd_work_group_size": "16, 1, 1"}
    assert ks["scan"].line == 6 and ks["scan"].name_line == 8
    assert ks["scan"].params[0].ctype.name == "uint" and ks["scan"].params[0].type_name == "key_t*"
    plain = ks["plain"].params
    assert [p.access for p in plain] == ["read_only", "read_write", None, None]
    assert plain[3].address_space == "constant"
    assert kernel_span(src, "scan") == (6, 11)
    assert kernel_span(src, "plain") == (13, 14)
    assert kernel_span(src, "helper") == (12, 12)  # any top-level function definition
    assert kernel_span(src, "missing") is None
    assert param_spans(src, "plain") == [(13, 19, 13, 31), (13, 34, 13, 56), (13, 59, 13, 69),
                                         (14, 19, 14, 37)]


def test_param_spans_multiline_and_comments() -> None:
    lines = REAL_SRC.split("\n")
    spans = param_spans(REAL_SRC, "axpy")
    assert spans is not None and len(spans) == 5
    texts = [lines[a - 1][b - 1:d] if a == c else None for a, b, c, d in spans]
    assert texts == ["__global const realM* restrict x", "__global realM *y", "const real alpha",
                     "pair_t p", "__local volatile int* scratch"]


def test_comments_strings_and_odd_input_never_raise() -> None:
    src = ('/* __kernel void fake(int a) { } */\n'
           '// __kernel void fake2(int b) { }\n'
           '__constant char msg[] = "}{ __kernel void fake3() {";\n'
           '__constant float tbl[3] = { 1, 2, 3 };\n'
           '__kernel void real_one(__global float *a) { a[0] = \'}\'; }\n')
    assert set(parse_kernels(src, "")) == {"real_one"}
    assert kernel_span(src, "real_one") == (5, 5)
    for bad in ["", "__kernel", "__kernel void (", "#if 1\n__kernel void x(int a) {",
                "__kernel void f(int a) { #error nope\n }", "#include", "}}}}",
                "__kernel void g(struct { int a; } s) {}", "#error stop\n__kernel void h() {}"]:
        parse_program(bad, "-D ")
        kernel_span(bad, "f")


def test_if_branches_with_unbalanced_braces_fall_back_to_full_text() -> None:
    src = ("#ifdef A\n__kernel void f(__global int *a) {\n#else\n"
           "__kernel void f(__global float *a) {\n#endif\n a[0] = 0;\n}\n")
    assert skeletonize(src) is None
    assert parse_kernels(src, "-D A")["f"].params[0].ctype.name == "int"
    assert parse_kernels(src, "")["f"].params[0].ctype.name == "float"


def test_skeleton_keeps_lines_and_directives() -> None:
    src = "__kernel void f(int a)\n{\n#define X 3\n  int b = X;\n}\n__kernel void g(int c) {}\n"
    sk = skeletonize(src)
    assert sk is not None
    assert sk.count("\n") == src.count("\n")
    assert "#define X 3" in sk and "int b" not in sk


def test_dtype_property() -> None:
    k = parse_kernels("__kernel void f(__global ushort8 *v, double d, int3 q) {}", "")["f"]
    assert k.params[0].dtype == np.dtype((np.uint16, (8,)))
    assert k.params[1].dtype == np.dtype(np.float64)
    q = k.params[2].ctype
    assert isinstance(q, CType) and q.size == 16 and q.lanes == 3
