"""The preprocessing of a kernel source before its signatures are read: build options
(``-D``, ``-I``, ``-cl-std``), include folders, a skeleton of the source (function bodies
blanked), literals defused and binary lines dropped, then pcpp.  Linear in the source."""

from __future__ import annotations

import functools
import importlib.util
import io
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TextIO

from pcpp import Action, OutputDirective, Preprocessor

from cltui.capture.confine import MAX_HOST_HEADER_BYTES, host_header_refusal
from cltui.capture.safeopen import read_limited
from cltui.capture.spans import _ATTR_RE
from cltui.text.shellwords import split_words


@dataclass
class BuildOptions:
    """What a build-option string means to the preprocessor."""

    macros: list[tuple[str, str, str | None]]  # ("D", name, value) or ("U", name, None), in order
    include_dirs: list[str]
    cl_std: int | None = None
    fast_math: bool = False


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


# a statement or a directive longer than this is data (a table, a generated expression), not a
# signature: pcpp and the token list would hold ~100 bytes per byte of it
LONG_STATEMENT = 1 << 16
_KEEP_RE = re.compile(r"\b(?:__kernel|kernel|typedef|struct|union|enum)\b")
_LEAD_RE = re.compile(r"(?:[ \t\n]+|[ \t]*#(?:[^\n]*\\\n)*[^\n]*)*")  # blanks, directives
_DEFINE_RE = re.compile(r"[ \t]*#[ \t]*define[ \t]+\w+(?:\([^)\n]*\))?")


def drop_long_statements(text: str, warnings: list[str]) -> str:
    """``text`` (a skeleton: bodies blanked) without its file-scope statements longer than
    :data:`LONG_STATEMENT` that declare no kernel or type (each replaced by its line breaks
    and the directives inside it) and with the body of each ``#define`` that long dropped
    (``#define NAME`` kept): memory and time stay a small multiple of the source however long
    a line is.  Unchanged (the same object) when there is none."""
    if len(text) <= LONG_STATEMENT:
        return text
    out: list[str] = []
    pos = 0  # text[pos:] not yet emitted
    depth = 0
    start = 0  # the current file-scope statement's start
    inside: list[str] = []  # directives inside it
    line, line_at = 1, 0  # line number at line_at (counted forward only)

    def drop(begin: int, end: int, keep: list[str], what: tuple[str, str]) -> None:
        nonlocal pos, line, line_at
        lead = _LEAD_RE.match(text, begin, end).end()  # type: ignore[union-attr]  # may be ""
        line += text.count("\n", line_at, lead)
        line_at = lead
        out.append(text[pos:begin])
        out.extend(keep)  # (each directive after a line break: it starts its line again)
        out.append("\n" * (text.count("\n", begin, end) - sum(k.count("\n") for k in keep)))
        pos = end
        warnings.append(f"line {line}: {what[0]} of {end - begin:,} bytes left out of the "
                        f"signature parse ({what[1]})")

    for m in _SCAN_RE.finditer(text):
        tok = m.group()
        c = tok[0]
        if c == "{":
            depth += 1
        elif c == "}":
            depth = max(0, depth - 1)
        elif c in " \t#" and tok.lstrip().startswith("#"):
            if len(tok) > LONG_STATEMENT and (d := _DEFINE_RE.match(tok)) and m.start() >= pos:
                drop(m.start(), m.end(), [d.group()], ("a #define body", "its name stays defined"))
            else:
                inside.append(tok)
            continue
        if depth == 0 and c in ";}":
            end = m.end()
            if (end - start > LONG_STATEMENT and start >= pos
                    and _KEEP_RE.search(text, start, end) is None):
                drop(start, end, ["\n" + t for t in inside],
                     ("a statement", "it declares no kernel or type"))
            start, inside = end, []
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


_COMMENT_RE = re.compile(r"//[^\n]*|/\*.*?(?:\*/|\Z)", re.DOTALL)


def _strip_comments(text: str) -> str:
    return _COMMENT_RE.sub(" ", text) if "/" in text else text


# --------------------------------------------------------------------------- preprocessing


class _Token(Protocol):
    """What this module reads of a pcpp (ply) token: its text."""

    value: str

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

    def on_directive_unknown(self, directive: _Token, toks: Sequence[_Token], ifpassthru: bool,
                             precedingtoks: Sequence[_Token]) -> bool | None:
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
    text = read_limited(path, MAX_HOST_HEADER_BYTES, follow=True).decode("utf-8", "replace")
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
            text, used = drop_long_statements(sk, warnings), True
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
