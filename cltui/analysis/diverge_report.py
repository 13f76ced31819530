"""What ``cltui diverge`` found: per enqueue and per argument, and the report.

The statuses, :class:`ArgDiff`, :class:`EnqueueDiff` and :class:`DivergeReport` (with
``to_dict`` for ``cltui diverge --json``, docs/cli-json.md); :mod:`cltui.analysis.diverge`
fills them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from cltui.replay.engine.compare import DIFFERENT, EQUAL, CompareResult, Tolerance
from cltui.replay.engine.schema import CompareResult as CompareJSON
from cltui.replay.engine.schema import ToleranceSpec

# enqueue statuses
IDENTICAL = "identical"  # every compared Post dump is bit-identical
WITHIN_TOL = "within"  # differences, all within tolerance
DIVERGENT = "different"  # at least one argument differs beyond tolerance
UNCHECKED = "unchecked"  # aligned kernel enqueue, but no Post dump to compare on both sides
SEQUENCE = "sequence"  # the two sequences differ here (missing on one side / other kernel)
NODATA = "nodata"  # aligned, nothing to compare (not a kernel, or no dumps at all)

# argument statuses (besides compare's equal / within / different)
MISSING = "missing"  # only one side has a Post dump

# input statuses
INPUTS_IDENTICAL = "identical"
INPUTS_DIFFERENT = "different"
INPUTS_UNKNOWN = "unknown"



class ArgDiffJSON(TypedDict):
    index: int
    name: str | None
    type: str | None
    status: str
    hashed: bool
    summary: str
    note: str
    compare: CompareJSON | None  # replay.compare's result as JSON


class EnqueueDiffJSON(TypedDict):
    enqueue: int
    enqueue_b: int | None
    kernel: str | None
    function: str
    kernel_b: str | None
    function_b: str | None
    status: str
    only_b: bool
    inputs: str
    inputs_differ: list[int]
    starts_here: bool
    notes: list[str]
    args: list[ArgDiffJSON]


class FirstElement(TypedDict):
    index: int
    where: str
    a: object
    b: object
    max_ulp: float | None


class FirstDivergence(TypedDict):
    enqueue: int
    kernel: str | None
    arg: int | None
    element: FirstElement | None
    starts_here: bool


class DivergeReportJSON(TypedDict):
    """What ``cltui diverge --json`` prints (docs/cli-json.md)."""

    a: str
    b: str
    enqueues_a: int
    enqueues_b: int
    aligned: int
    sequence_identical: bool
    tolerance: ToleranceSpec
    counts: dict[str, int]
    first_divergent: int | None
    first: FirstDivergence | None
    divergent: list[int]
    enqueues: list[EnqueueDiffJSON]


@dataclass
class ArgDiff:
    index: int
    name: str | None
    type_name: str | None
    status: str  # EQUAL | WITHIN | DIFFERENT | MISSING
    result: CompareResult | None = None  # None for hash comparisons and missing dumps
    hashed: bool = False
    note: str = ""

    def summary(self) -> str:
        if self.status == MISSING:
            return self.note
        if self.hashed:
            return "hashes equal" if self.status == EQUAL else "hashes differ"
        assert self.result is not None
        return self.result.summary()

    def label(self) -> str:
        text = f"arg {self.index}"
        if self.name:
            text += f" {self.name}"
        if self.type_name:
            text += f" ({self.type_name})"
        return text

    def to_dict(self) -> ArgDiffJSON:
        return {
            "index": self.index,
            "name": self.name,
            "type": self.type_name,
            "status": self.status,
            "hashed": self.hashed,
            "summary": self.summary(),
            "note": self.note,
            "compare": self.result.to_dict() if self.result is not None else None,
        }


@dataclass
class EnqueueDiff:
    number: int  # enqueue number in capture A (B's number when only B has it)
    number_b: int | None  # the aligned enqueue number in capture B
    kernel: str | None
    function: str
    status: str
    args: list[ArgDiff] = field(default_factory=list)
    inputs: str = INPUTS_UNKNOWN
    inputs_differ: list[int] = field(default_factory=list)  # unchanged args whose Pre differs
    notes: list[str] = field(default_factory=list)
    kernel_b: str | None = None
    function_b: str | None = None
    only_b: bool = False  # capture A has no counterpart; ``number`` is B's number

    @property
    def divergent(self) -> bool:
        return self.status in (DIVERGENT, SEQUENCE)

    @property
    def first_arg(self) -> ArgDiff | None:
        """The first argument that differs beyond tolerance (or is missing on one side)."""
        for a in self.args:
            if a.status == DIFFERENT:
                return a
        for a in self.args:
            if a.status == MISSING:
                return a
        return None

    @property
    def starts_here(self) -> bool:
        """Outputs differ although every input the dumps show was identical."""
        return self.status == DIVERGENT and self.inputs == INPUTS_IDENTICAL

    def label(self) -> str:
        name = self.kernel if self.kernel is not None else self.function
        if self.status == SEQUENCE and (self.kernel_b, self.function_b) != (None, None):
            other = self.kernel_b if self.kernel_b is not None else self.function_b
            if self.number_b is None or other != name:
                return f"{name} / {other}"
        return name

    def to_dict(self) -> EnqueueDiffJSON:
        return {
            "enqueue": self.number,
            "enqueue_b": self.number_b,
            "kernel": self.kernel,
            "function": self.function,
            "kernel_b": self.kernel_b,
            "function_b": self.function_b,
            "status": self.status,
            "only_b": self.only_b,
            "inputs": self.inputs,
            "inputs_differ": list(self.inputs_differ),
            "starts_here": self.starts_here,
            "notes": list(self.notes),
            "args": [a.to_dict() for a in self.args],
        }


@dataclass
class DivergeReport:
    path_a: str
    path_b: str
    tolerance: Tolerance
    count_a: int
    count_b: int
    enqueues: list[EnqueueDiff]  # every enqueue compared or misaligned, in A's order
    aligned: int  # enqueues paired between the two captures
    sequence_identical: bool
    _by_number: dict[int, EnqueueDiff] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._by_number = {}
        for e in self.enqueues:
            if not e.only_b:
                self._by_number.setdefault(e.number, e)

    def status_of(self, number: int) -> str:
        """Status of enqueue ``number`` of capture A (``NODATA`` for enqueues not compared)."""
        hit = self._by_number.get(number)
        return hit.status if hit is not None else NODATA

    def get(self, number: int) -> EnqueueDiff | None:
        return self._by_number.get(number)

    @property
    def divergent(self) -> list[EnqueueDiff]:
        return [e for e in self.enqueues if e.divergent]

    @property
    def first_divergent(self) -> EnqueueDiff | None:
        for e in self.enqueues:
            if e.divergent:
                return e
        return None

    @property
    def first_data_divergent(self) -> EnqueueDiff | None:
        """The first aligned enqueue whose dumps differ beyond tolerance."""
        for e in self.enqueues:
            if e.status == DIVERGENT:
                return e
        return None

    @property
    def sequence_diffs(self) -> list[EnqueueDiff]:
        return [e for e in self.enqueues if e.status == SEQUENCE]

    def counts(self) -> dict[str, int]:
        out = {k: 0 for k in (IDENTICAL, WITHIN_TOL, DIVERGENT, UNCHECKED, SEQUENCE)}
        for e in self.enqueues:
            out[e.status] = out.get(e.status, 0) + 1
        return out

    def to_dict(self) -> DivergeReportJSON:
        first = self.first_divergent
        first_data = self.first_data_divergent
        fa = first_data.first_arg if first_data is not None else None
        element: FirstElement | None = None
        if fa is not None and fa.result is not None and fa.result.first is not None:
            f = fa.result.first
            element = {
                "index": f.index,
                "where": f.where(),
                "a": f.expected,
                "b": f.actual,
                "max_ulp": fa.result.max_ulp,
            }
        return {
            "a": self.path_a,
            "b": self.path_b,
            "enqueues_a": self.count_a,
            "enqueues_b": self.count_b,
            "aligned": self.aligned,
            "sequence_identical": self.sequence_identical,
            "tolerance": self.tolerance.to_dict(),
            "counts": self.counts(),
            "first_divergent": first.number if first is not None else None,
            "first": (
                {
                    "enqueue": first_data.number,
                    "kernel": first_data.kernel,
                    "arg": fa.index if fa is not None else None,
                    "element": element,
                    "starts_here": first_data.starts_here,
                }
                if first_data is not None
                else None
            ),
            "divergent": [e.number for e in self.divergent],
            "enqueues": [e.to_dict() for e in self.enqueues],
        }
