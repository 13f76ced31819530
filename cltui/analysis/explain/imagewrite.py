"""The image-write conversion rewrite (pure text) and what the specification allows of it.

``write_imagef(image, coord, colour)`` converts a float colour to the image's channel type
on the device.  The rewrite does that conversion in the kernel first, as the OpenCL C
specification writes it ("Converting floating-point values to normalized integer channel
data types": ``convert_uchar_sat_rte(f * 255.0f)`` for ``CL_UNORM_INT8``, and likewise; a
NaN converts to 0, the saturated conversions' rule), and hands the device a colour that is
exactly on a step of the channel type, which every device then stores the same way.  A
difference that goes with it came from the devices' conversions: their rounding or their
handling of NaN and out-of-range values.
"""

from __future__ import annotations

from cltui.analysis.explain.rewrite import call_arguments, calls_in_code

__all__ = ["CONVERT", "STEP_RULE", "spec_image_writes"]

CONVERT = "cltui_spec_convert"

# the channel types whose conversion the rewrite pins; others pass through unchanged
_HELPER = f"""\
float4 {CONVERT}(int type, float4 v)
{{
    float4 z = select(v, (float4)(0.0f), isnan(v));
    if (type == CLK_UNORM_INT8)
        return convert_float4(convert_uchar4_sat_rte(z * 255.0f)) / 255.0f;
    if (type == CLK_UNORM_INT16)
        return convert_float4(convert_ushort4_sat_rte(z * 65535.0f)) / 65535.0f;
    if (type == CLK_SNORM_INT8)
        return convert_float4(convert_char4_sat_rte(z * 127.0f)) / 127.0f;
    if (type == CLK_SNORM_INT16)
        return convert_float4(convert_short4_sat_rte(z * 32767.0f)) / 32767.0f;
    return v;
}}
"""

# what the specification allows: each of these conversions rounds to nearest even within
# 0.6 ULP of the channel type, so a value near half a step may land on either neighbour
STEP_RULE = ("the specification converts a float to a normalized channel as "
             "convert_<type>_sat_rte(f * scale), within 0.6 ULP (a value near half a step may "
             "land on either neighbour: one step), a NaN to 0")  # fmt: skip


def spec_image_writes(src: str) -> tuple[str, int]:
    """The source with each ``write_imagef`` call's colour (its last argument) converted as
    the specification writes it (:data:`CONVERT`, the image's channel type asked of the
    image at run time), and how many calls were rewritten (0: the source as it is)."""
    count = 0
    done_up_to = len(src)
    while True:
        calls = [c for c in calls_in_code(src, {"write_imagef"}) if c[0] < done_up_to]
        if not calls:
            break
        start, paren, _name = calls[-1]
        done_up_to = start
        parsed = call_arguments(src, paren)
        if parsed is None or len(parsed[0]) < 3:
            continue
        args, end = parsed
        image, colour = args[0].strip(), args[-1].strip()
        text = (f"write_imagef({', '.join(a.strip() for a in args[:-1])}, "
                f"{CONVERT}(get_image_channel_data_type({image}), {colour}))")
        src = src[:start] + text + src[end:]
        count += 1
    if not count:
        return src, 0
    return _HELPER + src, count
