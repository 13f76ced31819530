"""The scan of a log: line-aligned pieces, each read in a few passes (a regex for enqueue
lines, ``bytes.find`` for rare markers, one numpy pass over the newlines for side and Device
Time lines), by forked workers for large logs (see :mod:`cltui.capture.log`)."""

from __future__ import annotations

import contextlib
import itertools
import mmap
import os
import re
from array import array
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cltui.capture.log.grammar import (
    _COUNTER_TAG,
    _CREATORS,
    _DEVTIME_ANY_RE,
    _DEVTIME_RE,
    _ENQ_RE,
    _EXIT_LINE_RE,
    _RELEASE_RE,
    _SIDE_TAG_LIST,
    _SIDE_TAGS,
    _dec,
    strip_counter,
)
from cltui.capture.model import (
    CaptureError,
)

_UNKNOWN = -(1 << 62)  # a creator's counter that the merge fills in (no EnqueueCounter)
# creators' exit lines: "<fn>: returned <ptr>" (the colon makes the search ~25% faster)
_RETURNED = b": returned "
# a last release (or a first retain): one literal for every kind, so one pass over the piece
_REF1 = b": [ ref count = 1 ] "
_SIDE_AT_RE = re.compile(_SIDE_TAGS)
_I64_MAX = np.iinfo(np.int64).max
_MADVISE = hasattr(mmap.mmap, "madvise") and hasattr(mmap, "MADV_DONTNEED")


@dataclass(slots=True)
class _Piece:
    """What one piece of the log holds (offsets are file offsets)."""

    start: int
    end: int
    numbers: array[int] = field(default_factory=lambda: array("q"))
    offsets: array[int] = field(default_factory=lambda: array("q"))
    fids: array[int] = field(default_factory=lambda: array("H"))
    kids: array[int] = field(default_factory=lambda: array("i"))
    fix: array[int] = field(default_factory=lambda: array("q"))  # local rows numbered by order
    missing: int = 0  # rows of ``fix`` that had no EnqueueCounter at all
    functions: list[bytes] = field(default_factory=list)
    knames: list[bytes] = field(default_factory=list)
    dt: bytes = b""  # int64 (number, q, s, d) quadruples
    rare: list[tuple[int, int, str, str, int]] = field(default_factory=list)
    build_starts: list[int] = field(default_factory=list)  # "Start of Build Log" tags
    first_nul: int = -1


def _line_aligned_cuts(path: Path, size: int, step: int) -> list[tuple[int, int]]:
    """``[start, end)`` pieces of about ``step`` bytes, each ending just after a newline
    (or, inside a line longer than ``step``, where the step ends).

    The newlines are looked for with ``pread``, not through the map: a page touched through
    a map counts in this process's RSS, and with large page-cache folios each touch maps
    up to megabytes (128 cuts of a 2 GB log put 75 MB of it in the RSS of the process)."""
    cuts: list[tuple[int, int]] = []
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        raise CaptureError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        pos = 0
        while pos < size:
            end = min(size, pos + step)
            if end < size:
                nl = _newline_before(fd, pos, end)
                if nl > pos:
                    end = nl + 1
                # else: a line longer than a piece is cut where the piece ends (a log of
                # one line still goes to every worker); only a match that crosses the cut
                # in such a line is lost
            cuts.append((pos, end))
            pos = end
    finally:
        os.close(fd)
    return cuts


_CUT_WINDOW = 64 * 1024


def _newline_before(fd: int, lo: int, hi: int) -> int:
    """The offset of the last newline in ``[lo, hi)``, or -1."""
    while hi > lo:
        a = max(lo, hi - _CUT_WINDOW)
        k = os.pread(fd, hi - a, a).rfind(b"\n")
        if k >= 0:
            return a + k
        hi = a
    return -1


def _line_candidates(mm: mmap.mmap, pos: int, end: int) -> tuple[list[int], list[int]]:
    """Starts of the lines in ``[pos, end)`` that may carry a side tag (not ``>>>>``/``<<<<``/
    ``De``) and of the ``De`` lines (device times): one vectorised pass over the newlines
    instead of a regex scan per kind of line."""
    lo = pos - 1 if pos > 0 else 0  # a side tag needs the newline before it
    a = np.frombuffer(mm, dtype=np.uint8, count=end - lo, offset=lo)
    try:
        nl = np.flatnonzero(a[:-1] == 10)
        first = a[nl + 1]
        keep = (first != 62) & (first != 60)
        dee = np.flatnonzero(keep & (first == 68))
        devs: list[int] = []
        if len(dee):
            nxt = nl[dee] + 2
            inside = nxt < len(a)
            dev = np.zeros(len(dee), dtype=bool)
            dev[inside] = a[nxt[inside]] == 101  # "De": Device Time
            keep[dee[dev]] = False
            devs = (nl[dee[dev]] + (lo + 1)).tolist()
        side: list[int] = (nl[keep] + (lo + 1)).tolist()
    finally:
        del a
    return side, devs


_TAG_FIRST = np.zeros(256, dtype=bool)  # the first bytes of the side tags
_TAG_FIRST[[t[0] for t in _SIDE_TAG_LIST]] = True


_NUL_WINDOW = 1 << 20


def _nul_run_ends(mm: mmap.mmap, lo: int, end: int) -> list[int]:
    """The offsets just after each NUL run in ``[lo, end)`` whose next byte may start a
    side tag (a regex ``\\x00+<tag>`` retries from every NUL of a run: quadratic in its
    length).  Vectorised over windows that hold a NUL (``lo`` is one); ``bytes.find``
    jumps from one such window to the next."""
    out: list[int] = []
    at = lo
    while 0 <= at < end - 1:
        hi = min(end, at + _NUL_WINDOW)
        a = np.frombuffer(mm, dtype=np.uint8, count=hi - at, offset=at)
        try:
            z = a == 0
            e = np.flatnonzero(z[:-1] > z[1:]) + 1  # a NUL, then not a NUL
            e = e[_TAG_FIRST[a[e]]]
            out.extend((e + at).tolist())
        finally:
            del a
        # the pair (hi - 1, hi) is the next window's first
        at = mm.find(b"\x00", hi - 1, end) if hi < end else -1
    return out


def _heads(mm: mmap.mmap, size: int) -> tuple[int, int]:
    """The offsets of the log's first byte that is not a NUL and of its first that is
    neither a NUL nor a space (``size`` if none): what a line that starts more than a
    window back (so, for the scan, at offset 0) begins with once stripped.  One pass over
    a leading NUL run, in the parent, instead of a copy from offset 0 per long line."""
    out = []
    at = 0
    for blank in (False, True):
        while at < size:
            n = min(size - at, _NUL_WINDOW)
            a = np.frombuffer(mm, dtype=np.uint8, count=n, offset=at)
            try:
                skip = (a == 0) | (a == 32) if blank else a == 0
                k = int(np.argmin(skip))
                if not skip[k]:
                    at += k
                    break
            finally:
                del a
            at += n
        out.append(at)
    return out[0], out[1]


def _scan_piece(
    mm: mmap.mmap, pos: int, end: int, size: int, heads: tuple[int, int] | None = None
) -> _Piece:
    """What ``[pos, end)`` of the log holds: side lines, enqueue lines, creators' exit
    lines and last releases, Device Time lines (``heads``: :func:`_heads` of the log)."""
    if heads is None:
        heads = _heads(mm, size)
    p = _Piece(pos, end)
    nul = mm.find(b"\x00", pos, end)
    p.first_nul = nul
    if pos == 0:
        head = mm[: min(size, 64)].lstrip(b"\x00")
        if head.startswith(b"-=-=-=-="):
            p.rare.append((0, 2, "-=-=-=-=", "", 0))
    dev_at = _side_lines(mm, p, nul)
    _enqueue_lines(mm, p, heads[1])
    _exits_and_releases(mm, p, heads[0])
    p.dt = _device_quads(mm, pos, end, nul, dev_at)
    if _MADVISE:
        _drop_pages(mm, pos, end)
    return p


def _side_lines(mm: mmap.mmap, p: _Piece, nul: int) -> list[int]:
    """The side lines of piece ``p`` (banner, controls, program dumps...: a match per
    candidate line, and after each NUL run when the piece holds a NUL at ``nul``) into its
    rare lines and build-log starts; returns the starts of its Device Time lines."""
    pos, end = p.start, p.end
    side: list[re.Match[bytes]] = []
    match_side = _SIDE_AT_RE.match
    side_at, dev_at = _line_candidates(mm, pos, end)
    for s in side_at:
        m = match_side(mm, s, end)
        if m is not None:
            side.append(m)
    if nul >= 0:
        done = -1  # a match takes the rest of its line: later tags in it are its text
        for z in _nul_run_ends(mm, nul, end):
            if z < done:
                continue
            m = match_side(mm, z, end)
            if m is not None:
                side.append(m)
                done = m.end()
    for m in side:
        tag = m.group(1).decode()
        off = m.start(1)
        if tag.startswith("-------> Start of Build Log"):
            p.build_starts.append(off)  # its end: the first end tag after it, at the merge
            continue
        p.rare.append((off, 2, tag, _dec(m.group(2)), 0))
    return dev_at


def _enqueue_lines(mm: mmap.mmap, p: _Piece, first_text: int) -> None:
    """The enqueue entry lines of piece ``p``: number, line offset, function and kernel
    ids (local to the piece) per line (``first_text``: the log's first byte that is no NUL
    or space, for a line that starts at offset 0).

    One loop body per enqueue line of the log (10^6 in heat2d): it stays inline, with its
    attributes bound to locals and no function call per line, because the index's time is
    this loop's time (benchmarks/run.py)."""
    pos, end = p.start, p.end
    numbers = p.numbers
    offsets = p.offsets
    fids = p.fids
    kids = p.kids
    fix = p.fix
    functions = p.functions
    knames = p.knames
    fmap: dict[bytes, int] = {}
    kmap: dict[bytes, int] = {}
    rfind = mm.rfind
    row = 0
    for m in _ENQ_RE.finditer(mm, pos, end):
        s = m.start()
        ls = rfind(b"\n", s - 512 if s > 512 else 0, s) + 1
        if mm[ls : ls + 5] != b">>>> ":
            if ls == 0:  # (the same as the stripped copy of mm[0:s], without the copy)
                h = first_text
                if h + 5 > s or mm[h : h + 5] != b">>>> ":
                    continue
            elif not mm[ls:s].lstrip(b" \x00").startswith(b">>>> "):
                continue
        fnb, rest = m.group(1, 2)
        j = rest.rfind(_COUNTER_TAG)
        num = 0
        if j >= 0:
            try:
                num = int(rest[j + 18 :])
            except ValueError:
                fix.append(row)
        else:
            fix.append(row)
            p.missing += 1
        fid = fmap.get(fnb)
        if fid is None:
            fid = fmap[fnb] = len(functions)
            functions.append(fnb)
        kid = -1
        if rest[0] == 40:  # "( name ): ..."
            k = rest.find(b" ): ", 2)
            if k < 0:
                k = rest.find(b" );", 2)
                if k < 0:
                    k = rest.rfind(b" )", 2)
            if k >= 0:
                kb = rest[2:k]
                kid = kmap.get(kb, -1)
                if kid < 0:
                    kid = kmap[kb] = len(knames)
                    knames.append(kb)
        try:
            numbers.append(num)
        except OverflowError:  # a counter past int64: numbered by order
            numbers.append(0)
            fix.append(row)
        offsets.append(ls)
        fids.append(fid)
        kids.append(kid)
        row += 1


def _exits_and_releases(mm: mmap.mmap, p: _Piece, first_nonnul: int) -> None:
    """The exit lines of creators (`` returned ``) with their entry lines, and the last
    releases of memory objects, kernels, programs, queues and samplers, of piece ``p`` into
    its rare lines (``bytes.find`` loops)."""
    pos, end, rare = p.start, p.end, p.rare
    find = mm.find
    at = find(_RETURNED, pos, end)
    memo: dict[bytes, tuple[int, int, tuple[int, int, str, str, int] | None]] = {}
    while at >= 0:
        le = _creation(mm, at, rare, memo, first_nonnul)
        at = find(_RETURNED, le, end) if 0 <= le < end else -1
    at = find(_REF1, pos, end)
    while at >= 0:
        fs = mm.rfind(b" ", max(pos, at - 40), at) + 1  # the function's name starts there
        m = _RELEASE_RE.match(mm, fs, end) if fs > 0 else None
        if m is not None:  # the last release of a kernel, program, queue, sampler or memory
            rare.append((fs, 3, _dec(m.group(1)), _dec(m.group(2)), 0))
            le = find(b"\n", m.end(), end)  # one release per line (a line of them is one)
            at = find(_REF1, le, end) if le >= 0 else -1
        else:
            at = find(_REF1, at + 1, end)


def _drop_pages(mm: mmap.mmap, pos: int, end: int) -> None:
    """Drop the scanned pages from our RSS (they stay in the page cache)."""
    a0 = (pos // mmap.PAGESIZE) * mmap.PAGESIZE
    a1 = (end // mmap.PAGESIZE) * mmap.PAGESIZE
    if a1 > a0:
        with contextlib.suppress(OSError, ValueError):
            mm.madvise(mmap.MADV_DONTNEED, a0, a1 - a0)


def _device_quads(mm: mmap.mmap, pos: int, end: int, nul: int, dev_at: list[int]) -> bytes:
    """The ``Device Time`` lines of a piece as int64 (number, q, s, d) quadruples."""
    if pos == 0 or nul >= 0:  # a line may start mid-NUL-run (or at offset 0): full search
        found = _DEVTIME_ANY_RE.findall(mm, pos, end)
    else:
        match_dev = _DEVTIME_RE.match
        found = [m.groups() for s in dev_at if (m := match_dev(mm, s, end)) is not None]
    return _quads(found) if found else b""


def _quads(found: list[tuple[bytes, bytes, bytes, bytes]]) -> bytes:
    """The device-time groups as int64 (number, q, s, d) quadruples."""
    q = np.fromstring(b" ".join(itertools.chain.from_iterable(found)), dtype=np.int64, sep=" ")
    if len(q) == 4 * len(found) and not (q == _I64_MAX).any():
        return bytes(q.tobytes())
    out = array("q")  # a value past int64: keep the lines that fit
    for t in found:
        if max(len(x) for x in t) > 19:  # past int64 (and int() refuses 4,300 digits)
            continue
        v = [int(x) for x in t]
        if max(v) <= _I64_MAX:
            out.extend(v)
    return out.tobytes()


def _creation(
    mm: mmap.mmap,
    at: int,
    rare: list[tuple[int, int, str, str, int]],
    memo: dict[bytes, tuple[int, int, tuple[int, int, str, str, int] | None]],
    first_text: int = 0,
) -> int:
    """A ``returned`` exit line of a creator: record it and its entry line.

    ``memo`` holds, per creator, the last exit line start searched from, the entry found
    then and its record: the backward search for the entry only reads what lies between
    two exit lines of one creator (a million exit lines without entries are not a million
    1 MB searches).  Returns the offset of the end of the exit line (-1 at the end of the
    file).
    """
    ls = mm.rfind(b"\n", at - 4096 if at > 4096 else 0, at) + 1
    le = mm.find(b"\n", at)
    stop = le if le >= 0 else len(mm)
    if ls == 0:  # the line starts at offset 0 or further back than 4096: no copy from 0
        m = _EXIT_LINE_RE.match(mm, min(first_text, stop), stop)
    else:
        m = _EXIT_LINE_RE.match(mm[ls:stop].lstrip(b"\x00"))
    if m is None or not m.group(1).startswith(_CREATORS):
        return le
    fnb = m.group(1)
    # the entry: the closest preceding ">>>> ... <fn>: " line (single-thread pairing)
    lo = ls - (1 << 20) if ls > (1 << 20) else 0
    needle = b" " + fnb + b": "
    prev = memo.get(fnb)
    if prev is not None and prev[0] <= ls:
        # only what the last search of this creator did not cover: [its start, ls)
        e = mm.rfind(needle, max(lo, prev[0] - len(needle) + 1), ls)
        if e < 0 and prev[1] >= lo:
            e = prev[1]
    else:
        e = mm.rfind(needle, lo, ls)
    if e < 0:
        memo[fnb] = (ls, -1, None)
        return le
    rec: tuple[int, int, str, str, int] | None
    if prev is not None and e == prev[1]:
        rec = prev[2]  # the same entry line as last time: decoded once
    else:
        es = mm.rfind(b"\n", e - 512 if e > 512 else 0, e) + 1
        ee = mm.find(b"\n", e)
        entry = mm[es : ee if ee >= 0 else len(mm)]
        rec = None
        if entry.lstrip(b" \x00").startswith(b">>>> "):
            rest = _dec(entry[e - es + len(fnb) + 1 :])
            _, c = strip_counter(rest)
            rec = (es, 0, _dec(fnb), rest, _UNKNOWN if c is None else c)
    memo[fnb] = (ls, e, rec)
    if rec is None:
        return le
    rare.append(rec)
    rare.append((ls, 1, rec[2], _dec(m.group(2)), 0))
    return le
