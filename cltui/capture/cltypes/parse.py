"""Parsing OpenCL C type text: a user-typed element format (``float4``,
``struct { float2 p; ushort id[2]; }``, ``int[3]``) into a :class:`~.layout.CType`
(:func:`parse_type`); the kernel-signature parser (``signature.py``) drives the same
:class:`TypeParser` over kernel sources."""

from __future__ import annotations

import re

from cltui.capture.cltypes.layout import (
    BUILTINS,
    TYPE_KEYWORDS,
    CType,
    TypeParseError,
    array_of,
    lookup,
    make_record,
    pointer_to,
    unknown,
)

__all__ = ["TypeParser", "parse_type", "tokenize_type"]

_TOKEN_RE = re.compile(r"\s*(?:(?P<id>[A-Za-z_]\w*)|(?P<num>0[xX][0-9a-fA-F]+|\d+)[uUlL]*"
                       r"|(?P<p>[{}\[\];,*()+\-/]))")


def tokenize_type(text: str) -> list[str]:
    toks: list[str] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None or m.end() == pos:
            rest = text[pos:].strip()
            if not rest:
                break
            raise TypeParseError(f"unexpected character {rest[0]!r} at column {pos + 1}")
        toks.append(m.group("id") or m.group("num") or m.group("p"))
        pos = m.end()
    return toks


_IGNORED_QUALIFIERS = frozenset({
    "const", "volatile", "restrict", "__restrict", "__restrict__", "__global", "global",
    "__local", "local", "__constant", "constant", "__private", "private", "__generic", "generic",
    "__read_only", "read_only", "__write_only", "write_only", "__read_write", "read_write",
    "__const",
})


class TypeParser:
    """Recursive-descent parser for a type or a struct body, over pre-split tokens."""

    def __init__(self, toks: list[str], typedefs: dict[str, CType], tags: dict[str, CType]):
        self.toks = toks
        self.i = 0
        self.typedefs = typedefs
        self.tags = tags

    def peek(self, k: int = 0) -> str | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def take(self) -> str:
        if self.i >= len(self.toks):
            raise TypeParseError("unexpected end of type")
        t = self.toks[self.i]
        self.i += 1
        return t

    def expect(self, t: str) -> None:
        got = self.peek()
        if got != t:
            raise TypeParseError(f"expected {t!r}, found {got or 'end of text'!r}")
        self.i += 1

    def attributes(self) -> tuple[bool, int | None]:
        """Consume any ``__attribute__((...))``; returns (packed, aligned)."""
        packed = False
        aligned: int | None = None
        while self.peek() in ("__attribute__", "__attribute"):
            self.i += 1
            start = self.i
            self.skip_balanced("(", ")")
            body = self.toks[start:self.i]
            if "packed" in body or "__packed__" in body:
                packed = True
            for key in ("aligned", "__aligned__"):
                if key in body:
                    k = body.index(key)
                    if k + 1 < len(body) and body[k + 1] == "(":
                        aligned = self._eval_align(body[k + 2:])
                    else:
                        aligned = 16
        return packed, aligned

    def _eval_align(self, toks: list[str]) -> int | None:
        depth = 1
        expr: list[str] = []
        j = 0
        while j < len(toks):
            t = toks[j]
            if t == "(":
                depth += 1
            elif t == ")":
                depth -= 1
                if depth == 0:
                    break
            if t == "sizeof" and j + 1 < len(toks) and toks[j + 1] == "(":
                end = toks.index(")", j)
                sub = TypeParser(toks[j + 2:end], self.typedefs, self.tags)
                ct = sub.type_name()
                expr.append(str(ct.size or 0))
                j = end + 1
                continue
            expr.append(t)
            j += 1
        text = "".join(expr)
        if not re.fullmatch(r"[0-9+*/()\- ]+", text or "x"):
            return None
        try:
            value = eval(text, {"__builtins__": {}}, {})  # digits and operators only
        except (SyntaxError, ZeroDivisionError, TypeError):
            return None
        return int(value) if isinstance(value, (int, float)) and value > 0 else None

    def specifier(self) -> CType:
        """Qualifiers + a base type (scalar words, typedef name, struct/union/enum)."""
        words: list[str] = []
        while True:
            t = self.peek()
            if t is None:
                break
            if t in _IGNORED_QUALIFIERS:
                self.i += 1
                continue
            if t in ("__attribute__", "__attribute"):
                self.attributes()
                continue
            if t in ("struct", "union"):
                if words:
                    break
                return self.record()
            if t == "enum":
                if words:
                    break
                self.i += 1
                if self.peek() not in (None, "{"):
                    self.i += 1
                if self.peek() == "{":
                    self.skip_braces()
                return BUILTINS["int"]
            if t in TYPE_KEYWORDS:
                words.append(t)
                self.i += 1
                continue
            if not words and re.match(r"[A-Za-z_]\w*$", t):
                self.i += 1
                words.append(t)
                break
            break
        if not words:
            raise TypeParseError(f"expected a type name, found {self.peek() or 'end of text'!r}")
        name = " ".join(words)
        return lookup(name, self.typedefs)

    def skip_braces(self) -> None:
        self.skip_balanced("{", "}")

    def skip_balanced(self, open_: str, close: str) -> None:
        """Past the ``open_`` at the cursor and everything up to its matching ``close``
        (:meth:`take` raises at the end of the text)."""
        depth = 0
        while True:
            t = self.take()
            if t == open_:
                depth += 1
            elif t == close:
                depth -= 1
                if depth == 0:
                    return

    def record(self) -> CType:
        union = self.take() == "union"
        packed, aligned = self.attributes()
        tag: str | None = None
        if self.peek() not in (None, "{") and re.match(r"[A-Za-z_]\w*$", self.peek() or ""):
            tag = self.take()
        p2, a2 = self.attributes()
        packed, aligned = packed or p2, a2 or aligned
        key = ("union " if union else "struct ") + (tag or "")
        if self.peek() != "{":
            if tag is None:
                raise TypeParseError("expected '{' after struct")
            return self.tags.get(key) or unknown(key)
        self.expect("{")
        members: list[tuple[str, CType]] = []
        aligns: list[int | None] = []
        while self.peek() != "}":
            if self.peek() is None:
                raise TypeParseError("missing '}' at the end of the struct")
            if self.peek() == ";":
                self.i += 1
                continue
            base = self.specifier()
            _, base_align = self.attributes()
            if self.peek() == ";":  # anonymous struct/union member: flatten its fields
                self.i += 1
                members.append(("", base))
                aligns.append(base_align)
                continue
            while True:
                fname, ct, fa = self.declarator(base)
                if not fname:
                    raise TypeParseError(f"struct field of type {base.name} needs a name")
                members.append((fname, ct))
                aligns.append(fa or base_align)
                if self.peek() == ",":
                    self.i += 1
                    continue
                break
            self.expect(";")
        self.expect("}")
        p4, a4 = self.attributes()
        packed, aligned = packed or p4, a4 or aligned
        name = key if tag else ("union" if union else "struct")
        flat: list[tuple[str, CType]] = []
        flat_aligns: list[int | None] = []
        for (fname, ct), a in zip(members, aligns, strict=True):
            flat.append((fname, ct))
            flat_aligns.append(a)
        rec = make_record(name, flat, union=union, packed=packed, aligned=aligned,
                          member_aligns=flat_aligns)
        if tag:
            self.tags[key] = rec
        return rec

    def declarator(self, base: CType) -> tuple[str, CType, int | None]:
        ct = base
        while self.peek() in ("*",) or self.peek() in _IGNORED_QUALIFIERS:
            if self.take() == "*":
                ct = pointer_to(ct)
        name = ""
        t = self.peek()
        if t is not None and re.match(r"[A-Za-z_]\w*$", t) and t not in ("__attribute__",):
            name = self.take()
        dims: list[int] = []
        while self.peek() == "[":
            self.i += 1
            size_tok = self.take()
            if not re.match(r"(0[xX][0-9a-fA-F]+|\d+)$", size_tok):
                raise TypeParseError(f"array size must be a number, found {size_tok!r}")
            dims.append(int(size_tok, 16) if size_tok[:2] in ("0x", "0X") else int(size_tok))
            self.expect("]")
        for count in reversed(dims):
            ct = array_of(ct, count)
        _, fa = self.attributes()
        return name, ct, fa

    def type_name(self) -> CType:
        base = self.specifier()
        self.attributes()
        _, ct, _ = self.declarator(base)
        return ct


def _unknown_message(ct: CType) -> str:
    path: list[str] = []
    while ct.fields and ct.fields[-1].offset == -1:
        path.append(ct.fields[-1].name)
        ct = ct.fields[-1].ctype
    while ct.kind == "array" and ct.element is not None:
        ct = ct.element
    where = f" (field {'.'.join(path)!r})" if path else ""
    return f"unknown type {ct.name!r}{where}"


def parse_type(text: str, typedefs: dict[str, CType] | None = None) -> CType:
    """Parse a user-typed element format (``float4``, ``struct { float x; int k; }``, ...)."""
    if not text or not text.strip():
        raise TypeParseError("empty type")
    toks = tokenize_type(text)
    while toks and toks[-1] == ";" and toks.count("{") == toks.count("}"):
        toks.pop()
    p = TypeParser(toks, dict(typedefs or {}), {})
    ct = p.type_name()
    if p.peek() is not None:
        raise TypeParseError(f"unexpected {p.peek()!r} after type {ct.name!r}")
    if ct.kind == "unknown":
        raise TypeParseError(_unknown_message(ct))
    if ct.kind == "void":
        raise TypeParseError("void has no size")
    return ct
