"""What the log creates and sets: kernel, program and queue records, ``clSetKernelArg`` states,
image formats and their sizes."""

from __future__ import annotations

import mmap
import re
from dataclasses import dataclass

from cltui.capture import images
from cltui.capture.log.grammar import (
    _COUNTER_TAG,
    _dec,
    parse_ptr,
    parse_sampler_props,
    strip_counter,
)
from cltui.capture.model import (
    CaptureError,
    ImageFormat,
    SamplerDesc,
)
from cltui.errors import Cancelled


class IndexCancelled(Cancelled, CaptureError):
    """Raised when the ``cancel`` event is set while indexing."""

    def __init__(self) -> None:
        super().__init__("cancelled")


@dataclass(slots=True)
class KernelRecord:
    handle: int
    program: int | None  # program handle
    name: str
    entry_offset: int  # offset of the creation entry line
    exit_offset: int


@dataclass(slots=True)
class ProgramRecord:
    handle: int
    number: int | None
    entry_offset: int
    source_path: str | None = None
    options_path: str | None = None
    build_tag: str | None = None  # P4_H8_C4_O8


@dataclass(slots=True)
class QueueRecord:
    handle: int
    device: str | None
    offset: int


@dataclass(slots=True)
class SetArg:
    """One ``clSetKernelArg*`` line, decoded."""

    index: int
    size: int
    text: str  # the value text after ``value = `` (or the four words), "" if none
    raw: bytes | None  # value bytes rebuilt from the text (4/8/16-byte values)
    is_svm: bool
    sampler: SamplerDesc | None
    offset: int  # byte offset of the line
    pointer: int | None  # 8-byte values and SVM pointers as integers
    counter: int | None = None  # EnqueueCounter at set time (= SetKernelArg_<E4> number)


SetArgs = dict[int, SetArg]


def _decode_setarg(m: re.Match[bytes], mm: mmap.mmap, size: int) -> SetArg:
    is_svm = m.group(1) is not None
    idx = int(m.group(2))
    rest = _dec(m.group(3))
    off = m.start()
    if "; EnqueueCounter: " not in rest:
        # the sampler quirk: the counter sits on the next line
        e = m.end()
        if mm[e + 1 : e + 1 + len(_COUNTER_TAG)] == _COUNTER_TAG:
            e2 = mm.find(b"\n", e + 1, min(size, e + 64))
            rest += _dec(mm[e + 1 : e2 if e2 >= 0 else min(size, e + 64)])
    rest, counter = strip_counter(rest)
    if is_svm:
        text = rest.split("value = ", 1)[1].strip() if "value = " in rest else ""
        p = parse_ptr(text)
        return SetArg(idx, 8, text, None, True, None, off, p, counter)
    sz = 0
    ms = re.match(r"size = (\d{1,19})\b", rest)  # longer: no size (int() refuses 4,300 digits)
    if ms:
        sz = int(ms.group(1))
    text = ""
    raw: bytes | None = None
    sampler: SamplerDesc | None = None
    pointer: int | None = None
    if "valueX = " in rest:
        words = re.findall(r"value[XYZW] = (0x[0-9a-fA-F]+)", rest)
        text = ", ".join(words)
        try:
            raw = b"".join(int(w, 16).to_bytes(4, "little") for w in words)
        except (ValueError, OverflowError):
            raw = None
    elif "value = " in rest:
        text = rest.split("value = ", 1)[1].rstrip()
        if text.startswith("CL_SAMPLER_"):
            sampler = parse_sampler_props(text)
        else:
            v = parse_ptr(text)
            if v is not None:
                try:
                    if sz == 8:
                        raw = v.to_bytes(8, "little")
                        pointer = v
                    elif sz in (1, 2, 4):
                        raw = v.to_bytes(sz, "little")
                except OverflowError:
                    raw = None
    return SetArg(idx, sz, text, raw, False, sampler, off, pointer, counter)


def _image_format(kv: dict[str, str], fn: str) -> ImageFormat:
    def gi(*keys: str) -> int:
        for k in keys:
            v = kv.get(k)
            if v is not None:
                try:
                    return int(v)
                except ValueError:
                    return 0
        return 0

    itype = kv.get("desc->type")
    if itype is None:
        itype = "CL_MEM_OBJECT_IMAGE3D" if fn == "clCreateImage3D" else "CL_MEM_OBJECT_IMAGE2D"
    return ImageFormat(
        channel_order=kv.get("format->channel_order", ""),
        channel_data_type=kv.get("format->channel_data_type", ""),
        image_type=itype,
        width=gi("desc->width", "image_width"),
        height=gi("desc->height", "image_height"),
        depth=gi("desc->depth", "image_depth"),
        array_size=gi("desc->array_size"),
        row_pitch=gi("desc->row_pitch", "image_row_pitch"),
        slice_pitch=gi("desc->slice_pitch", "image_slice_pitch"),
    )


def image_texel_bytes(fmt: ImageFormat) -> int:
    """Bytes of one texel of ``fmt`` (0 for an unknown order or data type)."""
    return images.texel_bytes(fmt.channel_order, fmt.channel_data_type)


def image_region(fmt: ImageFormat) -> tuple[int, int, int]:
    """The full region (W, H, D) the layer dumps for an image (arrays fold into H or D)."""
    t = fmt.image_type
    w = max(fmt.width, 1)
    if t.endswith("IMAGE1D_ARRAY"):
        return (w, max(fmt.array_size, 1), 1)
    if t.endswith("IMAGE2D_ARRAY"):
        return (w, max(fmt.height, 1), max(fmt.array_size, 1))
    if t.endswith("IMAGE3D"):
        return (w, max(fmt.height, 1), max(fmt.depth, 1))
    if t.endswith("IMAGE2D"):
        return (w, max(fmt.height, 1), 1)
    return (w, 1, 1)


def _image_bytes(fmt: ImageFormat) -> int:
    w, h, d = image_region(fmt)
    return w * h * d * image_texel_bytes(fmt)
