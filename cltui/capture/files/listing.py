"""Listing a folder of the capture: one ``os.scandir``, no ``stat`` per entry, links that lead
outside the capture dropped (each one a problem), and the problems' wording."""

from __future__ import annotations

import os
from pathlib import Path

from cltui.capture.confine import entry_leaves, leaves, outside_message, real_root
from cltui.capture.model import Problem
from cltui.capture.names import too_large_number
from cltui.capture.safeopen import file_kind

__all__ = [
    "TOO_LARGE",
    "is_dir",
    "is_file",
    "not_regular",
    "not_regular_problem",
    "rel",
    "scandir",
    "unrecognised",
]

TOO_LARGE = "a number in the name does not fit in 64 bits: file skipped"


def scandir(
    path: Path, problems: list[Problem], root: Path, capture: Path | None = None
) -> list[os.DirEntry[str]]:
    """The entries of ``path`` (``root``: what problem locations are relative to), without
    any entry that is a link leading outside the ``capture`` folder (default ``root``): each
    one is a problem.  A ``path`` that is itself such a link is not listed."""
    boundary = real_root(capture or root)
    try:
        if os.path.islink(path):
            target = leaves(capture or root, path, root_real=boundary)
            if target is not None:
                problems.append(_outside(path, root, target))
                return []
        with os.scandir(path) as it:
            entries = list(it)
    except FileNotFoundError:
        return []
    except OSError as e:
        problems.append(Problem(f"cannot list folder: {e.strerror or e}", rel(path, root)))
        return []
    kept = []
    for entry in entries:
        target = entry_leaves(entry, boundary)
        if target is None:
            kept.append(entry)
        else:
            problems.append(_outside(Path(entry.path), root, target))
    return kept


def _outside(path: Path, root: Path, target: str) -> Problem:
    return Problem(outside_message(target), rel(path, root))


def unrecognised(what: str, name: str) -> str:
    """The problem text of a name the grammar does not know (or whose number is too large)."""
    return TOO_LARGE if too_large_number(name) else f"unrecognised {what}"


def rel(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` (POSIX), else as it is."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()  # d_type from readdir: no stat on Linux
    except OSError:
        return False


def is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def not_regular(entry: os.DirEntry[str]) -> str | None:
    """What ``entry`` is when it is neither a regular file nor a folder (links followed):
    ``a FIFO``, ``a socket``, ``a character device`` ... (reading one would block or never end),
    else None.  Costs a ``stat`` only for such an entry (``readdir`` gives the type)."""
    if is_file(entry) or is_dir(entry):
        return None
    try:
        return file_kind(entry.stat().st_mode)
    except OSError:
        return None  # a dangling link: opening it says so


def not_regular_problem(kind: str, where: str, enqueue: int | None = None) -> Problem:
    """The one problem line of an entry that is not a regular file (see :func:`not_regular`)."""
    return Problem(f"{kind}, not a regular file: not read", where, enqueue)
