"""What the surviving files say about each lost enqueue number, source by source.

:class:`Evidence` collects certain facts (kind, function, kernel, sources) per lost number; a
source that contradicts an earlier one becomes a :class:`~cltui.capture.model.Problem` and the
earlier fact is kept.  Sources are added most reliable first (dumps, Replay folders, map/unmap
dumps, Device Time lines, SetKernelArg dumps).  Each step is linear in the files it reads.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cltui.capture.files.dumps import DumpTable, MapUnmapDump
from cltui.capture.model import DeviceTime, EnqueueKind, Problem
from cltui.capture.recovery.result import SOURCE_TEXT
from cltui.capture.recovery.runs import in_runs

__all__ = ["KERNEL_FUNCTION", "Evidence", "Finding"]

KERNEL_FUNCTION = "clEnqueueNDRangeKernel"

# enqueue number at set time -> (short kernel name, arg index) -> file
SetKernelArgs = Mapping[int, Mapping[tuple[str, int], Path]]


def _kind_of(function: str) -> EnqueueKind:
    from cltui.capture.log import kind_of  # local: the log index is large; recovery is rare

    return kind_of(function)


@dataclass(slots=True)
class Finding:
    """The certain facts about one lost number, and the sources that gave them."""

    kind: EnqueueKind
    function: str
    kernel: str | None
    sources: list[str]


def _args_by_kernel(group: Iterable[tuple[str, int]]) -> dict[str, set[int]]:
    """One SetKernelArg group as kernel name -> the argument indices set."""
    out: dict[str, set[int]] = {}
    for k, i in group:
        out.setdefault(k, set()).add(i)
    return out


class Evidence:
    """The findings about the numbers in ``lost`` (sorted runs), and the contradictions."""

    def __init__(self, lost: Sequence[tuple[int, int]]) -> None:
        self.lost = lost
        self.found: dict[int, Finding] = {}
        self.problems: list[Problem] = []

    def is_lost(self, n: int) -> bool:
        return in_runs(self.lost, n)

    def name_kernel(self, n: int, kname: str, source: str) -> None:
        """``source`` says lost enqueue ``n`` launched kernel ``kname``."""
        if not self.is_lost(n):
            return
        cur = self.found.get(n)
        if cur is None:
            self.found[n] = Finding(EnqueueKind.KERNEL, KERNEL_FUNCTION, kname, [source])
        elif cur.kind is EnqueueKind.KERNEL and cur.kernel == kname:
            if source not in cur.sources:
                cur.sources.append(source)
        else:
            was = cur.kernel or cur.function
            self.problems.append(
                Problem(
                    f"{SOURCE_TEXT[source]} name kernel {kname!r}, {', '.join(cur.sources)} "
                    f"named {was!r}; kept {was!r}",
                    enqueue=n,
                )
            )

    def add_memdumps(self, *tables: DumpTable) -> None:
        """Pre/Post dump files name the kernel of their enqueue."""
        for table in tables:
            for n in table:
                if self.is_lost(n):
                    k = table.kernel(n)
                    if k is not None:
                        self.name_kernel(int(n), k, "memdump")

    def add_replay_folders(self, replay: Iterable[int], kernels: Mapping[int, str]) -> None:
        """``Replay/Enqueue_<E>_<k>`` folders name the kernel of their enqueue."""
        for n in replay:
            if self.is_lost(n):
                self.name_kernel(int(n), kernels.get(n, ""), "replay")

    def add_mapunmap(self, dumps: Iterable[MapUnmapDump]) -> None:
        """Map and unmap dumps name their enqueue's function."""
        for m in dumps:
            n = int(m.enqueue)
            if self.is_lost(n) and m.kind in ("map", "unmap") and n not in self.found:
                fn = "clEnqueueMapBuffer" if m.kind == "map" else "clEnqueueUnmapMemObject"
                self.found[n] = Finding(_kind_of(fn), fn, None, ["mapunmap"])

    def add_device_times(self, dtimes: Mapping[int, tuple[str, DeviceTime]]) -> None:
        """Device Time lines name a kernel or an enqueue function (``clEnqueueReadBuffer( b )``)."""
        for n, (text, _dt) in sorted(dtimes.items()):
            # "clEnqueueUnmapMemObject( RW )", "clEnqueueReadBuffer( blocking )": the function
            name = text.split("(", 1)[0].strip() if text.startswith("clEnqueue") else text
            if not name.startswith("clEnqueue"):
                self.name_kernel(n, name, "device_time")
                continue
            cur = self.found.get(n)
            if cur is None:
                self.found[n] = Finding(_kind_of(name), name, None, ["device_time"])
            elif cur.function != name:
                self.problems.append(
                    Problem(
                        f"a Device Time line names {name}, {', '.join(cur.sources)} "
                        f"named {cur.kernel or cur.function!r}; kept the latter",
                        enqueue=n,
                    )
                )

    def add_setkernelarg(
        self, ska: SetKernelArgs, known: dict[int, tuple[EnqueueKind, str | None]]
    ) -> None:
        """SetKernelArg groups: the counter at set time is the launch's number unless the next
        event (a known enqueue or another group) is the same kernel's launch completing them.

        ``known``: the log's own (kind, kernel) by number; the findings so far are added to it."""
        for n, f in self.found.items():
            known[n] = (f.kind, f.kernel)
        events = sorted(set(known) | {int(x) for x in ska})
        for n in sorted(int(x) for x in ska):
            if not self.is_lost(n):
                continue
            mine_all = _args_by_kernel(ska[n])
            names = sorted(mine_all)
            cur = self.found.get(n)
            if cur is not None:
                if cur.kind is EnqueueKind.KERNEL and cur.kernel in names:
                    self.name_kernel(n, cur.kernel or "", "setkernelarg")
                continue  # set before another enqueue: they belong to a later launch
            j = bisect.bisect_right(events, n)
            nxt = events[j] if j < len(events) else None
            later = ska.get(nxt) if nxt is not None else None
            theirs_all = _args_by_kernel(later) if later else {}
            for kname in names:
                merged = False
                if nxt is not None:
                    theirs = theirs_all.get(kname)
                    if theirs:
                        merged = not theirs <= mine_all[kname]  # sets what this one lacked
                    elif known.get(nxt) == (EnqueueKind.KERNEL, kname):
                        merged = True  # launched later without setting its arguments again
                if not merged and n not in self.found:
                    self.name_kernel(n, kname, "setkernelarg")
