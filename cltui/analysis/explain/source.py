"""The kernel's source as libclang parses it (OpenCL C), for :mod:`.instrument` and
:mod:`.watch`: the kernel and the functions it reaches, its memory parameters, and the
instrumented source put together from a walk's edits."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cltui.analysis.explain.calls import reachable, signatures
from cltui.errors import CltuiError

__all__ = ["Base", "InstrumentError", "Parsed", "finish", "parse", "pointer_params",
           "resource_dir"]


class InstrumentError(CltuiError):
    """The source cannot be instrumented (no libclang, the kernel not found): one line."""


def _index() -> Any:
    try:
        import clang.cindex as ci
    except ImportError:
        raise InstrumentError("the Python package libclang is not installed "
                              "(pip install libclang)") from None  # fmt: skip
    return ci


def resource_dir() -> str | None:
    """clang's resource folder (its OpenCL headers), from Debian's libclang-common-N-dev."""
    env = os.environ.get("CLTUI_CLANG_RESOURCE_DIR")
    if env and Path(env, "include", "opencl-c.h").is_file():
        return env
    for v in range(25, 13, -1):
        base = Path(f"/usr/lib/llvm-{v}/lib/clang")
        if base.is_dir():
            for sub in sorted(base.iterdir(), reverse=True):
                if (sub / "include" / "opencl-c.h").is_file():
                    return str(sub)
    return None


def _parse_args(options: str) -> list[str]:
    """The build options libclang needs: defines, include folders that exist, the standard."""
    try:
        words = shlex.split(options)
    except ValueError:
        words = options.split()
    out: list[str] = []
    k = 0
    while k < len(words):
        w = words[k]
        if w in ("-D", "-I") and k + 1 < len(words):
            w, k = w + words[k + 1], k + 1
        if w.startswith(("-D", "-cl-std=")) or (w.startswith("-I") and Path(w[2:]).is_dir()):
            out.append(w)
        k += 1
    return out


@dataclass
class Base:
    """A kernel parameter that points to memory, or a ``__local`` array of the kernel: its
    address is recorded at the start (a memory operand's address is then an offset in it)."""

    name: str
    param: int | None  # the kernel argument's index (None: a ``__local`` array)
    size: int | None  # bytes (an array's; a parameter's comes from the plan)


@dataclass
class Parsed:
    """The source parsed: the kernel and the functions it reaches (traced)."""

    ci: Any
    tu: Any
    data: bytes
    main: str
    kernel: str
    fns: dict[str, Any]
    traced: list[str]
    macros: list[tuple[int, int]]


def parse(source: str, kernel: str, options: str) -> Parsed:
    """``source`` parsed by libclang (:class:`InstrumentError`: not parsed, no kernel)."""
    ci = _index()
    res = resource_dir()
    if res is None:
        raise InstrumentError("clang's OpenCL headers are not installed (Debian: "
                              "libclang-common-15-dev)")  # fmt: skip
    main = "kernel.cl"
    data = source.encode("utf-8")
    args = ["-x", "cl", "-cl-std=CL1.2", "-resource-dir", res, "-Xclang",
            "-finclude-default-header", *_parse_args(options)]  # fmt: skip
    try:
        tu = ci.Index.create().parse(
            main, args=args, unsaved_files=[(main, data)],
            options=ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD)  # fmt: skip
    except ci.TranslationUnitLoadError as exc:
        raise InstrumentError(f"libclang could not parse the source: {exc}") from None
    fns = {c.spelling: c for c in tu.cursor.get_children()
           if c.kind == ci.CursorKind.FUNCTION_DECL and c.is_definition()
           and c.location.file and c.location.file.name == main}  # fmt: skip
    if kernel not in fns:
        raise InstrumentError(f"kernel {kernel} not found in the program's source")
    macros = [(c.extent.start.offset, c.extent.end.offset) for c in tu.cursor.get_children()
              if c.kind == ci.CursorKind.MACRO_INSTANTIATION and c.location.file
              and c.location.file.name == main]  # fmt: skip
    return Parsed(ci, tu, data, main, kernel, fns, reachable(ci, fns, kernel), macros)


def finish(p: Parsed, edits: list[tuple[int, int, str]], start: str, pre: str) -> str:
    """The instrumented source: the trace parameters, ``start`` at the top of the kernel's
    body, the walk's ``edits``, and ``pre`` (the recorder) before the first function."""
    signatures(p.ci, p.tu, p.main, p.data, p.kernel, set(p.traced) - {p.kernel},
               set(p.traced), edits)  # fmt: skip
    kbody = [ch for ch in p.fns[p.kernel].get_children()
             if ch.kind == p.ci.CursorKind.COMPOUND_STMT]  # fmt: skip
    edits.append((kbody[0].extent.start.offset + 1, 1, start))
    out = bytearray(p.data)
    for off, _order, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out[off:off] = text.encode("utf-8")
    first = min(c.extent.start.offset for c in p.fns.values())
    first = p.data.rfind(b"\n", 0, first) + 1
    out[first:first] = pre.encode("utf-8") + f"\n#line {_line_at(p.data, first)}\n".encode()
    return out.decode("utf-8", "replace")


def pointer_params(p: Parsed) -> list[Base]:
    """The kernel's parameters that point to memory (global, constant, local)."""
    out = []
    for k, a in enumerate(p.fns[p.kernel].get_arguments()):
        if a.type.get_canonical().kind.name == "POINTER" and a.spelling:
            out.append(Base(a.spelling, k, None))
    return out



def _line_at(data: bytes, offset: int) -> int:
    return data[:offset].count(b"\n") + 1
