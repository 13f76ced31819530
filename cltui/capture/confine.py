"""The capture folder as a boundary: nothing is read through a link that leads out of it.

A capture is untrusted.  A symlink inside it (a dump, an options file, a source, the log, a
``Replay/`` file, or a whole sub-folder) could otherwise make cltui show, type or export a host
file such as ``/etc/passwd``.  Every file the capture model opens is checked here first: its
location with every link followed must lie inside the capture folder (itself with its links
followed).  Links that stay inside the capture are followed as usual.

Refusals are :class:`OutsideCapture`, an ``OSError``: code that already treats an unreadable
file as a :class:`~cltui.capture.model.Problem` reports a refused one the same way.  Every open
goes through :mod:`cltui.capture.safeopen` (the link's target, links resolved, opened with
``O_NOFOLLOW | O_NONBLOCK``): a FIFO, a device or a socket is a
:class:`~cltui.capture.safeopen.NotRegular` and never blocks; reads are bounded.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from cltui.capture.safeopen import (
    MAX_SMALL_TEXT,
    NotRegular,
    TooLarge,
    file_kind,
    open_regular,
    read_upto,
)
from cltui.errors import CltuiError

__all__ = [
    "HEADER_SUFFIXES",
    "OutsideCapture",
    "check_inside",
    "entry_leaves",
    "host_header_refusal",
    "is_file",
    "leaves",
    "map_bytes",
    "open_inside",
    "outside_message",
    "read_bytes_inside",
    "read_host_header",
    "real_root",
]


class OutsideCapture(CltuiError, OSError):
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


def is_file(path: str | Path) -> tuple[bool, str | None]:
    """(``path`` is a regular file, links followed; why it could not be looked at, or None).

    ``Path.is_file`` raises for some errors (a link whose target name is too long: ENAMETOOLONG);
    a capture's names are untrusted, so the reason becomes the caller's problem to report; so
    does a FIFO, a device or a socket (reading one would block or never end)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False, None
    except OSError as e:
        return False, f"cannot look at it: {e.strerror or e}"
    if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
        return stat.S_ISREG(st.st_mode), None
    return False, f"{file_kind(st.st_mode)}, not a regular file: not read"


def check_inside(root: str | Path, path: str | Path) -> Path:
    """``path`` if it lies inside ``root`` (links followed); raises :class:`OutsideCapture`."""
    target = leaves(root, path)
    if target is not None:
        raise OutsideCapture(path, target)
    return Path(path)


def open_inside(root: str | Path | None, path: str | Path) -> BinaryIO:
    """``path`` opened for reading, after :func:`check_inside` (``root`` None: no boundary
    known, a link is followed): regular files only, the open never blocks
    (:func:`cltui.capture.safeopen.open_regular`; a refusal names ``path``)."""
    try:
        if root is None:
            return open_regular(path, follow=True)
        target = leaves(root, path)
        if target is not None:
            raise OutsideCapture(path, target)
        # the resolved target, no link left to follow: a link swapped in meanwhile is refused
        return open_regular(os.path.realpath(path))
    except (NotRegular, TooLarge) as e:
        e.filename = str(path)
        raise


def read_bytes_inside(
    root: str | Path | None, path: str | Path, limit: int = MAX_SMALL_TEXT
) -> bytes:
    """The bytes of ``path`` after :func:`check_inside`: a :class:`TooLarge` past ``limit``."""
    with open_inside(root, path) as f:
        data = read_upto(f, limit + 1)
    if len(data) > limit:
        raise TooLarge(path, limit)
    return data


# ---------------------------------------------------------------------------------------------
# Host headers: the one file kind read from outside a capture.
#
# A captured program's build options name include folders of the capturing machine and its
# source says ``#include "x"``: both are untrusted text.  The signature parser and ``export``
# read such a header from this machine only when :func:`host_header_refusal` says nothing
# against it.

HEADER_SUFFIXES = frozenset(
    {".h", ".hh", ".hpp", ".hxx", ".cl", ".clh", ".clc", ".clhpp", ".inc", ".inl", ".def"}
)
MAX_HOST_HEADER_BYTES = 1 << 20
# system configuration and kernel/process views, never a header folder of a build
_SYSTEM_ROOTS = ("/etc", "/proc", "/sys", "/dev", "/root", "/boot", "/run", "/var", "/srv")
# folders that hold credentials, wherever they are (a home, a mounted home)
_SECRET_PARTS = frozenset(
    {".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".password-store", ".pki",
     "keyrings", ".mozilla", ".netrc", ".git-credentials", ".config"}
)


def host_header_refusal(path: str | Path, data: bytes | None = None) -> str | None:
    """Why a host file reached by ``#include`` may not be read (or bundled), or None.

    A header is a regular file (links followed) with a header-like name (``.h``, ``.hpp``,
    ``.cl``, ``.clh``, ``.inc`` ...), at most 1 MiB, not under a system folder (``/etc``,
    ``/proc``, ``/sys``, ``/dev``, ``/root``, ``/boot``, ``/run``, ``/var``, ``/srv``) nor a
    credentials folder (``.ssh``, ``.gnupg``, ``.aws``, ``.config`` ...), and text (no NUL
    byte, UTF-8).  ``data``: the file's bytes when the caller has read them (checked as text).
    """
    real = os.path.realpath(path)
    if any(real == r or real.startswith(r + "/") for r in _SYSTEM_ROOTS):
        return f"{real} is in a system folder"
    parts = Path(real).parts
    if any(p in _SECRET_PARTS for p in parts):
        return f"{real} is in a credentials folder"
    if Path(real).suffix.lower() not in HEADER_SUFFIXES:
        return f"{real} is not named like a header (.h, .hpp, .cl, .clh, .inc ...)"
    try:
        st = os.stat(real)
    except OSError as e:
        return f"{real}: {e.strerror or e}"
    if not os.path.isfile(real):
        return f"{real} is not a regular file"
    if st.st_size > MAX_HOST_HEADER_BYTES:
        return f"{real} is larger than {MAX_HOST_HEADER_BYTES} bytes"
    if data is not None:
        if b"\0" in data:
            return f"{real} is not text (NUL bytes)"
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return f"{real} is not UTF-8 text"
    return None


def read_host_header(path: str | Path) -> tuple[bytes | None, str | None]:
    """(the bytes of a host header, None) or (None, why it was refused)."""
    why = host_header_refusal(path)
    if why is not None:
        return None, why
    try:
        with open_regular(os.path.realpath(path)) as f:
            data = f.read(MAX_HOST_HEADER_BYTES + 1)
    except OSError as e:
        return None, f"{path}: {e.strerror or e}"
    why = host_header_refusal(path, data[: MAX_HOST_HEADER_BYTES + 1])
    if why is None and len(data) > MAX_HOST_HEADER_BYTES:
        why = f"{os.path.realpath(path)} is larger than {MAX_HOST_HEADER_BYTES} bytes"
    return (None, why) if why is not None else (data, None)


def map_bytes(
    path: Path | str, dtype: npt.DTypeLike = np.uint8, *, root: Path | str | None = None
) -> npt.NDArray[np.generic]:
    """A read-only ``np.memmap`` of ``path`` viewed as ``dtype``.

    Trailing bytes that do not fill a whole element are dropped; a 0-byte file (or one smaller
    than one element) gives an empty array.  Raises ``OSError`` if the file cannot be opened,
    :class:`~cltui.capture.confine.OutsideCapture` when it leads outside the capture ``root``.
    """
    dt = np.dtype(dtype)
    with open_inside(root, path) as f:
        size = os.fstat(f.fileno()).st_size
        count = size // dt.itemsize if dt.itemsize else 0
        if count == 0:
            return np.empty(0, dtype=dt)
        return np.memmap(f, dtype=dt, mode="r", shape=(count,))
