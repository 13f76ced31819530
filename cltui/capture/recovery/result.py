"""What recovery found: :class:`RecoveredEnqueue` (one lost enqueue rebuilt from files) and
:class:`Recovery` (what the log lost, what came back, what stays lost), with its one-line
text and its ``info --json`` object."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from cltui.capture.model import DeviceTime, EnqueueKind, Problem
from cltui.capture.recovery.runs import count, in_runs, range_text, ranges_of, runs_total

__all__ = ["SOURCE_TEXT", "RecoveredEnqueue", "Recovery", "RecoveryJSON", "sources_text"]

# where a recovered enqueue's facts come from (JSON keys), and how to say it
SOURCE_TEXT: dict[str, str] = {
    "memdump": "memDump Pre/Post dumps",
    "replay": "a Replay/ folder",
    "setkernelarg": "SetKernelArg dumps",
    "device_time": "a Device Time line of the log",
    "mapunmap": "a map/unmap dump",
}

# the ``recovery`` object of ``cltui info --json`` (docs/cli-json.md); "from" is a keyword
RecoveryJSON = TypedDict(
    "RecoveryJSON",
    {
        "line": str,
        "log": str,
        "why": str,
        "lost": list[list[int]],
        "lost_count": int,
        "recovered": int,
        "recovered_ranges": list[list[int]],
        "recovered_kinds": dict[str, int],
        "from": dict[str, int],
        "with_dumps": list[list[int]],
        "replayable": list[list[int]],
        "replayable_count": int,
        "not_recovered": list[list[int]],
        "not_recovered_count": int,
        "not_recovered_by_report": dict[str, int] | None,
        "report_total": int | None,
        "device": str | None,
    },
)


@dataclass(frozen=True, slots=True)
class RecoveredEnqueue:
    """One enqueue the log lost, rebuilt from the files that name it."""

    number: int
    kind: EnqueueKind
    function: str  # "clEnqueueNDRangeKernel", "clEnqueueReadBuffer", ...
    kernel: str | None  # short kernel name (kernels only)
    sources: tuple[str, ...]  # keys of SOURCE_TEXT, most reliable first
    global_size: tuple[int, ...] | None = None  # Replay/worksizes.txt
    local_size: tuple[int, ...] | None = None
    global_offset: tuple[int, ...] | None = None
    device_time: DeviceTime | None = None
    replayable: bool = False  # a Replay folder with work sizes and a program to build

    @property
    def sources_text(self) -> str:
        return sources_text(self.sources)


def sources_text(sources: Sequence[str]) -> str:
    """``("memdump", "setkernelarg")`` -> ``memDump Pre/Post dumps and SetKernelArg dumps``."""
    words = [SOURCE_TEXT.get(s, s) for s in sources]
    if len(words) <= 1:
        return "".join(words) or "dump files"
    return ", ".join(words[:-1]) + " and " + words[-1]


def _lists(runs: Sequence[tuple[int, int]]) -> list[list[int]]:
    return [list(r) for r in runs]


@dataclass
class Recovery:
    """What the log lost and what the other files gave back."""

    state: str  # the log: "damaged" | "missing" | "no enqueues" | "intact" (stale files?)
    why: str  # one clause: how the log lost them
    expected: int  # enqueues the capture made: the report's total, else highest number + 1
    report_total: int | None
    lost: list[tuple[int, int]]  # numbers not in the log, as runs
    enqueues: dict[int, RecoveredEnqueue]  # the recovered ones, by number
    unknown: list[tuple[int, int]]  # lost numbers that no file names, as runs
    unknown_by_report: dict[str, int] | None  # function -> count, when the report's counts add up
    device: str | None  # the one device the report (or the log) names
    problems: list[Problem] = field(default_factory=list)

    @property
    def lost_count(self) -> int:
        return runs_total(self.lost)

    @property
    def unknown_count(self) -> int:
        return runs_total(self.unknown)

    def is_lost(self, number: int) -> bool:
        return in_runs(self.lost, number)

    def is_unknown(self, number: int) -> bool:
        """Lost, and no file names it."""
        return in_runs(self.unknown, number)

    def unknown_runs(self, first: int, last: int) -> list[tuple[int, int]]:
        """The runs of lost numbers no file names, clipped to ``first..last``."""
        out: list[tuple[int, int]] = []
        i = max(0, bisect.bisect_right(self.unknown, (first, 1 << 62)) - 1)
        while i < len(self.unknown) and self.unknown[i][0] <= last:
            a, b = max(self.unknown[i][0], first), min(self.unknown[i][1], last)
            if a <= b:
                out.append((a, b))
            i += 1
        return out

    def unknown_between(self, first: int, last: int, limit: int = 1000) -> list[int]:
        """The lost numbers no file names in ``first..last`` (at most ``limit`` of them)."""
        out: list[int] = []
        i = max(0, bisect.bisect_right(self.unknown, (first, 1 << 62)) - 1)
        while i < len(self.unknown) and len(out) < limit:
            a, b = self.unknown[i]
            if a > last:
                break
            n = max(a, first)
            while n <= min(b, last) and len(out) < limit:
                out.append(n)
                n += 1
            i += 1
        return out

    @property
    def replayable(self) -> list[int]:
        return sorted(n for n, r in self.enqueues.items() if r.replayable)

    def with_source(self, source: str) -> list[int]:
        return sorted(n for n, r in self.enqueues.items() if source in r.sources)

    def kinds(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.enqueues.values():
            out[r.kind.label] = out.get(r.kind.label, 0) + 1
        return dict(sorted(out.items()))

    def line(self) -> str:
        """One line: what is lost, what was recovered and from what, what stays lost."""
        lost = range_text(self.lost)
        word = "enqueue" if self.lost_count == 1 else "enqueues"
        parts = [f"{word} {lost} lost with the log ({self.why})"]
        if self.enqueues:
            parts.append("recovered from the files that survived: " + self._recovered_text())
        if self.unknown:
            parts.append(self._unknown_text())
        if self.report_total is not None:
            parts.append(f"the report counts {self.report_total}")
        return "; ".join(parts)

    def _recovered_text(self) -> str:
        """``92 kernels (35 with Pre/Post dumps, 0-39; ...), 3 MapBuffer``."""
        kernels = sorted(n for n, r in self.enqueues.items() if r.kind is EnqueueKind.KERNEL)
        others = sorted(n for n, r in self.enqueues.items() if r.kind is not EnqueueKind.KERNEL)
        what: list[str] = []
        if kernels:
            what.append(count(len(kernels), "kernel") + self._kernel_detail(kernels))
        if others:
            by_fn: dict[str, int] = {}
            for n in others:
                fn = self.enqueues[n].function.removeprefix("clEnqueue")
                by_fn[fn] = by_fn.get(fn, 0) + 1
            what.append(", ".join(f"{c} {fn}" for fn, c in sorted(by_fn.items())))
        return ", ".join(what)

    def _kernel_detail(self, kernels: list[int]) -> str:
        """`` (35 with Pre/Post dumps, 0-39; 23 replayable ...; 57 named only by ...)``."""
        detail: list[str] = []
        dumped = [n for n in kernels if "memdump" in self.enqueues[n].sources]
        if dumped:
            detail.append(f"{len(dumped)} with Pre/Post dumps, {dumped[0]}-{dumped[-1]}")
        replayable = self.replayable
        if replayable:
            detail.append(
                f"{len(replayable)} replayable from Replay/ folders, "
                f"{range_text(ranges_of(replayable), 6)}"
            )
        rest = len(kernels) - len(set(dumped) | set(replayable))
        if rest and (dumped or replayable):
            detail.append(f"{rest} named only by SetKernelArg dumps or Device Time lines")
        return f" ({'; '.join(detail)})" if detail else ""

    def _unknown_text(self) -> str:
        """``9 named by no file (2,8,...; by the report's counts: 3 CopyBuffer, ...)``."""
        text = f"{self.unknown_count} named by no file ({range_text(self.unknown, 10)}"
        if self.unknown_by_report:
            counts = ", ".join(
                f"{c} {fn.removeprefix('clEnqueue')}"
                for fn, c in sorted(self.unknown_by_report.items(), key=lambda t: (-t[1], t[0]))
            )
            text += f"; by the report's counts: {counts}"
        return text + ")"

    def to_json(self) -> RecoveryJSON:
        """The ``recovery`` object of ``cltui info --json`` (docs/cli-json.md)."""
        rec = self.enqueues
        return {
            "line": self.line(),
            "log": self.state,
            "why": self.why,
            "lost": _lists(self.lost),
            "lost_count": self.lost_count,
            "recovered": len(rec),
            "recovered_ranges": _lists(ranges_of(rec)),
            "recovered_kinds": self.kinds(),
            "from": {s: len(self.with_source(s)) for s in SOURCE_TEXT},
            "with_dumps": _lists(ranges_of(self.with_source("memdump"))),
            "replayable": _lists(ranges_of(self.replayable)),
            "replayable_count": len(self.replayable),
            "not_recovered": _lists(self.unknown),
            "not_recovered_count": self.unknown_count,
            "not_recovered_by_report": self.unknown_by_report,
            "report_total": self.report_total,
            "device": self.device,
        }
