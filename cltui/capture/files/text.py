"""Lenient text: the capture's text files as ``str`` (NULs dropped, bad UTF-8 replaced), and
sampler descriptions."""

from __future__ import annotations

import re
from pathlib import Path

from cltui.capture.confine import read_bytes_inside
from cltui.capture.model import SamplerDesc
from cltui.capture.safeopen import MAX_SOURCE

__all__ = ["lenient_text", "parse_sampler_text", "read_text_lenient", "source_is_utf8"]


def read_text_lenient(path: Path | str, root: Path | str | None = None) -> str:
    """A text file as str: UTF-8 with replacement characters, NUL bytes removed.

    For program sources, build logs and option files (byte-exact copies of what the application
    or driver produced, §5.1, §8.4).  Line ends are kept as they are (CRLF stays CRLF).
    With the capture ``root``, a file that leads outside it raises
    :class:`~cltui.capture.confine.OutsideCapture` (an ``OSError``); one that is not a regular
    file or is larger than a source may be, a :class:`~cltui.capture.safeopen.NotRegular` or
    :class:`~cltui.capture.safeopen.TooLarge` (``OSError`` s too).
    """
    return lenient_text(read_bytes_inside(root, path, MAX_SOURCE))


def source_is_utf8(path: Path | str, root: Path | str | None = None) -> bool:
    """True if the file (NULs removed) decodes as strict UTF-8."""
    try:
        read_bytes_inside(root, path, MAX_SOURCE).replace(b"\0", b"").decode("utf-8")
    except (UnicodeDecodeError, OSError):
        return False
    return True


def lenient_text(data: bytes) -> str:
    """Bytes as str: NULs removed, UTF-8 with replacement characters."""
    return data.replace(b"\0", b"").decode("utf-8", "replace")


_SAMPLER_RE = re.compile(
    r"\s*CL_SAMPLER_NORMALIZED_COORDS\s*=\s*(CL_TRUE|CL_FALSE|1|0)\s*,"
    r"\s*CL_SAMPLER_ADDRESSING_MODE\s*=\s*([A-Z0-9_]+)\s*,"
    r"\s*CL_SAMPLER_FILTER_MODE\s*=\s*([A-Z0-9_]+)\s*"
)


def parse_sampler_text(text: str) -> SamplerDesc | None:
    """Parse a sampler description (``Sampler<i>.txt`` or the log's ``clSetKernelArg`` text)."""
    m = _SAMPLER_RE.fullmatch(text.replace("\0", ""))
    if m is None:
        return None
    return SamplerDesc(m[1] in ("CL_TRUE", "1"), m[2], m[3])
