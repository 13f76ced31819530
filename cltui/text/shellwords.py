"""Build options split into words the way ``shlex.split`` does, in linear time, with where
each word is written (:func:`word_spans`), so that an edit (an include folder mapped or cut,
a variant's removal) changes its own words and leaves the rest of the captured text as the
application gave it to its driver (:func:`replace_spans`).

``shlex`` grows each word one character at a time (quadratic in a long word), and build
options come from an untrusted capture.  Standard library only: the replay engine imports it,
and an exported bundle ships it (``lib/cltui/text/``) with the engine.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

__all__ = [
    "driver_join", "include_option", "include_options", "include_spans", "plain_word",
    "replace_spans", "shell_split", "spans_of", "split_words", "word_spans",
]  # fmt: skip

_SH_RE = re.compile(r"""[ \t\r\n]+|[^ \t\r\n'"\\]+|'[^']*'|"(?:[^"\\]|\\.)*"|\\.""", re.DOTALL)
_SH_DQ_ESC = re.compile(r'\\(["\\])')
_WHITE = re.compile(r"\s*")


def word_spans(text: str) -> list[tuple[int, int, str]] | None:
    """Each word of ``text`` as ``(start, end, value)``: where it is written in ``text`` and
    what ``shlex.split`` makes of it; None where shlex raises (an open quote, a final ``\\``).
    One pass."""
    out: list[tuple[int, int, str]] = []
    word: list[str] = []
    start = -1
    pos = 0
    n = len(text)
    while pos < n:
        m = _SH_RE.match(text, pos)
        if m is None:
            return None
        t = m.group()
        c = t[0]
        if c in " \t\r\n":
            if start >= 0:
                out.append((start, pos, "".join(word)))
                word, start = [], -1
            pos = m.end()
            continue
        if start < 0:
            start = pos
        pos = m.end()
        if c == "'":
            word.append(t[1:-1])
        elif c == '"':
            word.append(_SH_DQ_ESC.sub(r"\1", t[1:-1]))
        elif c == "\\":
            word.append(t[1])
        else:
            word.append(t)
    if start >= 0:
        out.append((start, n, "".join(word)))
    return out


def shell_split(text: str) -> list[str] | None:
    """``shlex.split(text)`` in one pass; None where shlex raises (an open quote, a final
    ``\\``)."""
    spans = word_spans(text)
    return None if spans is None else [w for _s, _e, w in spans]


def spans_of(text: str) -> list[tuple[int, int, str]]:
    """:func:`word_spans`, or plain whitespace words where the quoting is broken."""
    spans = word_spans(text)
    if spans is not None:
        return spans
    return [(m.start(), m.end(), m.group()) for m in re.finditer(r"\S+", text)]


def split_words(text: str) -> list[str]:
    """:func:`shell_split`, or plain whitespace words where the quoting is broken."""
    return [w for _s, _e, w in spans_of(text)]


def _include_walk(words: list[str]) -> Iterator[tuple[int, int, str | None]]:
    """The one walk over ``-I``: each word as ``(i, i + 1, None)``, except an include folder,
    ``-I DIR`` ``(i, i + 2, DIR)`` or ``-IDIR`` ``(i, i + 1, DIR)``; a trailing ``-I`` is a
    word."""
    i = 0
    while i < len(words):
        w = words[i]
        if w == "-I" and i + 1 < len(words):
            yield i, i + 2, words[i + 1]
            i += 2
            continue
        yield i, i + 1, w[2:] if w.startswith("-I") and len(w) > 2 else None
        i += 1


def include_options(words: list[str]) -> list[tuple[str, str | None]]:
    """A build's option words, each as ``(word, None)``, except an include folder (``-I DIR``
    or ``-IDIR``), which is ``("-I", DIR)``: the walk that the export (which folders to
    bundle) and the engine (which folders exist here) share."""
    return [("-I", d) if d is not None else (words[i], None) for i, _j, d in _include_walk(words)]


def plain_word(word: str) -> bool:
    """A word a driver reads whole without quotes: no white space, no double quote."""
    return not any(c.isspace() or c == '"' for c in word)


def driver_join(words: list[str]) -> str:
    """Option words as a driver's text: joined by one space, a word that is not plain in
    double quotes (Oclgrind crashes on a bare space, and clang-based drivers read the
    quotes).  Only for words cltui adds or changes: captured text goes to the driver as
    captured, edited in place (:func:`replace_spans`)."""
    return " ".join(w if plain_word(w) else f'"{w}"' for w in words)


def include_option(folder: str) -> str:
    """``-I FOLDER`` as the driver gets it (the C++ runner's ``include_option``)."""
    return driver_join(["-I", folder])


def include_spans(text: str) -> list[tuple[int, int, str]]:
    """Where ``text`` (a build's options) names an include folder (``-I DIR`` or ``-IDIR``):
    ``(start, end, DIR)``, the walk of :func:`include_options` over the text as written."""
    spans = spans_of(text)
    walk = _include_walk([w for _s, _e, w in spans])
    return [(spans[i][0], spans[j - 1][1], d) for i, j, d in walk if d is not None]


def replace_spans(text: str, edits: Sequence[tuple[int, int, str | None]]) -> str:
    """``text`` with each ``(start, end)`` span (in order, not overlapping) replaced by its
    new text; None removes it with the white space before it (after it, at the start).
    Everything else stays as written."""
    out: list[str] = []
    pos = 0
    written = False  # a word is in ``out``
    for start, end, new in edits:
        gap = text[pos:start]
        written = written or bool(gap.strip())
        if new is None:
            if written:
                out.append(gap.rstrip())
            else:
                out.append(gap)
                white = _WHITE.match(text, end)  # linear: the white space after it only
                end = white.end() if white else end
        else:
            out += [gap, new]
            written = written or bool(new.strip())
        pos = end
    out.append(text[pos:])
    return "".join(out)
