"""Build options split into words the way ``shlex.split`` does, in linear time.

``shlex`` grows each word one character at a time (quadratic in a long word), and build
options come from an untrusted capture.  Standard library only: the replay engine imports it,
and an exported bundle ships it (``lib/cltui/text/``) with the engine.
"""

from __future__ import annotations

import re

__all__ = ["shell_split", "split_words"]

_SH_RE = re.compile(r"""[ \t\r\n]+|[^ \t\r\n'"\\]+|'[^']*'|"(?:[^"\\]|\\.)*"|\\.""", re.DOTALL)
_SH_DQ_ESC = re.compile(r'\\(["\\])')


def shell_split(text: str) -> list[str] | None:
    """``shlex.split(text)`` in one pass; None where shlex raises (an open quote, a final
    ``\\``)."""
    out: list[str] = []
    word: list[str] = []
    in_word = False
    pos = 0
    n = len(text)
    while pos < n:
        m = _SH_RE.match(text, pos)
        if m is None:
            return None
        t = m.group()
        pos = m.end()
        c = t[0]
        if c in " \t\r\n":
            if in_word:
                out.append("".join(word))
                word, in_word = [], False
            continue
        in_word = True
        if c == "'":
            word.append(t[1:-1])
        elif c == '"':
            word.append(_SH_DQ_ESC.sub(r"\1", t[1:-1]))
        elif c == "\\":
            word.append(t[1])
        else:
            word.append(t)
    if in_word:
        out.append("".join(word))
    return out


def split_words(text: str) -> list[str]:
    """:func:`shell_split`, or plain whitespace words where the quoting is broken."""
    words = shell_split(text)
    return words if words is not None else text.split()


def include_options(words: list[str]) -> list[tuple[str, str | None]]:
    """A build's option words, each as ``(word, None)``, except an include folder (``-I DIR``
    or ``-IDIR``), which is ``("-I", DIR)``: the one walk over ``-I`` that the export (which
    folders to bundle) and the engine (which folders exist here) share."""
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w == "-I" and i + 1 < len(words):
            out.append(("-I", words[i + 1]))
            i += 2
        elif w.startswith("-I") and len(w) > 2:
            out.append(("-I", w[2:]))
            i += 1
        else:
            out.append((w, None))
            i += 1
    return out
