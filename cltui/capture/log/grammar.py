"""The log's grammar (capture-format.md §2, §8): the line patterns, tags and small parsers of
fields (pointers, kernel names, ``key = value`` lists, flags, samplers).  Every pattern here
runs in time linear in its input."""

from __future__ import annotations

import functools
import re

from cltui.capture.model import (
    EnqueueKind,
    SamplerDesc,
)

_PREFIX = rb"(?:Time: \d+ )?(?:TID = \d+ )?(?:TNum = \d+ )?"
# Enqueue entry lines (the line start is checked per match, in Python).
# (the name stops before another "clEnqueue" and is possessive: a word of a million
# "clEnqueue" costs a few bytes a try, not the rest of the word; a lookbehind instead would
# cost the literal-prefix search)
_ENQ_RE = re.compile(rb"(clEnqueue(?:(?!clEnqueue)\w)++)([(:;][^\n]*)")
# Exit lines of creators: their entry is found by a short backward search.
_RET_RE = re.compile(rb" returned [^\n]*")
_EXIT_LINE_RE = re.compile(rb" *<<<< " + _PREFIX + rb"(cl\w+)([^\n]*)")
# the last release of an object (``ref count = 1`` before the call): its identity ends
# (the handle alone: the line goes on with "; EnqueueCounter: N")
_RELEASE_RE = re.compile(
    rb"(clRelease(?:MemObject|Kernel|Program|CommandQueue|Sampler)): "
    rb"\[ ref count = 1 \] \w+ = (0x[0-9a-fA-F]+|[0-9A-F]{8,16})\b"
)
_DEVTIME_RE = re.compile(
    rb"Device Time for [^\n]*? \(enqueue (\d+)\) = (\d+) ns \(queued -> submit\), "
    rb"(\d+) ns \(submit -> start\), (\d+) ns \(start -> end\)"
)
# the same for a search anywhere: the name part cannot run over another "Device Time for "
# (the lazy name would otherwise rescan the rest of the line from every one of a line of
# repeated heads without a tail: quadratic); the groups found are the same
_DEVTIME_ANY_RE = re.compile(
    rb"Device Time for (?:(?!Device Time for )[^\n])*? \(enqueue (\d++)\) = (\d++) ns "
    rb"\(queued -> submit\), (\d++) ns \(submit -> start\), (\d++) ns \(start -> end\)"
)
_SIDE_TAG_LIST = (
    b"Dumping program to file",
    b"Dumping input program binary to file",
    b"Dumping program options to file",
    b"Build Info for program ",
    b"Added kernel name mapping: ",
    b"Control ",
    b"-=-=-=-=-=-=-=-=",
    b"CLIntercept is shutting down",
    b"-------> Start of Build Log",
    b"Dumping kernel capture replay to directory: ",
)
_SIDE_TAGS = b"(" + b"|".join(re.escape(t) for t in _SIDE_TAG_LIST) + rb")([^\n]*)"
_SIDE_RE = re.compile(rb"\n" + _SIDE_TAGS)
_CREATORS = (
    b"clCreate",
    b"clSVMAlloc",
    b"clLinkProgram",
    b"clHostMemAlloc",
    b"clDeviceMemAlloc",
    b"clSharedMemAlloc",
)
_END_BUILD_LOG = b"<------- End of Build Log"

_PTR = rb"(0x[0-9a-fA-F]+|\(nil\)|[0-9A-F]{8,16})"
_COUNTER_TAG = b"; EnqueueCounter: "
_INDEX_GAP = len(b", index = ")

KIND_OF_FUNCTION: dict[str, EnqueueKind] = {
    "clEnqueueNDRangeKernel": EnqueueKind.KERNEL,
    "clEnqueueTask": EnqueueKind.TASK,
    "clEnqueueNativeKernel": EnqueueKind.OTHER,
    "clEnqueueReadBuffer": EnqueueKind.READ,
    "clEnqueueReadBufferRect": EnqueueKind.READ,
    "clEnqueueReadImage": EnqueueKind.READ,
    "clEnqueueWriteBuffer": EnqueueKind.WRITE,
    "clEnqueueWriteBufferRect": EnqueueKind.WRITE,
    "clEnqueueWriteImage": EnqueueKind.WRITE,
    "clEnqueueCopyBuffer": EnqueueKind.COPY,
    "clEnqueueCopyBufferRect": EnqueueKind.COPY,
    "clEnqueueCopyImage": EnqueueKind.COPY,
    "clEnqueueCopyImageToBuffer": EnqueueKind.COPY,
    "clEnqueueCopyBufferToImage": EnqueueKind.COPY,
    "clEnqueueFillBuffer": EnqueueKind.FILL,
    "clEnqueueFillImage": EnqueueKind.FILL,
    "clEnqueueMapBuffer": EnqueueKind.MAP,
    "clEnqueueMapImage": EnqueueKind.MAP,
    "clEnqueueUnmapMemObject": EnqueueKind.UNMAP,
    "clEnqueueMarker": EnqueueKind.MARKER,
    "clEnqueueMarkerWithWaitList": EnqueueKind.MARKER,
    "clEnqueueWaitForEvents": EnqueueKind.MARKER,
    "clEnqueueBarrier": EnqueueKind.BARRIER,
    "clEnqueueBarrierWithWaitList": EnqueueKind.BARRIER,
    "clEnqueueMigrateMemObjects": EnqueueKind.MIGRATE,
}


def kind_of(function: str) -> EnqueueKind:
    k = KIND_OF_FUNCTION.get(function)
    if k is not None:
        return k
    if function.startswith("clEnqueueSVM"):
        return EnqueueKind.SVM
    if function.endswith("INTEL") and ("Mem" in function or "Migrate" in function):
        return EnqueueKind.USM
    return EnqueueKind.OTHER


def parse_ptr(text: str) -> int | None:
    """A ``%p`` value: ``0x1a2b``, ``(nil)`` -> 0, or bare upper-case hex (Windows)."""
    t = text.strip()
    if t == "(nil)":
        return 0
    try:
        if t.startswith(("0x", "0X")):
            return int(t, 16)
        if 8 <= len(t) <= 16:
            return int(t, 16)
    except ValueError:
        return None
    return None


def _dec(b: bytes) -> str:
    if b"\x00" in b:
        b = b.replace(b"\x00", b"")
    return b.decode("utf-8", "replace")


def split_kernel_name(rest: str) -> tuple[str | None, str]:
    """``( name ): args`` -> (name, args); the name may contain ``(``, ``)``, spaces."""
    if not rest.startswith("( "):
        return None, rest[2:] if rest.startswith(": ") else rest
    for sep in (" ): ", " ); "):
        j = rest.find(sep)
        if j >= 0:
            tail = rest[j + 3 :]
            return rest[2:j], tail[1:] if sep == " ): " and tail.startswith(" ") else tail
    if rest.endswith(" )"):
        return rest[2:-2], ""
    return None, rest


def strip_counter(args: str) -> tuple[str, int | None]:
    j = args.rfind("; EnqueueCounter: ")
    if j < 0:
        return args, None
    try:
        return args[:j], int(args[j + 18 :].strip())
    except ValueError:
        return args[:j], None


_SHORT_HASH_RE = re.compile(r"\$(\d{4,}_)?[0-9A-F]{8}_\d{4,}_[0-9A-F]{8}$")


def short_kernel_name(name: str) -> str:
    """Drop a ``KernelNameHashTracking`` suffix (§5.4)."""
    return _SHORT_HASH_RE.sub("", name)


_SETARG_ANY_RE = re.compile(
    rb">>>> " + _PREFIX + rb"clSetKernelArg(SVMPointer|MemPointerINTEL|DevicePointerEXT)?"
    rb"\( [^\n]*?: kernel = (?:0x[0-9a-f]+|[0-9A-F]{16}), index = (\d{1,9}), ([^\n]*)"
)


@functools.lru_cache(maxsize=256)
def _setarg_needle(kernel: int, known: frozenset[int]) -> re.Pattern[bytes]:
    """The literal search for ``kernel = <handle>, index = `` (the handle printed ``0x1a2b``
    or as bare upper-case hex on Windows), except where the index is one of ``known``: a
    line naming the kernel only there cannot set another index (the kernel's own
    pattern takes the first such place whose index is a number)."""
    hx = f"0x{kernel:x}".encode() + rb"|" + f"{kernel:016X}".encode()
    skip = b"(?!(?:" + b"|".join(b"%d" % i for i in sorted(known)) + b"), )" if known else b""
    return re.compile(rb"kernel = (?:" + hx + rb"), index = " + skip)


@functools.lru_cache(maxsize=64)
def _setarg_pattern(kernel: int) -> re.Pattern[bytes]:
    """The entry-line pattern of one kernel handle (only for lines the generic one
    matched at another handle)."""
    hx = f"0x{kernel:x}".encode() + rb"|" + f"{kernel:016X}".encode()
    return re.compile(
        rb">>>> " + _PREFIX + rb"clSetKernelArg(SVMPointer|MemPointerINTEL|DevicePointerEXT)?"
        rb"\( [^\n]*?: kernel = (?:" + hx + rb"), index = (\d{1,9}), ([^\n]*)"
    )


@functools.lru_cache(maxsize=64)
def _exit_pattern(function: str) -> re.Pattern[bytes]:
    return re.compile(rb"<<<< " + _PREFIX + re.escape(function.encode()) + rb"\b([^\n]*)")


_SAMPLER_RE = re.compile(
    r"CL_SAMPLER_NORMALIZED_COORDS = (CL_TRUE|CL_FALSE)"
    r"(?:, CL_SAMPLER_ADDRESSING_MODE = (\w+))?(?:, CL_SAMPLER_FILTER_MODE = (\w+))?"
)


def parse_sampler_props(text: str) -> SamplerDesc | None:
    m = _SAMPLER_RE.search(text)
    if m is None:
        return None
    return SamplerDesc(
        normalized_coords=m.group(1) == "CL_TRUE",
        addressing_mode=m.group(2) or "CL_ADDRESS_CLAMP",
        filter_mode=m.group(3) or "CL_FILTER_NEAREST",
    )


# keys start at a word start: a long word is tried once, not from each of its characters
_KV_RE = re.compile(r"(?<![\w>\-])([\w>\-]++) = ([^,\]]*+)")
_CREATED_RE = re.compile(r"returned " + _PTR.decode())


def kv_pairs(args: str) -> dict[str, str]:
    """The ``key = value`` fields of a call line's arguments (the first of a repeated key)."""
    out: dict[str, str] = {}
    for part in _KV_RE.finditer(args):
        out.setdefault(part.group(1), part.group(2).strip())
    return out


def _flags(text: str) -> str:
    """``CL_MEM_READ_WRITE (1)`` -> ``CL_MEM_READ_WRITE`` (no regex: linear in any text)."""
    t = text.strip()
    if t.endswith(")"):
        j = t.rfind("(")
        h = t[j + 1 : -1]
        if j >= 0 and h and all(c in _HEX for c in h):
            return t[:j].strip()
    return t


_HEX = frozenset("0123456789abcdefABCDEF")
_DEVICE_TYPE = " (CL_DEVICE_TYPE"


def _queue_device(args: str) -> str | None:
    """The device of a ``clCreateCommandQueue`` line: what follows the first ``device = ``
    up to the first `` (CL_DEVICE_TYPE...) (`` after it (one pass, whatever the line)."""
    s = args.find("device = ")
    if s < 0:
        return None
    nl = args.find("\n", s)
    stop = len(args) if nl < 0 else nl
    c = args.find(_DEVICE_TYPE, s + 9, stop)
    while c >= 0:
        q = args.find(")", c + 2, stop)
        if q < 0:
            return None
        if args.startswith(") (", q):
            return args[s + 9 : c]
        c = args.find(_DEVICE_TYPE, q, stop)
    return None
