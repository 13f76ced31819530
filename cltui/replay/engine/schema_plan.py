"""The typed contract of a replay plan (a bundle's ``manifest.json``): what the plan builder
writes and the engine runs, as TypedDicts (plain dicts at run time).  Part of the engine
package, which a bundle carries whole; :mod:`.schema` is where its users import it from.
Standard library only.
"""

from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "ArgSpec", "ArgTolerance", "Change", "CheckSpec", "DataRef", "ImageSpec", "LoadSpec",
    "LostRun", "Manifest", "MemorySpec", "Mode", "PlanSource", "ProgramSpec", "Scope",
    "ScopeKernel", "ScopeTransfer", "Skipped", "StepSpec", "ToleranceSpec", "TransferOp",
    "TransferSpec",
]  # fmt: skip

Mode = Literal["chain", "isolated", "strict"]


class ToleranceSpec(TypedDict, total=False):
    """A tolerance, or the keys of one that override another (``compare.Tolerance``)."""

    atol: float
    rtol: float
    ulp: int


ArgTolerance = dict[int, ToleranceSpec]  # argument index -> the keys that override the plan's

class PlanSource(TypedDict):
    capture: str
    range: str | None
    mode: Mode


class DataRef(TypedDict):
    """A file the plan reads: its path (relative to the capture or the bundle) and size."""

    path: str
    size: int
    sha256: NotRequired[str]  # in a bundle: the content's hash (the file is data/<sha256>.bin)
    captured_path: NotRequired[str]  # in a bundle: where the capture had it
    origin: NotRequired[str]  # "variant": a file cltui wrote for a variant (an absolute path)


class ProgramSpec(TypedDict):
    label: str
    source: str | None  # a data key
    il: NotRequired[str | None]  # SPIR-V, a data key
    options: str
    binaries: list[dict[str, str]]  # {data, device}
    include_dirs: NotRequired[list[str]]  # bundle folders (the exporter adds them)
    captured_options: NotRequired[str]  # in a bundle: the options before -I were rewritten


class ImageSpec(TypedDict):
    order: str
    type: str
    image_type: str
    shape: list[int]
    element_size: int


class MemorySpec(TypedDict):
    kind: Literal["buffer", "subbuffer", "image", "svm"]
    label: str
    size: int
    image: NotRequired[ImageSpec]
    parent: NotRequired[str]  # a sub-buffer's buffer and its offset there
    origin: NotRequired[int]
    svm_level: NotRequired[str]  # SVM: "coarse", "fine", "fine+atomics" (the capture's flags)


class ArgSpec(TypedDict, total=False):
    """One kernel argument: ``kind`` buffer/image/svm (``mem``), scalar (``hex``), local
    (``size``), sampler (``normalized``, ``addressing``, ``filter``), null."""

    index: int
    kind: str
    name: str | None
    type: str | None
    mem: str
    offset: int
    hex: str
    size: int
    value: object  # the scalar decoded for people (JSON); the engine uses hex
    normalized: bool
    addressing: str
    filter: str


class LoadSpec(TypedDict):
    mem: str
    data: str  # a data key
    why: Literal["input", "verify", "reload"]
    note: str


class CheckSpec(TypedDict):
    mem: str
    args: list[int]
    label: str
    dtype: str | list[Any] | None  # dtypes.DTypeSpec: a numpy dtype string, or a struct's fields
    shape: list[int] | None
    data: NotRequired[str]  # a data key; absent when there is nothing to compare with
    hash64: NotRequired[str | None]  # a hash-only dump's 64-bit hash (hex)
    note: NotRequired[str]
    tol: NotRequired[ToleranceSpec]
    after_unreplayed: NotRequired[int]


class TransferOp(TypedDict, total=False):
    op: Literal["fill", "copy", "copy_rect", "copy_whole"]
    src: str
    src_offset: int
    dst_offset: int
    offset: int
    size: int
    pattern: str  # hex
    src_origin: list[int] | None  # copy_rect
    dst_origin: list[int] | None
    region: list[int]
    src_row_pitch: int | None
    src_slice_pitch: int | None
    dst_row_pitch: int | None
    dst_slice_pitch: int | None


class TransferSpec(TypedDict):
    enqueue: int
    function: str
    mem: str
    op: TransferOp | None
    replayed: str | None  # "op" | "reload" | "input" | None
    why: str


# one kernel enqueue of the plan ("global" is a Python keyword: the functional form)
StepSpec = TypedDict(
    "StepSpec",
    {
        "enqueue": int,
        "kernel": str,
        "program": str,
        "device": NotRequired[str | None],
        "recovered": NotRequired[bool],
        "captured_time": NotRequired[dict[str, int]],
        "global": list[int],
        "local": list[int] | None,
        "offset": list[int] | None,
        "args": list[ArgSpec],
        "loads": list[LoadSpec],
        "prechecks": list[CheckSpec],
        "checks": list[CheckSpec],
        "transfers": NotRequired[list[TransferSpec]],
    },
)


class Change(TypedDict):
    """A host-side change the capture shows between two kernels of the range."""

    enqueue: int
    mem: str
    label: str
    args: list[int]
    after: int
    by: list[str]
    transfers: list[int]
    action: Literal["replay", "reload", "none", "unreplayed"]


class ScopeKernel(TypedDict):
    enqueue: int
    kernel: str | None
    replayed: bool
    why: NotRequired[str]  # only when it is not replayed
    recovered: NotRequired[bool]  # only when true


class ScopeTransfer(TypedDict):
    enqueue: int
    function: str
    mem: str
    label: str
    replayed: str | None
    why: str


class Scope(TypedDict, total=False):
    """Every kernel enqueue and host transfer inside the range, replayed or not."""

    kernels: list[ScopeKernel]
    transfers: list[ScopeTransfer]


class Skipped(TypedDict):
    enqueue: int
    kernel: str | None
    why: str
    recovered: NotRequired[bool]  # only when true


class LostRun(TypedDict):
    first: int
    last: int
    count: int
    why: str


class Manifest(TypedDict):
    """A replay plan: what the engine runs (and a bundle's ``manifest.json``)."""

    format: str
    version: int
    source: PlanSource
    tolerance: ToleranceSpec
    data: dict[str, DataRef]
    programs: dict[str, ProgramSpec]
    memory: dict[str, MemorySpec]
    steps: list[StepSpec]
    changes: list[Change]
    notes: list[str]
    scope: NotRequired[Scope]
    skipped: NotRequired[list[Skipped]]
    lost: NotRequired[list[LostRun]]
    bundle: NotRequired[dict[str, Any]]  # what the exporter adds (docs/cli-json.md)
    variant: NotRequired[dict[str, Any]]  # the changes a variant made (cltui try/sweep/export)
