"""OpenCL C syntax highlighting: a pygments lexer on top of the C lexer, and a line highlighter.

Pygments ships no OpenCL C lexer.  :class:`OpenCLLexer` re-tags the C lexer's names: OpenCL
keywords and qualifiers, address spaces, vector/image/sampler/event types and the built-in
functions.  :class:`LineHighlighter` highlights one line at a time (for a Line API view over
multi-megabyte sources), carrying only the "inside a block comment" state between lines, which
it finds with one regex pass over the whole text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from pygments.lexers.c_cpp import CLexer  # type: ignore[import-untyped]
from pygments.token import (  # type: ignore[import-untyped]
    Comment,
    Keyword,
    Name,
    Token,
    _TokenType,
)
from rich.style import Style
from rich.text import Text

__all__ = ["LineHighlighter", "OpenCLLexer", "token_style"]

_SCALARS = (
    "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong",
    "float", "double", "half",
)
VECTOR_TYPES = frozenset(
    f"{base}{width}" for base in _SCALARS for width in (2, 3, 4, 8, 16)
)
OPENCL_TYPES = frozenset(
    {
        "uchar", "ushort", "uint", "ulong", "half", "bool", "size_t", "ptrdiff_t",
        "intptr_t", "uintptr_t", "image1d_t", "image1d_array_t", "image1d_buffer_t",
        "image2d_t", "image2d_array_t", "image2d_depth_t", "image2d_array_depth_t",
        "image3d_t", "sampler_t", "event_t", "queue_t", "clk_event_t", "ndrange_t",
        "reserve_id_t", "cl_mem_fence_flags", "atomic_int", "atomic_uint", "atomic_long",
        "atomic_ulong", "atomic_float", "atomic_double", "atomic_flag", "pipe",
    }
)
ADDRESS_SPACES = frozenset(
    {
        "__global", "global", "__local", "local", "__constant", "constant",
        "__private", "private", "__generic", "generic",
    }
)
QUALIFIERS = frozenset(
    {
        "__kernel", "kernel", "__read_only", "read_only", "__write_only", "write_only",
        "__read_write", "read_write", "__attribute__", "restrict", "uniform",
    }
)
_BUILTIN_LIST = """
get_work_dim get_global_size get_global_id get_local_size get_enqueued_local_size get_local_id
get_num_groups get_group_id get_global_offset get_global_linear_id get_local_linear_id
get_sub_group_size get_max_sub_group_size get_num_sub_groups get_sub_group_id
get_sub_group_local_id barrier work_group_barrier mem_fence read_mem_fence write_mem_fence
async_work_group_copy async_work_group_strided_copy wait_group_events prefetch
atomic_add atomic_sub atomic_xchg atomic_inc atomic_dec atomic_cmpxchg atomic_min atomic_max
atomic_and atomic_or atomic_xor atom_add atom_sub atom_xchg atom_inc atom_dec atom_cmpxchg
atom_min atom_max atom_and atom_or atom_xor atomic_load atomic_store atomic_exchange
atomic_fetch_add atomic_fetch_sub atomic_fetch_min atomic_fetch_max atomic_init
read_imagef read_imagei read_imageui read_imageh write_imagef write_imagei write_imageui
write_imageh get_image_width get_image_height get_image_depth get_image_dim
get_image_channel_data_type get_image_channel_order get_image_array_size
acos acosh acospi asin asinh asinpi atan atan2 atanh atanpi atan2pi cbrt ceil copysign cos
cosh cospi erfc erf exp exp2 exp10 expm1 fabs fdim floor fma fmax fmin fmod fract frexp hypot
ilogb ldexp lgamma lgamma_r log log2 log10 log1p logb mad maxmag minmag modf nan nextafter pow
pown powr remainder remquo rint rootn round rsqrt sin sincos sinh sinpi sqrt tan tanh tanpi
tgamma trunc half_cos half_divide half_exp half_exp2 half_exp10 half_log half_log2 half_log10
half_powr half_recip half_rsqrt half_sin half_sqrt half_tan native_cos native_divide
native_exp native_exp2 native_exp10 native_log native_log2 native_log10 native_powr
native_recip native_rsqrt native_sin native_sqrt native_tan abs abs_diff add_sat hadd rhadd
clamp clz ctz mad_hi mad_sat max min mul_hi rotate sub_sat upsample popcount mad24 mul24
degrees mix radians step smoothstep sign cross dot distance length normalize fast_distance
fast_length fast_normalize isequal isnotequal isgreater isgreaterequal isless islessequal
islessgreater isfinite isinf isnan isnormal isordered isunordered signbit any all bitselect
select shuffle shuffle2 vec_step printf
vload2 vload3 vload4 vload8 vload16 vstore2 vstore3 vstore4 vstore8 vstore16 vload_half
vload_half2 vload_half3 vload_half4 vload_half8 vload_half16 vstore_half vstore_half2
vstore_half3 vstore_half4 vstore_half8 vstore_half16 vloada_half vstorea_half
sub_group_all sub_group_any sub_group_broadcast sub_group_reduce_add sub_group_reduce_min
sub_group_reduce_max sub_group_scan_exclusive_add sub_group_scan_inclusive_add
work_group_all work_group_any work_group_broadcast work_group_reduce_add work_group_reduce_min
work_group_reduce_max work_group_scan_exclusive_add work_group_scan_inclusive_add
"""
_CONVERT_RE = re.compile(
    r"^(convert|as)_(char|uchar|short|ushort|int|uint|long|ulong|float|double|half)"
    r"(2|3|4|8|16)?(_sat)?(_rt[enzp])?$"
)
BUILTINS = frozenset(_BUILTIN_LIST.split())
OPENCL_CONSTANTS = frozenset(
    {
        "CLK_LOCAL_MEM_FENCE", "CLK_GLOBAL_MEM_FENCE", "CLK_IMAGE_MEM_FENCE",
        "CLK_NORMALIZED_COORDS_TRUE", "CLK_NORMALIZED_COORDS_FALSE", "CLK_ADDRESS_NONE",
        "CLK_ADDRESS_CLAMP", "CLK_ADDRESS_CLAMP_TO_EDGE", "CLK_ADDRESS_REPEAT",
        "CLK_ADDRESS_MIRRORED_REPEAT", "CLK_FILTER_NEAREST", "CLK_FILTER_LINEAR",
        "MAXFLOAT", "HUGE_VALF", "INFINITY", "NAN", "FLT_MAX", "FLT_MIN", "FLT_EPSILON",
        "DBL_MAX", "DBL_MIN", "DBL_EPSILON", "CHAR_BIT", "INT_MAX", "INT_MIN", "UINT_MAX",
        "M_PI", "M_PI_F", "M_E", "M_E_F",
    }
)


class OpenCLLexer(CLexer):  # type: ignore[misc]
    """OpenCL C: the C lexer plus OpenCL keywords, address spaces, types and built-ins."""

    name = "OpenCL C"
    aliases = ["opencl", "cl"]  # noqa: RUF012 - pygments class attributes
    filenames = ["*.cl"]  # noqa: RUF012
    mimetypes = ["text/x-opencl-src"]  # noqa: RUF012

    def get_tokens_unprocessed(
        self, text: str, stack: tuple[str, ...] = ("root",)
    ) -> Iterator[tuple[int, _TokenType, str]]:
        for index, token, value in super().get_tokens_unprocessed(text, stack):
            if token in Name or token is Keyword.Type or token is Keyword:
                token = _classify(value, token)
            yield index, token, value


def _classify(value: str, token: _TokenType) -> _TokenType:
    if value in ADDRESS_SPACES:
        return Keyword.Namespace  # address spaces get their own colour
    if value in QUALIFIERS:
        return Keyword.Reserved
    if value in VECTOR_TYPES or value in OPENCL_TYPES:
        return Keyword.Type
    if value in BUILTINS or _CONVERT_RE.match(value):
        return Name.Builtin
    if value in OPENCL_CONSTANTS:
        return Name.Constant
    return token


# 16-colour-safe styles (ANSI names degrade well over SSH and in basic terminals).
_STYLES: list[tuple[_TokenType, Style]] = [
    (Comment.Preproc, Style(color="magenta")),
    (Comment, Style(color="bright_black", italic=True)),
    (Keyword.Namespace, Style(color="bright_cyan", bold=True)),
    (Keyword.Reserved, Style(color="bright_magenta", bold=True)),
    (Keyword.Type, Style(color="green")),
    (Keyword, Style(color="blue", bold=True)),
    (Name.Builtin, Style(color="cyan")),
    (Name.Constant, Style(color="bright_yellow")),
    (Name.Function, Style(color="bright_yellow", bold=True)),
    (Token.Literal.String, Style(color="yellow")),
    (Token.Literal.Number, Style(color="bright_red")),
    (Token.Operator, Style(color="white")),
]


@lru_cache(maxsize=256)
def token_style(token: _TokenType) -> Style:
    """The rich style of a token type (the closest styled ancestor)."""
    for parent, style in _STYLES:
        if token in parent:
            return style
    return Style()


# a literal that does not close ends at its line's end (as for the compiler): one attempt
# per quote that always matches, so a line of ``"\\`` pairs costs linear time
_COMMENT_OR_STRING = re.compile(
    r'/\*|\*/|//[^\n]*'
    r'|"(?:[^"\\\n]++|\\[\s\S]?)*+(?:"|(?=\n)|\Z)'
    r"|'(?:[^'\\\n]++|\\[\s\S]?)*+(?:'|(?=\n)|\Z)"
)


# the characters of a line that are highlighted; the rest is plain text: pygments and rich
# hold ~200 bytes a character of a highlighted line (a 1 MB line: 215 MB, most of a minute)
HIGHLIGHT_LIMIT = 10_000


class LineHighlighter:
    """Highlights single lines of a source, correctly across multi-line comments (the first
    :data:`HIGHLIGHT_LIMIT` characters of a line; the rest plain)."""

    def __init__(self, source: str) -> None:
        self.lines = source.splitlines() or [""]
        self._in_comment = _comment_starts(source, len(self.lines))
        self._lexer = OpenCLLexer(stripnl=False, ensurenl=False)

    def __len__(self) -> int:
        return len(self.lines)

    def starts_in_comment(self, index: int) -> bool:
        return self._in_comment[index]

    def highlight(self, index: int) -> Text:
        """Line ``index`` (0-based) as rich Text, tabs expanded to 4 spaces."""
        line = self.lines[index].expandtabs(4)
        text = Text(no_wrap=True, end="")
        prefix = 0
        rest = ""
        if len(line) > HIGHLIGHT_LIMIT:  # a line of megabytes: its tail plain (one span)
            line, rest = line[:HIGHLIGHT_LIMIT], line[HIGHLIGHT_LIMIT:]
        body = line
        if self._in_comment[index]:
            body = "/*" + line
            prefix = 2
        pos = 0
        for _idx, token, value in self._lexer.get_tokens_unprocessed(body):
            if prefix:
                cut = min(prefix, len(value))
                value = value[cut:]
                prefix -= cut
            if not value:
                continue
            value = value.replace("\n", "")
            text.append(value, token_style(token))
            pos += len(value)
        if rest:
            text.append(rest)
        return text


def _comment_starts(source: str, n_lines: int) -> list[bool]:
    """For each line, whether it starts inside a ``/* */`` comment (one pass: a comment is
    skipped whole, so a quote inside it starts no string)."""
    starts = [False] * n_lines
    line_no = 0
    last = 0
    pos = 0
    search = _COMMENT_OR_STRING.search
    while (match := search(source, pos)) is not None:
        if match.group() != "/*":  # a string, a line comment or a stray */: skipped
            pos = match.end()
            continue
        start_line = line_no + source.count("\n", last, match.start())
        end = source.find("*/", match.end())
        end = len(source) if end < 0 else end
        end_line = start_line + source.count("\n", match.start(), end)
        for k in range(start_line + 1, min(end_line, n_lines - 1) + 1):
            starts[k] = True
        line_no = end_line
        last = end
        pos = end + 2
    return starts
