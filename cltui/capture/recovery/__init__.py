"""Rebuilding the enqueues that a damaged or missing call log lost, from the files that survived.

Besides the call log the layer writes files that name enqueues by their EnqueueCounter:

* memDump Pre/Post dumps ``Enqueue_<E>_Kernel_<k>_Arg_...`` (kernel enqueues, capture-format §3.1);
* Replay folders ``Replay/Enqueue_<E>_<k>`` (kernel enqueues with arguments, work sizes, program);
* map/unmap dumps ``Map_/Unmap_..._Enqueue_<E>`` (the map or unmap enqueue itself, §3.5);
* SetKernelArg dumps ``SetKernelArg_<E>_Kernel_<k>_Arg_<i>`` (§4): ``<E>`` is the counter when
  the argument was set, i.e. the number of the *next* enqueue, which is the kernel launch unless
  the program enqueued something else in between;
* ``Device Time for <name> (enqueue <E>)`` lines, which the layer prints when an event completes,
  so they often survive after the part of the log that a child process overwrote with NULs;
* the report: ``Total Enqueues`` and the calls per function, the device name.

:func:`recover` compares the numbers the log holds with those the capture made (the report's
total, else the highest number any file names) and rebuilds every lost number that a file
names.  What no file names stays lost; the report's counts per function say what those were
when they add up.  Pure: stdlib and numpy only, time linear in the number of files and in the
log's size (one pass over the log, only when it printed Device Time lines for lost enqueues).

Modules: :mod:`.runs` (number runs and their text), :mod:`.result` (:class:`Recovery`,
:class:`RecoveredEnqueue`), :mod:`.logfacts` (what the damaged log still says),
:mod:`.evidence` (what each kind of file says), :mod:`.recover` (the whole).
"""

from cltui.capture.recovery.recover import recover
from cltui.capture.recovery.result import SOURCE_TEXT, RecoveredEnqueue, Recovery, sources_text
from cltui.capture.recovery.runs import range_text, ranges_of

__all__ = [
    "SOURCE_TEXT",
    "RecoveredEnqueue",
    "Recovery",
    "range_text",
    "ranges_of",
    "recover",
    "sources_text",
]
