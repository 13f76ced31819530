"""The functions a kernel calls (:mod:`.instrument`): which it reaches, and the trace
arguments their definitions, declarations and calls get."""

from __future__ import annotations

from typing import Any

__all__ = ["reachable", "signatures"]


def reachable(ci: Any, fns: dict[str, Any], kernel: str) -> list[str]:
    seen: list[str] = []
    todo = [kernel]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.append(name)
        for c in fns[name].walk_preorder():
            if c.kind == ci.CursorKind.CALL_EXPR and c.spelling in fns and c.spelling != name:
                todo.append(c.spelling)
    return seen


def signatures(ci: Any, tu: Any, main: str, data: bytes, kernel: str, called: set[str],
                traced: set[str], edits: list[tuple[int, int, str]]) -> None:  # fmt: skip
    """The kernel's trace argument; the called functions' extra parameter and argument."""
    K = ci.CursorKind
    for c in tu.cursor.walk_preorder():
        if not (c.location.file and c.location.file.name == main):
            continue
        if c.kind == K.FUNCTION_DECL and (c.spelling in called or (
                c.spelling == kernel and c.is_definition())):  # fmt: skip
            param = ("__global uint *cltui_trace" if c.spelling == kernel
                     else "__global uint *cltui_t, uint *cltui_s")  # fmt: skip
            close = _close_paren(c, data)
            if close is not None:
                has = any(True for _ in c.get_arguments())
                edits.append((close, 2, (", " if has else "") + param))
        elif c.kind == K.CALL_EXPR and c.spelling in called:
            inner = _enclosing(c, tu, main)
            arg = "cltui_t, cltui_s" if inner in traced else "(__global uint *)0, (uint *)0"
            close = c.extent.end.offset - 1
            if data[close : close + 1] == b")":
                has = any(True for _ in c.get_arguments())
                edits.append((close, 2, (", " if has else "") + arg))


def _close_paren(fn: Any, data: bytes) -> int | None:
    """The offset of the ``)`` that closes a function declaration's parameters."""
    toks = list(fn.get_tokens())
    depth = 0
    for t in toks:
        if t.spelling == "(":
            depth += 1
        elif t.spelling == ")":
            depth -= 1
            if depth == 0:
                off = int(t.extent.start.offset)
                return off if data[off : off + 1] == b")" else None
    return None


def _enclosing(c: Any, tu: Any, main: str) -> str | None:
    """The function a call sits in (by offsets)."""
    off = c.extent.start.offset
    for f in tu.cursor.get_children():
        if (f.location.file and f.location.file.name == main
                and f.extent.start.offset <= off < f.extent.end.offset):  # fmt: skip
            return str(f.spelling)
    return None
