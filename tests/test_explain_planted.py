"""cltui explain's image-write and order-dependence causes: the rewrites (pure), the planted
synthetic captures of :mod:`tests.planted_synth` on PoCL vs Oclgrind, and heat2d's
write-write race in ``heat_boundary``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cltui.analysis.explain.imagewrite import CONVERT, spec_image_writes
from cltui.analysis.explain.order import REVERSED_PREFIX, atomics_called, reversed_order
from cltui.cli import main
from tests import planted_synth
from tests.explain_cli import explain_json, line_of
from tests.schemas import validate


def test_reversed_order_reads_every_id_in_reverse_and_leaves_comments() -> None:
    src = ("kernel void k(global int *o) { // get_global_id(0)\n"
           "  o[get_global_id(0)] = get_local_id(1) + get_group_id(0) + get_local_linear_id(); }")
    out, n = reversed_order(src)
    assert n == 4
    assert f"o[{REVERSED_PREFIX}get_global_id(0)] = {REVERSED_PREFIX}get_local_id(1)" in out
    assert f"{REVERSED_PREFIX}get_local_linear_id()" in out
    assert "// get_global_id(0)\n" in out  # a comment is not code
    assert reversed_order("kernel void k() {}") == ("kernel void k() {}", 0)


def test_image_writes_are_converted_as_the_specification_writes_it() -> None:
    src = "write_imagef(out, (int2)(x, f(y, 2)), (float4)(v, 0, 0, 1)); /* write_imagef(a,b,c) */"
    out, n = spec_image_writes(src)
    assert n == 1
    assert (f"write_imagef(out, (int2)(x, f(y, 2)), {CONVERT}(get_image_channel_data_type(out), "
            "(float4)(v, 0, 0, 1)));") in out
    assert "convert_char4_sat_rte(z * 127.0f)" in out and "isnan(v)" in out
    assert spec_image_writes("write_imagei(o, c, v);") == ("write_imagei(o, c, v);", 0)


def test_atomics_are_found_in_code_only() -> None:
    src = "// atomic_add(p, 1)\n x = atomic_cmpxchg(p, a, b) + atom_inc(q) + my_atomic(z);"
    assert atomics_called(src) == ["atomic_cmpxchg", "atom_inc"]


@pytest.mark.child
@pytest.mark.device
def test_image_write_conversion_outside_the_specification_on_oclgrind(tmp_path: Path) -> None:
    code, rep = explain_json(planted_synth.write("image_nan", tmp_path / "cap"), 0)
    assert code == 1 and rep["verdict"]["status"] == "diverges", rep["verdict"]
    why = rep["why"]
    assert why["cause"] == "image-write" and "image format's conversion" in why["text"]
    assert why["within_spec"] is False  # a NaN converts to 0; Oclgrind stores -128
    assert "Oclgrind Simulator writes" in why["spec"] and "-128 where the conversion gives 0" in \
        why["spec"]
    assert "pthread" not in why["spec"].split("a NaN to 0")[1]  # PoCL keeps the rule
    (where,) = rep["where"]
    assert where["map"]["dtype"] == "int8x4" and where["map"]["max"] == 128
    assert where["capture"]["a"] == "bit-exact"  # the capture's model converts as PoCL does
    assert rep["verdict"]["line"].endswith("outside the OpenCL specification")


@pytest.mark.child
@pytest.mark.device
def test_local_race_differs_between_runs_on_one_device(tmp_path: Path) -> None:
    code, rep = explain_json(planted_synth.write("local_race", tmp_path / "cap"), 0)
    # both devices run the work-items in order and agree; the reverse order does not
    assert code == 0 and rep["verdict"]["status"] == "no-divergence", rep["verdict"]
    why = rep["why"]
    # each differing output element has one writer, and the __local element it read has 8,
    # in one work-group with no barrier between them
    race = why["race"]
    assert race["status"] == "write-write", race["text"]
    assert race["text"].startswith("a write-write race: work-item (0) reads tile[(l + 1) % 8] "
                                   "on line 7 for element 0 of out: element 1 of tile (__local, "
                                   "work-group (0)) is written by 8 work-items (one work-group "
                                   "with no barrier between the stores): work-item (1) ")
    tile = race["elements"][-1]
    assert [w["item"][0] for w in tile["writes"]] == [1, 9, 17, 25, 33, 41, 49, 57]
    assert {(w["line"], w["statement"]) for w in tile["writes"]} == {(5, "tile[l % 8] = in[i]")}
    assert "is written by work-item (1) alone, on line 7: out[i] = tile[(l + 1) % 8] * 2.0f" in \
        race["elements"][1]["text"]
    assert line_of(rep)["status"] == "race" and len(line_of(rep)["items"]) == 8
    assert why["cause"] == "order dependence" and why["within_spec"] is True
    assert why["order"] == {"a": True, "b": True}
    assert why["order_runs"] == {"a": "the work-items in reverse order"} | {
        "b": "the work-items in reverse order"}
    assert "a write-write race: work-item (0)" in why["text"] and "but the outputs differ " \
        "between runs on the same device" in rep["verdict"]["line"]


@pytest.mark.child
@pytest.mark.device
def test_work_group_order_reduction_is_order_dependent(tmp_path: Path) -> None:
    code, rep = explain_json(planted_synth.write("group_sum", tmp_path / "cap"), 0)
    assert code in (0, 1)  # whether the devices' sums differ this time depends on the order
    why = rep["why"]
    assert why["cause"] == "order dependence" and why["within_spec"] is True
    assert any(why["order"].values())
    assert "an order-dependent reduction or atomic update (the kernel calls atomic_cmpxchg)" \
        in why["text"]


@pytest.mark.child
@pytest.mark.device
def test_heat2d_write_write_race_gets_a_cause(heat2d: Path) -> None:
    code, rep = explain_json(heat2d, 122397)  # heat_boundary: two work-items write each corner
    assert code == 0 and rep["why"]["cause"] == "order dependence", rep["verdict"]
    assert rep["why"]["order_runs"]["a"] == "the work-items in reverse order", rep["why"]
    assert "2 of 4,096 elements; first: element 63" in rep["why"]["text"]
    # the race named: both elements watched, two work-items of two work-groups write each
    race = rep["why"]["race"]
    assert race["status"] == "write-write" and race["watched"] == 2, race["text"]
    e63 = next(e for e in race["elements"] if e["element"] == 63)
    assert e63["race"] and e63["base"] == "un__base"
    assert [(w["item"], w["group"], w["line"], w["statement"], w["value"])
            for w in e63["writes"]] == [([0, 0, 0], [0, 0, 0], 36, "un[i*nx + nx-1] = t_right",
                                         -5.0), ([63, 0, 0], [1, 0, 0], 37, "un[i] = 0.0f", 0.0)]
    assert rep["why"]["text"].startswith("order dependence") and "a write-write race: element " \
        "63 of un__base (arg 0, buffer 0001) is written by 2 work-items" in rep["why"]["text"]
    # and which line: the racing writes (the devices agree, so nothing else to trace)
    line = line_of(rep)
    assert line["status"] == "race" and line["items"] == [[0, 0, 0], [63, 0, 0]]
    assert {(w["line"], w["element"]) for w in line["writes"]} == {(36, 63), (37, 63), (37, 4032),
                                                                    (35, 4032)}  # fmt: skip
    # on one device: its runs differ, and the same race
    res = CliRunner().invoke(main, ["explain", str(heat2d), "122397", "-d", "pocl"])
    assert res.exit_code == 1, res.output
    assert res.output.count("ORDER DEPENDENT: enqueue 122397 (heat_boundary) on pthread") == 1
    assert "a write-write race: element 63 of un__base (arg 0, buffer 0001) is written by 2 " \
        "work-items (other work-groups: nothing orders them): work-item (0) (work-group (0)) " \
        "on line 36: un[i*nx + nx-1] = t_right (-5.0); work-item (63) (work-group (1)) on " \
        "line 37: un[i] = 0.0f (0.0)" in res.output
    assert "  36 |     un[i*nx + nx-1] = t_right;\n" in res.output
    code, one = explain_json(heat2d, 122397, devices=("pocl",))
    assert code == 1 and list(one["devices"]) == ["a"] and one["where"] == []
    assert one["verdict"]["status"] == "order-dependent" and one["line"]["status"] == "race"
    assert one["why"]["race"]["elements"][0]["writes"] == e63["writes"]


@pytest.mark.child
@pytest.mark.device
def test_diverge_explain_explains_the_first_divergence(pyocl_pocl: Path,
                                                       pyocl_oclgrind: Path) -> None:  # fmt: skip
    """The pyopencl pair first diverges at enqueue 22 (sin_kernel, 1 ULP): explained on the
    device each capture was made on (PoCL, Oclgrind)."""
    res = CliRunner().invoke(main, ["diverge", str(pyocl_pocl), str(pyocl_oclgrind),
                                    "--explain", "--json"])  # fmt: skip
    out = json.loads(res.stdout)
    validate(out, "cli.schema.json", "diverge")
    assert res.exit_code == 1 and out["first"]["enqueue"] == 22
    rep = out["explain"]
    assert rep["enqueue"] == 22 and rep["kernel"] == "sin_kernel"
    assert rep["why"]["cause"] == "accuracy" and rep["why"]["within_spec"] is True
    assert "Oclgrind" in rep["devices"]["b"]["name"]
    text = CliRunner().invoke(main, ["diverge", str(pyocl_pocl), str(pyocl_oclgrind),
                                     "--explain", "-d", "pocl"])  # fmt: skip
    assert text.exit_code == 2 and "give -d twice or not at all" in text.output


@pytest.mark.child
@pytest.mark.device
def test_markdown_with_the_minimal_bundle(tmp_path: Path) -> None:
    cap = planted_synth.write("image_nan", tmp_path / "cap")
    md = tmp_path / "out" / "report.md"
    md.parent.mkdir()
    code, rep = explain_json(cap, 0, "--markdown", str(md), "--bundle")
    assert code == 1 and rep["why"]["cause"] == "image-write", rep
    text = md.read_text()
    assert "## Why" in text and "## Attached" in text and "`report_bundle/`" in text
    assert (tmp_path / "out" / "report_bundle" / "replay.py").is_file()
    assert (tmp_path / "out" / "report_kernel.cl").read_text() == planted_synth.IMAGE_SOURCE
    res = CliRunner().invoke(main, ["explain", str(cap), "0", "-d", "pocl", "-d", "oclgrind",
                                    "--bundle"])  # fmt: skip
    assert res.exit_code == 2 and "--bundle goes with --markdown FILE" in res.output


@pytest.mark.child
@pytest.mark.device
def test_the_fleet_explains_a_column_s_first_divergence(pyocl_pocl: Path) -> None:
    from cltui.analysis.explain import explain_first_divergence
    from cltui.capture import open_capture
    from cltui.replay.devices import select_devices

    cap = open_capture(pyocl_pocl)
    devices = select_devices(["pocl", "oclgrind"])
    column: dict[str, Any] = {"id": "local:0:0", "first_divergent": None}
    assert explain_first_divergence(cap, column["first_divergent"], devices) is None
    column["first_divergent"] = 22  # as the fleet's matrix gives it
    rep = explain_first_divergence(cap, column["first_divergent"], devices)
    assert rep is not None and rep["kernel"] == "sin_kernel"
    assert rep["why"]["cause"] == "accuracy" and rep["why"]["within_spec"] is True


def test_linear_reads_are_filtered_in_the_kernel() -> None:
    """The linear-filter rewrite: a read through a linear sampler (a program constant, or a
    kernel argument the plan sets) of an image2d_t parameter becomes four nearest reads
    weighted in float; REPEAT wraps the texels; MIRRORED_REPEAT and a nearest sampler are
    left to the device."""
    from cltui.analysis.explain.linearfilter import linear_reads, linear_samplers

    src = (
        "__constant sampler_t lin = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE"
        " | CLK_FILTER_LINEAR;\n"
        "__constant sampler_t near = CLK_NORMALIZED_COORDS_FALSE | CLK_FILTER_NEAREST;\n"
        "__kernel void k(__read_only image2d_t img, sampler_t s, sampler_t m,"
        " __global float4* out) {\n"
        "  float2 p = (float2)(get_global_id(0), 0.5f);\n"
        "  out[0] = read_imagef(img, lin, p) + read_imagef(img, s, p * 0.1f)\n"
        "         + read_imagef(img, m, p) + read_imagef(img, near, p);\n"
        "}\n"
    )
    args = [{"index": 1, "kind": "sampler", "name": "s", "normalized": True,
             "addressing": "CL_ADDRESS_REPEAT", "filter": "CL_FILTER_LINEAR"},
            {"index": 2, "kind": "sampler", "name": "m", "normalized": True,
             "addressing": "CL_ADDRESS_MIRRORED_REPEAT", "filter": "CL_FILTER_LINEAR"}]
    samplers = linear_samplers(src, "k", args)
    assert samplers == {"lin": (False, "CLAMP_TO_EDGE"), "s": (True, "REPEAT"),
                        "m": (True, "MIRRORED_REPEAT")}
    out, n = linear_reads(src, "k", samplers)
    assert n == 2
    assert "cltui_bilinear(img, cltui_nearest_clamp_to_edge, (float2)(p), 0)" in out
    assert "cltui_bilinear_repeat(img, cltui_nearest_clamp_to_edge, (float2)(p * 0.1f))" in out
    assert "read_imagef(img, m, p)" in out and "read_imagef(img, near, p)" in out
    assert linear_reads(src, "k", {}) == (src, 0)


def test_an_address_is_placed_in_the_base_its_operand_names() -> None:
    """Oclgrind numbers each address space's buffers from 2**48: the ``__local`` tile and
    the first global buffer start at one address, and the walk placed tile's element 5 in
    ``a`` (it did not once pyopencl's cache was out of the way, which allocated another
    global buffer first)."""
    from cltui.analysis.explain.source import Base
    from cltui.analysis.explain.walk import locate

    plan = {"steps": [{"args": [{"index": 0, "kind": "buffer", "mem": "m0"}]}],
            "memory": {"m0": {"size": 4096}}}
    runs: Any = type("Runs", (), {"plan": plan})()
    bases = [Base("a", 0, None), Base("tile", None, 256)]
    both = {0: 1 << 48, 1: 1 << 48}
    addr = (1 << 48) + 20
    assert locate(runs, bases, both, addr, "tile[(l + 32) % 64]") == (1, 20)
    assert locate(runs, bases, both, addr, "a[i]") == (0, 20)
    assert locate(runs, bases, both, addr, "*(p + 5)") is None  # two bases, no name: unknown
    assert locate(runs, bases, {0: 1 << 48, 1: 1 << 40}, addr, "p[5]") == (0, 20)  # one holds it
    assert locate(runs, bases, both, (1 << 48) + 300, "tile[75]") == (0, 300)  # past tile


@pytest.mark.child
@pytest.mark.device
def test_the_walk_follows_a_local_value_to_the_work_item_that_computed_it(tmp_path: Path) -> None:
    """local_neighbour: work-item 37's output differs because the value it reads from
    ``__local`` memory does; work-item 5 computed it (a ``mad``, fused on one device only)."""
    cap = planted_synth.write("local_neighbour", tmp_path / "cap")
    code, rep = explain_json(cap, 0)
    line = line_of(rep)
    assert code == 1 and line["status"] == "upstream", line["text"]
    assert line["item"] == [37, 0, 0] and line["site"]["line"] == 9
    walk = line["walk"]
    assert walk["status"] == "found", walk["text"]
    read, found = walk["steps"]
    assert (read["kind"], read["memory"], read["local"], read["element"]) == (
        "read", "tile", True, 5)
    writer = read["writer"]
    assert (writer["item"], writer["line"], writer["statement"]) == (
        [5, 0, 0], 7, "tile[l] = mad(a[i], b[i], c[i])")
    assert writer["a"] != writer["b"]
    assert (found["kind"], found["item"], found["line"]) == ("found", [5, 0, 0], 7)
    assert walk["first"]["operands_equal"] is True and walk["site"]["target"] == "tile[l]"
    assert "upstream, the devices part at line 7 (neighbour): tile[l] = mad(a[i], b[i], " \
        "c[i]), in work-item (5), its operands equal" in line["text"]
    res = CliRunner().invoke(main, ["explain", str(cap), "0", "-d", "pocl", "-d", "oclgrind"])
    assert "  the walk upstream:\n    1. work-item (37) reads tile[(l + 32) % 64] on line 9, " \
        "element 5 of tile (__local, work-group (0)): work-item (5) wrote it on line 7" in (
            res.output)
    assert "    7 |     tile[l] = mad(a[i], b[i], c[i]);\n      |               ^^^^^" in res.output
