"""``cltui show DUMPDIR N``: everything known about one enqueue."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

import click

from cltui.commands._common import emit_json, fail, load_capture, row_json
from cltui.commands.show_text import print_text

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from cltui.capture.capture import Capture
    from cltui.capture.history import HistoryEvent
    from cltui.capture.model import Dump, KernelArg, MemObject, Program


class StatsJSON(TypedDict, total=False):
    nan: int
    inf: int
    min: float
    max: float
    mean: float


class DumpJSON(TypedDict):
    file: str
    bytes: int
    memory_object: int
    hash_only: bool
    image_region: NotRequired[list[int]]
    bits_per_texel: NotRequired[int | None]
    hash: NotRequired[str | None]
    error: NotRequired[str]
    dtype: NotRequired[str]
    elements: NotRequired[int]
    stats: NotRequired[StatsJSON | None]


class ProgramJSON(TypedDict):
    number: int
    hash: str
    source: str | None
    build_options: str
    kernel_line: NotRequired[int]


class ImageJSON(TypedDict):
    type: str
    channel_order: str
    channel_data_type: str
    width: int
    height: int
    depth: int


class MemoryJSON(TypedDict):
    handle: str
    kind: str
    bytes: int
    flags: str
    image: NotRequired[ImageJSON]


class HistoryEventJSON(TypedDict):
    enqueue: int | None
    access: str
    what: str


class HistoryJSON(TypedDict, total=False):
    """The memory object's history (cltui.capture.history), or why there is none."""

    object: str
    last_writer: HistoryEventJSON | None
    next_reader: HistoryEventJSON | None
    event_count: int
    counts: dict[str, int]
    events: list[HistoryEventJSON]
    events_truncated: bool
    notes: list[str]
    error: str


HISTORY_EVENTS = 1000  # events listed in show --json; event_count says how many there are


class ArgJSON(TypedDict):
    """One argument in ``show --json`` (docs/cli-json.md)."""

    index: int
    name: str | None
    kind: str
    type: str | None
    address_space: str | None
    access: str | None
    dtype: str | None
    size: int | None
    value: NotRequired[object]
    raw: NotRequired[str]
    raw_source: NotRequired[str | None]
    memory_object: NotRequired[MemoryJSON]
    sampler: NotRequired[str]
    svm_offset: NotRequired[int | None]
    local_bytes: NotRequired[int]
    pre: NotRequired[DumpJSON | None]
    post: NotRequired[DumpJSON | None]
    history: NotRequired[HistoryJSON]


def _dump_obj(dump: Dump | None, dtype: npt.DTypeLike | None) -> DumpJSON | None:
    if dump is None:
        return None
    import numpy as np

    obj: DumpJSON = {
        "file": str(dump.path),
        "bytes": dump.size,
        "memory_object": dump.mem_id,
        "hash_only": dump.hashed,
    }
    if dump.is_image and dump.image_region:
        obj["image_region"] = list(dump.image_region)
        obj["bits_per_texel"] = dump.image_bpp
    if dump.hashed:
        h = dump.hash_value()
        obj["hash"] = None if h is None else f"{h:x}"
        return obj
    try:
        arr = dump.array(np.uint8 if dtype is None else dtype)
    except (OSError, ValueError) as exc:
        obj["error"] = f"cannot read: {exc}"
        return obj
    obj["dtype"] = str(arr.dtype)
    obj["elements"] = int(arr.shape[0]) if arr.ndim else 0
    obj["stats"] = _stats(arr)
    return obj


def _stats(arr: npt.NDArray[np.generic]) -> StatsJSON | None:
    import numpy as np

    if arr.size == 0 or arr.dtype.names is not None:
        return None
    flat = np.asarray(arr).reshape(-1)
    if flat.dtype.kind not in "biuf":
        return None
    out: StatsJSON = {}
    if flat.dtype.kind == "f":
        finite = np.isfinite(flat)
        out["nan"] = int(np.isnan(flat).sum())
        out["inf"] = int(np.isinf(flat).sum())
        flat = flat[finite]
        if flat.size == 0:
            return out
    out["min"] = flat.min().item()
    out["max"] = flat.max().item()
    out["mean"] = float(flat.astype(np.float64).mean())
    return out


def _value(value: Any) -> Any:
    """A decoded argument value as JSON: vectors are lists, structs objects, and a complex
    scalar (pyopencl's ``cfloat_t``/``cdouble_t``) the object of its two fields
    ``{"real": x, "imag": y}``, as the struct it is."""
    if isinstance(value, complex):
        return {"real": value.real, "imag": value.imag}
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, tuple):
        return [_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _value(v) for k, v in value.items()}
    if hasattr(value, "item"):
        return value.item()
    return value


def _kernel_line(cap: Capture, program: Program, kernel: str | None) -> int | None:
    """The 1-based line where ``kernel``'s definition starts in its program's source (the line
    the app's Source tab scrolls to), or None without a source or a definition found."""
    if not kernel or program.source_path is None:
        return None
    from cltui.capture.spans import kernel_span

    span = kernel_span(cap.program_source(program), kernel)
    return None if span is None else span[0]


def enqueue_to_json(cap: Capture, number: int) -> dict[str, Any]:
    enq = cap.enqueue(number)
    row = enq.row
    data = row_json(row)
    del data["data"]
    data.update(
        {
            "device": enq.device,
            "queue": None if enq.queue is None else hex(enq.queue),
            "global_offset": list(enq.global_offset) if enq.global_offset else None,
            "log_line": enq.line,
        }
    )
    if enq.recovered:
        data["recovered_from"] = list(enq.recovered_from)
    if enq.program is not None:
        data["program"] = _program_json(cap, enq.program, row.kernel)
    if enq.replay_dir is not None:
        data["replay_folder"] = str(enq.replay_dir)
    if row.kind.label != "kernel":
        data["transfer"] = {
            "memory_object": None if enq.mem is None else hex(enq.mem.handle),
            "destination": None if enq.dst_mem is None else hex(enq.dst_mem.handle),
            "offset": enq.offset,
            "bytes": enq.nbytes,
            "blocking": enq.blocking,
        }
    data["args"] = [_arg_json(arg) for arg in enq.args]
    data["problems"] = [str(p) for p in enq.problems]
    return data


def _program_json(cap: Capture, prog: Program, kernel: str | None) -> ProgramJSON:
    out: ProgramJSON = {
        "number": prog.number,
        "hash": prog.hash,
        "source": None if prog.source_path is None else str(prog.source_path),
        "build_options": prog.options,
    }
    line = _kernel_line(cap, prog, kernel)
    if line is not None:
        out["kernel_line"] = line
    return out


def _arg_json(arg: KernelArg) -> ArgJSON:
    a: ArgJSON = {
        "index": arg.index,
        "name": arg.name,
        "kind": arg.kind.value,
        "type": arg.type_name,
        "address_space": arg.address_space,
        "access": arg.access,
        "dtype": None if arg.dtype is None else str(arg.dtype),
        "size": arg.size,
    }
    if arg.value is not None:
        a["value"] = _value(arg.value)
    if arg.raw is not None:
        a["raw"] = arg.raw.hex()
        a["raw_source"] = arg.raw_source
    if arg.mem is not None:
        a["memory_object"] = _memory_json(arg.mem)
    if arg.sampler is not None:
        a["sampler"] = arg.sampler.text
    if arg.kind.value == "svm":
        a["svm_offset"] = arg.svm_offset
    if arg.local_size is not None:
        a["local_bytes"] = arg.local_size
    a["pre"] = _dump_obj(arg.pre, arg.dtype if not (arg.pre and arg.pre.is_image) else None)
    a["post"] = _dump_obj(arg.post, arg.dtype if not (arg.post and arg.post.is_image) else None)
    return a


def _memory_json(mem: MemObject) -> MemoryJSON:
    out: MemoryJSON = {
        "handle": hex(mem.handle),
        "kind": mem.kind,
        "bytes": mem.size,
        "flags": mem.flags,
    }
    if mem.image is not None:
        im = mem.image
        out["image"] = {
            "type": im.image_type,
            "channel_order": im.channel_order,
            "channel_data_type": im.channel_data_type,
            "width": im.width,
            "height": im.height,
            "depth": im.depth,
        }
    return out


@click.command("show", context_settings={"ignore_unknown_options": True})
@click.argument("dumpdir", type=click.Path())
@click.argument("number", type=str)
@click.option("--json", "as_json", is_flag=True, help="JSON object (see docs/cli-json.md).")
def show_cmd(dumpdir: str, number: str, as_json: bool) -> None:
    """Everything known about enqueue NUMBER of DUMPDIR."""
    text = number.strip()
    if not text.isdecimal() or not text.isascii():
        shown = text.encode("unicode_escape").decode("ascii")[:40]
        fail(f"{shown!r} is not an enqueue number (a whole number from 0, as `cltui ls` lists)")
    cap = load_capture(dumpdir, quiet=as_json)
    show_enqueue(cap, int(text), as_json)


def show_enqueue(cap: Capture, number: int, as_json: bool) -> None:
    """What ``cltui show`` prints for enqueue ``number`` of an opened capture."""
    if cap.position_of(number) is None:
        rec = cap.recovery
        if rec is not None and rec.is_lost(number):
            fail(
                f"enqueue {number} was lost with the log ({rec.why}) and no dump file names it"
            )
        fail(f"enqueue {number} is not in this capture (it has {len(cap)} enqueues)")
    data = enqueue_to_json(cap, number)
    add_history(cap, data, whole=as_json)
    if as_json:
        emit_json(data)
        return
    print_text(data)


def add_history(cap: Capture, data: dict[str, Any], whole: bool = True) -> None:
    """A ``history`` for each memory argument of ``data`` (and a transfer's object): the
    whole one (``whole``), else only its object and two neighbours (what the text prints,
    searched from the enqueue outwards)."""
    number = int(data["number"])
    make = history_json if whole else neighbours_json
    for a in data["args"]:
        if a["kind"] in ("buffer", "image", "svm"):
            a["history"] = make(cap, number, int(a["index"]))
    if "transfer" in data and data["transfer"]["memory_object"] is not None:
        data["transfer"]["history"] = make(cap, number, None)


def _event_json(event: HistoryEvent | None) -> HistoryEventJSON | None:
    if event is None:
        return None
    return {"enqueue": event.number, "access": event.access, "what": event.what}


def history_json(cap: Capture, number: int, index: int | None) -> HistoryJSON:
    """The history of enqueue ``number``'s argument ``index`` (None: its transfer's object)."""
    from cltui.capture.history import HistoryUnavailable, history_of

    pos = cap.position_of(number)
    offset = int(cap.offsets[pos]) if pos is not None else -1
    if offset < 0:
        return {"error": "a recovered enqueue: the log does not hold it"}
    try:
        h = history_of(cap, (number, index))
    except HistoryUnavailable as exc:
        return {"error": str(exc)}
    shown = min(len(h), HISTORY_EVENTS)
    return {
        "object": h.label,
        "last_writer": _event_json(h.last_writer(offset)),
        "next_reader": _event_json(h.next_reader(offset)),
        "event_count": len(h),
        "counts": h.counts(),
        "events": [e for i in range(shown) if (e := _event_json(h.event(i))) is not None],
        "events_truncated": shown < len(h),
        "notes": list(h.notes),
    }


def neighbours_json(cap: Capture, number: int, index: int | None) -> HistoryJSON:
    """``object``, ``last_writer`` and ``next_reader`` of :func:`history_json` alone."""
    from cltui.capture.history import HistoryUnavailable, neighbours_of

    try:
        near = neighbours_of(cap, (number, index))
    except HistoryUnavailable as exc:
        return {"error": str(exc)}
    return {"object": near.label, "last_writer": _event_json(near.last_writer),
            "next_reader": _event_json(near.next_reader)}
