"""A failed build's log: its error lines, its first error, and the compiler's positions in
the driver's temp file given as the program's own source file (PoCL compiles a copy in its
kernel cache, ``tempfile_XXXXXX.cl``; Oclgrind calls it ``input.cl``).  The same in
``cpp/feasible.hpp``."""

from __future__ import annotations

__all__ = ["at_source", "build_errors", "first_build_error", "log_lines"]

# One rule in both runners (``cpp/feasible.hpp``), held by tests/fixtures/build_log_cases.json:
# lines split at "\n" only, ASCII blanks stripped, ASCII case folded, a first error cut at 200
# bytes of UTF-8 (never inside a character).
_BLANKS = " \t\n\r\f\v"
_FOLD = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
FIRST_ERROR_BYTES = 200


def log_lines(log: str) -> list[str]:
    """A build log's lines: split at ``\n`` (what C++'s ``getline`` gives: no empty last one)."""
    lines = log.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def build_errors(log: str) -> list[str]:
    """The lines of a build log that say ``error`` (in any case), stripped."""
    out = []
    for ln in log_lines(log):
        ln = ln.strip(_BLANKS)
        if ln and "error" in ln.translate(_FOLD):
            out.append(ln)
    return out


def first_build_error(log: str) -> str:
    """The first line of a build log that says ``error`` (else its first line that is not
    blank), at most 200 bytes."""
    lines = [ln.strip(_BLANKS) for ln in log_lines(log) if ln.strip(_BLANKS)]
    first = (build_errors(log) or lines or ["build failed"])[0]
    cut = first.encode("utf-8", "surrogatepass")[:FIRST_ERROR_BYTES]
    return cut.decode("utf-8", "ignore").rstrip(_BLANKS)


# a compiler's position in the file the driver compiled (PoCL: its kernel cache's
# tempfile_XXXXXX.cl, Oclgrind: input.cl, clang: <stdin>, /tmp/...): file:line:column:,
# after the line's start or a blank.  A scan, not a regular expression: one pass over the line
# (std::regex, which replay.cpp used, overflowed its stack on a 64 KB line).
_NAMES = ("<stdin>", "<source>")


def _source_name(token: str) -> bool:
    base = token[token.rfind("/") + 1 :]
    if base in _NAMES:
        return True
    return any(base.endswith(ext) and len(base) > len(ext) for ext in (".cl", ".c", ".h"))


def _digits(line: str, i: int) -> int:
    """The end of the ASCII digits from ``i``."""
    while i < len(line) and "0" <= line[i] <= "9":
        i += 1
    return i


def _position(line: str) -> tuple[int, int, str, str] | None:
    """The first ``FILE:L:C:``: (start, end, L, C)."""
    n, s = len(line), 0
    while s < n:
        if s > 0 and line[s - 1] not in _BLANKS:
            s += 1
            continue
        e = s
        while e < n and line[e] != ":" and line[e] not in _BLANKS:
            e += 1
        if s < e < n and line[e] == ":" and _source_name(line[s:e]):
            a = e + 1
            b = _digits(line, a)
            if a < b < n and line[b] == ":":
                c = _digits(line, b + 1)
                if b + 1 < c < n and line[c] == ":":
                    return s, c + 1, line[a:b], line[b + 1 : c]
        s = e if e > s else s + 1
    return None


def at_source(line: str, name: str) -> str:
    """A build log line with the compiler's position in the driver's temp file given as the
    same line and column of the program's own source file ``name`` (the text it compiled);
    PoCL's ``error: FILE:L:C: what`` becomes ``NAME:L:C: error: what``."""
    found = _position(line)
    if found is None:
        return line
    start, end, row, col = found
    where = f"{name}:{row}:{col}:"
    before, after = line[:start].strip(_BLANKS), line[end:].strip(_BLANKS)
    if before.translate(_FOLD).rstrip(":") == "error":  # PoCL puts "error:" in front
        return f"{where} error: {after}"
    return f"{before} {where} {after}".strip(_BLANKS)
