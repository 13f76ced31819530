"""One-pass enqueue index over ``clintercept_log.txt`` (capture-format.md §2, §8).

The log is memory-mapped and cut into line-aligned pieces; each piece is scanned with
as few passes as possible: one regex pass for enqueue entry lines (literal prefix
``clEnqueue``), ``bytes.find`` loops for the rare markers (`` returned ``, a last
``clReleaseMemObject``), and one vectorised numpy pass over the newlines that yields the
side lines (banner, controls, program dumps...) and the ``Device Time`` lines.  Python
work happens per *match* (per enqueue, per device-time line and per rare line), never per
log line.  Logs over ``PARALLEL_MIN`` bytes are scanned by forked worker processes (one
per CPU) whose compact pieces are merged in file order.  ``clSetKernelArg`` lines are not
touched at index time: the argument state of a kernel enqueue is found lazily by scanning
backwards from the enqueue (:meth:`LogIndex.kernel_args_at`).

Rooms: :mod:`~cltui.capture.log.grammar` (line patterns and field parsers),
:mod:`~cltui.capture.log.objects` (records, argument states, image sizes),
:mod:`~cltui.capture.log.scan` (one piece), :mod:`~cltui.capture.log.parallel` (pieces and
workers), :mod:`~cltui.capture.log.creations` (what the log creates),
:mod:`~cltui.capture.log.devtimes` (Device Time lines), :mod:`~cltui.capture.log.index`
(:class:`LogIndex`), :mod:`~cltui.capture.log.build` (:func:`build_index`).  This package
re-exports what the rest of cltui uses.
"""

from __future__ import annotations

from cltui.capture.log.build import build_index, find_logs
from cltui.capture.log.grammar import (
    KIND_OF_FUNCTION,
    kind_of,
    kv_pairs,
    parse_ptr,
    parse_sampler_props,
    short_kernel_name,
    split_kernel_name,
    strip_counter,
)
from cltui.capture.log.index import LogIndex
from cltui.capture.log.objects import (
    IndexCancelled,
    KernelRecord,
    ProgramRecord,
    QueueRecord,
    SetArg,
    SetArgs,
    image_region,
    image_texel_bytes,
)

__all__ = [
    "KIND_OF_FUNCTION",
    "IndexCancelled",
    "KernelRecord",
    "LogIndex",
    "ProgramRecord",
    "QueueRecord",
    "SetArg",
    "SetArgs",
    "build_index",
    "find_logs",
    "image_region",
    "image_texel_bytes",
    "kind_of",
    "kv_pairs",
    "parse_ptr",
    "parse_sampler_props",
    "short_kernel_name",
    "split_kernel_name",
    "strip_counter",
]
