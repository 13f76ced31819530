"""Decoding one enqueue of a capture: the log line, its kernel's program and signature, each
argument (SetKernelArg dumps, Replay folders, the log), its memory objects and dumps, and
what is wrong with them (:class:`~cltui.capture.model.Problem`)."""

from __future__ import annotations

import bisect
import contextlib
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from cltui.capture import log as li
from cltui.capture.cltypes import decode_value
from cltui.capture.confine import read_bytes_inside
from cltui.capture.hashing import cli_hash64
from cltui.capture.model import (
    ArgKind,
    Enqueue,
    EnqueueKind,
    KernelArg,
    MemObject,
    Problem,
    Program,
)
from cltui.capture.spans import ATTRIBUTE

if TYPE_CHECKING:
    from cltui.capture.capture import Capture

_EWL_RE = re.compile(r", event_wait_list = \( size = \d+ \)\[[^\]]*\]")

_EVENT_RE = re.compile(r" created event = (0x[0-9a-fA-F]+|\(nil\)|[0-9A-F]{8,16})")

_ERR_RE = re.compile(r" -> (\S+)\s*$")


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


def _rel(root: Path, p: Path) -> str:
    rs, ps = str(root), str(p)
    if len(ps) > len(rs) + 1 and ps.startswith(rs) and ps[len(rs)] == os.sep and rs != os.sep:
        return ps[len(rs) + 1 :]  # the usual case, without pathlib
    try:
        return str(Path(p).relative_to(root))
    except ValueError:
        return str(p)


def decode_enqueue(cap: Capture, pos: int) -> Enqueue:
    row = cap.row(pos)
    number = row.number
    line = cap._line(pos)
    problems: list[Problem] = []
    fn = row.function
    args_text = ""
    if line:
        i = line.find(fn)
        rest = line[i + len(fn) :] if i >= 0 else ""
        _, args_text = li.split_kernel_name(rest)
        args_text, _ = li.strip_counter(args_text)
    kv = li.kv_pairs(_EWL_RE.sub("", args_text))
    off = int(cap.offsets[pos])
    log = cap.log
    enq = Enqueue(
        row=row,
        line=line.strip(),
        queue=li.parse_ptr(kv.get("queue", "")),
        event=None,
        global_offset=None,
        problems=problems,
    )
    if log is not None and off >= 0:
        ex = log.exit_line(off, fn)
        if ex is None:
            problems.append(Problem("no exit line for this call (log truncated?)", enqueue=number))
        else:
            m = _EVENT_RE.search(" " + ex if ex.startswith("created") else ex)
            if m:
                enq.event = li.parse_ptr(m.group(1))
            em = _ERR_RE.search(ex)
            if em and em.group(1) != "CL_SUCCESS":
                problems.append(
                    Problem(f"the call failed: {em.group(1)}", enqueue=number, severity="error")
                )
        if enq.queue:
            q = log.queue_at(enq.queue, off)
            enq.device = q.device if q else None
    rec = cap._recovered.get(number) if row.recovered else None
    if rec is not None:
        enq.recovered_from = rec.sources
        enq.device = cap.recovery.device if cap.recovery is not None else None
    if row.kind in (EnqueueKind.KERNEL, EnqueueKind.TASK):
        go, _, _ = cap._sizes(line)
        enq.global_offset = rec.global_offset if rec is not None else go
        _decode_kernel(cap, enq, pos, kv, off)
    elif rec is None:
        _decode_transfer(cap, enq, kv, off)
    problems.extend(p for p in _dump_problems(cap, enq))
    return enq


def _mem(cap: Capture, handle: int | None, off: int) -> MemObject | None:
    if not handle or cap.log is None or off < 0:
        return None
    return cap.log.mem_at(handle, off)


def _objects_at(cap: Capture, pos: int) -> int:
    """The log offset whose live objects (buffers, samplers) an enqueue's handles name:
    its own line; for a recovered enqueue past the end of the log, the end of the log;
    -1 (none) for one the log lost in its middle or start, whose objects it lost too."""
    off = int(cap.offsets[pos])
    if off >= 0 or cap.log is None:
        return off
    if bool(cap.recovered[pos]) and int(cap.numbers[pos]) > cap._max_logged:
        return cap.log.size
    return -1


def _decode_transfer(cap: Capture, enq: Enqueue, kv: dict[str, str], off: int) -> None:
    src = (
        kv.get("buffer")
        or kv.get("image")
        or kv.get("memobj")
        or kv.get("src_buffer")
        or kv.get("src_image")
    )
    dst = kv.get("dst_buffer") or kv.get("dst_image")
    enq.mem = _mem(cap, li.parse_ptr(src) if src else None, off)
    enq.dst_mem = _mem(cap, li.parse_ptr(dst) if dst else None, off)
    if cap.log is not None and off >= 0:
        # SVM/USM transfers name raw pointers: find the allocation that holds them
        svm_src = kv.get("svm_ptr") or kv.get("src_ptr")
        svm_dst = kv.get("dst_ptr")
        if enq.mem is None and svm_src:
            p = li.parse_ptr(svm_src)
            enq.mem = cap.log.svm_containing(p, off) if p else None
        if enq.dst_mem is None and svm_dst:
            p = li.parse_ptr(svm_dst)
            enq.dst_mem = cap.log.svm_containing(p, off) if p else None
    for key in ("offset", "src_offset"):
        if key in kv:
            with contextlib.suppress(ValueError):
                enq.offset = int(kv[key])
            break
    for key in ("cb", "size"):
        if key in kv:
            with contextlib.suppress(ValueError):
                enq.nbytes = int(kv[key])
            break
    if " non-blocking" in enq.line or ", non-blocking" in enq.line:
        enq.blocking = False
    elif ", blocking" in enq.line:
        enq.blocking = True


# ---- kernels
def _program_for(
    cap: Capture, enq: Enqueue, kernel_name: str, krec: li.KernelRecord | None, replay: Any
) -> tuple[Program | None, str, str]:
    """(program, source text, build options) for a kernel enqueue (§5.4)."""
    log = cap.log
    if krec is not None and krec.program is not None and log is not None:
        prec = log.program_at(krec.program, krec.entry_offset)
        if prec is not None and prec.number is not None:
            prog = cap._programs_by_number.get(prec.number)
            if prog is not None and prog.source_path is not None:
                return prog, cap.program_source(prog), prog.options
    if replay is not None and getattr(replay, "kernel_source", None):
        src = bytes(replay.kernel_source).replace(b"\x00", b"").decode("utf-8", "replace")
        opts = getattr(replay, "build_options", "") or ""
        # the CLI_<P4>_<H8> hash of kernel.cl names its program (capture-format §5.2)
        h8 = f"{cli_hash64(bytes(replay.kernel_source)) & 0xFFFFFFFF:08X}"
        same = [p for p in cap._programs if p.hash == h8 and cap.program_source(p) == src]
        if same:
            fit = [p for p in same if p.options.strip() == opts.strip()]
            return (fit or same)[-1], src, opts
        for prog in cap._programs:
            if cap.program_source(prog) == src:
                return prog, src, opts
        return None, src, opts
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
        rx = re.compile(_KERNEL_DEF_RE.format(re.escape(kernel_name)), re.DOTALL)
        hits = [p for p in cap._programs if rx.search(cap.program_source(p))]
        if len(hits) > 1:
            # keep the programs whose signature fits the argument values the dumps hold
            fit = [p for p in hits if _fits(cap, enq.number, kernel_name, p)]
            hits = fit or hits
        if hits:
            if len(hits) > 1:
                enq.problems.append(
                    Problem(
                        f"{len(hits)} programs define a kernel {kernel_name!r}; "
                        f"using program {hits[-1].number}",
                        enqueue=enq.number,
                    )
                )
            p = hits[-1]
            return p, cap.program_source(p), p.options
    return None, "", ""


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
    order = np.argsort(cap.numbers, kind="stable")
    rows: list[tuple[int, str, bool]] = []
    for pos in order.tolist():
        kid = int(cap.kernel_ids[pos])
        if kid >= 0:
            n, rec = int(cap.numbers[pos]), bool(cap.recovered[pos])
            rows.append((n, cap.kernel_names[kid], rec))
    anchors = [(n, defs[k][0].number) for n, k, _ in rows if len(defs.get(k, [])) == 1]
    anchor_numbers = [n for n, _ in anchors]
    out: dict[int, tuple[Program, str]] = {}
    high = -1
    for n, kname, recovered in rows:
        cands = defs.get(kname, [])
        prog: Program | None = None
        how = ""
        folder = (getattr(cap.dumps, "replay", {}) or {}).get(n)
        if len(cands) == 1:
            prog = cands[0]
        elif folder is not None:
            rf = cap._replay(n)
            if rf is not None and rf.kernel_source:
                h8 = f"{cli_hash64(bytes(rf.kernel_source)) & 0xFFFFFFFF:08X}"
                same = [p for p in cands if p.hash == h8]
                prog = same[-1] if same else None
        if prog is None and recovered and len(cands) > 1:
            j = bisect.bisect_right(anchor_numbers, n)
            nxt = anchors[j][1] if j < len(anchors) else 1 << 62
            new = [p for p in cands if high < p.number <= nxt]
            old = [p for p in reversed(cands) if p.number <= high]
            # signatures are parsed lazily: the first candidate in build order that fits
            order_ = [*new, *old]
            if len(order_) == 1:
                prog = order_[0]
            else:
                prog = next((p for p in order_ if _fits(cap, n, kname, p)), None)
                prog = prog or (order_ or cands)[0]
            how = (
                f"{len(cands)} programs define kernel {kname!r} "
                f"({', '.join(str(p.number) for p in cands)}) and the log that said which "
                f"is lost: using program {prog.number}, the first in build order whose "
                "signature fits the argument values"
            )
        if prog is not None:
            high = max(high, prog.number)
            if recovered:
                out[n] = (prog, how)
    with cap._lock:
        cap._assigned = out
    return out


def _fits(cap: Capture, number: int, kname: str, prog: Program) -> bool:
    """False when the SetKernelArg/Replay values of enqueue ``number`` cannot be the
    arguments of ``kname`` in ``prog`` (another count, or a value of another size)."""
    source = cap.program_source(prog)
    scratch: list[Problem] = []
    key = str(prog.source_path) + "\x00" + prog.options
    sigs = _signature(cap, key, source, prog.options, scratch, number)
    sig = sigs.get(kname)
    if sig is None:
        return False
    params = list(sig.params)
    known = _ska_indexes(cap, number, kname)
    if known and max(known) >= len(params):
        return False
    replay = cap._replay(number)
    for i, param in enumerate(params):
        raw = _ska_raw(cap, number, kname, i, None) if i in known else None
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


def _signature(
    cap: Capture, key: str, source: str, options: str, problems: list[Problem], number: int
) -> dict[str, Any]:
    if key in cap._sig_cache:
        return cap._sig_cache[key]
    sigs: dict[str, Any] = {}
    if source:
        # imported here: the preprocessor (pcpp) is needed only once a source is parsed
        from cltui.capture.signature import parse_kernels

        try:
            sigs = dict(parse_kernels(source, options))
        except Exception as e:
            problems.append(Problem(f"could not parse the kernel source: {e}", enqueue=number))
    cap._sig_cache[key] = sigs
    return sigs


def _decode_kernel(cap: Capture, enq: Enqueue, pos: int, kv: dict[str, str], off: int) -> None:
    number = enq.number
    log = cap.log
    kname = enq.row.kernel or ""
    khandle = li.parse_ptr(kv.get("kernel", "")) if kv.get("kernel") else None
    enq.kernel_handle = khandle
    krec = log.kernel_at(khandle, off) if (log is not None and khandle) else None
    replay = None
    try:
        replay = cap._replay(number)
    except Exception as e:
        enq.problems.append(Problem(f"unreadable replay folder: {e}", enqueue=number))
    if replay is not None:
        enq.replay_dir = Path((getattr(cap.dumps, "replay", {}) or {})[number])
        enq.problems.extend(getattr(replay, "problems", []) or [])
        if not kname:
            kname = replay.kernel_name
    prog, source, options = _program_for(cap, enq, kname, krec, replay)
    enq.program = prog
    if not source:
        enq.problems.append(
            Problem(f"no program source found for kernel {kname!r}", enqueue=number)
        )
    key = str(prog.source_path) if prog is not None else f"replay:{number}"
    sigs = _signature(cap, key + "\x00" + options, source, options, enq.problems, number)
    raw_name = krec.name if krec is not None and krec.name else kname
    sig = sigs.get(raw_name) or sigs.get(kname)
    if source and sig is None and sigs:
        enq.problems.append(
            Problem(f"kernel {kname!r} not found in its program source", enqueue=number)
        )
    params = list(sig.params) if sig is not None else []
    nargs: int | None = len(params) if sig is not None else None
    if nargs is None and krec is not None and log is not None:
        nargs = log.num_args_after(krec.exit_offset)
    setargs: dict[int, li.SetArg] = {}
    if log is not None and khandle and off >= 0:
        stop = krec.entry_offset if krec is not None else 0
        setargs = log.kernel_args_at(khandle, off, stop, nargs)
    indexes = set(range(nargs or 0)) | set(setargs)
    if replay is not None:
        indexes |= set(replay.arguments) | set(replay.locals)
    dumps_pre = {d.arg: d for d in (getattr(cap.dumps, "pre", {}) or {}).get(number, [])}
    dumps_post = {d.arg: d for d in (getattr(cap.dumps, "post", {}) or {}).get(number, [])}
    if replay is not None:
        for i, d in (replay.pre or {}).items():
            dumps_pre.setdefault(i, d)
        for i, d in (replay.post or {}).items():
            dumps_post.setdefault(i, d)
    indexes |= set(dumps_pre) | set(dumps_post)
    if enq.row.recovered and nargs is None:
        indexes |= _ska_indexes(cap, number, kname)
    obj_off = _objects_at(cap, pos)
    memory: set[int] = set(dumps_pre) | set(dumps_post)
    if replay is not None:
        memory |= set(replay.svm_offsets) | set(replay.image_meta)
    # no log: an SVM pointer argument is the memory argument that the SetKernelArg dumps
    # lack (clSetKernelArgSVMPointer writes none) while they hold the launch's others
    ska_set = _ska_indexes(cap, number, kname) if enq.row.recovered else set()
    for i in sorted(indexes):
        param = params[i] if i < len(params) else None
        svm = (
            bool(ska_set)
            and i not in ska_set
            and (
                (param is not None and param.is_pointer and param.address_space != "local")
                or (param is None and i in memory)
            )
        )
        arg = _make_arg(
            cap, enq, i, param, setargs.get(i), replay, kname, obj_off, i in memory, svm
        )
        if (
            log is not None
            and off >= 0
            and i not in setargs
            and arg.raw is None
            and arg.kind is not ArgKind.LOCAL
        ):
            enq.problems.append(
                Problem(
                    f"argument {i}: no clSetKernelArg for it in the log and no dump "
                    "holds its value",
                    enqueue=number,
                )
            )
        arg.pre = dumps_pre.get(i)
        arg.post = dumps_post.get(i)
        enq.args.append(arg)


def _ska_indexes(cap: Capture, number: int, kname: str) -> set[int]:
    """Argument indexes the SetKernelArg dumps hold for a launch of ``kname`` at ``number``
    (its own group and the earlier groups of the same kernel that it completes)."""
    table = getattr(cap.dumps, "setkernelarg", {}) or {}
    out: set[int] = set()
    j = bisect.bisect_right(cap._ska_keys, number) - 1
    steps = 0
    while j >= 0 and steps < 64:
        mine = {i for k, i in table[cap._ska_keys[j]] if k == kname}
        if out and not mine:
            break
        out |= mine
        if 0 in mine:
            break
        j -= 1
        steps += 1
    return out


def _ska_raw(
    cap: Capture, number: int, kname: str, i: int, setarg: li.SetArg | None
) -> bytes | None:
    table = getattr(cap.dumps, "setkernelarg", {}) or {}
    path = None
    if setarg is not None and setarg.counter is not None:
        path = table.get(setarg.counter, {}).get((kname, i))
    elif setarg is None and cap._ska_keys:
        j = bisect.bisect_right(cap._ska_keys, number) - 1
        while j >= 0 and path is None:
            path = table[cap._ska_keys[j]].get((kname, i))
            j -= 1
    if path is None:
        return None
    try:
        return read_bytes_inside(cap.path, path)
    except OSError:
        return None


def _make_arg(
    cap: Capture,
    enq: Enqueue,
    i: int,
    param: Any,
    setarg: li.SetArg | None,
    replay: Any,
    kname: str,
    off: int,
    memory_hint: bool = False,
    svm_hint: bool = False,
) -> KernelArg:
    number = enq.number
    arg = KernelArg(index=i, kind=ArgKind.UNKNOWN, size=setarg.size if setarg else 0)
    ctype = None
    if param is not None:
        ctype = param.ctype
        arg.name = param.name
        arg.type_name = param.type_text
        arg.address_space = param.address_space
        arg.access = param.access
    # raw bytes: SetKernelArg dump > Replay Argument file > log text
    raw = None
    if setarg is None or not setarg.is_svm:
        raw = _ska_raw(cap, number, kname, i, setarg)
        if raw is not None:
            arg.raw_source = "setkernelarg"
    if raw is None and replay is not None and i in replay.arguments:
        raw = replay.arguments[i]
        arg.raw_source = "replay"
    if raw is None and setarg is not None and setarg.raw is not None:
        raw = setarg.raw
        arg.raw_source = "log"
    arg.raw = raw
    if not arg.size and raw is not None:
        arg.size = len(raw)
    ckind: str | None = None
    if param is not None:
        ckind = "pointer" if param.is_pointer else param.ctype.kind
    is_local_ptr = ckind == "pointer" and (param.address_space or "") == "local"
    local = replay.locals.get(i) if replay is not None else None
    if setarg is not None and setarg.is_svm:
        arg.kind = ArgKind.SVM
        arg.handle = setarg.pointer
    elif svm_hint and raw is not None and len(raw) == 8:
        arg.kind = ArgKind.SVM  # the Replay folder's Argument holds the allocation base
        arg.handle = int.from_bytes(raw, "little")
    elif is_local_ptr or (local is not None and raw is None):
        arg.kind = ArgKind.LOCAL
        arg.local_size = local if local is not None else (setarg.size if setarg else None)
    elif (
        (setarg is not None and setarg.sampler is not None)
        or ckind == "sampler"
        or (ckind is None and replay is not None and i in getattr(replay, "samplers", {}))
    ):
        arg.kind = ArgKind.SAMPLER
        arg.sampler = setarg.sampler if setarg is not None else None
        if replay is not None and i in getattr(replay, "samplers", {}):
            arg.sampler = arg.sampler or replay.samplers[i]
        if arg.sampler is None and raw is not None and len(raw) == 8 and cap.log:
            arg.handle = int.from_bytes(raw, "little")
            arg.sampler = cap.log.sampler_at(arg.handle, off)
    elif ckind in ("pointer", "image") or (
        ckind is None and (memory_hint or _is_mem(cap, raw, off))
    ):
        h = int.from_bytes(raw[:8], "little") if raw is not None and len(raw) >= 8 else None
        arg.handle = h
        if h == 0:
            arg.kind = ArgKind.NULL
        else:
            arg.mem = _mem(cap, h, off)
            svm = replay.svm_offsets.get(i) if replay is not None else None
            if arg.mem is None and h is not None and cap.log is not None and svm is None:
                alloc = cap.log.svm_containing(h, off)
                if alloc is not None:
                    arg.kind = ArgKind.SVM
                    arg.mem = alloc
                    arg.svm_offset = h - alloc.handle
            if arg.kind is ArgKind.UNKNOWN:
                if (
                    ckind == "image"
                    or (arg.mem is not None and arg.mem.kind == "image")
                    or (ckind is None and replay is not None and i in replay.image_meta)
                ):
                    arg.kind = ArgKind.IMAGE
                else:
                    arg.kind = ArgKind.BUFFER
    elif raw is not None or ckind is not None:
        arg.kind = ArgKind.SCALAR
    elif setarg is not None:
        # a size without a value and no type: a __local argument or an unprinted scalar
        arg.kind = ArgKind.LOCAL if setarg.size not in (1, 2, 4, 8, 16) else ArgKind.UNKNOWN
        if arg.kind is ArgKind.LOCAL:
            arg.local_size = setarg.size
    if arg.kind is ArgKind.SVM:
        if arg.mem is None and arg.handle and cap.log is not None:
            alloc = cap.log.svm_containing(arg.handle, off)
            if alloc is not None:
                arg.mem = alloc
                arg.svm_offset = arg.handle - alloc.handle
        svm = replay.svm_offsets.get(i) if replay is not None else None
        if svm is not None:
            arg.svm_offset = svm
    # dtype and value
    if ctype is not None and ckind not in ("image", "sampler"):
        arg.dtype = ctype.dtype
        pointee = ctype.element if ctype.kind == "pointer" else None
        arg.ctype = pointee if pointee is not None else ctype
    if arg.kind is ArgKind.SCALAR and raw is not None and ctype is not None:
        arg.value = decode_value(raw, ctype)
        size = ctype.size
        if size and len(raw) != size:
            enq.problems.append(
                Problem(
                    f"argument {i}: {len(raw)} value bytes for type {arg.type_name} ({size} bytes)",
                    enqueue=number,
                )
            )
    elif arg.kind is ArgKind.SCALAR and raw is None and setarg is not None:
        enq.problems.append(
            Problem(
                f"argument {i}: the log prints no value for {setarg.size}-byte values and "
                "no SetKernelArg/Replay dump holds it",
                enqueue=number,
            )
        )
    return arg


def _is_mem(cap: Capture, raw: bytes | None, off: int) -> bool:
    if raw is None or len(raw) != 8 or cap.log is None:
        return False
    h = int.from_bytes(raw, "little")
    return h == 0 or _mem(cap, h, off) is not None


def _dump_problems(cap: Capture, enq: Enqueue) -> list[Problem]:
    out: list[Problem] = []
    for a in enq.args:
        for which, d in (("pre", a.pre), ("post", a.post)):
            if d is None:
                continue
            if a.kind not in (ArgKind.BUFFER, ArgKind.IMAGE, ArgKind.SVM, ArgKind.UNKNOWN):
                out.append(
                    Problem(
                        f"argument {a.index} ({a.type_name or a.kind.value}) is not a memory "
                        f"object, yet the layer dumped a {which} buffer for it (stale "
                        "argument state of an earlier kernel with the same handle)",
                        _rel(cap.path, d.path),
                        enq.number,
                    )
                )
                continue
            if d.hashed:
                continue
            size = d.size
            where = _rel(cap.path, d.path)
            if d.is_image and d.image_region is not None and d.image_bpp:
                w, h, dd = d.image_region
                want = w * h * dd * d.image_bpp // 8
                if size != want:
                    out.append(
                        Problem(
                            f"argument {a.index}: {which} image dump holds {size}"
                            f" bytes, its name says {want}",
                            where,
                            enq.number,
                        )
                    )
                if a.mem is not None and a.mem.image is not None:
                    reg = li.image_region(a.mem.image)
                    if reg != d.image_region:
                        out.append(
                            Problem(
                                f"argument {a.index}: {which} image dump region "
                                f"{d.image_region} differs from the image {reg}",
                                where,
                                enq.number,
                            )
                        )
            elif (
                a.mem is not None and a.mem.size and a.kind is ArgKind.BUFFER and size != a.mem.size
            ):
                out.append(
                    Problem(
                        f"argument {a.index}: {which} dump holds {size} bytes, the buffer "
                        f"has {a.mem.size}",
                        where,
                        enq.number,
                    )
                )
            if a.dtype is not None and a.dtype.itemsize and size % a.dtype.itemsize:
                out.append(
                    Problem(
                        f"argument {a.index}: {which} dump size {size} is not a multiple of "
                        f"{a.type_name} ({a.dtype.itemsize} bytes)",
                        where,
                        enq.number,
                    )
                )
    return out
