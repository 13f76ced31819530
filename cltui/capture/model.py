"""The capture model: plain data classes that every other layer reads.

This module is the contract between the parsers (``log``, ``files``,
``signature``) and the views (CLI, TUI, replay, export).  It holds no parsing
logic; :mod:`cltui.capture.capture` builds these objects lazily.

Everything here is stdlib + numpy only.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from cltui.capture.cltypes import CType
from cltui.capture.confine import check_inside, map_bytes, read_bytes_inside
from cltui.errors import CltuiError


class CaptureError(CltuiError):
    """The one documented error type of the capture layer.

    Raised only when nothing useful can be opened at all (not a directory, no
    log and no dumps).  Everything partial is reported as :class:`Problem`.
    """


CAPTURE_HOLDS = (
    "clintercept_log.txt, clintercept_report.txt, memDump*/, SetKernelArg/, Replay/ or "
    "CLI_*_source.cl (written by the Intercept Layer's cliloader)"
)


class NotACapture(CaptureError):
    """The path is not a capture folder: missing, a file, or a folder holding none of the
    layer's files.  The message is one line that says what a capture folder holds."""


class EnqueueKind(enum.IntEnum):
    """What an enqueue does; stored as uint8 in the index."""

    KERNEL = 0  # clEnqueueNDRangeKernel
    TASK = 1  # clEnqueueTask
    READ = 2  # Read{Buffer,BufferRect,Image}
    WRITE = 3  # Write{Buffer,BufferRect,Image}
    COPY = 4  # Copy{Buffer,BufferRect,Image,ImageToBuffer,BufferToImage}
    FILL = 5  # Fill{Buffer,Image}
    MAP = 6  # Map{Buffer,Image}
    UNMAP = 7  # UnmapMemObject
    MARKER = 8  # Marker, MarkerWithWaitList, WaitForEvents
    BARRIER = 9  # Barrier, BarrierWithWaitList
    SVM = 10  # clEnqueueSVM*
    USM = 11  # clEnqueueMemcpyINTEL, MemFillINTEL, ...
    MIGRATE = 12  # MigrateMemObjects
    OTHER = 13  # anything else that increments the counter

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class DeviceTime:
    """One ``Device Time for ... (enqueue N)`` line, in nanoseconds."""

    queued_to_submit: int
    submit_to_start: int
    start_to_end: int


@dataclass(frozen=True, slots=True)
class Problem:
    """A specific, user-facing message about something unreadable.

    ``where`` is a path relative to the capture (or ``""``), ``enqueue`` the
    enqueue it concerns, if any.  ``message`` is one line, no traceback.
    """

    message: str
    where: str = ""
    enqueue: int | None = None
    severity: str = "warning"  # "warning" | "error"

    def __str__(self) -> str:
        parts = []
        if self.where:
            parts.append(self.where)
        if self.enqueue is not None:
            parts.append(f"enqueue {self.enqueue}")
        prefix = ": ".join(parts)
        return f"{prefix}: {self.message}" if prefix else self.message


class ArgKind(enum.Enum):
    BUFFER = "buffer"  # cl_mem buffer or sub-buffer
    IMAGE = "image"
    SAMPLER = "sampler"
    LOCAL = "local"  # __local size, no value
    SCALAR = "scalar"  # by-value (scalars, vectors, structs)
    SVM = "svm"  # clSetKernelArgSVMPointer / MemPointerINTEL
    NULL = "null"  # a NULL cl_mem (value = (nil) for a pointer parameter)
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class SamplerDesc:
    normalized_coords: bool
    addressing_mode: str  # e.g. "CL_ADDRESS_CLAMP"
    filter_mode: str  # e.g. "CL_FILTER_LINEAR"

    @property
    def text(self) -> str:
        norm = "CL_TRUE" if self.normalized_coords else "CL_FALSE"
        return (
            f"CL_SAMPLER_NORMALIZED_COORDS = {norm}, "
            f"CL_SAMPLER_ADDRESSING_MODE = {self.addressing_mode}, "
            f"CL_SAMPLER_FILTER_MODE = {self.filter_mode}"
        )


@dataclass(frozen=True, slots=True)
class ImageFormat:
    channel_order: str  # "CL_RGBA"
    channel_data_type: str  # "CL_FLOAT"
    image_type: str  # "CL_MEM_OBJECT_IMAGE2D"
    width: int
    height: int
    depth: int
    array_size: int
    row_pitch: int = 0
    slice_pitch: int = 0


@dataclass(frozen=True, slots=True)
class MemObject:
    """A memory object created in the log (buffer, sub-buffer, image, SVM/USM)."""

    handle: int
    kind: str  # "buffer" | "subbuffer" | "image" | "svm" | "usm"
    size: int  # bytes (images: 0 when unknown)
    flags: str  # "CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR"
    created_at: int  # enqueue counter at creation (number the next enqueue gets)
    line_offset: int  # byte offset of the creation line in the log
    parent: int | None = None  # sub-buffer parent handle
    origin: int = 0  # sub-buffer origin
    image: ImageFormat | None = None


@dataclass(frozen=True, slots=True)
class Dump:
    """One buffer/image dump file (memDump Pre/Post or Replay Pre/Post)."""

    path: Path
    enqueue: int
    kernel: str  # short kernel name from the file name
    arg: int
    mem_id: int  # the layer's unique memory-object number (M4)
    is_image: bool
    image_region: tuple[int, int, int] | None = None  # W, H, D
    image_bpp: int | None = None  # bits per texel
    hashed: bool = False  # the file holds a 64-bit hash, not data
    # the capture folder: the file is read only while it lies inside it (cltui.capture.confine)
    root: Path | None = field(default=None, compare=False)

    @property
    def size(self) -> int:
        try:
            if self.root is not None:
                check_inside(self.root, self.path)
            return self.path.stat().st_size
        except OSError:
            return 0

    def hash_value(self) -> int | None:
        """The 64-bit content hash a hash-only dump holds (None for raw dumps)."""
        if not self.hashed:
            return None
        try:
            return int(read_bytes_inside(self.root, self.path).strip() or b"0", 16)
        except (OSError, ValueError):
            return None

    def array(self, dtype: npt.DTypeLike = np.uint8) -> npt.NDArray[Any]:
        """A read-only memmap of the data, viewed as ``dtype`` (trailing bytes dropped).
        Raises ``OSError`` (:class:`~cltui.capture.confine.OutsideCapture` for a link that
        leads out of the capture)."""
        return map_bytes(self.path, dtype, root=self.root)


@dataclass(frozen=True, slots=True)
class Program:
    number: int  # P4
    hash: str  # H8, upper-case hex
    source_path: Path | None
    options: str  # build options actually passed (from *_options.txt)
    options_path: Path | None
    build_logs: dict[str, Path] = field(default_factory=dict)  # device tag -> file
    binaries: dict[str, Path] = field(default_factory=dict)  # device tag -> file
    handle: int | None = None  # cl_program handle in the log


@dataclass(frozen=True, slots=True)
class EnqueueRow:
    """What the list view needs for one enqueue: cheap, from the index arrays."""

    number: int
    kind: EnqueueKind
    function: str  # "clEnqueueNDRangeKernel"
    kernel: str | None  # short kernel name (None for non-kernels)
    global_size: tuple[int, ...] | None
    local_size: tuple[int, ...] | None  # None = NULL local size
    device_time: DeviceTime | None
    has_pre: bool
    has_post: bool
    has_replay: bool
    hashes_only: bool
    recovered: bool = False  # rebuilt from dump files: the log lost this enqueue


@dataclass(slots=True)
class KernelArg:
    """One argument of a kernel enqueue, typed by the kernel signature."""

    index: int
    kind: ArgKind
    size: int  # arg_size passed to clSetKernelArg (0 when unknown)
    name: str | None = None  # from the signature
    type_name: str | None = None  # "float4", "__global const float*", "clip_params_t"
    address_space: str | None = None  # "global" | "local" | "constant" | "private"
    access: str | None = None  # "read_only" | "write_only" | "read_write" (images)
    dtype: np.dtype[np.generic] | None = None  # element dtype (pointers) or value dtype (scalars)
    # the signature's element type (pointers) or value type (scalars); None for images,
    # samplers and arguments without a signature (cltui.capture.elements)
    ctype: CType | None = None
    raw: bytes | None = None  # the value bytes (SetKernelArg dump, Replay Argument, or log)
    raw_source: str = ""  # where ``raw`` came from: "setkernelarg" | "replay" | "log" | ""
    value: object = None  # decoded scalar value (number, tuple for vectors, dict for structs)
    handle: int | None = None  # cl_mem / sampler handle, SVM pointer
    mem: MemObject | None = None
    sampler: SamplerDesc | None = None
    svm_offset: int = 0
    local_size: int | None = None
    pre: Dump | None = None
    post: Dump | None = None


@dataclass(slots=True)
class Enqueue:
    """Everything known about one enqueue (decoded lazily from the log)."""

    row: EnqueueRow
    line: str  # the decoded entry line (without prefix fields)
    queue: int | None
    event: int | None
    global_offset: tuple[int, ...] | None
    args: list[KernelArg] = field(default_factory=list)  # kernels only
    program: Program | None = None
    kernel_handle: int | None = None
    replay_dir: Path | None = None
    device: str | None = None  # device name from the queue creation line
    # transfers
    mem: MemObject | None = None  # buffer/image a transfer touches
    dst_mem: MemObject | None = None  # copies: destination
    offset: int | None = None
    nbytes: int | None = None
    blocking: bool | None = None
    problems: list[Problem] = field(default_factory=list)
    # recovered enqueues: what rebuilt it ("memdump", "replay", "setkernelarg", "device_time",
    # "mapunmap"; see cltui.capture.recovery.SOURCE_TEXT)
    recovered_from: tuple[str, ...] = ()

    @property
    def number(self) -> int:
        return self.row.number

    @property
    def recovered(self) -> bool:
        """True when the log lost this enqueue and the dump files rebuilt it."""
        return self.row.recovered
