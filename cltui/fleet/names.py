"""What a host name, a user name and a workdir of an inventory may be, and how a value lands
in a transport template without becoming code or an option.

Host names (and addresses) are letters, digits and ``_ . : %`` and ``-`` (DNS names, IPv4,
IPv6 with a zone), users letters, digits and ``_ . @ -``; neither starts with ``-`` (ssh,
like git after CVE-2017-1000117, would read ``-oProxyCommand=...`` as an option).  Such a
value needs no shell quoting, so it reads the same in every position of a template.

:func:`fill` puts the values in one word of a parsed template (``shlex.split``): a word that
is a placeholder alone becomes the value (one argv element), but only a value that needs no
quoting and is no option (that word may still be a script: ``sh -c {host}``); a placeholder
inside a larger word is shell-quoted (that word may be a script given to ``sh -c``), and one
inside a quoted string of that word is accepted only for a value that needs no quoting (a
quote in the value would end the template's string), else the template is refused.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

__all__ = ["PLACEHOLDERS", "bad_host", "bad_user", "bad_workdir", "fill"]

PLACEHOLDERS = ("host", "name", "port", "user")
_HOST = re.compile(r"[A-Za-z0-9_.:%][A-Za-z0-9_.:%-]*\Z")
_USER = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.@-]*\Z")
_FIELD = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")


_OPTION = "starts with '-' (it would be read as an option)"


def bad_host(value: str) -> str | None:
    """Why ``value`` cannot be a host name or address (None: it can)."""
    return _bad(value, _HOST, "is not a host name (letters, digits and _ . : % - only)")


def bad_user(value: str) -> str | None:
    """Why ``value`` cannot be a user name (None: it can)."""
    return _bad(value, _USER, "is not a user name (letters, digits and _ . @ - only)")


def bad_workdir(value: str) -> str | None:
    """Why ``value`` cannot be a host's workdir (None: it can)."""
    if value.startswith("-"):
        return _OPTION
    if any(c in value for c in "\n\r\0"):
        return "holds a line break or a NUL"
    return None


def _bad(value: str, pattern: re.Pattern[str], why: str) -> str | None:
    if value.startswith("-"):
        return _OPTION
    return None if pattern.match(value) else why


def _quote_state(text: str, end: int) -> str:
    """How a POSIX shell reads ``text[end]``: ``""`` (unquoted), ``"'"`` or ``'"'``."""
    state, i = "", 0
    while i < end:
        c = text[i]
        if state == "'":
            state = "" if c == "'" else state
        elif c == "\\":
            i += 1  # the next character is escaped (unquoted and inside double quotes)
        elif state == '"':
            state = "" if c == '"' else state
        elif c in "'\"":
            state = c
        i += 1
    return state


def fill(word: str, values: Mapping[str, str]) -> str:
    """``word`` of a template with its ``{host}``, ``{name}``, ``{port}``, ``{user}`` put in
    (``{{``/``}}``: a brace); ValueError for an unknown placeholder or a value that cannot be
    quoted where it stands."""
    m = _FIELD.fullmatch(word)
    if m is not None and m.group(1) is not None:  # the placeholder alone: one argv word
        key = m.group(1)
        if key not in values:
            raise ValueError(f"unknown placeholder {{{key}}} in the transport template")
        value = values[key]
        if value.startswith("-"):
            raise ValueError(f"{{{key}}} is {value!r}: it would be read as an option")
        if value and shlex.quote(value) != value:  # the word may be a script (sh -c {host})
            raise ValueError(f"{{{key}}} is {value!r}: not a name that can stand in a command")
        return value

    def one(f: re.Match[str]) -> str:
        if f.group(1) is None:
            return f.group()[0]
        key = f.group(1)
        if key not in values:
            raise ValueError(f"unknown placeholder {{{key}}} in the transport template"
                             + (" ({cmd} must be a word of its own)" if key == "cmd" else ""))
        value = values[key]
        quoted = shlex.quote(value) if value else ""
        if quoted != value and _quote_state(word, f.start()):
            raise ValueError(
                f"{{{key}}} stands inside quotes in the transport template word {word!r} and "
                f"its value {value!r} cannot be quoted there: put {{{key}}} outside the quotes "
                "(cltui quotes it)")
        return quoted

    return _FIELD.sub(one, word)
