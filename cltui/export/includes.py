"""Header files a captured program includes, found here so that a bundle can carry them.

A program's build options often name include folders of the capturing machine (pyopencl passes
``-I <venv>/.../pyopencl/cl``).  For each ``-I`` folder we use it when it exists here, or the
local pyopencl's ``cl`` folder when the captured one was a pyopencl ``cl`` folder.  The headers
the source includes (recursively, by ``#include <x>`` / ``#include "x"``) are then looked up in
those folders.  Only files that really lie inside an include folder, under a relative path made of
safe components, are taken: an include line is untrusted text.  Each header is a host file that
travels with the bundle, so it must also pass :func:`cltui.capture.confine.host_header_refusal`
(a header-like text file of at most 1 MiB, outside system and credentials folders); one that does
not is left out and listed in ``refused`` with the reason.  ``allow_host=False`` copies none.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from cltui.capture.confine import read_host_header
from cltui.capture.names import sanitize_component
from cltui.capture.shellwords import split_words

_INCLUDE_RE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"\r\n]+)[>"]', re.MULTILINE)
MAX_HEADERS = 500
MAX_HEADER_BYTES = 16 << 20


@dataclass(frozen=True)
class RefusedInclude:
    """An ``#include`` whose host file was not taken into the bundle."""

    include: str  # the name as the source writes it
    host_path: str  # the file it resolved to on this machine
    why: str


@dataclass
class IncludeSet:
    """What one program needs: options without the resolved ``-I``s, and the headers."""

    options: str  # the captured options minus the include folders resolved here
    dirs: list[Path] = field(default_factory=list)  # local folders, in -I order
    headers: dict[tuple[int, str], Path] = field(default_factory=dict)  # (dir index, rel) -> file
    notes: list[str] = field(default_factory=list)
    refused: list[RefusedInclude] = field(default_factory=list)


def split_include_options(options: str) -> tuple[list[str], list[str]]:
    """(``-I`` folders in order, the other options as words)."""
    words = split_words(options)
    dirs: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w == "-I" and i + 1 < len(words):
            dirs.append(words[i + 1])
            i += 2
        elif w.startswith("-I") and len(w) > 2:
            dirs.append(w[2:])
            i += 1
        else:
            rest.append(w)
            i += 1
    return dirs, rest


def strip_include_options(options: str, dirs: list[str]) -> str:
    """``options`` with the ``-I <dir>`` of each of ``dirs`` removed, the rest verbatim.

    The driver gets the captured text unchanged (quoting included) apart from those folders.
    """
    out = options
    for d in dirs:
        path = re.escape(d)
        pattern = rf"(^|\s)-I\s*(?:{path}|'{path}'|\"{path}\")(?=\s|$)"
        out = re.sub(pattern, " ", out)
    return out.strip() if out != options else options


def _pyopencl_cl_dir() -> Path | None:
    spec = importlib.util.find_spec("pyopencl")
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        cand = Path(loc) / "cl"
        if cand.is_dir():
            return cand
    return None


def local_include_dir(captured: str) -> Path | None:
    """The folder on this machine that stands for a captured ``-I`` folder, if any."""
    p = Path(captured)
    if p.is_absolute() and p.is_dir():
        return p
    if captured.rstrip("/").endswith("pyopencl/cl"):
        return _pyopencl_cl_dir()
    return None


def _safe_include(name: str) -> str | None:
    parts = PurePosixPath(name).parts
    if not parts or PurePosixPath(name).is_absolute():
        return None
    if any(p in (".", "..") or sanitize_component(p) != p for p in parts):
        return None
    return "/".join(parts)


def resolve_includes(source: bytes, options: str, allow_host: bool = True) -> IncludeSet:
    """Find the headers ``source`` includes through the ``-I`` folders of ``options``.

    ``allow_host=False``: no host file is read; every include of ``source`` found in a folder
    is listed in ``refused`` and the options keep their captured ``-I`` folders."""
    captured_dirs, _rest = split_include_options(options)
    kept: list[str] = []
    result = IncludeSet(options="")
    for d in captured_dirs:
        local = local_include_dir(d)
        if local is None:
            kept.append(d)
            result.notes.append(f"include folder {d} does not exist here")
            continue
        if local not in result.dirs:
            result.dirs.append(local)
    result.options = strip_include_options(options, [d for d in captured_dirs if d not in kept])
    if not result.dirs:
        return result
    roots = [d.resolve() for d in result.dirs]
    if not allow_host:
        _refuse_all(source, roots, result)
        result.options, result.dirs = options, []
        return result
    _collect(source, roots, result)
    return result


def _collect(source: bytes, roots: list[Path], result: IncludeSet) -> None:
    """Follow the ``#include`` lines of ``source`` and of each header found into
    ``result.headers`` (``refused`` and ``notes`` for the rest)."""
    # (text, folder of the including file relative to its root, root index) - None: the source
    pending: list[tuple[bytes, str | None, int]] = [(source, None, 0)]
    seen: set[tuple[int, str]] = set()
    total = 0
    while pending:
        text, here, here_root = pending.pop()
        for m in _INCLUDE_RE.finditer(text):
            name = m.group(1).decode("utf-8", "replace").strip()
            rel = _safe_include(name)
            if rel is None:
                result.notes.append(f"#include {name!r} skipped (not a plain relative path)")
                continue
            quoted = m.group(0).rstrip().endswith(b'"')
            candidates: list[tuple[int, str]] = []
            if quoted and here is not None:  # "x.h" first next to the including header
                candidates.append((here_root, f"{here}/{rel}" if here else rel))
            candidates += [(i, rel) for i in range(len(roots))]
            for i, crel in candidates:
                root = roots[i]
                cand = (root / crel).resolve()
                if not cand.is_file() or not cand.is_relative_to(root):
                    continue
                if (i, crel) in seen:
                    break
                seen.add((i, crel))
                data, why = read_host_header(cand)
                if data is None:
                    result.refused.append(RefusedInclude(name, str(cand), why or "refused"))
                    continue
                total += len(data)
                if len(result.headers) >= MAX_HEADERS or total > MAX_HEADER_BYTES:
                    result.notes.append("too many included headers: the rest were left out")
                    return
                result.headers[(i, crel)] = cand
                parent = str(PurePosixPath(crel).parent)
                pending.append((data, "" if parent == "." else parent, i))
                break


def _refuse_all(source: bytes, roots: list[Path], result: IncludeSet) -> None:
    """List the includes of ``source`` that a folder here would give, without reading any."""
    for m in _INCLUDE_RE.finditer(source):
        name = m.group(1).decode("utf-8", "replace").strip()
        rel = _safe_include(name)
        if rel is None:
            continue
        for root in roots:
            cand = (root / rel).resolve()
            if cand.is_file() and cand.is_relative_to(root):
                why = "host includes refused (--no-host-includes)"
                result.refused.append(RefusedInclude(name, str(cand), why))
                break


@dataclass
class IncludePreview:
    """The host headers an export of a range would copy, and those it would refuse."""

    copied: list[str] = field(default_factory=list)  # host paths
    refused: list[RefusedInclude] = field(default_factory=list)
    complete: bool = True  # False: the range was too long to look at every enqueue


def preview_host_includes(
    capture: Any, first: int, last: int, max_rows: int = 20000
) -> IncludePreview:
    """What ``export`` of enqueues ``first``-``last`` takes from this machine (for the dialog):
    the headers of each program of the range's kernels, by the rule of :func:`resolve_includes`."""
    out = IncludePreview()
    a, b = capture.position_of(first), capture.position_of(last)
    if a is None or b is None:
        return out
    if b - a + 1 > max_rows:
        b, out.complete = a + max_rows - 1, False
    seen_kernels: set[str] = set()
    seen_programs: set[tuple[int, str]] = set()
    for row in capture.rows(a, b + 1):
        if not row.kernel or row.kernel in seen_kernels:
            continue
        seen_kernels.add(row.kernel)
        prog = capture.enqueue(row.number).program
        if prog is None or prog.source_path is None or (prog.number, prog.hash) in seen_programs:
            continue
        seen_programs.add((prog.number, prog.hash))
        inc = resolve_includes(capture.program_source(prog).encode(), prog.options or "")
        for path in inc.headers.values():
            if str(path) not in out.copied:
                out.copied.append(str(path))
        out.refused.extend(r for r in inc.refused if r not in out.refused)
    return out
