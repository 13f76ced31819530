"""The events of a memory object's history: what one enqueue, creation or release did to it
(:class:`HistoryEvent`), and what a kernel may do to a memory argument by its signature.
Shared by :mod:`.history` (the whole history, the neighbours) and :mod:`.history_scan` (a
stretch of the log), which :mod:`.history` imports: kept apart so that neither imports the
other at load time."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from cltui.capture.model import ArgKind, KernelArg, MemObject

__all__ = [
    "ACCESSES",
    "MEMORY_ARGS",
    "READS",
    "WRITES",
    "Access",
    "HistoryEvent",
    "arg_access",
    "history_label",
    "reads_only",
]

Access = Literal["create", "write", "read", "readwrite", "map", "unmap", "release"]
WRITES = frozenset({"write", "readwrite", "map"})
READS = frozenset({"read", "readwrite", "map"})

MEMORY_ARGS = frozenset({ArgKind.BUFFER, ArgKind.IMAGE, ArgKind.SVM})


@dataclass(frozen=True, slots=True)
class HistoryEvent:
    """One thing that happened to the object: ``number`` the enqueue (None for its creation
    and release), ``offset`` the log line, ``what`` a short text, ``access`` what it did."""

    number: int | None
    offset: int
    what: str
    access: Access

    @property
    def writes(self) -> bool:
        return self.access in WRITES or (self.access == "create" and "HOST_PTR" in self.what)

    @property
    def reads(self) -> bool:
        return self.access in READS


ACCESSES: tuple[Access, ...] = ("create", "write", "read", "readwrite", "map", "unmap", "release")


def reads_only(a: KernelArg) -> bool:
    """The kernel cannot write the argument (``__constant``, ``const``, read-only image)."""
    tname = a.type_name or ""
    return (
        a.address_space == "constant"
        or a.access == "read_only"
        or re.search(r"\bconst\b", tname) is not None
    )


def arg_access(a: KernelArg) -> Access:
    """What a kernel may do to a memory argument, by its signature: ``read`` (const,
    ``__constant``, ``read_only``), ``write`` (``write_only`` image), else ``readwrite``."""
    if reads_only(a):
        return "read"
    if a.access == "write_only":
        return "write"
    return "readwrite"


def history_label(mem: MemObject) -> str:
    """``buffer 0x3f046980 (32,768 B)``."""
    size = f" ({mem.size:,} B)" if mem.size else ""
    return f"{mem.kind} 0x{mem.handle:x}{size}"
