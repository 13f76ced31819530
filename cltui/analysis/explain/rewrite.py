"""Source rewrites that each remove one known cause of a cross-device difference (pure text:
no parser).  Comments and string/character literals are left as they are: a call is
recognised only in code.

* :func:`without_contraction`: ``#pragma OPENCL FP_CONTRACT OFF`` first, and every
  ``mad(a, b, c)`` / ``fma(a, b, c)`` call written ``((a) * (b) + (c))``;
* :func:`full_precision`: ``native_X(`` and ``half_X(`` written ``X(``;
* :func:`builtins_called`: the math built-ins the source calls (for the ULP table).
"""

from __future__ import annotations

import re

__all__ = ["ULP_LIMITS", "builtins_called", "call_arguments", "calls_in_code", "code_mask",
           "full_precision", "reference_builtins", "without_contraction"]

CONTRACT_OFF = "#pragma OPENCL FP_CONTRACT OFF\n"

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def code_mask(src: str) -> list[bool]:
    """Per character: True where it is code (not inside a comment or a literal)."""
    mask = [True] * len(src)
    i, n = 0, len(src)
    while i < n:
        two = src[i : i + 2]
        if two in ("//", "/*"):
            end = src.find("\n" if two == "//" else "*/", i + 2)
            end = n if end < 0 else end + (0 if two == "//" else 2)
        elif src[i] in "\"'":
            end = i + 1
            while end < n and src[end] != src[i] and src[end] != "\n":
                end += 2 if src[end] == "\\" else 1
            end = min(end + 1, n)
        else:
            i += 1
            continue
        for k in range(i, end):
            mask[k] = False
        i = end
    return mask


def calls_in_code(src: str, names: set[str]) -> list[tuple[int, int, str]]:
    """``(start, open_paren, name)`` of each call in code of a name in ``names``."""
    mask = code_mask(src)
    out: list[tuple[int, int, str]] = []
    for m in _IDENT.finditer(src):
        if m.group() not in names or not mask[m.start()]:
            continue
        if m.start() > 0 and (src[m.start() - 1].isalnum() or src[m.start() - 1] in "_."):
            continue
        j = m.end()
        while j < len(src) and src[j] in " \t\r\n":
            j += 1
        if j < len(src) and src[j] == "(":
            out.append((m.start(), j, m.group()))
    return out


def call_arguments(src: str, open_paren: int) -> tuple[list[str], int] | None:
    """The top-level arguments of the call whose ``(`` is at ``open_paren`` and the index
    after its ``)``; None when the parentheses do not balance."""
    mask = code_mask(src)
    depth = 0
    args: list[str] = []
    start = open_paren + 1
    for k in range(open_paren, len(src)):
        if not mask[k]:
            continue
        ch = src[k]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                args.append(src[start:k])
                return args, k + 1
        elif ch == "," and depth == 1:
            args.append(src[start:k])
            start = k + 1
    return None


def _rewrite_fused(src: str) -> tuple[str, int]:
    """One pass: the last ``mad``/``fma`` call rewritten (innermost first when nested)."""
    for start, paren, _name in reversed(calls_in_code(src, {"mad", "fma"})):
        parsed = call_arguments(src, paren)
        if parsed is None or len(parsed[0]) != 3:
            continue
        (a, b, c), end = parsed
        text = f"(({a.strip()}) * ({b.strip()}) + ({c.strip()}))"
        return src[:start] + text + src[end:], 1
    return src, 0


def without_contraction(src: str) -> tuple[str, int]:
    """The source with contraction off and its ``mad``/``fma`` calls unfused, and how many
    calls were rewritten."""
    count = 0
    while True:
        src, done = _rewrite_fused(src)
        if not done:
            break
        count += 1
    return CONTRACT_OFF + src, count


# the built-ins with native_ and half_ forms; divide and recip have no plain form
_REDUCED = ("cos", "divide", "exp", "exp2", "exp10", "log", "log2", "log10", "powr", "recip",
            "rsqrt", "sin", "sqrt", "tan")  # fmt: skip
_REDUCED_NAMES = {f"{p}_{n}" for p in ("native", "half") for n in _REDUCED}


def full_precision(src: str) -> tuple[str, list[str]]:
    """The source with each ``native_X(`` / ``half_X(`` call (in code) of a full-precision
    ``X``: ``X(``; ``divide(a, b)``: ``((a) / (b))``; ``recip(x)``: ``(1.0f / (x))``; and
    the names replaced (in order, once each)."""
    names: list[str] = []
    while True:
        calls = calls_in_code(src, _REDUCED_NAMES)
        if not calls:
            return src, names
        start, paren, name = calls[-1]
        if name not in names:
            names.insert(0, name)
        plain = name.split("_", 1)[1]
        if plain in ("divide", "recip"):
            parsed = call_arguments(src, paren)
            want = 2 if plain == "divide" else 1
            if parsed is None or len(parsed[0]) != want:
                return src, names  # left as it is: the build says what is wrong
            args, end = parsed
            text = (f"(({args[0].strip()}) / ({args[1].strip()}))" if want == 2
                    else f"(1.0f / ({args[0].strip()}))")
            src = src[:start] + text + src[end:]
        else:
            src = src[:start] + plain + src[start + len(name):]


# OpenCL C 3.0 specification, "Relative Error as ULPs", full profile, single precision
# (``float``): the maximum error of each built-in, in ULP (0: correctly rounded).
ULP_LIMITS: dict[str, float] = {
    "acos": 4, "acosh": 4, "acospi": 5, "asin": 4, "asinh": 4, "asinpi": 5, "atan": 5,
    "atan2": 6, "atanh": 5, "atanpi": 5, "atan2pi": 6, "cbrt": 2, "cos": 4, "cosh": 4,
    "cospi": 4, "erfc": 16, "erf": 16, "exp": 3, "exp2": 3, "exp10": 3, "expm1": 3,
    "hypot": 4, "log": 3, "log2": 3, "log10": 3, "log1p": 2, "pow": 16,
    "pown": 16, "powr": 16, "rootn": 16, "rsqrt": 2, "sin": 4, "sincos": 4, "sinh": 4,
    "sinpi": 4, "sqrt": 3, "tan": 5, "tanh": 5, "tanpi": 6, "tgamma": 16,
}  # fmt: skip


def builtins_called(src: str) -> list[str]:
    """The math built-ins of :data:`ULP_LIMITS` that the source calls (in code), in order."""
    return [name for name in _first_seen(src) if name in ULP_LIMITS]


def _first_seen(src: str) -> list[str]:
    seen: dict[str, None] = {}
    for _start, _paren, name in calls_in_code(src, set(ULP_LIMITS)):
        seen.setdefault(name)
    return list(seen)


FP64 = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
BUMP = "cltui_bump_ulps"
_BUMP_FN = (f"float {BUMP}(float r, int n)\n{{\n    for (int k = 0; k < n; ++k)\n"
            "        r = nextafter(r, INFINITY);\n    return r;\n}\n")  # fmt: skip
_MARK = "CLTUI_REF_"
_INT_SECOND = ("pown", "rootn")  # their second argument is an int


def reference_builtins(src: str, bump: bool = False) -> tuple[str, list[str]]:
    """The source with each call of a math built-in of :data:`ULP_LIMITS` (but ``sincos``)
    computed in double precision and rounded to float, ``((float)f((double)(x)))``: a result
    within half a float ULP of the exact one, the same on every device that has
    ``cl_khr_fp64``.  ``bump``: each result then moved up by the built-in's ULP limit
    (``nextafter`` towards +inf, that many times), to measure how far the limits move the
    outputs.  The names rewritten, in order.  (A built-in on vectors or doubles makes the
    build fail: that rebuild then says so.)"""
    names: list[str] = []
    wanted = set(ULP_LIMITS) - {"sincos"}
    while True:
        calls = calls_in_code(src, wanted)
        if not calls:
            break
        start, paren, name = calls[-1]
        parsed = call_arguments(src, paren)
        if parsed is None:
            break
        args, end = parsed
        if name not in names:
            names.insert(0, name)
        cast = [a.strip() if name in _INT_SECOND and k == 1 else f"(double)({a.strip()})"
                for k, a in enumerate(args)]  # fmt: skip
        text = f"((float){_MARK}{name}({', '.join(cast)}))"
        if bump:
            text = f"{BUMP}({text}, {ULP_LIMITS[name]:g})"
        src = src[:start] + text + src[end:]
    src = src.replace(_MARK, "")
    return FP64 + (_BUMP_FN if bump else "") + src, names
