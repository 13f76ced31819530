"""Which program a kernel enqueue comes from (the log's handles, its Replay folder, the
program sources that define the kernel, build order when the log is lost) and the kernel
signatures of a program's source."""

from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING

import numpy as np

from cltui.capture import log as li
from cltui.capture.decode.args import set_arg_indexes, set_arg_raw
from cltui.capture.hashing import cli_hash64
from cltui.capture.model import Enqueue, Problem, Program
from cltui.capture.replayfolder import ReplayFolder
from cltui.capture.spans import ATTRIBUTE

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.capture.signature import KernelSignature

# an attribute's parentheses are matched, not scanned for lazily: a body cannot run past a
# parenthesis, so a source of unclosed ``kernel __attribute__((`` costs linear time (a lazy
# ``.*?`` rescanned to the end from each: 440 KB took 33 s)
_ATTR = ATTRIBUTE

_KERNEL_DEF_RE = (
    r"(?:__kernel|kernel|KERNEL)\s+(?:(?:"
    + _ATTR  # (no braces: safe in a format string)
    + r"|[A-Z_][A-Z0-9_]*\s*\([^(){{}};]*\))\s*)*void\s+{}\s*\("
)


# every kernel a source defines (pyopencl's "KERNEL REQD_WG_SIZE(...) void name(" too)
_ANY_KERNEL_DEF_RE = re.compile(
    r"\b(?:__kernel|kernel|KERNEL)\s+(?:(?:"
    + _ATTR
    + r"|[A-Z_][A-Z0-9_]*\s*\([^(){};]*\))\s*)*void\s+(\w+)\s*\("
)

_NONE_AFTER = 1 << 62  # no anchor after an enqueue: any later program may be new


def _source_hash(source: bytes) -> str:
    """The ``<H8>`` of ``CLI_<P4>_<H8>``: the hash of a program's source (capture-format §5.2)."""
    return f"{cli_hash64(source) & 0xFFFFFFFF:08X}"


def program_for(
    cap: Capture,
    enq: Enqueue,
    kernel_name: str,
    krec: li.KernelRecord | None,
    replay: ReplayFolder | None,
) -> tuple[Program | None, str, str]:
    """(program, source text, build options) for a kernel enqueue (§5.4)."""
    log = cap.log
    if krec is not None and krec.program is not None and log is not None:
        prec = log.program_at(krec.program, krec.entry_offset)
        if prec is not None and prec.number is not None:
            prog = cap._programs_by_number.get(prec.number)
            if prog is not None and prog.source_path is not None:
                return prog, cap.program_source(prog), prog.options
    if replay is not None and replay.kernel_source:
        return _replay_program(cap, replay.kernel_source, replay.build_options or "")
    if kernel_name and enq.row.recovered:
        # no log: the program built in the order the enqueues need them (see _assign)
        picked = _assign(cap).get(enq.number)
        if picked is not None:
            prog, how = picked
            if how:
                enq.problems.append(Problem(how, enqueue=enq.number))
            return prog, cap.program_source(prog), prog.options
    # grep the sources for the kernel definition
    if kernel_name and kernel_name.isidentifier():  # (a damaged log's name may be no C name)
        p = _defining_program(cap, enq, kernel_name)
        if p is not None:
            return p, cap.program_source(p), p.options
    return None, "", ""


def _replay_program(
    cap: Capture, kernel_source: bytes, opts: str
) -> tuple[Program | None, str, str]:
    """The program whose source is a Replay folder's ``kernel.cl`` (the last one with its
    hash, source and options), with that source and the folder's options."""
    src = bytes(kernel_source).replace(b"\x00", b"").decode("utf-8", "replace")
    # the CLI_<P4>_<H8> hash of kernel.cl names its program (capture-format §5.2)
    h8 = _source_hash(bytes(kernel_source))
    same = [p for p in cap._programs if p.hash == h8 and cap.program_source(p) == src]
    if same:
        fit = [p for p in same if p.options.strip() == opts.strip()]
        return (fit or same)[-1], src, opts
    for prog in cap._programs:
        if cap.program_source(prog) == src:
            return prog, src, opts
    return None, src, opts


def _defining_program(cap: Capture, enq: Enqueue, kernel_name: str) -> Program | None:
    """The last program whose source defines ``kernel_name`` (among those whose signature
    fits the argument values, when several do; a problem says which was taken)."""
    rx = re.compile(_KERNEL_DEF_RE.format(re.escape(kernel_name)), re.DOTALL)
    hits = [p for p in cap._programs if rx.search(cap.program_source(p))]
    if len(hits) > 1:
        # keep the programs whose signature fits the argument values the dumps hold
        fit = [p for p in hits if fits(cap, enq.number, kernel_name, p)]
        hits = fit or hits
    if not hits:
        return None
    if len(hits) > 1:
        enq.problems.append(
            Problem(
                f"{len(hits)} programs define a kernel {kernel_name!r}; "
                f"using program {hits[-1].number}",
                enqueue=enq.number,
            )
        )
    return hits[-1]


def _defining(cap: Capture) -> dict[str, list[Program]]:
    """kernel name -> the programs whose source defines it (one pass over each source)."""
    with cap._lock:
        if cap._defs is None:
            defs: dict[str, list[Program]] = {}
            for p in cap._programs:
                for name in dict.fromkeys(_ANY_KERNEL_DEF_RE.findall(cap.program_source(p))):
                    defs.setdefault(name, []).append(p)
            cap._defs = defs
        return cap._defs


def _kernel_rows(cap: Capture) -> list[tuple[int, str, bool]]:
    """(number, kernel name, recovered) of every kernel enqueue, in number order."""
    order = np.argsort(cap.numbers, kind="stable")
    rows: list[tuple[int, str, bool]] = []
    for pos in order.tolist():
        kid = int(cap.kernel_ids[pos])
        if kid >= 0:
            n, rec = int(cap.numbers[pos]), bool(cap.recovered[pos])
            rows.append((n, cap.kernel_names[kid], rec))
    return rows


def _assign(cap: Capture) -> dict[int, tuple[Program, str]]:
    """The program of each recovered kernel enqueue that no Replay folder names.

    Programs are numbered in creation order and programs such as pyopencl's and OpenCV's
    are built when first needed, so among the programs that define the kernel and fit its
    argument values, a launch takes the first program built after the highest one used so
    far (a new program) when one lies before the next enqueue whose kernel only one program
    defines, else the latest one already built (a program used again)."""
    with cap._lock:
        if cap._assigned is not None:
            return cap._assigned
    defs = _defining(cap)
    rows = _kernel_rows(cap)
    anchors = [(n, defs[k][0].number) for n, k, _ in rows if len(defs.get(k, [])) == 1]
    anchor_numbers = [n for n, _ in anchors]
    out: dict[int, tuple[Program, str]] = {}
    high = -1
    for n, kname, recovered in rows:
        cands = defs.get(kname, [])
        prog = _named_program(cap, n, cands)
        how = ""
        if prog is None and recovered and len(cands) > 1:
            j = bisect.bisect_right(anchor_numbers, n)
            nxt = anchors[j][1] if j < len(anchors) else _NONE_AFTER
            prog, how = _by_build_order(cap, n, kname, cands, high, nxt)
        if prog is not None:
            high = max(high, prog.number)
            if recovered:
                out[n] = (prog, how)
    with cap._lock:
        cap._assigned = out
    return out


def _named_program(cap: Capture, n: int, cands: list[Program]) -> Program | None:
    """The program of enqueue ``n`` when only one defines its kernel, or when its Replay
    folder's source hash names one of them; else None."""
    if len(cands) == 1:
        return cands[0]
    if n in cap.dumps.replay:
        rf = cap._replay(n)
        if rf is not None and rf.kernel_source:
            h8 = _source_hash(bytes(rf.kernel_source))
            same = [p for p in cands if p.hash == h8]
            return same[-1] if same else None
    return None


def _by_build_order(
    cap: Capture, n: int, kname: str, cands: list[Program], high: int, nxt: int
) -> tuple[Program, str]:
    """The program of recovered enqueue ``n`` among several ``cands`` (see :func:`_assign`:
    ``high`` is the highest program used so far, ``nxt`` the program of the next anchor)
    and the problem that says so."""
    new = [p for p in cands if high < p.number <= nxt]
    old = [p for p in reversed(cands) if p.number <= high]
    # signatures are parsed lazily: the first candidate in build order that fits
    order_ = [*new, *old]
    if len(order_) == 1:
        prog = order_[0]
    else:
        fit = next((p for p in order_ if fits(cap, n, kname, p)), None)
        prog = fit or (order_ or cands)[0]
    how = (
        f"{len(cands)} programs define kernel {kname!r} "
        f"({', '.join(str(p.number) for p in cands)}) and the log that said which "
        f"is lost: using program {prog.number}, the first in build order whose "
        "signature fits the argument values"
    )
    return prog, how


def fits(cap: Capture, number: int, kname: str, prog: Program) -> bool:
    """False when the SetKernelArg/Replay values of enqueue ``number`` cannot be the
    arguments of ``kname`` in ``prog`` (another count, or a value of another size)."""
    source = cap.program_source(prog)
    scratch: list[Problem] = []
    key = str(prog.source_path) + "\x00" + prog.options
    sigs = signatures(cap, key, source, prog.options, scratch, number)
    sig = sigs.get(kname)
    if sig is None:
        return False
    params = list(sig.params)
    known = set_arg_indexes(cap, number, kname)
    if known and max(known) >= len(params):
        return False
    replay = cap._replay(number)
    for i, param in enumerate(params):
        raw = set_arg_raw(cap, number, kname, i, None) if i in known else None
        if raw is None and replay is not None:
            raw = replay.arguments.get(i)
        if raw is None or (param.is_pointer and param.address_space == "local"):
            continue
        if param.is_pointer or param.ctype.kind in ("image", "sampler"):
            if len(raw) not in (4, 8):
                return False
        elif param.ctype.size and len(raw) != param.ctype.size:
            return False
    return True


def signatures(
    cap: Capture, key: str, source: str, options: str, problems: list[Problem], number: int
) -> dict[str, KernelSignature]:
    """The kernels ``source`` defines, by name (parsed once per ``key``; a source that
    cannot be parsed has none, and a problem in ``problems`` says why)."""
    if key in cap._sig_cache:
        return cap._sig_cache[key]
    sigs: dict[str, KernelSignature] = {}
    if source:
        # imported here: the preprocessor (pcpp) is needed only once a source is parsed
        from cltui.capture.signature import parse_kernels

        try:
            sigs = dict(parse_kernels(source, options))
        except Exception as e:
            problems.append(Problem(f"could not parse the kernel source: {e}", enqueue=number))
    cap._sig_cache[key] = sigs
    return sigs
