"""A kernel launch: its kernel handle and record, Replay folder, program and signature, and
its arguments in index order with their Pre/Post dumps."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from cltui.capture import log as li
from cltui.capture.decode.args import make_arg, set_arg_indexes
from cltui.capture.decode.binding import bind
from cltui.capture.decode.enqueue_program import program_for, signatures
from cltui.capture.model import ArgKind, Dump, Enqueue, Problem
from cltui.capture.replayfolder import ReplayFolder

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.capture.signature import Param


def objects_at(cap: Capture, pos: int) -> int:
    """The log offset whose live objects (buffers, samplers) an enqueue's handles name:
    its own line; for a recovered enqueue past the end of the log, the end of the log;
    -1 (none) for one the log lost in its middle or start, whose objects it lost too."""
    off = int(cap.offsets[pos])
    if off >= 0 or cap.log is None:
        return off
    if bool(cap.recovered[pos]) and int(cap.numbers[pos]) > cap._max_logged:
        return cap.log.size
    return -1


def decode_kernel(cap: Capture, enq: Enqueue, pos: int, kv: dict[str, str], off: int) -> None:
    """Fill ``enq`` (a kernel launch at log offset ``off``, -1 if the log lost it) with its
    kernel handle, Replay folder, program and arguments."""
    number = enq.number
    log = cap.log
    kname = enq.row.kernel or ""
    khandle = li.parse_ptr(kv.get("kernel", "")) if kv.get("kernel") else None
    enq.kernel_handle = khandle
    krec = log.kernel_at(khandle, off) if (log is not None and khandle) else None
    replay = _replay_folder(cap, enq)
    if replay is not None and not kname:
        kname = replay.kernel_name
    params = _params(cap, enq, kname, krec, replay)
    nargs: int | None = len(params) if params is not None else None
    if nargs is None and krec is not None and log is not None:
        nargs = log.num_args_after(krec.exit_offset)
    setargs: dict[int, li.SetArg] = {}
    if log is not None and khandle and off >= 0:
        # the kernel object's arguments start empty where it begins (its identity)
        setargs = log.kernel_args_at(khandle, off, log.kernel_since(khandle, off), nargs)
    dumps_pre, dumps_post = _arg_dumps(cap, number, replay)
    indexes = set(range(nargs or 0)) | set(setargs) | set(dumps_pre) | set(dumps_post)
    if replay is not None:
        indexes |= set(replay.arguments) | set(replay.locals)
    indexes -= _not_its_own(enq, indexes, nargs, setargs, krec is not None)
    if enq.row.recovered and nargs is None:
        indexes |= set_arg_indexes(cap, number, kname)
    memory: set[int] = set(dumps_pre) | set(dumps_post)
    if replay is not None:
        memory |= set(replay.svm_offsets) | set(replay.image_meta)
    # no log: an SVM pointer argument is the memory argument that the SetKernelArg dumps
    # lack (clSetKernelArgSVMPointer writes none) while they hold the launch's others
    ska_set = set_arg_indexes(cap, number, kname) if enq.row.recovered else set()
    obj_off = objects_at(cap, pos)
    logged = log is not None and off >= 0
    for i in sorted(indexes):
        param = params[i] if params is not None and i < len(params) else None
        svm = (
            bool(ska_set)
            and i not in ska_set
            and (
                (param is not None and param.is_pointer and param.address_space != "local")
                or (param is None and i in memory)
            )
        )
        arg = make_arg(
            cap, enq, i, param, setargs.get(i), replay, kname, obj_off, i in memory, svm
        )
        if logged and i not in setargs and arg.raw is None and arg.kind is not ArgKind.LOCAL:
            enq.problems.append(
                Problem(
                    f"argument {i}: no clSetKernelArg for it in the log and no dump "
                    "holds its value",
                    enqueue=number,
                )
            )
        arg.pre = dumps_pre.get(i)
        arg.post = dumps_post.get(i)
        bind(cap, enq, pos, arg)
        enq.args.append(arg)


def _not_its_own(
    enq: Enqueue, indexes: set[int], nargs: int | None, setargs: dict[int, li.SetArg],
    created: bool,
) -> set[int]:  # fmt: skip
    """The argument indexes a file names that this kernel object has not: past its
    parameter count ``nargs``, or (no count, the log showing its creation: ``created``)
    never set on it (``setargs``: what the log set on it since it began); an index the log
    set on it is its own whatever the signature says.  The layer keeps a
    kernel's arguments by handle, so a kernel created with the handle of a released one may
    have its dumps carry the released kernel's arguments; each is a problem, not an
    argument."""
    if nargs is not None:
        stale = {i for i in indexes if i >= nargs and i not in setargs}
    elif setargs and created:
        stale = {i for i in indexes if i not in setargs}
    else:
        return set()
    if stale:
        which = ", ".join(map(str, sorted(stale)))
        many = "s" if len(stale) > 1 else ""
        has = f"has {nargs} argument{'s' if nargs != 1 else ''}" if nargs is not None else \
            "had no clSetKernelArg for them since its creation"
        enq.problems.append(
            Problem(
                f"argument{many} {which}: the dumps name {'them' if many else 'it'} but the "
                f"kernel {has} (left by a released kernel with the same handle?): not "
                f"replayed as {'arguments' if many else 'an argument'}",
                enqueue=enq.number,
            )
        )
    return stale


def _replay_folder(cap: Capture, enq: Enqueue) -> ReplayFolder | None:
    """The enqueue's Replay folder (None: none, or unreadable: a problem says why); its
    path and problems go to ``enq``."""
    number = enq.number
    replay = None
    try:
        replay = cap._replay(number)
    except Exception as e:
        enq.problems.append(Problem(f"unreadable replay folder: {e}", enqueue=number))
    if replay is not None:
        enq.replay_dir = Path(cap.dumps.replay[number])
        enq.problems.extend(replay.problems)
    return replay


def _params(
    cap: Capture,
    enq: Enqueue,
    kname: str,
    krec: li.KernelRecord | None,
    replay: ReplayFolder | None,
) -> list[Param] | None:
    """The kernel's parameters from its program's signature (None: no signature), the
    program set on ``enq``; problems say what is missing."""
    number = enq.number
    prog, source, options = program_for(cap, enq, kname, krec, replay)
    enq.program = prog
    if not source:
        enq.problems.append(
            Problem(f"no program source found for kernel {kname!r}", enqueue=number)
        )
    key = str(prog.source_path) if prog is not None else f"replay:{number}"
    sigs = signatures(cap, key + "\x00" + options, source, options, enq.problems, number)
    raw_name = krec.name if krec is not None and krec.name else kname
    sig = sigs.get(raw_name) or sigs.get(kname)
    if source and sig is None and sigs:
        enq.problems.append(
            Problem(f"kernel {kname!r} not found in its program source", enqueue=number)
        )
    return list(sig.params) if sig is not None else None


def _arg_dumps(
    cap: Capture, number: int, replay: ReplayFolder | None
) -> tuple[dict[int, Dump], dict[int, Dump]]:
    """Pre and Post dumps by argument index: the dump folders', then the Replay folder's."""
    dumps_pre = {d.arg: d for d in cap.dumps.pre.get(number, [])}
    dumps_post = {d.arg: d for d in cap.dumps.post.get(number, [])}
    if replay is not None:
        for i, d in replay.pre.items():
            dumps_pre.setdefault(i, d)
        for i, d in replay.post.items():
            dumps_post.setdefault(i, d)
    return dumps_pre, dumps_post
