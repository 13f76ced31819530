"""Opening a file cltui did not write: regular files only, never blocking, reads bounded.

Every file cltui reads that someone else may have put there (a capture's files, its ``Replay/``
folders, a bundle's manifest and data, the app's saved state, the stored variants, a fleet
inventory) is opened here.  A FIFO opened for reading blocks until a writer comes, a device such
as ``/dev/zero`` never ends, a socket cannot be read: each is refused by name before a byte is
read.  The open itself is ``O_NONBLOCK`` (a FIFO's open returns at once), then ``fstat`` on the
open descriptor says what it is; ``O_NOFOLLOW`` refuses a link as the last component where the
caller does not follow links (the capture's confine rule, :mod:`cltui.capture.confine`, resolves
a link that stays inside the capture first and opens its target).  Reads take at most the size the
file's kind allows (the ``MAX_*`` limits): a larger file is a :class:`TooLarge`.

Refusals are ``OSError`` s (and :class:`~cltui.errors.CltuiError` s): code that already reports an
unreadable file as a problem reports these the same way, in one line.  Standard library only, by
relative import of ``cltui.errors``: a bundle's replay engine carries it too.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from ..errors import CltuiError

__all__ = [
    "MAX_INVENTORY",
    "MAX_JSON",
    "MAX_REPORT",
    "MAX_SMALL_TEXT",
    "MAX_SOURCE",
    "MAX_STATE",
    "MAX_VARIANT",
    "NotRegular",
    "TooLarge",
    "file_kind",
    "open_fd",
    "open_regular",
    "read_limited",
    "read_text_limited",
]

# Limits per kind of file (bytes): what the format can hold, with room to spare.
MAX_SMALL_TEXT = 1 << 20  # a Replay folder's text files, options, a hash dump, a report
MAX_SOURCE = 1 << 30  # a program source (a kernel.cl, a CLI_ source): as large as a log line
MAX_REPORT = 64 << 20  # clintercept_report.txt (its tables grow with the kernels)
MAX_STATE = 4 << 20  # the app's saved state of one capture (JSON)
MAX_VARIANT = 16 << 20  # a stored variant's variant.json (its sources are files beside it)
MAX_JSON = 256 << 20  # a variant, a manifest, a job file (sources inline)
MAX_INVENTORY = 16 << 20  # a fleet inventory (INI, YAML or host lines)

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISLNK, "a symbolic link"),
)


def file_kind(mode: int) -> str:
    """What a ``st_mode`` that is not a regular file is, in words (``a FIFO``, ``a socket`` ...)."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


class NotRegular(CltuiError, OSError):
    """A path that is not a regular file (a FIFO, a device, a socket, a folder, a link that is
    not followed).  ``strerror``: ``a FIFO, not a regular file``; ``str()``: with the path."""

    def __init__(self, path: str | Path, kind: str) -> None:
        super().__init__(errno.EINVAL, f"{kind}, not a regular file")
        self.filename = str(path)
        self.kind = kind

    def __str__(self) -> str:
        return f"{self.filename} is {self.kind}, not a regular file"


class TooLarge(CltuiError, OSError):
    """A file larger than its kind allows (nothing of it is used)."""

    def __init__(self, path: str | Path, limit: int) -> None:
        super().__init__(errno.EFBIG, f"larger than {limit} bytes: not read")
        self.filename = str(path)
        self.limit = limit

    def __str__(self) -> str:
        return f"{self.filename} is larger than {self.limit} bytes: not read"


def open_fd(path: str | Path, *, follow: bool = False) -> int:
    """A read-only descriptor of the regular file ``path``; raises :class:`NotRegular`.

    ``follow``: a link as the last component is followed (the target must still be a regular
    file); else it is refused.  The open never blocks (``O_NONBLOCK``, cleared once ``fstat``
    says it is a regular file)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        if e.errno == errno.ELOOP and not follow and os.path.islink(path):
            raise NotRegular(path, "a symbolic link (not followed)") from None
        if e.errno in (errno.ENXIO, errno.EOPNOTSUPP, errno.ENODEV):  # a socket, a device
            try:
                mode = (os.stat if follow else os.lstat)(path).st_mode
            except OSError:
                raise e from None
            if not stat.S_ISREG(mode):
                raise NotRegular(path, file_kind(mode)) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegular(path, file_kind(mode))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular(path: str | Path, *, follow: bool = False) -> BinaryIO:
    """:func:`open_fd` as a binary file object (``with open_regular(p) as f: ...``)."""
    return os.fdopen(open_fd(path, follow=follow), "rb")


def read_upto(f: BinaryIO, most: int) -> bytes:
    """At most ``most`` bytes of the open file ``f``, without a buffer of ``most`` bytes up
    front (``read(n)`` allocates n): the file's size (and its end) first, then on in chunks
    while it grows."""
    parts: list[bytes] = []
    got = 0
    want = min(most, os.fstat(f.fileno()).st_size + 1)
    while got < most and (chunk := f.read(want)):
        parts.append(chunk)
        got += len(chunk)
        want = min(1 << 20, most - got)
    return b"".join(parts)  # one part: no copy


def read_limited(path: str | Path, limit: int, *, follow: bool = False) -> bytes:
    """The bytes of the regular file ``path``; raises :class:`TooLarge` past ``limit`` bytes
    (at most ``limit + 1`` bytes are ever read), :class:`NotRegular`, or another ``OSError``."""
    with open_regular(path, follow=follow) as f:
        data = read_upto(f, limit + 1)
    if len(data) > limit:
        raise TooLarge(path, limit)
    return data


def read_text_limited(path: str | Path, limit: int, *, follow: bool = False) -> str:
    """:func:`read_limited` decoded as UTF-8 (``UnicodeDecodeError`` for text that is not)."""
    return read_limited(path, limit, follow=follow).decode("utf-8")
