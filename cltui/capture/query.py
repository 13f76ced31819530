"""The list's filter language and sort orders over a capture's index columns.

A filter is words joined by "and"; each word is one test over the columns:

- ``sobel`` (a bare word): the kernel name holds it; ``kernel:sobel`` (``k:``) the same;
  ``re:REGEX`` or ``/REGEX/`` (alone, or after ``kernel:``) a regular expression;
- ``kind:read`` (``kind:kernel,write``): the enqueue kinds;
- ``time>1ms``, ``time<=20us`` (units ns, us, ms, s; none: ns): the device time (start to
  end); an enqueue without a device time never matches;
- ``#>100``, ``#<=200``, ``#=5``, ``#10-20``: the enqueue number;
- ``has:dumps`` (a pre or post dump), ``has:pre``, ``has:post``, ``has:replay``, ``has:time``;
- ``-word`` or ``!word``: the opposite of the word's test.

Every test is one vectorised pass over numpy columns: linear in the capture, no Python object
per enqueue.  Sort orders are stable (enqueues that tie keep their log order).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, TypedDict

import numpy as np
import numpy.typing as npt

from cltui.capture.model import CaptureError, EnqueueKind

if TYPE_CHECKING:
    from typing import Unpack

__all__ = [
    "FILTER_HELP",
    "SORT_KEYS",
    "Columns",
    "FindFilters",
    "Query",
    "find_positions",
    "parse_query",
    "sort_positions",
    "work_items_of",
]

FILTER_HELP = (
    "words, all must hold: sobel (kernel name holds it) · kernel:sobel · re:REGEX · "
    "kind:read,write · time>1ms (ns us ms s) · #>100 #10-20 · has:dumps has:pre has:post "
    "has:replay has:time · -word negates"
)

# the list's sort orders, in the order the sort key steps through them (label, descending)
SORT_KEYS: tuple[tuple[str, str, bool], ...] = (
    ("number", "#", False),
    ("time", "dev time", True),
    ("kernel", "kernel", False),
    ("kind", "kind", False),
    ("size", "global/local", True),  # global work items (largest first): Capture.work_items
)

_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_CMP = re.compile(r"^(time|#)(>=|<=|>|<|=)(.*)$")
_RANGE = re.compile(r"^#(\d+)-(\d+)$")
_TIME = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)\s*(ns|us|µs|ms|s)?$")
_HAS = ("dumps", "pre", "post", "replay", "time")


class Columns(Protocol):
    """The index columns a filter reads (:class:`~cltui.capture.capture.Capture` has them)."""

    numbers: npt.NDArray[np.int64]
    kinds: npt.NDArray[np.uint8]
    kernel_ids: npt.NDArray[np.int32]
    kernel_names: list[str]
    device_times: npt.NDArray[np.int64]
    has_pre: npt.NDArray[np.bool_]
    has_post: npt.NDArray[np.bool_]
    has_replay: npt.NDArray[np.bool_]


@dataclass
class Query:
    """A parsed filter: its words and the kernel-name patterns to highlight in matching rows."""

    text: str
    words: list[tuple[bool, str, object]] = field(default_factory=list)  # (negated, test, arg)
    highlight: list[re.Pattern[str]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.words

    def positions(self, cols: Columns) -> npt.NDArray[np.int64]:
        """The positions (log order) of the enqueues every word holds for."""
        mask = np.ones(len(cols.numbers), dtype=bool)
        for negated, test, arg in self.words:
            m = _mask(cols, test, arg)
            mask &= ~m if negated else m
        return np.flatnonzero(mask).astype(np.int64)


def _name_ids(names: Sequence[str], rx: re.Pattern[str]) -> npt.NDArray[np.int32]:
    return np.array([i for i, k in enumerate(names) if rx.search(k)], dtype=np.int32)


def _mask(cols: Columns, test: str, arg: object) -> npt.NDArray[np.bool_]:
    if test == "kernel":
        assert isinstance(arg, re.Pattern)
        return np.isin(cols.kernel_ids, _name_ids(cols.kernel_names, arg))
    if test == "kind":
        assert isinstance(arg, list)
        return np.isin(cols.kinds, np.array(arg, dtype=np.uint8))
    if test == "has":
        if arg == "dumps":
            return cols.has_pre | cols.has_post
        if arg == "time":
            known: npt.NDArray[np.bool_] = cols.device_times[:, 0] >= 0
            return known
        flags: npt.NDArray[np.bool_] = np.asarray(getattr(cols, f"has_{arg}"), dtype=bool)
        return flags
    assert isinstance(arg, tuple)
    op, value = arg
    if test == "range":
        inside: npt.NDArray[np.bool_] = (cols.numbers >= op) & (cols.numbers <= value)
        return inside
    if test == "time":
        timed: npt.NDArray[np.bool_] = cols.device_times[:, 0] >= 0
        return timed & _compare(cols.device_times[:, 2], op, value)
    return _compare(cols.numbers, op, value)


def _compare(column: npt.NDArray[np.int64], op: str, value: int) -> npt.NDArray[np.bool_]:
    out: npt.NDArray[np.bool_]
    if op == ">":
        out = column > value
    elif op == "<":
        out = column < value
    elif op == ">=":
        out = column >= value
    elif op == "<=":
        out = column <= value
    else:
        out = column == value
    return out


def _kernel_pattern(text: str) -> re.Pattern[str]:
    regex = None
    if text.startswith("re:"):
        regex = text[3:]
    elif len(text) >= 2 and text.startswith("/") and text.endswith("/"):
        regex = text[1:-1]
    if regex is None:
        return re.compile(re.escape(text))
    try:
        return re.compile(regex)
    except re.error as exc:
        raise CaptureError(f"bad regular expression {regex!r}: {exc}") from None


def _nanoseconds(text: str) -> int:
    m = _TIME.match(text.strip())
    if m is None:
        raise CaptureError(f"not a time: {text!r} (a number and ns, us, ms or s)")
    return round(float(m.group(1)) * _UNITS[m.group(2) or "ns"])


def _kinds(text: str) -> list[int]:
    out = []
    labels = {k.label: int(k) for k in EnqueueKind}
    for part in text.split(","):
        part = part.strip().lower()
        if part not in labels:
            raise CaptureError(f"no enqueue kind {part!r} (one of {', '.join(labels)})")
        out.append(labels[part])
    return out


def _word(word: str) -> tuple[str, object]:
    low = word.lower()
    if low.startswith(("kernel:", "k:")):
        return "kernel", _kernel_pattern(word.split(":", 1)[1])
    if low.startswith("kind:"):
        return "kind", _kinds(word[5:])
    if low.startswith("has:"):
        what = low[4:]
        if what not in _HAS:
            raise CaptureError(f"has:{what}? (has:{', has:'.join(_HAS)})")
        return "has", what
    m = _RANGE.match(word)
    if m is not None:
        return "range", (int(m.group(1)), int(m.group(2)))
    m = _CMP.match(low)
    if m is not None:
        subject, op, value = m.groups()
        if subject == "time":
            return "time", (op, _nanoseconds(value))
        try:
            return "number", (op, int(value.replace(",", "").replace("_", "")))
        except ValueError:
            raise CaptureError(f"not an enqueue number: {value!r}") from None
    return "kernel", _kernel_pattern(word)


def parse_query(text: str) -> Query:
    """Parse a filter (the module's language); a word that says nothing valid raises
    :class:`CaptureError` with one line naming it."""
    query = Query(text)
    for word in text.split():
        negated = word[0] in "-!" and len(word) > 1
        body = word[1:] if negated else word
        test, arg = _word(body)
        query.words.append((negated, test, arg))
        if test == "kernel" and not negated:
            assert isinstance(arg, re.Pattern)
            if arg.pattern:
                query.highlight.append(arg)
    return query


def work_items_of(cap: object) -> npt.NDArray[np.int64]:
    """``cap.work_items()`` (a module-level function: the reader process runs it)."""
    out: npt.NDArray[np.int64] = cap.work_items()  # type: ignore[attr-defined]
    return out


def sort_positions(
    cols: Columns, positions: npt.NDArray[np.int64], key: str, descending: bool,
    work_items: npt.NDArray[np.int64] | None = None,
) -> npt.NDArray[np.int64]:
    """``positions`` ordered by ``key`` (one of :data:`SORT_KEYS`), stable; enqueues without
    the key's value (no device time, not a kernel) come last in either direction.  Key
    ``size`` needs ``work_items`` (:func:`work_items_of`: one pass over the log, done once)."""
    if key == "number" and not descending:
        return positions
    values: npt.NDArray[np.int64]
    if key == "number":
        values = cols.numbers[positions]
        missing = np.zeros(len(positions), dtype=bool)
    elif key == "time":
        values = cols.device_times[positions, 2]
        missing = cols.device_times[positions, 0] < 0
    elif key == "kernel":
        names = cols.kernel_names
        rank = np.empty(len(names), dtype=np.int64)
        rank[np.argsort(np.array(names, dtype=object), kind="stable")] = np.arange(len(names))
        ids = cols.kernel_ids[positions]
        missing = ids < 0
        values = np.where(missing, 0, rank[np.maximum(ids, 0)]) if len(names) else \
            np.zeros(len(ids), dtype=np.int64)
    elif key == "kind":
        values = cols.kinds[positions].astype(np.int64)
        missing = np.zeros(len(positions), dtype=bool)
    elif key == "size":
        if work_items is None:
            raise ValueError("sorting by size needs the work items (work_items_of)")
        values = work_items[positions]
        missing = values < 0
    else:
        raise ValueError(f"no sort key {key!r}")
    signed = -values if descending else values
    order = np.lexsort((signed, missing))  # stable: ties keep the positions' order
    return positions[order]


class FindFilters(TypedDict, total=False):
    """What :meth:`~cltui.capture.capture.Capture.find` and :func:`find_positions` take beside
    the kernel name."""

    regex: bool  # the kernel name is a regular expression (else a substring)
    kinds: Sequence[EnqueueKind] | None  # only these kinds of enqueue
    first: int | None  # enqueue numbers from ...
    last: int | None  # ... to (inclusive)


def find_positions(
    numbers: npt.NDArray[np.int64],
    kinds_arr: npt.NDArray[np.uint8],
    kernel_ids: npt.NDArray[np.int32],
    kernel_names: Sequence[str],
    kernel: str | None = None,
    **filters: Unpack[FindFilters],
) -> npt.NDArray[np.int64]:
    """Positions (into the index arrays) matching a kernel-name substring or regex, kinds
    and an enqueue-number range: one vectorised pass over the arrays."""
    regex, kinds = filters.get("regex", False), filters.get("kinds")
    first, last = filters.get("first"), filters.get("last")
    mask = np.ones(len(numbers), dtype=bool)
    if kernel:
        if regex:
            try:
                rx = re.compile(kernel)
            except re.error as e:
                raise CaptureError(f"bad regular expression {kernel!r}: {e}") from None
            ids = [i for i, k in enumerate(kernel_names) if rx.search(k)]
        else:
            ids = [i for i, k in enumerate(kernel_names) if kernel in k]
        mask &= np.isin(kernel_ids, np.array(ids, dtype=np.int32))
    if kinds is not None:
        mask &= np.isin(kinds_arr, np.array([int(k) for k in kinds], dtype=np.uint8))
    if first is not None:
        mask &= numbers >= first
    if last is not None:
        mask &= numbers <= last
    return np.flatnonzero(mask).astype(np.int64)
