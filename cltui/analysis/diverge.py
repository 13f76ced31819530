"""Where two captures of one program part: first enqueue, argument, element.

The enqueues of the two captures are aligned by enqueue number and label (function
and kernel name); where the sequences themselves differ (an enqueue only one side
has, or a different kernel at one place) the report says so. Aligned kernel enqueues
are compared argument by argument on their **Post** dumps (Pre dumps of output
buffers hold whatever memory the platform handed out, so they differ by design):
full contents through :func:`cltui.replay.engine.compare.compare_bytes`, typed by the kernel
signature, or 64-bit hashes when a side holds only hashes.

Per enqueue the report also says whether the arguments the kernel left unchanged
(its inputs, as far as the dumps show) were identical on both sides: an enqueue whose
inputs are identical but whose outputs differ is where a divergence *starts*; one
whose inputs already differ inherits it.

``diverge(cap_a, cap_b, tol)`` is the API the CLI and the TUI share; the TUI marks
enqueues with :meth:`DivergeReport.status_of`.
"""

from __future__ import annotations

import difflib
from typing import Any

import numpy as np
import numpy.typing as npt

from cltui.analysis.diverge_report import (
    DIVERGENT,
    IDENTICAL,
    INPUTS_DIFFERENT,
    INPUTS_IDENTICAL,
    INPUTS_UNKNOWN,
    MISSING,
    SEQUENCE,
    UNCHECKED,
    WITHIN_TOL,
    ArgDiff,
    DivergeReport,
    EnqueueDiff,
)
from cltui.capture.capture import Capture
from cltui.capture.elements import element_dtype
from cltui.capture.hashing import cli_hash64
from cltui.capture.model import Dump, Enqueue, EnqueueKind, KernelArg
from cltui.errors import CltuiError
from cltui.progress import CancelToken, ProgressEvent, ProgressFn
from cltui.replay.engine.compare import (
    DIFFERENT,
    EQUAL,
    WITHIN,
    Tolerance,
    bytes_equal,
    compare_bytes,
)

# Above this many enqueues, a sequence that does not match one to one is aligned by
# enqueue number only (difflib's matcher is quadratic in the worst case).
_MAX_DIFFLIB = 100_000


class DivergeError(CltuiError):
    """A specific one-line problem (the comparison could not be made at all)."""


# --------------------------------------------------------------------------- alignment


def _labels(cap: Capture) -> list[str]:
    """One label per enqueue: ``function/kernel``."""
    names = cap.kernel_names
    kid = cap.kernel_ids.astype(np.int64)
    fid = cap.function_ids.astype(np.int64)
    width = len(names) + 1
    codes = fid * width + (kid + 1)
    texts: dict[int, str] = {}
    for c in np.unique(codes):
        f, k = divmod(int(c), width)
        texts[int(c)] = cap.functions[f] + ("/" + names[k - 1] if k else "")
    return [texts[int(c)] for c in codes]


def align(cap_a: Capture, cap_b: Capture) -> tuple[list[tuple[int | None, int | None]], bool]:
    """Pairs of positions ``(pos_a, pos_b)`` (None where one side has no counterpart).

    Fast path: the same numbers and the same labels at every position. Otherwise the
    label sequences are matched with difflib (or by enqueue number when very long).
    The boolean says whether the sequences were identical.
    """
    na, nb = len(cap_a), len(cap_b)
    la = _labels(cap_a)
    lb = _labels(cap_b)
    if na == nb and np.array_equal(cap_a.numbers, cap_b.numbers) and la == lb:
        return [(i, i) for i in range(na)], True
    pairs: list[tuple[int | None, int | None]] = []
    if max(na, nb) > _MAX_DIFFLIB:
        ia = {int(n): i for i, n in enumerate(cap_a.numbers)}
        ib = {int(n): i for i, n in enumerate(cap_b.numbers)}
        for n in sorted(set(ia) | set(ib)):
            pairs.append((ia.get(n), ib.get(n)))
        return pairs, False
    sm = difflib.SequenceMatcher(None, la, lb, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            pairs.extend(zip(range(i1, i2), range(j1, j2), strict=True))
        else:
            common = min(i2 - i1, j2 - j1) if tag == "replace" else 0
            pairs.extend(zip(range(i1, i1 + common), range(j1, j1 + common), strict=True))
            pairs.extend((i, None) for i in range(i1 + common, i2))
            pairs.extend((None, j) for j in range(j1 + common, j2))
    return pairs, False


# --------------------------------------------------------------------------- compare

def _dump_hash(d: Dump) -> int | None:
    if d.hashed:
        return d.hash_value()
    try:
        return cli_hash64(d.array(np.uint8))
    except (OSError, ValueError):
        return None


def _read(d: Dump) -> npt.NDArray[Any] | None:
    try:
        return d.array(np.uint8)
    except (OSError, ValueError):
        return None


def compare_dumps(
    arg_a: KernelArg, da: Dump, arg_b: KernelArg, db: Dump, tol: Tolerance
) -> ArgDiff:
    """Compare one argument's dumps (A as the reference, B as the value under test)."""
    name = arg_a.name or arg_b.name
    tname = arg_a.type_name or arg_b.type_name
    if da.hashed or db.hashed:
        ha, hb = _dump_hash(da), _dump_hash(db)
        if ha is None or hb is None:
            which = "A" if ha is None else "B"
            return ArgDiff(arg_a.index, name, tname, MISSING, hashed=True,
                           note=f"the dump of capture {which} could not be read")
        same = ha == hb
        return ArgDiff(arg_a.index, name, tname, EQUAL if same else DIFFERENT, hashed=True,
                       note="" if same else f"hash {ha:x} vs {hb:x}")
    ea, eb = _read(da), _read(db)
    if ea is None or eb is None:
        which = "A" if ea is None else "B"
        return ArgDiff(arg_a.index, name, tname, MISSING,
                       note=f"the dump of capture {which} could not be read")
    dt, shape = element_dtype(arg_a if arg_a.dtype is not None or da.is_image else arg_b, da)
    res = compare_bytes(ea, eb, dt, tol, shape)
    return ArgDiff(arg_a.index, name, tname, res.status, res)


def _unchanged(arg: KernelArg) -> bool | None:
    """True when the kernel left this argument's memory as it was (pre == post)."""
    if arg.pre is None or arg.post is None:
        return None
    if arg.pre.hashed or arg.post.hashed:
        hp, hq = _dump_hash(arg.pre), _dump_hash(arg.post)
        return None if hp is None or hq is None else hp == hq
    p, q = _read(arg.pre), _read(arg.post)
    if p is None or q is None:
        return None
    return bytes_equal(p, q)


def _same_content(da: Dump, db: Dump) -> bool | None:
    if da.hashed or db.hashed:
        ha, hb = _dump_hash(da), _dump_hash(db)
        return None if ha is None or hb is None else ha == hb
    p, q = _read(da), _read(db)
    if p is None or q is None:
        return None
    return bytes_equal(p, q)


def _inputs_status(ea: Enqueue, eb: Enqueue) -> tuple[str, list[int]]:
    """Identical / different over the arguments both kernels left unchanged (and which)."""
    bmap = {a.index: a for a in eb.args}
    seen = False
    differ: list[int] = []
    for a in ea.args:
        b = bmap.get(a.index)
        if b is None or a.pre is None or b.pre is None:
            continue
        if not (_unchanged(a) and _unchanged(b)):
            continue
        same = _same_content(a.pre, b.pre)
        if same is None:
            continue
        seen = True
        if not same:
            differ.append(a.index)
    if differ:
        return INPUTS_DIFFERENT, differ
    return (INPUTS_IDENTICAL if seen else INPUTS_UNKNOWN), []


def compare_enqueues(ea: Enqueue, eb: Enqueue, tol: Tolerance) -> EnqueueDiff:
    """Compare two aligned kernel enqueues on their Post dumps."""
    diff = EnqueueDiff(ea.number, eb.number, ea.row.kernel, ea.row.function, UNCHECKED,
                       kernel_b=eb.row.kernel, function_b=eb.row.function)
    ga, gb = ea.row.global_size, eb.row.global_size
    la, lb = ea.row.local_size, eb.row.local_size
    if (ga, la) != (gb, lb):
        diff.notes.append(f"launch geometry differs: global {_dims(ga)} local {_dims(la)} "
                          f"vs global {_dims(gb)} local {_dims(lb)}")
    bmap = {a.index: a for a in eb.args}
    for a in ea.args:
        b = bmap.get(a.index)
        pa = a.post
        pb = b.post if b is not None else None
        if pa is None and pb is None:
            continue
        if pa is None or pb is None or b is None:
            which = "A" if pa is None else "B"
            diff.args.append(ArgDiff(a.index, a.name, a.type_name, MISSING,
                                     note=f"no Post dump in capture {which}"))
            continue
        diff.args.append(compare_dumps(a, pa, b, pb, tol))
    amap = {a.index for a in ea.args}
    for b in eb.args:
        if b.index not in amap and b.post is not None:
            diff.args.append(ArgDiff(b.index, b.name, b.type_name, MISSING,
                                     note="no Post dump in capture A"))
    statuses = {a.status for a in diff.args}
    compared = statuses - {MISSING}
    if DIFFERENT in statuses:
        diff.status = DIVERGENT
    elif not compared:
        diff.status = UNCHECKED
    elif WITHIN in compared:
        diff.status = WITHIN_TOL
    else:
        diff.status = IDENTICAL
    if MISSING in statuses and compared:
        diff.notes.append("some Post dumps exist on one side only")
    if diff.status in (DIVERGENT, WITHIN_TOL):
        diff.inputs, diff.inputs_differ = _inputs_status(ea, eb)
    return diff


def _dims(d: tuple[int, ...] | None) -> str:
    return "NULL" if d is None else "x".join(str(v) for v in d)


# --------------------------------------------------------------------------- diverge


def diverge(
    cap_a: Capture,
    cap_b: Capture,
    tol: Tolerance | None = None,
    *,
    first: int | None = None,
    last: int | None = None,
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
) -> DivergeReport:
    """Compare two captures of the same program; see the module doc.

    ``first``/``last`` restrict the comparison to enqueue numbers of capture A.
    ``progress`` gets a :class:`~cltui.progress.ProgressEvent` now and then; ``cancel`` stops
    early (the report then covers what was compared so far).
    """
    tol = tol or Tolerance()
    pairs, same_seq = align(cap_a, cap_b)
    out: list[EnqueueDiff] = []
    data_a = cap_a.has_post | cap_a.hashes_only
    data_b = cap_b.has_post | cap_b.hashes_only
    work, aligned = _work(cap_a, cap_b, pairs, same_seq, data_a, data_b)
    total = max(1, len(work))
    for done, k in enumerate(work):
        if cancel is not None and cancel.is_set():
            break
        if progress is not None and done % 16 == 0:
            progress(ProgressEvent(done / total, f"enqueue {done}/{total}"))
        d = _compare_pair(cap_a, cap_b, pairs[k], tol, (data_a, data_b), (first, last))
        if d is not None:
            out.append(d)
    if progress is not None:
        progress(ProgressEvent(1.0))
    out.sort(key=lambda e: (e.number, e.only_b))
    return DivergeReport(
        path_a=str(cap_a.path), path_b=str(cap_b.path), tolerance=tol,
        count_a=len(cap_a), count_b=len(cap_b), enqueues=out, aligned=aligned,
        sequence_identical=same_seq,
    )


def _compare_pair(
    cap_a: Capture,
    cap_b: Capture,
    pair: tuple[int | None, int | None],
    tol: Tolerance,
    data: tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]],
    bounds: tuple[int | None, int | None],
) -> EnqueueDiff | None:
    """One aligned pair (a row of A, a row of B, either may be missing) compared; None when
    its enqueue number lies outside ``bounds`` (first, last of A)."""
    pa, pb = pair
    first, last = bounds
    num_a = int(cap_a.numbers[pa]) if pa is not None else None
    num_b = int(cap_b.numbers[pb]) if pb is not None else None
    ref = num_a if num_a is not None else num_b
    assert ref is not None
    if (first is not None and ref < first) or (last is not None and ref > last):
        return None
    if pa is None or pb is None:
        return _one_sided(cap_a, cap_b, pa, pb, ref, num_b)
    ra, rb = cap_a.row(pa), cap_b.row(pb)
    if (ra.function, ra.kernel) != (rb.function, rb.kernel):
        return EnqueueDiff(
            ref, num_b, ra.kernel, ra.function, SEQUENCE,
            notes=[f"capture A has {_row_label(ra.function, ra.kernel)}, capture B has "
                   f"{_row_label(rb.function, rb.kernel)}"],
            kernel_b=rb.kernel, function_b=rb.function)
    assert num_a is not None and num_b is not None
    d = compare_enqueues(cap_a.enqueue(num_a), cap_b.enqueue(num_b), tol)
    if num_a != num_b:
        d.notes.append(f"enqueue {num_a} in A is enqueue {num_b} in B")
    if d.status == UNCHECKED and not d.args:
        which = "A" if not data[0][pa] else "B"
        d.notes.append(f"no Post dumps in capture {which}")
    return d


def _work(
    cap_a: Capture,
    cap_b: Capture,
    pairs: list[tuple[int | None, int | None]],
    same_seq: bool,
    data_a: npt.NDArray[np.bool_],
    data_b: npt.NDArray[np.bool_],
) -> tuple[list[int], int]:
    """The pairs that need a look (by index into ``pairs``), and how many are aligned."""
    kernel_kinds = (int(EnqueueKind.KERNEL), int(EnqueueKind.TASK))
    if same_seq:  # pairs are (i, i): only kernels with dumps on either side need a look
        is_kernel = np.isin(cap_a.kinds, np.array(kernel_kinds, dtype=cap_a.kinds.dtype))
        return [int(k) for k in np.flatnonzero(is_kernel & (data_a | data_b))], len(pairs)
    work = [
        k for k, (pa, pb) in enumerate(pairs)
        if pa is None or pb is None
        or _label_at(cap_a, pa) != _label_at(cap_b, pb)
        or (int(cap_a.kinds[pa]) in kernel_kinds and (data_a[pa] or data_b[pb]))
    ]
    return work, sum(1 for pa, pb in pairs if pa is not None and pb is not None)


def _one_sided(
    cap_a: Capture, cap_b: Capture, pa: int | None, pb: int | None, ref: int, num_b: int | None
) -> EnqueueDiff:
    """The SEQUENCE entry of an enqueue only one capture has."""
    cap, pos, side = (cap_b, pb, "B") if pa is None else (cap_a, pa, "A")
    assert pos is not None
    row = cap.row(pos)
    d = EnqueueDiff(ref, num_b, row.kernel if side == "A" else None,
                    row.function if side == "A" else "",
                    SEQUENCE, notes=[f"only capture {side} has this enqueue"])
    if side == "B":
        d.kernel_b, d.function_b = row.kernel, row.function
        d.number_b = num_b
        d.function = "(missing)"
        d.only_b = True
    return d



def _label_at(cap: Capture, pos: int) -> tuple[str, str]:
    kid = int(cap.kernel_ids[pos])
    return cap.functions[int(cap.function_ids[pos])], cap.kernel_names[kid] if kid >= 0 else ""


def _row_label(function: str, kernel: str | None) -> str:
    return f"{function} {kernel}" if kernel else function
