"""Each Oclgrind finding given its enqueue, its kernel and its line of the capture's source.

The check's child stamps every progress event with the size of Oclgrind's stderr at that
moment, so each enqueue owns a byte span of that output (:class:`StepSpan`);
:func:`attribute` gives each parsed finding the enqueue whose span holds it, maps its lines
through the program's ``#line`` directives (:func:`line_map`) and merges repeats.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cltui.analysis.check_report import Finding
from cltui.analysis.oclgrind import API, DATA_RACE, RawFinding, SourceLine

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
# API "errors" that are pyopencl probing optional device/platform queries
_INFO_QUERY = re.compile(r"^clGet\w*Info$")

# (enqueue, kind, message without addresses, kernel, lines, API function, API error)
_Key = tuple[
    int | None, str, str, str | None, tuple[tuple[str, int, int], ...], str | None, str | None
]


@dataclass
class StepSpan:
    """An enqueue's span of Oclgrind's stderr: ``start`` to ``end`` bytes (None: to the end)."""

    enqueue: int
    kernel: str
    program: str | None
    start: int
    end: int | None = None


def attribute(
    raw: list[RawFinding],
    steps: list[StepSpan],
    sources: dict[str, tuple[str, list[str]]],
) -> list[Finding]:
    """Give each finding its enqueue (by stderr offset), map lines, merge repeats.

    ``sources``: program id -> (source path relative to the capture, its lines).
    """
    merged: dict[_Key, Finding] = {}
    order: list[_Key] = []
    maps: dict[str, LineMap | None] = {}
    for r in raw:
        if r.kind == API and r.function and _INFO_QUERY.match(r.function):
            continue
        step = None
        for st in steps:
            if st.start <= r.offset and (st.end is None or r.offset < st.end):
                step = st
        lines = []
        for sl in r.lines:
            mapped = SourceLine(sl.file, sl.line, sl.column, sl.code)
            if step is not None and step.program is not None and step.program in sources:
                rel, text = sources[step.program]
                if step.program not in maps:
                    maps[step.program] = line_map(text)
                lmap = maps[step.program]
                here = lmap.find(sl.file, sl.line) if lmap is not None else (
                    sl.line if sl.file == "input.cl" else None)
                if here is not None:
                    mapped.source = rel
                    if here != sl.line:
                        mapped.line, mapped.reported = here, sl.line
                    if 1 <= here <= len(text):
                        if sl.code.strip() in ("", _NO_SOURCE):
                            # Oclgrind cannot open a #line file name: the capture's text
                            mapped.code, mapped.matches = text[here - 1].strip(), True
                        else:
                            mapped.matches = text[here - 1].strip() == sl.code.strip()
            lines.append(mapped)
        kernel = r.kernel or (step.kernel if step is not None else None)
        enqueue = step.enqueue if step is not None else None
        where = [(s.file, s.line, s.column) for s in lines]
        if r.kind == DATA_RACE:  # the same pair of accesses, whichever came first
            where.sort()
        key = (enqueue, r.kind, _ADDRESS.sub("<addr>", r.message), kernel, tuple(where),
               r.function, r.error)
        hit = merged.get(key)
        if hit is not None:
            hit.count += 1
            continue
        merged[key] = Finding(
            kind=r.kind, message=r.message, enqueue=enqueue, kernel=kernel, lines=lines,
            entity=r.entities[0] if r.entities else None, work_group=r.work_group,
            details=list(r.details),
        )
        order.append(key)
    return [merged[k] for k in order]


_NEWLINE = re.compile(r"\r\n|\r|\n")


def source_lines(text: str) -> list[str]:
    """A program source's lines as the compiler numbers them (a line ends at ``\n``,
    ``\r\n`` or ``\r``): ``str.splitlines`` also ends one at a form feed, a vertical tab,
    ``\x1c``-``\x1e``, ``\x85`` and U+2028/9, and every line after such a character was
    given the next line's number and text."""
    lines = _NEWLINE.split(text)
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line starts no line
    return lines


_NO_SOURCE = "(source not available)"  # Oclgrind's text for a file it cannot read
# ``#line N`` / ``#line N "file"`` and the preprocessor's ``# N "file"`` line markers
_LINE_DIRECTIVE = re.compile(r'^\s*#\s*(?:line\s+)?(\d+)(?:\s+"((?:[^"\\]|\\.)*)")?')


class LineMap:
    """Where each line of a source with ``#line`` directives is, as the compiler names it
    ((file, line) after the directives), back to the source's own line numbers."""

    def __init__(self, back: dict[tuple[str, int], int]) -> None:
        self.back = back
        self.by_base: dict[tuple[str, int], int] = {}
        for (name, n), here in back.items():
            self.by_base.setdefault((name.rsplit("/", 1)[-1], n), here)

    def find(self, file: str, line: int) -> int | None:
        hit = self.back.get((file, line))
        if hit is None:  # Oclgrind may print the name with or without a folder
            hit = self.by_base.get((file.rsplit("/", 1)[-1], line))
        return hit


def line_map(text: list[str]) -> LineMap | None:
    """A :class:`LineMap` for ``text`` (its lines), or None when it has no ``#line``
    directive (Oclgrind's lines are then the source's, in a file it calls ``input.cl``)."""
    back: dict[tuple[str, int], int] = {}
    name, cur = "input.cl", 1
    seen = False
    for j, line in enumerate(text, 1):
        m = _LINE_DIRECTIVE.match(line)
        if m is not None:
            seen = True
            cur = int(m.group(1)) if len(m.group(1)) < 12 else 1 << 40
            if m.group(2) is not None:
                name = m.group(2).replace('\\"', '"').replace("\\\\", "\\")
            continue
        back.setdefault((name, cur), j)
        cur += 1
    return LineMap(back) if seen else None
