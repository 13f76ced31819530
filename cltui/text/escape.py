"""Text from a capture made safe to show on a terminal.

A capture is untrusted: a kernel name, a file name, build options or a device name can hold
terminal control sequences (``ESC [31m``, ``BEL``, a carriage return that overwrites the line)
or Unicode bidi overrides that reorder what the reader sees.  Every place that shows such text
to a user (CLI text output, error and warning lines, the app's widgets) passes it through
:func:`escape_controls`; JSON output stays exact (the JSON encoder escapes these itself).
"""

from __future__ import annotations

import re

__all__ = ["escape_controls"]

# C0 controls, DEL, C1 controls; the bidi marks, embeddings, overrides and isolates; the
# Unicode line and paragraph separators.
_OTHERS = "\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_CONTROL_RE = re.compile(f"[\x00-\x1f{_OTHERS}]")
_CONTROL_KEEP_NL_RE = re.compile(f"[\x00-\x09\x0b-\x1f{_OTHERS}]")


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def escape_controls(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control character written as a visible escape (``\\x1b``,
    ``\\x07``, ``\\u202e``); everything else, backslashes included, is left as it is.

    ``keep_newlines`` leaves ``\\n`` alone (for a multi-line message made of escaped parts).
    Linear in the length of ``text``; text without controls is returned unchanged.
    """
    pattern = _CONTROL_KEEP_NL_RE if keep_newlines else _CONTROL_RE
    return pattern.sub(_escape, text)
