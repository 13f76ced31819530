"""The linear filter done in the kernel (pure text): each ``read_imagef`` of a 2-D image
through a sampler with ``CLK_FILTER_LINEAR`` becomes four ``CLK_FILTER_NEAREST`` reads of the
texels around the coordinate, weighted in float as the OpenCL specification writes the filter
(``u - 0.5`` in texels, ``i0 = floor``, ``a = frac``; ``(1-a)(1-b)T00 + a(1-b)T10 + (1-a)bT01 +
abT11``).  A difference that goes with it came from the devices' filtering: the precision of
their interpolation weights (a GPU's texture unit keeps them in fixed point: NVIDIA's CUDA
documentation gives 8 fractional bits) against a CPU's float weights.  The specification
gives the formula, not the precision of the weights: it does not settle which is right.

A sampler is known to be linear from the source (a program-scope ``sampler_t`` whose
initialiser says ``CLK_FILTER_LINEAR``) or from the plan (a kernel argument set from a sampler
with ``CL_FILTER_LINEAR``: :func:`linear_samplers`).  The addressing modes rewritten: ``NONE``,
``CLAMP``, ``CLAMP_TO_EDGE`` (the nearest reads use them) and ``REPEAT`` (the texels wrapped as
the specification writes it); a ``MIRRORED_REPEAT`` read, or one whose image is not an
``image2d_t`` parameter, is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from cltui.analysis.explain.rewrite import call_arguments, calls_in_code

__all__ = ["LinearSampler", "linear_reads", "linear_samplers"]

HELPER = "cltui_bilinear"

LinearSampler = tuple[bool, str]  # (normalized coordinates, addressing: NONE, CLAMP, ...)

_ADDRESSING = ("NONE", "CLAMP", "CLAMP_TO_EDGE", "REPEAT")
_CONST = re.compile(r"\bsampler_t\s+(\w+)\s*=\s*([^;]+);")
_KERNEL = re.compile(r"\b(?:__kernel|kernel)\s+void\s+(\w+)\s*\(")

_BILINEAR = f"""\
float4 {HELPER}(read_only image2d_t img, sampler_t nearest, float2 coord, int normalized)
{{
    float2 size = (float2)((float)get_image_width(img), (float)get_image_height(img));
    float2 u = (normalized ? coord * size : coord) - 0.5f;
    float2 f = floor(u);
    float2 a = u - f;
    int2 i = convert_int2(f);
    float4 t00 = read_imagef(img, nearest, i);
    float4 t10 = read_imagef(img, nearest, i + (int2)(1, 0));
    float4 t01 = read_imagef(img, nearest, i + (int2)(0, 1));
    float4 t11 = read_imagef(img, nearest, i + (int2)(1, 1));
    return (1.0f - a.x) * (1.0f - a.y) * t00 + a.x * (1.0f - a.y) * t10
        + (1.0f - a.x) * a.y * t01 + a.x * a.y * t11;
}}
"""

# CLK_ADDRESS_REPEAT (normalized coordinates only): the coordinate wrapped, then the two texels
# on each axis wrapped as the specification writes it (i0 < 0: + size; i1 > size - 1: - size)
_REPEAT = f"""\
float4 {HELPER}_repeat(read_only image2d_t img, sampler_t nearest, float2 coord)
{{
    int2 size = (int2)(get_image_width(img), get_image_height(img));
    float2 u = (coord - floor(coord)) * convert_float2(size) - 0.5f;
    float2 f = floor(u);
    float2 a = u - f;
    int2 i0 = convert_int2(f);
    int2 i1 = i0 + (int2)(1, 1);
    i0 = select(i0, i0 + size, i0 < (int2)(0, 0));
    i1 = select(i1, i1 - size, i1 > size - (int2)(1, 1));
    float4 t00 = read_imagef(img, nearest, (int2)(i0.x, i0.y));
    float4 t10 = read_imagef(img, nearest, (int2)(i1.x, i0.y));
    float4 t01 = read_imagef(img, nearest, (int2)(i0.x, i1.y));
    float4 t11 = read_imagef(img, nearest, (int2)(i1.x, i1.y));
    return (1.0f - a.x) * (1.0f - a.y) * t00 + a.x * (1.0f - a.y) * t10
        + (1.0f - a.x) * a.y * t01 + a.x * a.y * t11;
}}
"""


def _nearest(addressing: str) -> str:
    return f"cltui_nearest_{addressing.lower()}"


def _params(source: str, kernel: str) -> list[str]:
    """The kernel's parameter declarations, in order ([] when it is not found)."""
    for m in _KERNEL.finditer(source):
        if m.group(1) == kernel:
            got = call_arguments(source, m.end() - 1)
            return [p.strip() for p in got[0]] if got is not None else []
    return []


def _name(param: str) -> str:
    words = re.findall(r"\w+", param)
    return words[-1] if words else ""


def linear_samplers(source: str, kernel: str,
                    args: Sequence[Mapping[str, Any]]) -> dict[str, LinearSampler]:  # fmt: skip
    """The samplers of ``kernel`` known to filter linearly, by name: the program's
    ``sampler_t`` constants and the kernel's sampler parameters the plan's ``args`` set."""
    out: dict[str, LinearSampler] = {}
    for m in _CONST.finditer(source):
        flags = m.group(2)
        if "CLK_FILTER_LINEAR" not in flags:
            continue
        mode = re.search(r"CLK_ADDRESS_(\w+)", flags)
        out[m.group(1)] = ("CLK_NORMALIZED_COORDS_TRUE" in flags,
                           mode.group(1) if mode else "NONE")  # fmt: skip
    params = _params(source, kernel)
    for a in args:
        if a.get("kind") != "sampler" or "LINEAR" not in str(a.get("filter", "")):
            continue
        i = int(a["index"])
        name = str(a.get("name") or (_name(params[i]) if i < len(params) else ""))
        if name:
            how = str(a.get("addressing", "NONE")).removeprefix("CL_ADDRESS_")
            out[name] = (bool(a.get("normalized")), how)
    return out


def linear_reads(source: str, kernel: str, samplers: Mapping[str, LinearSampler]
                 ) -> tuple[str, int]:  # fmt: skip
    """The source with each ``read_imagef(image, LINEAR_SAMPLER, coord)`` of a 2-D image
    filtered in the kernel, and how many calls were rewritten (0: the source as it was)."""
    images = {_name(p) for p in _params(source, kernel) if "image2d_t" in p}
    edits: list[tuple[int, int, str]] = []
    used: set[str] = set()
    repeat = False
    for start, paren, _call in calls_in_code(source, {"read_imagef"}):
        got = call_arguments(source, paren)
        if got is None or len(got[0]) != 3:
            continue
        (img, smp, coord), end = [a.strip() for a in got[0]], got[1]
        lin = samplers.get(smp)
        if lin is None or img not in images or lin[1] not in _ADDRESSING:
            continue
        normalized, addressing = lin
        if addressing == "REPEAT":
            if not normalized:  # (not a valid sampler: left to the device)
                continue
            used.add("CLAMP_TO_EDGE")
            repeat = True
            edits.append((start, end, f"{HELPER}_repeat({img}, {_nearest('CLAMP_TO_EDGE')}, "
                                      f"(float2)({coord}))"))  # fmt: skip
            continue
        used.add(addressing)
        edits.append((start, end, f"{HELPER}({img}, {_nearest(addressing)}, (float2)({coord}), "
                                  f"{1 if normalized else 0})"))  # fmt: skip
    if not edits:
        return source, 0
    out = source
    for start, end, text in sorted(edits, reverse=True):
        out = out[:start] + text + out[end:]
    consts = "".join(
        f"__constant sampler_t {_nearest(a)} = CLK_NORMALIZED_COORDS_FALSE | "
        f"CLK_ADDRESS_{a} | CLK_FILTER_NEAREST;\n" for a in sorted(used)
    )
    return consts + _BILINEAR + (_REPEAT if repeat else "") + out, len(edits)
