"""A kernel source's own tuning parameters: its ``#define NAME value`` lines.

A ``-D NAME=V`` build option does not change a parameter that the source ``#define``s
unguarded (the source's definition wins, with at most a "macro redefined" warning in the
build log): such a define is refused with the line that defines it, and a parameter is
changed by rewriting that line instead (``--param``, as Kernel Tuner does).  A definition
inside ``#ifndef NAME`` (or ``#if !defined(NAME)``) is a default that ``-D`` overrides.

The scan is one pass over the lines (comments and line continuations included): linear in
the source, whatever it holds.
"""

from __future__ import annotations

import ast
import dataclasses
import operator
import re
from collections.abc import Callable
from typing import Any

from cltui.text.escape import escape_controls

__all__ = [
    "DefineSite", "check_restriction", "define_sites", "number", "overriding_site", "set_param",
    "validate_restriction",
]  # fmt: skip

_DIRECTIVE = re.compile(r"[ \t]*#[ \t]*([A-Za-z]+)\b[ \t]*(.*)")
_NAME = re.compile(r"[A-Za-z_]\w*")
_NOT_DEFINED = re.compile(r"!\s*defined\s*(?:\(\s*([A-Za-z_]\w*)\s*\)|([A-Za-z_]\w*))\s*$")


@dataclasses.dataclass(frozen=True)
class DefineSite:
    """One ``#define NAME`` or ``#undef NAME`` line of a source (1-based ``line``)."""

    line: int
    text: str
    guarded: bool  # inside #ifndef NAME: a default that -D NAME overrides
    undef: bool = False


def _logical_lines(source: str) -> list[tuple[int, str]]:
    """(first line number, text) of each logical line: continuations joined, comments
    blanked (a ``/* */`` comment that spans lines ends the line it starts on)."""
    out: list[tuple[int, str]] = []
    in_comment = False
    pending: list[str] = []
    start = 1
    for number, raw in enumerate(source.split("\n"), 1):
        text, in_comment = _strip_comments(raw, in_comment)
        if not pending:
            start = number
        if text.endswith("\\"):
            pending.append(text[:-1])
            continue
        pending.append(text)
        out.append((start, " ".join(pending)))
        pending = []
    if pending:
        out.append((start, " ".join(pending)))
    return out


def _strip_comments(line: str, in_comment: bool) -> tuple[str, bool]:
    """``line`` without its comments; whether a block comment is still open at its end."""
    out: list[str] = []
    i = 0
    n = len(line)
    while i < n:
        if in_comment:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out), True
            i = end + 2
            in_comment = False
            out.append(" ")
            continue
        slash = line.find("/", i)
        if slash < 0 or slash + 1 >= n:
            out.append(line[i:])
            break
        nxt = line[slash + 1]
        if nxt == "/":
            out.append(line[i:slash])
            break
        if nxt == "*":
            out.append(line[i:slash])
            i = slash + 2
            in_comment = True
            continue
        out.append(line[i : slash + 1])
        i = slash + 1
    return "".join(out).rstrip(), in_comment


def define_sites(source: str, name: str) -> list[DefineSite]:
    """Every ``#define name`` / ``#undef name`` of ``source``, in order."""
    sites: list[DefineSite] = []
    guards: list[bool] = []  # per open conditional: its branch holds only while name is undefined
    for number, text in _logical_lines(source):
        m = _DIRECTIVE.match(text)
        if m is None:
            continue
        word, rest = m.group(1), m.group(2).strip()
        if word in ("if", "ifdef", "ifndef"):
            guards.append(_guards(word, rest, name))
        elif word in ("elif", "else") and guards:
            guards[-1] = False
        elif word == "endif" and guards:
            guards.pop()
        elif word in ("define", "undef"):
            n = _NAME.match(rest)
            if n is not None and n.group(0) == name:
                shown = escape_controls(text.strip()[:120])  # untrusted text, in one line
                sites.append(DefineSite(number, shown, any(guards), word == "undef"))
    return sites


def _guards(word: str, rest: str, name: str) -> bool:
    if word == "ifndef":
        n = _NAME.match(rest)
        return n is not None and n.group(0) == name
    if word == "if":
        m = _NOT_DEFINED.match(rest)
        return m is not None and (m.group(1) or m.group(2)) == name
    return False


def overriding_site(source: str, name: str) -> DefineSite | None:
    """The first line of ``source`` that makes ``-D name=...`` do nothing (an unguarded
    ``#define name`` or ``#undef name``); None when -D applies."""
    return next((s for s in define_sites(source, name) if not s.guarded), None)


def set_param(source: str, name: str, value: str) -> str | None:
    """``source`` with each unguarded ``#define name ...`` line set to ``#define name
    value``; None when the source has none (then ``-D name=value`` is the way)."""
    targets = {s.line for s in define_sites(source, name) if not s.guarded and not s.undef}
    if not targets:
        return None
    lines = source.split("\n")
    for number in sorted(targets):
        i = number - 1
        end = i
        while end < len(lines) - 1 and lines[end].rstrip().endswith("\\"):
            end += 1  # a definition continued over several lines becomes one line
        indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
        lines[i : end + 1] = [f"{indent}#define {name} {value}"] + [""] * (end - i)
    return "\n".join(lines)


# ---------------------------------------------------------------- --restrict constraints

_OPS: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv, ast.Div: operator.truediv, ast.Mod: operator.mod,
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.USub: operator.neg, ast.UAdd: operator.pos,
    ast.Not: operator.not_,
}  # fmt: skip


def number(text: str) -> int | float:
    """A parameter's value as a number (``ValueError`` when it is none)."""
    try:
        return int(text, 0)
    except ValueError:
        return float(text)


def validate_restriction(expr: str, names: set[str]) -> None:
    """``ValueError`` unless ``expr`` is arithmetic, comparisons and and/or/not over numbers
    and the parameter ``names`` (e.g. ``WGS % VW == 0 and WGS * VW <= 1024``)."""
    if len(expr) > 1000:
        raise ValueError("--restrict: an expression of at most 1000 characters")
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        raise ValueError(f"--restrict {expr!r} is not an expression") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if node.id not in names:
                known = ", ".join(sorted(names)) or "none"
                raise ValueError(f"--restrict {expr!r}: {node.id} is not a --param "
                                 f"(parameters: {known})")  # fmt: skip
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, (int, float)) or isinstance(node.value, bool):
                raise ValueError(f"--restrict {expr!r}: only numbers and parameters")
        elif not isinstance(node, (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.BinOp,
                                   ast.UnaryOp, ast.Compare, ast.Load, *_OPS)):
            raise ValueError(f"--restrict {expr!r}: {type(node).__name__} is not allowed "
                             "(arithmetic, comparisons, and, or, not)")  # fmt: skip


def check_restriction(expr: str, values: dict[str, int | float]) -> bool:
    """Whether the point with parameter ``values`` meets ``expr`` (validated before); a
    division by zero does not."""
    try:
        return bool(_eval(ast.parse(expr, mode="eval").body, values))
    except (ZeroDivisionError, KeyError, OverflowError):
        return False


def _eval(node: ast.AST, values: dict[str, int | float]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return values[node.id]
    if isinstance(node, ast.UnaryOp):
        return _OPS[type(node.op)](_eval(node.operand, values))
    if isinstance(node, ast.BinOp):
        return _OPS[type(node.op)](_eval(node.left, values), _eval(node.right, values))
    if isinstance(node, ast.BoolOp):
        results = (_eval(v, values) for v in node.values)
        return all(results) if isinstance(node.op, ast.And) else any(results)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, values)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _eval(right_node, values)
            if not _OPS[type(op)](left, right):
                return False
            left = right
        return True
    raise ValueError(type(node).__name__)
