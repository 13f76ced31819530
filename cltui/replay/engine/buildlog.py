"""A failed build's log: its error lines, its first error, and the compiler's positions in
the driver's temp file given as the program's own source file (PoCL compiles a copy in its
kernel cache, ``tempfile_XXXXXX.cl``; Oclgrind calls it ``input.cl``).  The same in
``cpp/feasible.hpp``."""

from __future__ import annotations

import re

__all__ = ["at_source", "build_errors", "first_build_error"]


def build_errors(log: str) -> list[str]:
    """The lines of a build log that say ``error``, stripped."""
    return [ln.strip() for ln in log.splitlines() if "error" in ln.lower()]


def first_build_error(log: str) -> str:
    """The first line of a build log that says ``error`` (else its first line), at most
    200 characters."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    return (build_errors(log) or lines or ["build failed"])[0][:200].rstrip()


# a compiler's position in the file the driver compiled (PoCL: its kernel cache's
# tempfile_XXXXXX.cl, Oclgrind: input.cl, clang: <stdin>, /tmp/...): file:line:column:
_POSITION = re.compile(r"(?:(?<=\s)|^)(?:[^\s:]*/)?(?:[^\s:/]+\.(?:cl|c|h)|<stdin>|<source>)"
                       r":(\d+):(\d+):")  # fmt: skip


def at_source(line: str, name: str) -> str:
    """A build log line with the compiler's position in the driver's temp file given as the
    same line and column of the program's own source file ``name`` (the text it compiled);
    PoCL's ``error: FILE:L:C: what`` becomes ``NAME:L:C: error: what``."""
    m = _POSITION.search(line)
    if m is None:
        return line
    where = f"{name}:{m.group(1)}:{m.group(2)}:"
    before, after = line[: m.start()].strip(), line[m.end() :].strip()
    if before.lower().rstrip(":") == "error":  # PoCL puts "error:" in front
        return f"{where} error: {after}"
    return f"{before} {where} {after}".strip()
