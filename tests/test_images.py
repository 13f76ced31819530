"""The one image-format table (cltui.capture.images): its enum values against Khronos'
CL/cl.h, and every consumer typing an image the same way (sRGB included)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from cltui.capture import images
from cltui.capture.elements import element_ctype, element_dtype
from cltui.capture.log import image_texel_bytes
from cltui.capture.model import ArgKind, Dump, ImageFormat, KernelArg, MemObject
from cltui.capture.replayfolder import ImageMeta
from cltui.tui.widgets.image_view import image_rgb
from tests.test_export_device import cpp_replay  # a session fixture: the C++ replay, built once

__all__ = ["cpp_replay"]

CL_H = Path("/usr/include/CL/cl.h")  # Debian opencl-headers, installed by ./dev setup
ROOT = Path(__file__).resolve().parent.parent


def _header_values(lo: int, hi: int) -> dict[str, int]:
    text = CL_H.read_text()
    found = {}
    for name, value in re.findall(r"#define\s+(CL_\w+)\s+(0x[0-9A-Fa-f]+)", text):
        if lo <= int(value, 16) <= hi:
            found[name] = int(value, 16)
    return found


def test_channel_orders_match_cl_h() -> None:
    header = _header_values(0x10B0, 0x10C3)
    header = {k: v for k, v in header.items() if not k.startswith("CL_DEVICE")}
    assert {o.name: o.value for o in images.ORDERS} == header


def test_channel_types_match_cl_h() -> None:
    header = _header_values(0x10D0, 0x10E0)
    assert {t.name: t.value for t in images.TYPES} == header


def test_names_and_values_round_trip() -> None:
    for o in images.ORDERS:
        assert images.order_name(o.value) == o.name
        assert images.channel_order(o.name) is images.channel_order(o.value)
    for t in images.TYPES:
        assert images.type_name(t.value) == t.name
    assert images.order_name(0x1234) == "0x1234"
    assert images.texel_bytes("CL_RGBA", "CL_NOPE") == 0
    assert images.texel_dtype_spec("CL_NOPE", "CL_FLOAT") is None


@pytest.mark.parametrize(
    ("order", "ctype", "size", "spec", "scalar"),
    [
        ("CL_RGBA", "CL_UNORM_INT8", 4, "(4,)|u1", "uchar4"),
        ("CL_R", "CL_FLOAT", 4, "<f4", "float"),
        ("CL_RG", "CL_HALF_FLOAT", 4, "(2,)<f2", "half2"),
        ("CL_RGB", "CL_UNORM_SHORT_565", 2, "<u2", None),
        ("CL_RGBx", "CL_UNORM_INT_101010", 4, "<u4", None),
        ("CL_DEPTH", "CL_UNORM_INT24", 4, "<u4", None),
        # sRGB: typed one way (the conformance tests' texel sizes)
        ("CL_sRGB", "CL_UNORM_INT8", 3, "(3,)|u1", None),
        ("CL_sRGBx", "CL_UNORM_INT8", 3, "(3,)|u1", None),
        ("CL_sRGBA", "CL_UNORM_INT8", 4, "(4,)|u1", "uchar4"),
        ("CL_sBGRA", "CL_UNORM_INT8", 4, "(4,)|u1", "uchar4"),
    ],
)
def test_texel_table(order: str, ctype: str, size: int, spec: str, scalar: str | None) -> None:
    assert images.texel_bytes(order, ctype) == size
    assert images.texel_dtype_spec(order, ctype) == spec
    assert np.dtype(spec).itemsize == size
    assert images.texel_scalar(order, ctype) == scalar


@pytest.mark.parametrize("order", ["CL_sRGB", "CL_sRGBx", "CL_sRGBA", "CL_sBGRA", "CL_RGBA"])
def test_every_consumer_types_an_srgb_image_alike(order: str, tmp_path: Path) -> None:
    size = images.texel_bytes(order, "CL_UNORM_INT8")
    fmt = ImageFormat(order, "CL_UNORM_INT8", "CL_MEM_OBJECT_IMAGE2D", 4, 2, 1, 0)
    # the log's formats (sizes of image dumps)
    assert image_texel_bytes(fmt) == size
    # Replay/ folders' Image_MetaData files (enum values)
    entry = images.channel_order(order)
    assert entry is not None
    meta = ImageMeta(4, 2, 1, size, 4 * size, 0, 0x10D2, entry.value, 0x10F1)
    got = meta.numpy_dtype_and_channels()
    assert got is not None and got[0].itemsize * got[1] == size
    # the compare across captures
    path = tmp_path / "img.bin"
    path.write_bytes(bytes(range(4 * 2 * size)))
    dump = Dump(path, 0, "k", 0, 1, True, (4, 2, 1), size * 8)
    mem = MemObject(1, "image", 4 * 2 * size, "", 0, 0, image=fmt)
    arg = KernelArg(0, ArgKind.IMAGE, 8, mem=mem, pre=dump)
    dt, shape = element_dtype(arg, dump)
    assert dt.itemsize == size and shape == (4, 2, 1)
    # the buffer pane's texel type: a C type of this size, or none (3 channels have none)
    ct = element_ctype(arg)
    if images.texel_scalar(order, "CL_UNORM_INT8") is not None:
        assert ct is not None and ct.size == size
    # the image pane reads the same channels
    rgb = image_rgb(np.frombuffer(path.read_bytes(), np.uint8), (4, 2, 1), size * 8, fmt)
    assert rgb.shape == (2, 4, 3)
    assert int(rgb[0, 0, 0]) == (2 if order == "CL_sBGRA" else 0)  # texel 0 holds 0, 1, 2


def test_no_other_format_table() -> None:
    """One place per fact: no other module of cltui spells a table of channel orders."""
    offenders = []
    for path in (ROOT / "cltui").rglob("*.py"):
        if path.name == "images.py":
            continue
        text = path.read_text()
        if text.count('"CL_RGBA"') + text.count('"CL_UNORM_INT8"') + text.count("0x10B5") > 1:
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


@pytest.mark.child
@pytest.mark.cmake
def test_replay_cpp_knows_every_image_format_name_of_the_table(
    cpp_replay: Path, tmp_path: Path
) -> None:
    """replay.cpp's enum names (a bundle's image formats, the feasibility facts' format list)
    against this table, in both directions: every order and type reads as its value, and the
    value reads back as the name (it lacked sRGB, sRGBx, ABGR, DEPTH_STENCIL, UNORM_INT24 and
    UNORM_INT_101010_2: a bundle with such an image failed in C++ only)."""
    from cltui.capture.images import ORDERS, TYPES

    names = [(o.name, True, o.value) for o in ORDERS] + [(t.name, False, t.value) for t in TYPES]
    cases = tmp_path / "enum_cases.json"
    cases.write_text(json.dumps([{"name": n, "order": order} for n, order, _v in names]))
    proc = subprocess.run([str(cpp_replay), "--enum-cases", str(cases)], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert [(g["value"], g["back"]) for g in got] == [
        (value, name.removeprefix("CL_")) for name, _order, value in names
    ]
