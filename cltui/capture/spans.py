"""Where things are in a kernel source: a kernel's definition and its parameters, as spans
for the source view (comments, strings and preprocessor lines masked first)."""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass

# ``__attribute__((...))`` with its parentheses matched (two levels inside), not scanned for
# lazily: linear on a source of unclosed attributes.  The kernel-definition patterns of
# cltui.capture.decode and the skeleton of cltui.capture.preprocess use it too.
ATTRIBUTE = r"__attribute__\s*\(\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)\)"
_ATTR_RE = re.compile(ATTRIBUTE)


# --------------------------------------------------------------------------- spans

_MASK_RE = re.compile(r"//[^\n]*|/\*.*?(?:\*/|\Z)|\"(?:\\.|[^\"\\\n])*+\\?(?:\"|(?=\n)|\Z)"
                      r"|'(?:\\.|[^'\\\n])*+\\?(?:'|(?=\n)|\Z)"
                      r"|^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.MULTILINE | re.DOTALL)


def _blank(m: re.Match[str]) -> str:
    """The match as blanks, its line breaks kept (one piece a line, not one a character:
    a directive of megabytes costs its own size)."""
    s = m.group()
    if "\n" not in s:
        return " " * len(s)
    return "\n".join(" " * len(part) for part in s.split("\n"))


@dataclass(frozen=True)
class _Masked:
    text: str  # comments, strings and directives blanked (same offsets as the source)
    braces: list[int]  # offsets of every '{' and '}'
    depth_after: list[int]  # brace depth right after each of them
    line_starts: list[int]
    next_top: list[int]  # per brace: the offset of the next brace back at depth 0, or -1
    ends: list[int]  # offsets of every ';' and '}' (where a declaration may start after)
    close_paren: dict[int, int]  # '(' offset -> its ')' offset (matched ones)


@functools.lru_cache(maxsize=16)
def _masked(source: str) -> _Masked:
    masked = _MASK_RE.sub(_blank, source)
    braces: list[int] = []
    depth_after: list[int] = []
    depth = 0
    for m in re.finditer(r"[{}]", masked):
        depth += 1 if m.group() == "{" else -1
        braces.append(m.start())
        depth_after.append(depth)
    line_starts = [0] + [m.end() for m in re.finditer(r"\n", source)]
    next_top = [-1] * len(braces)
    nxt = -1
    for q in range(len(braces) - 1, -1, -1):
        next_top[q] = nxt
        if depth_after[q] == 0:
            nxt = braces[q]
    ends = [m.start() for m in re.finditer(r"[;}]", masked)]
    close_paren: dict[int, int] = {}
    stack: list[int] = []
    for m in re.finditer(r"[()]", masked):
        if m.group() == "(":
            stack.append(m.start())
        elif stack:
            close_paren[stack.pop()] = m.start()
    return _Masked(masked, braces, depth_after, line_starts, next_top, ends, close_paren)


def _line_col(line_starts: list[int], off: int) -> tuple[int, int]:
    ln = bisect.bisect_right(line_starts, off)
    return ln, off - line_starts[ln - 1] + 1


_SPACE_RE = re.compile(r"\s*+")


def _definitions(source: str, name: str) -> list[tuple[int, int, int, int]]:
    """(decl start, '(' offset, ')' offset, closing '}' offset) of each top-level definition.

    Each candidate costs a bounded amount of work (parentheses matched, braces closed and
    declaration starts found once per source, by :func:`_masked`): a source of a million
    ``k(`` is one pass, not a million."""
    found: list[tuple[int, int, int, int]] = []
    if not name.isidentifier():  # a name from a damaged log: no C name, no definition
        return found
    mk = _masked(source)
    masked, braces, depth_after = mk.text, mk.braces, mk.depth_after
    for start, open_paren in _calls(masked, name):
        k = bisect.bisect_left(braces, start)
        if k > 0 and depth_after[k - 1] != 0:
            continue
        close_paren = mk.close_paren.get(open_paren)
        if close_paren is None or close_paren - open_paren > 200_000:
            continue
        # blanks and attributes between ')' and '{' (as far as 4000 characters on)
        limit = min(len(masked), close_paren + 4000)
        body = _SPACE_RE.match(masked, close_paren + 1, limit).end()  # type: ignore[union-attr]
        while masked.startswith("__attribute__", body):
            a = _ATTR_RE.match(masked, body, limit)
            if a is None:
                break
            body = _SPACE_RE.match(masked, a.end(), limit).end()  # type: ignore[union-attr]
        if body >= limit or masked[body] != "{":
            continue
        j = bisect.bisect_left(braces, body)
        if j >= len(braces) or braces[j] != body:
            continue
        end = mk.next_top[j]
        if end < 0:
            continue
        found.append((_decl_start(mk, start), open_paren, close_paren, end))
    return found


def _calls(text: str, name: str) -> Iterator[tuple[int, int]]:
    """(start, ``(`` offset) of each ``name (`` in ``text`` with ``name`` a whole word: a
    literal search (no pattern compiled from a name that a damaged log may make megabytes
    long); linear, since the blanks after one match end before the next match starts."""
    n = len(text)
    at = text.find(name)
    while at >= 0:
        end = at + len(name)
        if (at == 0 or not _is_word(text[at - 1])) and (end == n or not _is_word(text[end])):
            p = _SPACE_RE.match(text, end).end()  # type: ignore[union-attr]
            if p < n and text[p] == "(":
                yield at, p
        at = text.find(name, at + 1)


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _pick(source: str, name: str, near: int | None) -> tuple[int, int, int, int] | None:
    defs = _definitions(source, name)
    if not defs:
        return None
    if near is not None:
        starts = _masked(source).line_starts
        for d in defs:
            first = _line_col(starts, d[0])[0]
            last = _line_col(starts, d[3])[0]
            if first <= near <= last:
                return d
    return defs[0]


def _decl_start(mk: _Masked, name_off: int) -> int:
    """Just after the last ';' or '}' before the name, less leading blanks."""
    k = bisect.bisect_left(mk.ends, name_off)
    j = mk.ends[k - 1] + 1 if k else 0
    return min(name_off, _SPACE_RE.match(mk.text, j, name_off).end())  # type: ignore[union-attr]


def kernel_span(source: str, name: str, near: int | None = None) -> tuple[int, int] | None:
    """1-based first and last line of a kernel's definition in the original source.

    A name defined in several ``#if`` branches has several definitions: ``near`` (a line inside
    the wanted one, e.g. `KernelSignature.name_line`) picks it; otherwise the first is returned.
    """
    found = _pick(source, name, near)
    if found is None:
        return None
    starts = _masked(source).line_starts
    return _line_col(starts, found[0])[0], _line_col(starts, found[3])[0]


def param_spans(source: str, name: str,
                near: int | None = None) -> list[tuple[int, int, int, int]] | None:
    """(line, col, end_line, end_col) of each parameter as written (1-based, end inclusive).

    Counts what is written between the parentheses: a parameter list produced by a macro gives
    fewer spans than the signature has params.
    """
    found = _pick(source, name, near)
    if found is None:
        return None
    mk = _masked(source)
    masked, line_starts = mk.text, mk.line_starts
    _, open_p, close_p, _ = found
    spans: list[tuple[int, int, int, int]] = []
    depth = 0
    seg = open_p + 1
    for j in range(open_p + 1, close_p + 1):
        c = masked[j]
        if c in "([{":
            depth += 1
        elif c in ")]}" and j != close_p:
            depth -= 1
        if (c == "," and depth == 0) or j == close_p:
            a, b = seg, j
            while a < b and masked[a].isspace():
                a += 1
            while b > a and masked[b - 1].isspace():
                b -= 1
            if b > a and masked[a:b].strip() != "void":
                spans.append((*_line_col(line_starts, a), *_line_col(line_starts, b - 1)))
            seg = j + 1
    return spans
