"""Building a :class:`~cltui.capture.log.index.LogIndex`: finding the logs, merging the scanned
pieces in file order, the memory-object builder, duplicated lines, the structure checks."""

from __future__ import annotations

import bisect
import mmap
import re
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from cltui.capture.confine import is_file, leaves, outside_message
from cltui.capture.log.creations import (
    _Builder,
)
from cltui.capture.log.devtimes import (
    _DeviceTimes,
)
from cltui.capture.log.grammar import (
    _END_BUILD_LOG,
    _dec,
    kind_of,
    parse_ptr,
    short_kernel_name,
)
from cltui.capture.log.index import (
    LogIndex,
    take_rows,
)
from cltui.capture.log.parallel import (
    _pieces,
)
from cltui.capture.log.scan import (
    _UNKNOWN,
    _Piece,
)
from cltui.capture.model import (
    CaptureError,
    Problem,
)
from cltui.capture.safeopen import open_regular
from cltui.progress import CancelToken, ProgressFn

_S = TypeVar("_S", bound=np.generic)


def find_logs(root: Path, problems: list[Problem] | None = None) -> list[Path]:
    """``clintercept_log.txt`` first, then ``clintercept_log-N.txt`` variants in N order.

    A log that is a link leading outside ``root`` is left out (a problem in ``problems``)."""
    out: list[Path] = []
    candidates: list[tuple[int, Path]] = [(-1, root / "clintercept_log.txt")]
    for p in root.glob("clintercept_log-*.txt"):
        m = re.match(r"clintercept_log-(\d+)\.txt$", p.name)
        if m:
            candidates.append((int(m.group(1)), p))
    for _, p in sorted(candidates):
        target = leaves(root, p) if p.is_symlink() else None
        if target is not None:
            if problems is not None:
                problems.append(Problem(outside_message(target), p.name))
        else:
            ok, why = is_file(p)
            if ok:
                out.append(p)
            elif why is not None and problems is not None:
                problems.append(Problem(why, p.name))
    return out


def build_index(
    path: Path,
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
) -> LogIndex:
    """Scan one log file and build its :class:`LogIndex` (raises only CaptureError)."""
    try:
        f = open_regular(path, follow=True)
    except OSError as e:
        raise CaptureError(f"cannot read {path}: {e.strerror or e}") from None
    with f:
        try:
            size = f.seek(0, 2)
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else None
        except (OSError, ValueError) as e:
            raise CaptureError(f"cannot map {path}: {e}") from None
    try:
        return _scan(path, mm, size, progress, cancel)
    except BaseException:
        if mm is not None:
            mm.close()
        raise


_Rare = tuple[int, int, str, str, int]  # (offset, type, fn/tag, rest, counter)


@dataclass
class _Merged:
    """The scanned pieces of a log, merged in file order (rows: one per enqueue line)."""

    numbers: array[int] = field(default_factory=lambda: array("q"))
    offsets: array[int] = field(default_factory=lambda: array("q"))
    fids: array[int] = field(default_factory=lambda: array("H"))
    kids: array[int] = field(default_factory=lambda: array("i"))
    dev: _DeviceTimes = field(default_factory=_DeviceTimes)
    functions: list[str] = field(default_factory=list)
    fkind: list[int] = field(default_factory=list)  # the EnqueueKind of each function
    fmap: dict[bytes, int] = field(default_factory=dict)
    knames: list[str] = field(default_factory=list)
    kmap: dict[bytes, int] = field(default_factory=dict)
    rare: list[_Rare] = field(default_factory=list)
    build_starts: list[int] = field(default_factory=list)
    missing_counter: int = 0
    first_nul: int = -1
    by_order: list[int] = field(default_factory=list)  # rows numbered by order (no counter)


def _scan(
    path: Path,
    mm: mmap.mmap | None,
    size: int,
    progress: ProgressFn | None,
    cancel: CancelToken | None,
) -> LogIndex:
    m = _Merged()
    for p in _pieces(path, mm, size, progress, cancel) if mm is not None else ():
        _add_piece(m, p)
        del p
    skip_spans = _build_log_spans(mm, size, m.build_starts)
    m.build_starts.clear()
    idx = _new_index(path, size, m)
    idx._mm = mm
    dev, rare = m.dev, m.rare
    _number_creators(idx, rare)
    n = len(idx.numbers)
    if skip_spans and n:
        n = _drop_build_log_rows(idx, skip_spans, dev)
    if n > 1:
        n = _drop_duplicates(idx, rare, skip_spans, m.by_order)
    if n:
        dev.finish(idx, mm, size)
    del dev
    if m.missing_counter and n:
        idx.problems.append(
            Problem(
                f"{m.missing_counter} enqueue lines have no EnqueueCounter (numbered by order)",
                path.name,
            )
        )
    _replay_rare(idx, rare, skip_spans)
    _check_structure(idx, mm, size, m.first_nul)
    return idx


def _add_piece(m: _Merged, p: _Piece) -> None:
    """Append one scanned piece (the next in file order): its local function and kernel ids
    mapped to the log's, its rows numbered by order after the rows before it."""
    if m.first_nul < 0:
        m.first_nul = p.first_nul
    if p.functions:
        remap = np.array([_global_id(m.fmap, m.functions, fb, m.fkind) for fb in p.functions])
        m.fids.frombytes(remap.astype(np.uint16)[np.frombuffer(p.fids, np.uint16)].tobytes())
    if p.knames:
        kre = np.array([_kernel_id(m.kmap, m.knames, kb) for kb in p.knames] + [-1], np.int32)
        m.kids.frombytes(kre[np.frombuffer(p.kids, np.int32)].tobytes())  # -1 -> -1
    else:
        m.kids.extend(p.kids)
    numbers = m.numbers
    if p.fix:
        _number_by_order(p.numbers, p.fix, numbers[-1] if numbers else -1)
        base = len(numbers)
        m.by_order.extend(int(r) + base for r in p.fix)
    numbers.extend(p.numbers)
    m.offsets.extend(p.offsets)
    m.missing_counter += p.missing
    m.dev.add_rows(p.numbers)
    if p.dt:
        m.dev.add_quads(numbers, p.dt)
    m.rare.extend(p.rare)
    m.build_starts.extend(p.build_starts)


def _build_log_spans(mm: mmap.mmap | None, size: int, starts: list[int]) -> list[tuple[int, int]]:
    """The ``[start, end)`` of each build log: from its start tag to the first end tag after
    it (or the end of the file).  One search serves every start before the end it found,
    so the file is searched at most once in all (not to its end from each start tag)."""
    skip_spans: list[tuple[int, int]] = []
    e = -2  # the end found by the last search (-1: none after it), -2: no search yet
    for a in sorted(starts):
        if mm is not None and (e == -2 or 0 <= e < a):
            e = mm.find(_END_BUILD_LOG, a, size)
        skip_spans.append((a, size if e < 0 else e))
    return skip_spans


def _new_index(path: Path, size: int, m: _Merged) -> LogIndex:
    """The index of the merged rows (numpy views of the merged arrays, no copy)."""
    fk = np.array(m.fkind, dtype=np.uint8)
    return LogIndex(
        path=path,
        size=size,
        numbers=_arr(m.numbers, np.int64) if m.numbers else _empty(np.int64),
        offsets=_arr(m.offsets, np.int64) if m.offsets else _empty(np.int64),
        kinds=fk[_arr(m.fids, np.uint16)] if m.fids else _empty(np.uint8),
        function_ids=_arr(m.fids, np.uint16) if m.fids else _empty(np.uint16),
        functions=m.functions,
        kernel_ids=_arr(m.kids, np.int32) if m.kids else _empty(np.int32),
        kernel_names=m.knames,
        device_times=m.dev.table(),
    )


def _number_creators(idx: LogIndex, rare: list[_Rare]) -> None:
    """Creators logged without an EnqueueCounter get the number the next enqueue would get."""
    for i, r in enumerate(rare):
        if r[4] == _UNKNOWN:
            k = int(np.searchsorted(idx.offsets, r[0]))
            rare[i] = (r[0], r[1], r[2], r[3], int(idx.numbers[k - 1]) + 1 if k else 0)


def _drop_build_log_rows(
    idx: LogIndex, skip_spans: list[tuple[int, int]], dev: _DeviceTimes
) -> int:
    """Drop the enqueue-like lines inside build logs: they are not enqueues (offsets are in
    file order).  Returns the row count."""
    n = len(idx.numbers)
    keep: npt.NDArray[np.bool_] | None = None
    for a, e in skip_spans:
        i0, i1 = np.searchsorted(idx.offsets, [a, e])
        if i1 > i0:
            if keep is None:
                keep = np.ones(n, dtype=bool)
            keep[i0:i1] = False
    if keep is None:
        return n
    if (idx.device_times[~keep, 0] >= 0).any():
        dev.early = False  # device times of non-enqueues: count them as the log does
    take_rows(idx, keep)
    return len(idx.numbers)


def _replay_rare(idx: LogIndex, rare: list[_Rare], skip_spans: list[tuple[int, int]]) -> None:
    """The rare lines (creations, releases, side lines), in file order, into the handle
    tables (one call per rare line, none per log line)."""
    rare.sort(key=lambda r: r[0])
    b = _Builder(idx)
    for off, typ, fn, rest, counter in rare:
        if skip_spans and _inside(skip_spans, off):
            continue
        if typ == 0:
            b.entry(off, fn, rest, counter)
        elif typ == 1:
            b.exit(off, fn, rest)
        elif typ == 2:
            b.side(off, fn, rest)
        else:
            h = parse_ptr(rest)
            if h is not None:
                b.close(fn, h, off)


def _drop_duplicates(
    idx: LogIndex,
    rare: list[_Rare],
    skip_spans: list[tuple[int, int]],
    by_order: list[int],
) -> int:
    """Rows whose EnqueueCounter an earlier row of the same session (between two banners)
    already has: a duplicated log line.  The first row of each number is kept, the others
    dropped, and a problem says which numbers were duplicated.  Returns the row count.
    (The usual log is strictly increasing: one vectorised comparison and nothing else.)"""
    nums = idx.numbers
    if bool(np.all(nums[1:] > nums[:-1])):
        return len(nums)
    banners = sorted(
        r[0]
        for r in rare
        if r[1] == 2
        and r[2].startswith("-=-=-=")
        and not (skip_spans and _inside(skip_spans, r[0]))
    )
    session = np.searchsorted(np.array(banners, dtype=np.int64), idx.offsets, side="right")
    order = np.lexsort((nums, session))  # stable: file order among equal (session, number)
    sn, ss = nums[order], session[order]
    dup_sorted = np.zeros(len(nums), dtype=bool)
    dup_sorted[1:] = (sn[1:] == sn[:-1]) & (ss[1:] == ss[:-1])
    dup = np.zeros(len(nums), dtype=bool)
    dup[order] = dup_sorted
    if by_order:
        dup[np.array(by_order, dtype=np.int64)] = False  # numbered by order: not a counter
    if not dup.any():
        return len(nums)
    _keep_first_intact(idx, dup, dup_sorted, order, set(by_order))
    _report_duplicates(idx, dup)
    take_rows(idx, ~dup)
    return len(idx.numbers)


def _keep_first_intact(
    idx: LogIndex,
    dup: npt.NDArray[np.bool_],
    dup_sorted: npt.NDArray[np.bool_],
    order: npt.NDArray[np.intp],
    ordered: set[int],
) -> None:
    """In each group of rows with one number (``order``: rows sorted by session and
    number, ``dup_sorted``: a row repeats the one before it), mark all but the first
    intact line in ``dup``.  A line that a NUL run joined to the tail of a later line
    carries that line's counter (it is the copy, not the enqueue); a device time went to
    the last line of a number: it moves to the line kept."""
    mm = idx._mm
    dts = idx.device_times
    first = np.flatnonzero(dup_sorted[1:] & ~dup_sorted[:-1])  # group starts (sorted)
    for g in first.tolist():
        rows = [int(order[g])]
        k = g + 1
        while k < len(order) and dup_sorted[k]:
            rows.append(int(order[k]))
            k += 1
        rows = [r for r in rows if r not in ordered]
        if len(rows) < 2:
            continue
        kept = rows[0]
        if mm is not None:
            intact = [r for r in rows if not _has_nul(mm, int(idx.offsets[r]), idx.size)]
            if intact:
                kept = intact[0]
        dup[rows] = True
        dup[kept] = False
        timed = [r for r in rows if dts[r, 0] >= 0]
        if timed and dts[kept, 0] < 0:
            dts[kept] = dts[timed[-1]]


def _report_duplicates(idx: LogIndex, dup: npt.NDArray[np.bool_]) -> None:
    numbers = sorted({int(x) for x in idx.numbers[dup]})
    shown = ", ".join(str(x) for x in numbers[:10])
    more = f" and {len(numbers) - 10} more" if len(numbers) > 10 else ""
    lines = int(dup.sum())
    idx.problems.append(
        Problem(
            f"EnqueueCounter {shown}{more} appear{'s' if len(numbers) == 1 else ''} on more than "
            f"one enqueue line of one session ({lines} duplicated line{'s' if lines > 1 else ''}, "
            "probably repeated in the log): the first intact line of each is kept",
            idx.path.name,
        )
    )


def _has_nul(mm: mmap.mmap, off: int, size: int) -> bool:
    """Whether the line starting at ``off`` holds a NUL byte."""
    e = mm.find(b"\n", off)
    return mm.find(b"\x00", off, size if e < 0 else e) >= 0


def _global_id(fmap: dict[bytes, int], functions: list[str], fb: bytes, fkind: list[int]) -> int:
    fid = fmap.get(fb)
    if fid is None:
        fid = fmap[fb] = len(functions)
        fn = _dec(fb)
        functions.append(fn)
        fkind.append(int(kind_of(fn)))
    return fid


def _kernel_id(kmap: dict[bytes, int], knames: list[str], kb: bytes) -> int:
    kid = kmap.get(kb)
    if kid is None:
        kid = kmap[kb] = len(knames)
        knames.append(short_kernel_name(_dec(kb)))
    return kid


def _number_by_order(numbers: array[int], fix: array[int], prev: int) -> None:
    """Rows of a piece without a usable EnqueueCounter get the previous row's number + 1
    (``prev``: the number of the row before the piece, -1 if none)."""
    nums = np.frombuffer(numbers, dtype=np.int64)
    rows = np.frombuffer(fix, dtype=np.int64)
    good = np.ones(len(nums), dtype=bool)
    good[rows] = False
    last = np.where(good, np.arange(len(nums)), -1)
    np.maximum.accumulate(last, out=last)
    lg = last[rows]
    nums[rows] = np.where(lg >= 0, nums[np.maximum(lg, 0)], prev) + (rows - lg)
    del nums, rows


def _inside(spans: list[tuple[int, int]], off: int) -> bool:
    i = bisect.bisect_right(spans, (off, 1 << 62)) - 1
    return i >= 0 and spans[i][0] <= off < spans[i][1]


def _empty(dt: type[_S]) -> npt.NDArray[_S]:
    return np.zeros(0, dtype=dt)


def _arr(a: array[int], dt: type[_S]) -> npt.NDArray[_S]:
    """A numpy view of an ``array.array`` (no copy: the array stays alive under the view)."""
    return np.frombuffer(a, dtype=dt)


def _check_structure(idx: LogIndex, mm: mmap.mmap | None, size: int, nul: int) -> None:
    name = idx.path.name
    if mm is None or size == 0:
        idx.problems.append(Problem("the call log is empty", name))
        return
    head = mm[: min(size, 4096)]
    stripped = head.lstrip(b"\x00 \n")
    if not stripped.startswith(b"-=-=-=-="):
        idx.leading_fragment = True
        idx.problems.append(
            Problem(
                "the log does not start with a CLIntercept banner (start of the log lost)", name
            )
        )
    if nul >= 0:
        idx.problems.append(
            Problem(
                f"the log contains NUL bytes (first at byte {nul}): a child process "
                "probably truncated it; NULs are ignored",
                name,
            )
        )
    if len(idx.sessions) > 1:
        idx.problems.append(
            Problem(
                f"the log holds {len(idx.sessions)} sessions (banners); enqueue numbers may repeat",
                name,
            )
        )
    if idx.shutdowns < max(1, len(idx.sessions)):
        idx.problems.append(
            Problem(
                "the log has no 'shutting down' footer: the application did not exit "
                "normally or the log is truncated",
                name,
            )
        )
    if not idx.controls and not idx.leading_fragment:
        idx.problems.append(Problem("the log header lists no controls", name))
