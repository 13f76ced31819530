"""The work-item order rewrite (pure text): every work-item and work-group id of the
program's source read in reverse, so that a device that runs work-items and work-groups in
a fixed order runs them in the opposite one while each logical work-item still computes what
it computed before.  A race-free kernel gives bit-exact the same outputs; a data race (on
``__local`` or ``__global`` memory) or a result that depends on the order atomics land in
gives others: "differs between runs on the same device".

``get_global_id(d)`` becomes ``offset + size - 1 - (id - offset)``, ``get_local_id(d)``
``local_size - 1 - id``, ``get_group_id(d)`` ``groups - 1 - id`` (consistent with each
other for uniform work-groups), and the linear ids likewise.
"""

from __future__ import annotations

import re

from cltui.analysis.explain.rewrite import calls_in_code, code_mask

__all__ = ["REVERSED_PREFIX", "atomics_called", "reversed_order"]

REVERSED_PREFIX = "cltui_rev_"

_HELPERS = f"""\
size_t {REVERSED_PREFIX}get_global_id(uint d)
{{
    return get_global_offset(d) + get_global_size(d) - 1
           - (get_global_id(d) - get_global_offset(d));
}}
size_t {REVERSED_PREFIX}get_local_id(uint d)
{{
    return get_local_size(d) - 1 - get_local_id(d);
}}
size_t {REVERSED_PREFIX}get_group_id(uint d)
{{
    return get_num_groups(d) - 1 - get_group_id(d);
}}
"""
_LINEAR = f"""\
size_t {REVERSED_PREFIX}get_global_linear_id(void)
{{
    return get_global_size(0) * get_global_size(1) * get_global_size(2) - 1
           - get_global_linear_id();
}}
size_t {REVERSED_PREFIX}get_local_linear_id(void)
{{
    return get_local_size(0) * get_local_size(1) * get_local_size(2) - 1
           - get_local_linear_id();
}}
"""
_IDS = ("get_global_id", "get_local_id", "get_group_id")
_LINEAR_IDS = ("get_global_linear_id", "get_local_linear_id")


def reversed_order(src: str) -> tuple[str, int]:
    """The source with every id query read in reverse (helpers first), and how many calls
    were rewritten (0: the source asks for no id; then it is returned as it is)."""
    calls = calls_in_code(src, set(_IDS + _LINEAR_IDS))
    if not calls:
        return src, 0
    linear = any(name in _LINEAR_IDS for _s, _p, name in calls)
    for start, _paren, _name in reversed(calls):
        src = src[:start] + REVERSED_PREFIX + src[start:]
    return _HELPERS + (_LINEAR if linear else "") + src, len(calls)


_CALL = re.compile(r"(?<![A-Za-z0-9_.])([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_ATOMIC_PREFIXES = ("atomic_", "atom_", "work_group_reduce", "work_group_scan")


def atomics_called(src: str) -> list[str]:
    """The atomic and work-group collective built-ins the source calls (in code), once
    each, in order (the order they take effect in is what the specification leaves open)."""
    mask = code_mask(src)
    seen: dict[str, None] = {}
    for m in _CALL.finditer(src):
        if mask[m.start()] and m.group(1).startswith(_ATOMIC_PREFIXES):
            seen.setdefault(m.group(1))
    return list(seen)
