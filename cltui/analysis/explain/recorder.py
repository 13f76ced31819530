"""The C side of the instrumentation (:mod:`.instrument`): the recorder functions put in
front of the kernel and the calls that record a value."""

from __future__ import annotations

__all__ = ["ADDRESS", "BASE_SITE", "CAP", "DENSE", "HEADER", "ITERATIONS", "base", "bits",
           "prelude", "record", "stride"]

CAP = 2048  # entries per work-item
ITERATIONS = 4  # runs of one site recorded (loops)
HEADER = 2
ADDRESS = 0x80  # an entry's slot | ADDRESS: the address of the operand read (not compared)
BASE_SITE = 0xFFFFFFFF  # an entry's site: a memory base's address (slot: which base)


def stride(n_sites: int) -> int:
    """Words of one work-item's slice of the trace buffer (``n_sites``: kept for callers)."""
    return HEADER + 4 * CAP


def bits(expr: str, kind: str) -> tuple[str, str]:
    """The C expressions of a scalar's low and high 32 bits."""
    if kind == "float":
        return f"as_uint({expr})", "0u"
    if kind == "double":
        return f"as_uint2({expr}).s0", f"as_uint2({expr}).s1"
    if kind == "half":
        return f"(uint)as_ushort({expr})", "0u"
    if kind in ("long", "ulong"):
        return f"(uint)({expr})", f"(uint)((ulong)({expr}) >> 32)"
    return f"(uint)({expr})", "0u"


def record(site: int, slot: int, expr: str, kind: str, lanes: int, fn: str = "cltui_rec") -> str:
    out = []
    for lane in range(lanes):
        e = f"({expr})" if lanes == 1 else f"({expr}).s{lane:x}"
        lo, hi = bits(e, kind)
        out.append(f"{fn}(cltui_t, cltui_s, {site}u, {slot}u, {lane}u, {lo}, {hi});")
    return " ".join(out)


def base(k: int, expr: str) -> str:
    """The call that records base ``k``'s address (``expr``: a pointer or an array)."""
    lo, hi = bits(f"(ulong)({expr})", "ulong")
    return f"cltui_base(cltui_t, cltui_s, {k}u, {lo}, {hi});"


def prelude(items: list[tuple[int, int, int]], n_sites: int) -> str:
    """The work-item's slice (0 for the others) and the recorder, not inlined (a kernel of
    1,000 statements takes PoCL minutes to build with it inlined).  The counters live in
    private memory and the trace is only stored to, never read: a kernel whose work-items
    share a counter in global memory is not vectorised as the original is (PoCL's relaxed
    division then differs)."""
    s = stride(n_sites)
    conds = "\n".join(
        f"    if (get_global_id(0) == {x}ul && get_global_id(1) == {y}ul && "
        f"get_global_id(2) == {z}ul) return t + {k * s}ul;"
        for k, (x, y, z) in enumerate(items))  # fmt: skip
    return f"""__global uint *cltui_slot(__global uint *t)
{{
{conds}
    return 0;
}}
__attribute__((noinline))
void cltui_rec(__global uint *t, uint *s, uint site, uint slot, uint lane, uint lo, uint hi)
{{
    uint it = s[{HEADER} + site];
    if (slot == 0u) s[{HEADER} + site] = it + 1u;
    if (it >= {ITERATIONS}u) return;
    uint n = s[0];
    if (n >= {CAP}u) {{
        s[1] += 1u;
        if (t != 0) t[1] = s[1];
        return;
    }}
    s[0] = n + 1u;
    if (t != 0) {{
        __global uint *e = t + {HEADER} + 4u * n;
        e[0] = site; e[1] = it | (slot << 16) | (lane << 24); e[2] = lo; e[3] = hi;
        t[0] = n + 1u;
    }}
}}
void cltui_base(__global uint *t, uint *s, uint k, uint lo, uint hi)
{{
    uint n = s[0];
    if (n >= {CAP}u) return;
    s[0] = n + 1u;
    if (t != 0) {{
        __global uint *e = t + {HEADER} + 4u * n;
        e[0] = {BASE_SITE}u; e[1] = k << 16; e[2] = lo; e[3] = hi;
        t[0] = n + 1u;
    }}
}}
void cltui_recf(__global uint *t, uint *s, uint site, uint slot, uint lane, uint lo, uint hi)
{{
    if (s != 0) cltui_rec(t, s, site, slot, lane, lo, hi);
}}
"""


DENSE = """void cltui_den(__global uint *t, uint row, uint bits)
{
    size_t g = (get_global_id(0) - get_global_offset(0)) + get_global_size(0) *
        ((get_global_id(1) - get_global_offset(1)) + get_global_size(1) *
         (get_global_id(2) - get_global_offset(2)));
    t[row * get_global_size(0) * get_global_size(1) * get_global_size(2) + g] = bits;
}
void cltui_denf(__global uint *t, uint row, uint bits)
{
    if (t != 0) cltui_den(t, row, bits);
}
"""
