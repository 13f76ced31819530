"""The capture folder as a boundary: nothing is read through a link that leads out of it.

A capture is untrusted.  A symlink inside it (a dump, an options file, a source, the log, a
``Replay/`` file, or a whole sub-folder) could otherwise make cltui show, type or export a host
file such as ``/etc/passwd``.  Every file the capture model opens is checked here first: its
location with every link followed must lie inside the capture folder (itself with its links
followed).  Links that stay inside the capture are followed as usual.

Refusals are :class:`OutsideCapture`, an ``OSError``: code that already treats an unreadable
file as a :class:`~cltui.capture.model.Problem` reports a refused one the same way.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "OutsideCapture",
    "check_inside",
    "entry_leaves",
    "leaves",
    "open_inside",
    "outside_message",
    "read_bytes_inside",
    "real_root",
]


class OutsideCapture(OSError):
    """A path of the capture whose target lies outside the capture folder."""

    def __init__(self, path: str | Path, target: str) -> None:
        super().__init__(errno.EACCES, outside_message(target))
        self.filename = str(path)
        self.target = target


def outside_message(target: str) -> str:
    """The one line that says a path was refused (a problem's message, an error's text)."""
    return f"a link that leads outside the capture (to {target}): not read"


def real_root(root: str | Path) -> str:
    """The capture folder with every link followed (what :func:`leaves` compares against)."""
    return os.path.realpath(root)


def _inside(real: str, root_real: str) -> bool:
    base = root_real.rstrip(os.sep) or os.sep
    return real == root_real or real.startswith(base if base == os.sep else base + os.sep)


def leaves(root: str | Path, path: str | Path, *, root_real: str | None = None) -> str | None:
    """None when ``path`` (links followed) lies inside ``root``, else where it leads.

    ``root_real``: :func:`real_root` of ``root`` when the caller checks many paths.
    """
    target = os.path.realpath(path)
    return None if _inside(target, root_real or real_root(root)) else target


def entry_leaves(entry: os.DirEntry[str], root_real: str) -> str | None:
    """:func:`leaves` for a directory entry of an already checked folder: only a link is
    resolved (``is_symlink`` comes from ``readdir``: a plain file costs no system call)."""
    try:
        if not entry.is_symlink():
            return None
    except OSError:
        return None
    target = os.path.realpath(entry.path)
    return None if _inside(target, root_real) else target


def check_inside(root: str | Path, path: str | Path) -> Path:
    """``path`` if it lies inside ``root`` (links followed); raises :class:`OutsideCapture`."""
    target = leaves(root, path)
    if target is not None:
        raise OutsideCapture(path, target)
    return Path(path)


def open_inside(root: str | Path | None, path: str | Path) -> BinaryIO:
    """``open(path, "rb")`` after :func:`check_inside` (``root`` None: no boundary known)."""
    if root is not None:
        check_inside(root, path)
    return open(path, "rb")


def read_bytes_inside(root: str | Path | None, path: str | Path, limit: int = -1) -> bytes:
    """The bytes of ``path`` (at most ``limit`` when given) after :func:`check_inside`."""
    with open_inside(root, path) as f:
        return f.read(limit)
