"""Kernel signatures from OpenCL C source: names, params, address spaces, typed elements.

Real kernels name their types through macros chosen by build options (``-D T=float``) and through
typedefs under ``#if``, so the source goes through a real C preprocessor (pcpp) with the captured
options before the declarations are read. To keep this fast on megabyte sources, function bodies are
blanked first (their lines kept, directives inside them kept), which leaves pcpp only the
directives, typedefs, structs and signatures; if brace counting through ``#if`` branches goes wrong
the full text is preprocessed instead.

Never imports pyopencl: pyopencl's ``-I <venv>/site-packages/pyopencl/cl`` paths from another
machine are replaced by the local pyopencl's ``cl/`` folder, found with `importlib.util.find_spec`.
Unknown types give a `CType` of kind ``"unknown"``; nothing here raises on odd sources.
"""

from __future__ import annotations

import bisect
import functools
import importlib.util
import io
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TextIO

import numpy as np
from pcpp import Action, OutputDirective, Preprocessor

from cltui.capture.cltypes import (
    BUILTINS,
    CType,
    TypeParseError,
    _TypeParser,
    lookup,
    unknown,
)
from cltui.capture.confine import host_header_refusal
from cltui.capture.shellwords import split_words

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
    def dtype(self) -> np.dtype[Any] | None:
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
class BuildOptions:
    """What a build-option string means to the preprocessor."""

    macros: list[tuple[str, str, str | None]]  # ("D", name, value) or ("U", name, None), in order
    include_dirs: list[str]
    cl_std: int | None = None
    fast_math: bool = False


@dataclass
class ProgramSignatures:
    kernels: dict[str, KernelSignature]
    typedefs: dict[str, CType]
    missing_includes: list[str]
    warnings: list[str]
    preprocessed_fully: bool = False


# --------------------------------------------------------------------------- options

# one shell word piece: blanks, plain characters, a quoted string, an escaped character
def parse_build_options(options: str) -> BuildOptions:
    """``-D name=value``/``-Dname``/``-U``/``-I dir``/``-Idir``/``-cl-std=CLx.y`` (rest ignored)."""
    out = BuildOptions([], [])
    toks = split_words(options or "")
    i = 0
    while i < len(toks):
        t = toks[i]
        i += 1
        flag = t[:2]
        if flag in ("-D", "-U", "-I") and not t.startswith("-I-"):
            arg = t[2:]
            if not arg:
                if i >= len(toks):
                    break
                arg = toks[i]
                i += 1
            if flag == "-I":
                out.include_dirs.append(arg)
            elif flag == "-U":
                out.macros.append(("U", arg.strip(), None))
            else:
                name, eq, value = arg.partition("=")
                out.macros.append(("D", name.strip(), value if eq else "1"))
        elif t.startswith("-cl-std="):
            m = re.match(r"-cl-std=CL(\d)\.(\d)", t)
            if m:
                out.cl_std = int(m.group(1)) * 100 + int(m.group(2)) * 10
        elif t in ("-cl-fast-relaxed-math",):
            out.fast_math = True
    return out


@functools.cache
def local_pyopencl_cl_dir() -> str | None:
    """The installed pyopencl's ``cl/`` folder, located without importing pyopencl."""
    try:
        spec = importlib.util.find_spec("pyopencl")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        cand = os.path.join(loc, "cl")
        if os.path.isdir(cand):
            return cand
    return None


def _resolve_include_dirs(dirs: Sequence[str], warnings: list[str]) -> list[str]:
    out: list[str] = []
    for d in dirs:
        if os.path.isdir(d):
            out.append(d)
            continue
        norm = d.replace("\\", "/").rstrip("/")
        if norm.endswith("pyopencl/cl"):
            local = local_pyopencl_cl_dir()
            if local:
                out.append(local)
                continue
        warnings.append(f"include directory not found: {d}")
    return out


# --------------------------------------------------------------------------- skeleton

# (an unclosed comment runs to the end and an unclosed string or character literal to the end
# of its line, as a compiler reads them: otherwise each later "/*" or quote would rescan the
# rest of the text, quadratic)
_SCAN_RE = re.compile(
    r"//[^\n]*|/\*.*?(?:\*/|\Z)|\"(?:\\.|[^\"\\\n])*+\\?(?:\"|(?=\n)|\Z)"
    r"|'(?:\\.|[^'\\\n])*+\\?(?:'|(?=\n)|\Z)|[{};]"
    r"|^[ \t]*#(?:[^\n]*\\\n)*[^\n]*",
    re.MULTILINE | re.DOTALL,
)
_ATTR_RE = re.compile(r"__attribute__\s*\(\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)\)")
_DIRECTIVE_LINE_RE = re.compile(r"^[ \t]*#.*$", re.MULTILINE)


def skeletonize(text: str) -> str | None:
    """Blank function bodies and initializers (keeping newlines and directives).

    Returns None when braces do not balance (e.g. ``#if`` branches each opening a brace).
    """
    out: list[str] = []
    pos = 0  # text[pos:] not yet emitted
    depth = 0
    stmt_start = 0
    blank_from: int | None = None  # start of the body being blanked (after its '{')
    for m in _SCAN_RE.finditer(text):
        tok = m.group()
        c = tok[0]
        if blank_from is not None:
            if c == "#" or tok.lstrip().startswith("#"):
                out.append("\n" * text.count("\n", pos, m.start()))
                out.append(tok)
                pos = m.end()
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    out.append("\n" * text.count("\n", pos, m.start()))
                    out.append("}")
                    pos = m.end()
                    blank_from = None
                    stmt_start = m.end()
            continue
        if c == "{":
            if depth == 0:
                prefix = _DIRECTIVE_LINE_RE.sub("", _strip_comments(text[stmt_start:m.start()]))
                prefix = _ATTR_RE.sub("", prefix).rstrip()
                if prefix.endswith(")") or prefix.endswith("="):
                    out.append(text[pos:m.end()])
                    pos = m.end()
                    blank_from = pos
            depth += 1
        elif c == "}":
            depth -= 1
            if depth < 0:
                return None
            if depth == 0:  # (only the end of a prefix decides: it need not go further back)
                stmt_start = m.end()
        elif c == ";" and depth == 0:
            stmt_start = m.end()
    if depth != 0 or blank_from is not None:
        return None
    out.append(text[pos:])
    return "".join(out)


_COMMENT_RE = re.compile(r"//[^\n]*|/\*.*?(?:\*/|\Z)", re.DOTALL)


def _strip_comments(text: str) -> str:
    return _COMMENT_RE.sub(" ", text) if "/" in text else text


# --------------------------------------------------------------------------- preprocessing

class _Pre(Preprocessor):  # type: ignore[misc]
    def __init__(self, skeleton: bool) -> None:
        super().__init__()
        self.skeleton = skeleton
        self.missing: list[str] = []
        self.errors: list[str] = []

    def on_error(self, file: str, line: int, msg: str) -> None:
        self.errors.append(f"{file}:{line}: {msg}")

    def on_include_not_found(self, is_malformed: bool, is_system_include: bool, curdir: str,
                             includepath: str) -> str:
        self.missing.append(includepath)
        raise OutputDirective(Action.IgnoreAndRemove)

    def on_directive_unknown(self, directive: Any, toks: Any, ifpassthru: bool,
                             precedingtoks: Any) -> bool | None:
        if directive.value in ("error", "warning"):
            self.errors.append("#" + directive.value + " " + "".join(t.value for t in toks))
            return True
        return None

    def on_file_open(self, is_system_include: bool, includepath: str) -> TextIO:
        # a captured -I folder and #include name are untrusted: the host-header rule decides
        # (refused: as if absent, pcpp tries the next folder, then reports it missing)
        why = host_header_refusal(includepath)
        if why is not None:
            raise OSError(why)
        return io.StringIO(_read_include(includepath, self.skeleton))


@functools.lru_cache(maxsize=64)
def _read_include(path: str, skeleton: bool) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if text.startswith("\ufeff"):
        text = text[1:]
    if skeleton:
        sk = skeletonize(text)
        if sk is not None:
            return sk
    return text


MAIN_SOURCE = "<kernel source>"


def _predefine(p: _Pre, opts: BuildOptions) -> None:
    std = opts.cl_std or 120
    for name, value in (
        ("__OPENCL_VERSION__", str(max(std, 120))), ("__OPENCL_C_VERSION__", str(std)),
        ("CL_VERSION_1_0", "100"), ("CL_VERSION_1_1", "110"), ("CL_VERSION_1_2", "120"),
        ("CL_VERSION_2_0", "200"), ("CL_VERSION_3_0", "300"), ("__ENDIAN_LITTLE__", "1"),
        ("__IMAGE_SUPPORT__", "1"), ("cl_khr_fp64", "1"), ("cl_khr_global_int32_base_atomics", "1"),
        ("cl_khr_local_int32_base_atomics", "1"), ("cl_khr_int64_base_atomics", "1"),
        ("__SIZEOF_POINTER__", "8"),
    ):
        p.define(f"{name} {value}")
    if opts.fast_math:
        p.define("__FAST_RELAXED_MATH__ 1")
    for op, mname, mvalue in opts.macros:
        if not mname:
            continue
        if op == "U":
            p.macros.pop(mname, None)
        else:
            try:
                p.define(f"{mname} {mvalue}")
            except Exception:  # a malformed -D must not stop the parse
                p.errors.append(f"bad macro definition -D {mname}={mvalue}")


_LIT_BODY = {
    '"': re.compile(r'(?:[^"\\\n]++|\\.)*+', re.DOTALL),
    "'": re.compile(r"(?:[^'\\\n]++|\\.)*+", re.DOTALL),
}
_LIT_NEXT_RE = re.compile(r"""["']|/\*|//""")


def defuse_literals(text: str) -> str:
    """``text`` with each quote that starts no complete string or character literal (one
    that does not close on its line) turned into a space.

    pcpp's lexer tries a literal at such a quote, scans to the end of the line, fails, skips
    one character and tries again at the next quote: quadratic in a line of ``"\\`` pairs.
    One pass here, linear: a literal of one quote kind that fails from ``q`` to ``e`` makes
    every quote of that kind inside it fail too (each sits on the first one's escape path),
    so those are turned into spaces at once.  Comments are skipped as the C lexer does."""
    if '"' not in text and "'" not in text:
        return text
    bad: list[int] = []
    failed_until = {'"': -1, "'": -1}
    pos = 0
    n = len(text)
    while pos < n:
        m = _LIT_NEXT_RE.search(text, pos)
        if m is None:
            break
        tok = m.group()
        at = m.start()
        if tok == "/*":
            end = text.find("*/", at + 2)
            pos = at + 2 if end < 0 else end + 2  # unclosed: the lexer goes on after it
            continue
        if tok == "//":
            end = text.find("\n", at)
            pos = n if end < 0 else end
            continue
        if at < failed_until[tok]:
            bad.append(at)
            pos = at + 1
            continue
        body = _LIT_BODY[tok].match(text, at + 1)
        end = body.end() if body is not None else at + 1
        if text.startswith(tok, end):
            pos = end + 1
            continue
        bad.append(at)
        failed_until[tok] = end
        pos = at + 1
    if not bad:
        return text
    chars = list(text)
    for i in bad:
        chars[i] = " "
    return "".join(chars)


# a line holding a control character (other than white space) is not OpenCL C: binary
# garbage in a damaged source; pcpp would spend a token and an error on each of its bytes
_CONTROL_LINE_RE = re.compile(r"^[^\n]*[\x00-\x08\x0e-\x1f\x7f][^\n]*$", re.MULTILINE)


def _drop_control_lines(text: str, warnings: list[str]) -> str:
    """``text`` with each line that holds a control character emptied (its line break kept,
    so line numbers stay), and a warning that says how many."""
    dropped = 0

    def empty(_m: re.Match[str]) -> str:
        nonlocal dropped
        dropped += 1
        return ""

    out = _CONTROL_LINE_RE.sub(empty, text)
    if dropped:
        warnings.append(
            f"{dropped} line{'s' if dropped != 1 else ''} of the source hold control characters "
            "(binary data, not OpenCL C): left out of the signature parse"
        )
    return out


def preprocess(source: str, options: str, include_dirs: Sequence[str] = (),
               skeleton: bool = True) -> tuple[str, list[str], list[str], bool]:
    """Returns (text, missing includes, warnings, skeleton_used)."""
    warnings: list[str] = []
    opts = parse_build_options(options)
    text = source[1:] if source.startswith("\ufeff") else source
    text = text.replace("\r\n", "\n").replace("\x00", " ")
    text = defuse_literals(_drop_control_lines(text, warnings))
    used = False
    if skeleton:
        sk = skeletonize(text)
        if sk is not None:
            text, used = sk, True
    p = _Pre(used)
    p.line_directive = "#line"
    for d in _resolve_include_dirs([*opts.include_dirs, *include_dirs], warnings):
        p.add_path(d)
    _predefine(p, opts)
    out = io.StringIO()
    try:
        p.parse(text, source=MAIN_SOURCE)
        p.write(out)
    except Exception as exc:  # pcpp on odd input: report it
        warnings.append(f"preprocessor failed: {exc}")
    warnings.extend(p.errors)
    return out.getvalue(), p.missing, warnings, used


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
    depth = 0
    cur: list[str] = []
    items: list[list[str]] = []
    for t in toks[1:-1] if toks and toks[0] == "(" else toks:
        if t == "(":
            depth += 1
        elif t == ")":
            depth -= 1
        if t == "," and depth == 0:
            items.append(cur)
            cur = []
        else:
            cur.append(t)
    items.append(cur)
    for item in items:
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
                p = _TypeParser(toks[1:], self.typedefs, self.tags)
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
                p = _TypeParser([t for t in toks if t != "typedef"], self.typedefs, self.tags)
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
        space: str | None = None
        access: str | None = None
        is_const = is_restrict = is_volatile = False
        text_toks: list[str] = []
        core: list[str] = []
        seen_star = False
        for t in g:
            if t in ADDRESS_SPACES:
                space = ADDRESS_SPACES[t]
            elif t in ACCESS:
                access = ACCESS[t]
            elif t in ("const", "__const"):
                if not seen_star:
                    is_const = True
            elif t in ("restrict", "__restrict", "__restrict__"):
                is_restrict = True
            elif t == "volatile":
                if not seen_star:
                    is_volatile = True
            elif t == "*":
                seen_star = True
            core.append(t) if t not in ADDRESS_SPACES and t not in ACCESS else None
        name = ""
        ctype: CType
        is_pointer = False
        try:
            p = _TypeParser(core, self.typedefs, self.tags)
            base = p.specifier()
            p.attributes()
            pname, ct, _ = p.declarator(base)
            while p.peek() == "[":  # unsized array param: a pointer
                p.i += 1
                while p.peek() not in (None, "]"):
                    p.i += 1
                p.i += 1
                ct = CType(f"{ct.name}*", "pointer", 8, 8, np.dtype("u8"), element=ct)
            name = pname
            if ct.kind == "pointer" and ct.element is not None:
                is_pointer = True
                ctype = ct.element
                while ctype.kind == "pointer" and ctype.element is not None:
                    ctype = ctype.element  # pointer to pointer: report the innermost type
            else:
                ctype = ct
        except (TypeParseError, IndexError, ValueError):
            words = [t for t in core if re.match(r"[A-Za-z_]\w*$", t)]
            name = words[-1] if len(words) > 1 else ""
            ctype = unknown(" ".join(words[:-1]) if len(words) > 1 else " ".join(core))
            is_pointer = "*" in core
        if ctype.kind == "image":
            access = access or "read_only"
            space = space or "global"
        for t in g:
            if t != name:
                text_toks.append(t)
        if space is None:
            space = "private"
        return Param(index, name, space, access, is_pointer, is_const, is_restrict, is_volatile,
                     _join(text_toks), ctype)


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


@functools.lru_cache(maxsize=16)
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


# --------------------------------------------------------------------------- spans

_MASK_RE = re.compile(r"//[^\n]*|/\*.*?(?:\*/|\Z)|\"(?:\\.|[^\"\\\n])*+\\?(?:\"|(?=\n)|\Z)"
                      r"|'(?:\\.|[^'\\\n])*+\\?(?:'|(?=\n)|\Z)"
                      r"|^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.MULTILINE | re.DOTALL)


def _blank(m: re.Match[str]) -> str:
    s = m.group()
    return re.sub(r"[^\n]", " ", s)


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


# keep the names the capture layer may want in one place
TYPE_BUILTINS = BUILTINS
type_by_name = lookup
