"""Header files a captured program includes, bundled from folders cltui chooses: never from a
folder a capture names.

A capture is untrusted, and its build options may name any folder of this machine
(``-I /home/me``): cltui copies nothing out of such a folder into a bundle the user may share.
The headers a source includes (recursively, by ``#include <x>`` / ``#include "x"``) are looked
up in two kinds of folder only, in this order:

* pyopencl's own ``cl`` folder: a captured ``-I`` folder that looks like pyopencl's
  (``.../pyopencl/cl``, which pyopencl passes to every build) stands for the LOCAL pyopencl
  package's ``cl`` folder, found with importlib: the path is cltui's choice, not the capture's
  (``pyopencl=False``, ``--no-host-includes``: not even that one);
* the folders the USER names (``--include-dir DIR``, in the order given), searched for every
  include still unresolved, whatever the captured ``-I`` folders were called.

Any other captured ``-I`` folder is not read (not listed, not searched): it stays in the
program's options, and one that exists here is named in ``unread``; the includes of the
source found in no bundled folder are ``missing`` (those of a bundled header are not listed:
they often sit in a branch for another language, as the C++ ones of pyopencl's random123
headers do).  Only files that really lie inside a bundled folder, under a relative path made
of safe components, are taken (an include line is untrusted text), and each must also pass
:func:`cltui.capture.confine.host_header_refusal` (a header-like text file of at most 1 MiB,
outside system and credentials folders); one that does not is left out and
listed in ``refused`` with the reason.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from cltui.capture.confine import read_host_header
from cltui.capture.names import sanitize_component
from cltui.capture.ranges import EnqueueRange
from cltui.text.shellwords import include_options, include_spans, replace_spans, split_words

_INCLUDE_RE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"\r\n]+)[>"]', re.MULTILINE)
MAX_HEADERS = 500
SHOWN = 10  # include names a one-line message shows (an untrusted source can hold thousands)
MAX_HEADER_BYTES = 16 << 20
PYOPENCL = "pyopencl"  # origin: the local pyopencl package's cl folder
INCLUDE_DIR = "include-dir"  # origin: a folder the user named


@dataclass(frozen=True)
class RefusedInclude:
    """An ``#include`` whose host file was not taken into the bundle."""

    include: str  # the name as the source writes it
    host_path: str  # the file it resolved to in a bundled folder
    why: str


@dataclass(frozen=True)
class IncludeRoot:
    """A folder of this machine headers are bundled from, and why cltui may read it."""

    path: Path
    origin: str  # PYOPENCL or INCLUDE_DIR


@dataclass
class IncludeSet:
    """What one program needs: options without the mapped ``-I``s, and the headers."""

    options: str  # the captured options minus the pyopencl folders mapped here
    roots: list[IncludeRoot] = field(default_factory=list)  # in search order
    headers: dict[tuple[int, str], Path] = field(default_factory=dict)  # (root index, rel) -> file
    notes: list[str] = field(default_factory=list)
    refused: list[RefusedInclude] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # the source's includes found nowhere
    unread: list[str] = field(default_factory=list)  # captured -I folders here, not read


def split_include_options(options: str) -> tuple[list[str], list[str]]:
    """(``-I`` folders in order, the other options as words)."""
    parts = include_options(split_words(options))
    return [d for _w, d in parts if d is not None], [w for w, d in parts if d is None]


def strip_include_options(options: str, dirs: list[str]) -> str:
    """``options`` with the ``-I <dir>`` of each of ``dirs`` removed, the rest verbatim
    (the one walk over ``-I``, :func:`~cltui.text.shellwords.include_spans`, however the
    folder is quoted).  The driver gets the captured text unchanged apart from those folders.
    """
    gone = set(dirs)
    cuts = [(start, end, None) for start, end, d in include_spans(options) if d in gone]
    return replace_spans(options, cuts) if cuts else options


def pyopencl_cl_dir() -> Path | None:
    """The local pyopencl package's ``cl`` folder (cltui's own dependency), if installed."""
    spec = importlib.util.find_spec("pyopencl")
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        cand = Path(loc) / "cl"
        if cand.is_dir():
            return cand
    return None


def is_pyopencl_dir(captured: str) -> bool:
    """A captured ``-I`` folder that stands for pyopencl's own ``cl`` folder (a Windows
    capture's too: ``C:\\...\\pyopencl\\cl``)."""
    path = captured.replace("\\", "/").rstrip("/") or "/"
    return PurePosixPath(path).parts[-2:] == ("pyopencl", "cl")


def _captured_dir_here(captured: str) -> bool:
    """Whether a captured ``-I`` folder exists on this machine (it is not read either way)."""
    p = Path(captured)
    try:
        return p.is_absolute() and p.is_dir()
    except OSError:
        return False


def _safe_include(name: str) -> str | None:
    parts = PurePosixPath(name).parts
    if not parts or PurePosixPath(name).is_absolute():
        return None
    if any(p in (".", "..") or sanitize_component(p) != p for p in parts):
        return None
    return "/".join(parts)


def resolve_includes(
    source: bytes, options: str, include_dirs: Sequence[Path] = (), pyopencl: bool = True
) -> IncludeSet:
    """Find the headers ``source`` includes in pyopencl's folder (where a captured ``-I``
    names one) and then in ``include_dirs`` (the user's); no other host folder is read."""
    captured_dirs, _rest = split_include_options(options)
    result = IncludeSet(options=options)
    mapped: list[str] = []
    named = {p.resolve() for p in include_dirs}  # the user's: read because the user said so
    for d in captured_dirs:
        local = pyopencl_cl_dir() if pyopencl and is_pyopencl_dir(d) else None
        if local is not None:
            mapped.append(d)
            _add_root(result, local, PYOPENCL)
        elif _captured_dir_here(d):
            if d not in result.unread and Path(d).resolve() not in named:
                result.unread.append(d)
        else:
            result.notes.append(f"include folder {d} does not exist here")
    for user_dir in include_dirs:
        _add_root(result, user_dir, INCLUDE_DIR)
    result.options = strip_include_options(options, mapped)
    _collect(source, [r.path.resolve() for r in result.roots], result)
    return result


def _add_root(result: IncludeSet, path: Path, origin: str) -> None:
    if all(r.path != path for r in result.roots):
        result.roots.append(IncludeRoot(path, origin))


def unread_line(folder: str, missing: Sequence[str]) -> str:
    """The one line that says a captured ``-I`` folder was not read, what the bundle lacks
    and how to add it."""
    head = (
        f"include folder {folder} (named by the capture) was not read: a capture does not "
        "choose host files for a bundle"
    )
    if not missing:
        return head + "; the sources include nothing the bundle lacks"
    names = ", ".join(repr(m) for m in missing[:SHOWN])
    if len(missing) > SHOWN:
        names += f" and {len(missing) - SHOWN:,} more (the manifest lists them)"
    return (
        f"{head}; not in the bundle: #include {names} (the bundle may not build from "
        f"source); to bundle headers from that folder: --include-dir {shlex.quote(folder)}"
    )


def _collect(source: bytes, roots: list[Path], result: IncludeSet) -> None:
    """Follow the ``#include`` lines of ``source`` and of each header found into
    ``result.headers`` (``refused``, ``missing`` and ``notes`` for the rest)."""
    # (text, folder of the including file relative to its root, root index) - None: the source
    pending: list[tuple[bytes, str | None, int]] = [(source, None, 0)]
    seen: set[tuple[int, str]] = set()
    # include lines already followed from the same place: a repeated line says nothing new
    # (a source of the same line many times costs one lookup, not one per line)
    done: set[tuple[int, str | None, bytes]] = set()
    missing = set(result.missing)
    total = 0
    while pending:
        text, here, here_root = pending.pop()
        for m in _INCLUDE_RE.finditer(text):
            key = (here_root, here, m.group(0).rstrip())
            if key in done:
                continue
            done.add(key)
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
            found = False
            for i, crel in candidates:
                root = roots[i]
                cand = (root / crel).resolve()
                if not cand.is_file() or not cand.is_relative_to(root):
                    continue
                found = True
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
            # the source's own includes only: a bundled header's may sit in a branch for C++
            if not found and here is None and name not in missing:
                missing.add(name)
                result.missing.append(name)


@dataclass
class RangePrograms:
    """The programs (source, options) of a range's kernels, for the export dialog's preview."""

    programs: list[tuple[bytes, str]] = field(default_factory=list)
    complete: bool = True  # False: the range was too long to look at every enqueue


@dataclass
class IncludePreview:
    """The host headers an export of a range would copy, refuse and miss."""

    copied: list[tuple[str, str]] = field(default_factory=list)  # (host path, origin)
    refused: list[RefusedInclude] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # include names
    unread: dict[str, list[str]] = field(default_factory=dict)  # captured folder -> missing
    complete: bool = True


def range_programs(capture: Any, rng: EnqueueRange, max_rows: int = 20000) -> RangePrograms:
    """The programs of the kernels of the enqueues of ``rng`` (each once)."""
    out = RangePrograms()
    a = 0 if rng.first is None else capture.position_of(rng.first)
    b = len(capture) - 1 if rng.last is None else capture.position_of(rng.last)
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
        out.programs.append((capture.program_source(prog).encode(), prog.options or ""))
    return out


def preview_includes(
    progs: RangePrograms, include_dirs: Sequence[Path] = (), pyopencl: bool = True
) -> IncludePreview:
    """What ``export`` of those programs takes from this machine, by :func:`resolve_includes`."""
    out = IncludePreview(complete=progs.complete)
    for source, options in progs.programs:
        inc = resolve_includes(source, options, include_dirs, pyopencl)
        for (i, _rel), path in inc.headers.items():
            if (str(path), inc.roots[i].origin) not in out.copied:
                out.copied.append((str(path), inc.roots[i].origin))
        out.refused.extend(r for r in inc.refused if r not in out.refused)
        out.missing.extend(m for m in inc.missing if m not in out.missing)
        for d in inc.unread:
            lacks = out.unread.setdefault(d, [])
            lacks.extend(m for m in inc.missing if m not in lacks)
    return out


def preview_host_includes(
    capture: Any,
    rng: EnqueueRange,
    include_dirs: Sequence[Path] = (),
    pyopencl: bool = True,
    max_rows: int = 20000,
) -> IncludePreview:
    """:func:`preview_includes` of the programs of the enqueues of ``rng``."""
    progs = range_programs(capture, rng, max_rows)
    return preview_includes(progs, include_dirs, pyopencl)
