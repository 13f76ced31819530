"""Kernel signatures from OpenCL C source: names, params, address spaces, typed elements.

Real kernels name their types through macros chosen by build options (``-D T=float``) and through
typedefs under ``#if``, so the source goes through a real C preprocessor (pcpp) with the captured
options before the declarations are read. To keep this fast on megabyte sources, function bodies are
blanked first (their lines kept, directives inside them kept), which leaves pcpp only the
directives, typedefs, structs and signatures; if brace counting through ``#if`` branches goes wrong
the full text is preprocessed instead (that part is :mod:`cltui.capture.preprocess`; where
a kernel and its parameters are in the source is :mod:`cltui.capture.spans`).

Never imports pyopencl: pyopencl's ``-I <venv>/site-packages/pyopencl/cl`` paths from another
machine are replaced by the local pyopencl's ``cl/`` folder, found with `importlib.util.find_spec`.
Unknown types give a `CType` of kind ``"unknown"``; nothing here raises on odd sources.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from cltui.capture.cltypes import (
    BUILTINS,
    CType,
    TypeParseError,
    TypeParser,
    lookup,
    unknown,
)
from cltui.capture.preprocess import (
    MAIN_SOURCE,
    BuildOptions,
    parse_build_options,
    preprocess,
)
from cltui.capture.spans import (
    kernel_span,
    param_spans,
)

__all__ = [
    "BuildOptions",
    "KernelSignature",
    "Param",
    "ProgramSignatures",
    "kernel_span",
    "param_spans",
    "parse_build_options",
    "parse_kernels",
    "parse_program",
]

ADDRESS_SPACES = {
    "__global": "global", "global": "global", "__local": "local", "local": "local",
    "__constant": "constant", "constant": "constant", "__private": "private",
    "private": "private", "__generic": "generic", "generic": "generic",
}
ACCESS = {
    "__read_only": "read_only", "read_only": "read_only", "__write_only": "write_only",
    "write_only": "write_only", "__read_write": "read_write", "read_write": "read_write",
}
KERNEL_WORDS = frozenset({"__kernel", "kernel"})
_QUALIFIER_WORDS = frozenset({"const", "__const", "restrict", "__restrict", "__restrict__",
                              "volatile"})
_CANONICAL_SPELLING = {"unsigned int": "uint", "unsigned char": "uchar", "unsigned short": "ushort",
                       "unsigned long": "ulong", "unsigned": "uint", "signed char": "char"}


@dataclass
class Param:
    index: int
    name: str
    address_space: str
    access: str | None
    is_pointer: bool
    is_const: bool
    is_restrict: bool
    is_volatile: bool
    type_text: str
    ctype: CType

    @property
    def dtype(self) -> np.dtype[np.generic] | None:
        """Element dtype for pointers, value dtype for by-value params (None for images etc.)."""
        return self.ctype.dtype

    @property
    def type_name(self) -> str:
        """The type as spelled (typedef names kept), like CL_KERNEL_ARG_TYPE_NAME: ``real4*``."""
        words = [w for w in self.type_text.replace("*", " ").split()
                 if w not in ADDRESS_SPACES and w not in ACCESS and w not in _QUALIFIER_WORDS]
        base = " ".join(words) or self.ctype.name
        base = _CANONICAL_SPELLING.get(base, base)
        return base + ("*" if self.is_pointer else "")

    @property
    def is_image(self) -> bool:
        return self.ctype.kind == "image" and not self.is_pointer

    @property
    def is_local(self) -> bool:
        return self.address_space == "local"


@dataclass
class KernelSignature:
    name: str
    params: list[Param]
    line: int
    attributes: dict[str, str] = field(default_factory=dict)
    name_line: int = 0  # line of the kernel's name (``line`` is where the declaration starts)
    span: tuple[int, int] | None = None  # `kernel_span` of this definition, when found

    @property
    def unknown_params(self) -> list[Param]:
        return [p for p in self.params if p.ctype.kind == "unknown"]


@dataclass
class ProgramSignatures:
    kernels: dict[str, KernelSignature]
    typedefs: dict[str, CType]
    missing_includes: list[str]
    warnings: list[str]
    preprocessed_fully: bool = False


# --------------------------------------------------------------------------- C tokens

_C_TOKEN_RE = re.compile(
    r"(?P<nl>\n)|(?P<line>^[ \t]*#[ \t]*(?:line[ \t]+)?(?P<ln>\d{1,9})(?!\d)"
    r"(?:[ \t]+\"(?P<file>[^\"]*)\")?"
    r"[^\n]*)|(?P<dir>^[ \t]*#[^\n]*)|(?P<ws>[ \t\r\f\v]+|//[^\n]*|/\*.*?\*/)"
    r"|(?P<str>\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*')"
    r"|(?P<tok>[A-Za-z_]\w*|\.?\d(?:[\w.]|[eEpP][+-])*|->|\+\+|--|<<|>>|&&|\|\||##|[^\s])",
    re.MULTILINE | re.DOTALL,
)


def _tokens(text: str) -> tuple[list[str], list[int], list[str]]:
    """Tokens of preprocessed text with their (original) line numbers and file names."""
    toks: list[str] = []
    lines: list[int] = []
    files: list[str] = []
    line = 1
    fname = MAIN_SOURCE
    for m in _C_TOKEN_RE.finditer(text):
        kind = m.lastgroup
        if kind == "nl":
            line += 1
        elif kind == "tok" or kind == "str":
            toks.append(m.group())
            lines.append(line)
            files.append(fname)
        elif kind == "line" or kind == "ln" or kind == "file":
            line = int(m.group("ln")) - 1
            if m.group("file") is not None:
                fname = m.group("file")
        elif kind == "ws":
            line += m.group().count("\n")
    return toks, lines, files


def _match_brackets(toks: list[str]) -> dict[int, int]:
    pairs = {"(": ")", "[": "]", "{": "}"}
    match: dict[int, int] = {}
    stack: list[int] = []
    for i, t in enumerate(toks):
        if t in pairs:
            stack.append(i)
        elif t in (")", "]", "}"):
            while stack and pairs[toks[stack[-1]]] != t:
                stack.pop()
            if stack:
                match[stack.pop()] = i
    return match


def _strip_attributes(toks: list[str], match: dict[int, int], start: int, end: int,
                      attrs: dict[str, str] | None) -> list[int]:
    """Indices in [start, end) that are not inside ``__attribute__((...))``."""
    keep: list[int] = []
    i = start
    while i < end:
        t = toks[i]
        if t in ("__attribute__", "__attribute") and i + 1 < end and toks[i + 1] == "(":
            close = match.get(i + 1, end - 1)
            if attrs is not None:
                _collect_attributes(toks[i + 2:close], attrs)
            i = close + 1
            continue
        keep.append(i)
        i += 1
    return keep


def _collect_attributes(toks: list[str], attrs: dict[str, str]) -> None:
    # toks: inside the outer parens: ( name(args), name2 )
    for item in _split_commas(toks[1:-1] if toks and toks[0] == "(" else toks):
        if not item:
            continue
        name = item[0].strip("_") if item[0].startswith("__") else item[0]
        args = "".join(item[2:-1]) if len(item) > 2 else ""
        args = args.replace(",", ", ")
        attrs[name] = args


def _split_commas(toks: list[str]) -> list[list[str]]:
    out: list[list[str]] = []
    cur: list[str] = []
    depth = 0
    for t in toks:
        if t in "([{" and t:
            depth += 1
        elif t in ")]}" and t:
            depth -= 1
        if t == "," and depth == 0:
            out.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur or out:
        out.append(cur)
    return out


# --------------------------------------------------------------------------- program parse

class _ProgramParser:
    def __init__(self, text: str) -> None:
        self.toks, self.lines, self.files = _tokens(text)
        self.match = _match_brackets(self.toks)
        self.rmatch = {c: o for o, c in self.match.items()}
        self.typedefs: dict[str, CType] = {}
        self.tags: dict[str, CType] = {}
        self.kernels: dict[str, KernelSignature] = {}
        self.warnings: list[str] = []

    def run(self) -> None:
        toks = self.toks
        n = len(toks)
        i = 0
        start = 0
        while i < n:
            t = toks[i]
            if t == "{":
                close = self.match.get(i)
                if close is None:
                    break
                keep = _strip_attributes(toks, self.match, start, i, None)
                if keep and toks[keep[-1]] == ")":
                    self._function(start, i)
                    i = close + 1
                    start = i
                    continue
                i = close + 1
                continue
            if t == ";":
                self._declaration(start, i)
                start = i + 1
            elif t in ("(", "["):
                i = self.match.get(i, i) + 1
                continue
            i += 1

    def _declaration(self, start: int, end: int) -> None:
        toks = self.toks[start:end]
        if not toks:
            return
        try:
            if toks[0] == "typedef":
                p = TypeParser(toks[1:], self.typedefs, self.tags)
                base = p.specifier()
                p.attributes()
                while p.peek() is not None:
                    name, ct, _ = p.declarator(base)
                    if name:
                        if ct.name in ("struct", "union"):
                            ct = replace(ct, name=name)
                        self.typedefs[name] = ct
                    if p.peek() == ",":
                        p.i += 1
                        continue
                    break
            elif "{" in toks and toks[0] in ("struct", "union", "__attribute__"):
                p = TypeParser([t for t in toks if t != "typedef"], self.typedefs, self.tags)
                p.specifier()
            elif toks[0] in KERNEL_WORDS or "__kernel" in toks:
                self._kernel_decl(start, end, definition=False)
        except (TypeParseError, IndexError, ValueError) as exc:
            self.warnings.append(f"line {self.lines[start]}: cannot read declaration: {exc}")

    def _function(self, start: int, brace: int) -> None:
        head = self.toks[start:brace]
        if not (KERNEL_WORDS & set(head)):
            return
        self._kernel_decl(start, brace, definition=True)

    def _kernel_decl(self, start: int, end: int, definition: bool) -> None:
        toks = self.toks
        attrs: dict[str, str] = {}
        keep = _strip_attributes(toks, self.match, start, end, attrs)
        if not keep or toks[keep[-1]] != ")":
            return
        close = keep[-1]
        opening = self.rmatch.get(close)
        if opening is None or toks[opening] != "(" or opening - 1 < start:
            return
        name_i = opening - 1
        name = toks[name_i]
        if not re.match(r"[A-Za-z_]\w*$", name):
            return
        if not any(toks[k] in KERNEL_WORDS for k in keep if k < name_i):
            return  # e.g. a helper with a parameter named "kernel"
        if not definition and name in self.kernels:
            return
        params: list[Param] = []
        inner = [toks[k] for k in _strip_attributes(toks, self.match, opening + 1, close, attrs)]
        groups = _split_commas(inner)
        if groups == [["void"]] or groups == [[]]:
            groups = []
        for idx, g in enumerate(groups):
            params.append(self._param(idx, g))
        self.kernels[name] = KernelSignature(name, params, self.lines[start], attrs,
                                             name_line=self.lines[name_i])

    def _param(self, index: int, g: list[str]) -> Param:
        space, access, is_const, is_restrict, is_volatile, core = _qualifiers(g)
        name, ctype, is_pointer = self._declared(core)
        if ctype.kind == "image":
            access = access or "read_only"
            space = space or "global"
        text_toks = [t for t in g if t != name]
        if space is None:
            space = "private"
        return Param(index, name, space, access, is_pointer, is_const, is_restrict, is_volatile,
                     _join(text_toks), ctype)

    def _declared(self, core: list[str]) -> tuple[str, CType, bool]:
        """(name, type, is a pointer) of one parameter's tokens without address space and
        access; a pointer's type is its innermost pointee, an unknown type when unparsable."""
        try:
            p = TypeParser(core, self.typedefs, self.tags)
            base = p.specifier()
            p.attributes()
            pname, ct, _ = p.declarator(base)
            while p.peek() == "[":  # unsized array param: a pointer
                p.i += 1
                while p.peek() not in (None, "]"):
                    p.i += 1
                p.i += 1
                ct = CType(f"{ct.name}*", "pointer", 8, 8, np.dtype("u8"), element=ct)
        except (TypeParseError, IndexError, ValueError):
            words = [t for t in core if re.match(r"[A-Za-z_]\w*$", t)]
            name = words[-1] if len(words) > 1 else ""
            unk = unknown(" ".join(words[:-1]) if len(words) > 1 else " ".join(core))
            return name, unk, "*" in core
        if ct.kind != "pointer" or ct.element is None:
            return pname, ct, False
        ctype = ct.element
        while ctype.kind == "pointer" and ctype.element is not None:
            ctype = ctype.element  # pointer to pointer: report the innermost type
        return pname, ctype, True


def _qualifiers(
    g: list[str],
) -> tuple[str | None, str | None, bool, bool, bool, list[str]]:
    """(address space, access, const, restrict, volatile, the other tokens) of one parameter;
    ``const`` and ``volatile`` after a ``*`` qualify the pointer, not the data."""
    space: str | None = None
    access: str | None = None
    is_const = is_restrict = is_volatile = False
    core: list[str] = []
    seen_star = False
    for t in g:
        if t in ADDRESS_SPACES:
            space = ADDRESS_SPACES[t]
            continue
        if t in ACCESS:
            access = ACCESS[t]
            continue
        if t in ("const", "__const"):
            is_const = is_const or not seen_star
        elif t in ("restrict", "__restrict", "__restrict__"):
            is_restrict = True
        elif t == "volatile":
            is_volatile = is_volatile or not seen_star
        elif t == "*":
            seen_star = True
        core.append(t)
    return space, access, is_const, is_restrict, is_volatile, core


def _join(toks: list[str]) -> str:
    out = ""
    for t in toks:
        if not out:
            out = t
        elif t in ("[", "]", ")", ",") or out.endswith(("(", "[")):
            out += t
        else:
            out += " " + t
    return out


# a capture's programs (67 in pyopencl_lib): at 16 a pass over every enqueue missed each time
@functools.lru_cache(maxsize=256)
def _parse_program_cached(source: str, options: str,
                          include_dirs: tuple[str, ...]) -> ProgramSignatures:
    text, missing, warnings, used = preprocess(source, options, include_dirs)
    pp = _ProgramParser(text)
    pp.run()
    if used and not pp.kernels and re.search(r"\bk(?:ernel|ERNEL)\b|__kernel", source):
        # the skeleton hid something: preprocess the whole text
        text, missing, warnings, used = preprocess(source, options, include_dirs, skeleton=False)
        pp = _ProgramParser(text)
        pp.run()
    for k in pp.kernels.values():
        k.span = kernel_span(source, k.name, near=k.name_line)
        for prm in k.unknown_params:
            warnings.append(f"kernel {k.name}: parameter {prm.index} ({prm.name}) has unknown "
                            f"type {prm.ctype.name!r}")
    return ProgramSignatures(pp.kernels, pp.typedefs, missing, warnings + pp.warnings,
                             preprocessed_fully=not used)


def parse_program(source: str, options: str = "",
                  include_dirs: Sequence[str] = ()) -> ProgramSignatures:
    """Kernels, typedefs and what went wrong (missing includes, unknown types)."""
    res = _parse_program_cached(source, options or "", tuple(include_dirs))
    return replace(res, kernels=dict(res.kernels), typedefs=dict(res.typedefs),
                   missing_includes=list(res.missing_includes), warnings=list(res.warnings))


def parse_kernels(source: str, options: str = "",
                  include_dirs: Sequence[str] = ()) -> dict[str, KernelSignature]:
    """Every ``__kernel`` function of a program, by name."""
    return parse_program(source, options, include_dirs).kernels


# keep the names the capture layer may want in one place
TYPE_BUILTINS = BUILTINS
type_by_name = lookup
