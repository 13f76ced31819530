"""File-name grammar of a CLIntercept dump directory (capture-format.md §3.1, §3.5, §4, §5.1, §6.1).

Every parser is an anchored regular expression matched against one path component.  Kernel names
are untrusted and may contain spaces, ``( ) < > : * $ ,`` and even ``_Arg_``: the patterns are
greedy in the name and anchored on the fixed tail, so the *last* ``_Arg_<i>_...`` wins, which is
what the layer wrote.  Padded numbers (``%04u``) are matched with ``\\d{4,}``.

Also here: :func:`sanitize_component`, a safe single path component from an untrusted name.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass

__all__ = [
    "MAPUNMAP_RE",
    "ParsedDumpName",
    "ParsedMapUnmapName",
    "ParsedProgramFileName",
    "ParsedReplayDirName",
    "ParsedReplayFileName",
    "ParsedSetKernelArgName",
    "parse_dump_name",
    "parse_mapunmap_name",
    "parse_program_file_name",
    "parse_replay_dir_name",
    "parse_replay_file_name",
    "parse_setkernelarg_name",
    "sanitize_component",
    "too_large_number",
]

MAX_NUMBER = (1 << 63) - 1  # numbers in names past int64 are not the layer's: the name is skipped


def _fits(m: re.Match[str], *groups: int) -> bool:
    """Whether the numeric ``groups`` of ``m`` (those present) fit in an int64."""
    for g in groups:
        s = m[g]
        if s is not None and len(s) > 18 and (len(s) > 4000 or int(s) > MAX_NUMBER):
            return False
    return True


# ---------------------------------------------------------------------------------------------
# memDump{Pre,Post}Enqueue/ and Replay/*/{Pre,Post}/   (§3.1)

BUFFER_DUMP_RE = re.compile(
    r"Enqueue_(\d{4,})_Kernel_(.*)_Arg_(\d+)_Buffer_(\d{4,})\.bin", re.DOTALL
)
IMAGE_DUMP_RE = re.compile(
    r"Enqueue_(\d{4,})_Kernel_(.*)_Arg_(\d+)_Image_(\d{4,})_(\d+)x(\d+)x(\d+)_(\d+)bpp\.raw",
    re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class ParsedDumpName:
    enqueue: int  # from the %04u field (a 32-bit cast of the counter, §8.17)
    kernel: str  # short kernel name
    arg: int
    mem_id: int  # unique memory-object number (M4)
    is_image: bool
    image_region: tuple[int, int, int] | None = None  # W, H, D
    image_bpp: int | None = None  # bits per texel


def parse_dump_name(name: str) -> ParsedDumpName | None:
    """Parse a buffer/image dump file name; ``None`` if it is not one."""
    m = BUFFER_DUMP_RE.fullmatch(name)
    if m is not None:
        if not _fits(m, 1, 3, 4):
            return None
        return ParsedDumpName(int(m[1]), m[2], int(m[3]), int(m[4]), False)
    m = IMAGE_DUMP_RE.fullmatch(name)
    if m is not None and _fits(m, 1, 3, 4, 5, 6, 7, 8):
        return ParsedDumpName(
            int(m[1]),
            m[2],
            int(m[3]),
            int(m[4]),
            True,
            (int(m[5]), int(m[6]), int(m[7])),
            int(m[8]),
        )
    return None


# ---------------------------------------------------------------------------------------------
# SetKernelArg/   (§4)

SETKERNELARG_RE = re.compile(r"SetKernelArg_(\d{4,})_Kernel_(.*)_Arg_(\d+)\.bin", re.DOTALL)


@dataclass(frozen=True, slots=True)
class ParsedSetKernelArgName:
    enqueue: int  # the counter at set time = the number of the next enqueue
    kernel: str
    arg: int


def parse_setkernelarg_name(name: str) -> ParsedSetKernelArgName | None:
    m = SETKERNELARG_RE.fullmatch(name)
    if m is None or not _fits(m, 1, 3):
        return None
    return ParsedSetKernelArgName(int(m[1]), m[2], int(m[3]))


# ---------------------------------------------------------------------------------------------
# memDumpCreateMapUnmap/   (§3.5)

MAPUNMAP_RE = re.compile(
    r"(Create|Map|Unmap)_Buffer_(\d{4,})_Offset_(\d{4,})_Enqueue_(\d{4,})\.bin"
)


@dataclass(frozen=True, slots=True)
class ParsedMapUnmapName:
    kind: str  # "create" | "map" | "unmap"
    mem_id: int
    offset: int
    enqueue: int


def parse_mapunmap_name(name: str) -> ParsedMapUnmapName | None:
    m = MAPUNMAP_RE.fullmatch(name)
    if m is None or not _fits(m, 2, 3, 4):
        return None
    return ParsedMapUnmapName(m[1].lower(), int(m[2]), int(m[3]), int(m[4]))


# ---------------------------------------------------------------------------------------------
# Replay/Enqueue_<E>_<k>/   (§6.1, §6.2)

REPLAY_DIR_RE = re.compile(r"Enqueue_(\d+)_(.*)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class ParsedReplayDirName:
    enqueue: int  # unpadded
    kernel: str  # short kernel name (may be empty if the layer wrote an empty name)


def parse_replay_dir_name(name: str) -> ParsedReplayDirName | None:
    m = REPLAY_DIR_RE.fullmatch(name)
    if m is None or not _fits(m, 1):
        return None
    return ParsedReplayDirName(int(m[1]), m[2])


REPLAY_INDEXED_RE = re.compile(
    r"(Argument|Local|Sampler|SVM_Arg_Offset_|Image_MetaData_|DeviceBinary)(\d+)\.(bin|txt)"
)
_INDEXED_EXT = {
    "Argument": "bin",
    "Local": "txt",
    "Sampler": "txt",
    "SVM_Arg_Offset_": "txt",
    "Image_MetaData_": "txt",
    "DeviceBinary": "bin",
}
REPLAY_FIXED_FILES = {
    "run.py": "run_py",
    "enqueueNumber.txt": "enqueue_number",
    "kernelName.txt": "kernel_name",
    "worksizes.txt": "worksizes",
    "buildOptions.txt": "build_options",
    "ArgumentDataTypes.txt": "arg_types",
    "kernel.cl": "kernel_source",
    "kernel.spv": "spirv",
}


@dataclass(frozen=True, slots=True)
class ParsedReplayFileName:
    """A file of a Replay folder.  ``kind`` is one of ``run_py``, ``enqueue_number``,
    ``kernel_name``, ``worksizes``, ``build_options``, ``arg_types``, ``kernel_source``,
    ``spirv``, ``argument``, ``local``, ``sampler``, ``svm_offset``, ``image_meta``,
    ``device_binary``; ``index`` is the argument / device index for the indexed kinds."""

    kind: str
    index: int | None = None


_INDEXED_KIND = {
    "Argument": "argument",
    "Local": "local",
    "Sampler": "sampler",
    "SVM_Arg_Offset_": "svm_offset",
    "Image_MetaData_": "image_meta",
    "DeviceBinary": "device_binary",
}


def parse_replay_file_name(name: str) -> ParsedReplayFileName | None:
    kind = REPLAY_FIXED_FILES.get(name)
    if kind is not None:
        return ParsedReplayFileName(kind)
    m = REPLAY_INDEXED_RE.fullmatch(name)
    if m is None or _INDEXED_EXT[m[1]] != m[3] or not _fits(m, 2):
        return None
    return ParsedReplayFileName(_INDEXED_KIND[m[1]], int(m[2]))


# ---------------------------------------------------------------------------------------------
# CLI_ program files   (§5.1), with and without OmitProgramNumber

_P = r"(?:(\d{4,})_)?"  # optional program number
_H = r"([0-9A-F]{8})"
_C = r"(\d{4,})"
_O = r"([0-9A-F]{8})"
_DEV = r"((?:CPU|GPU|ACC|CUSTOM)(?:_(?:CPU|GPU|ACC|CUSTOM))*)"

PROGRAM_SOURCE_RE = re.compile(rf"CLI_{_P}{_H}_source\.cl")
PROGRAM_OPTIONS_RE = re.compile(rf"CLI_{_P}{_H}_{_C}_{_O}(_compile|_link)?_options\.txt")
PROGRAM_BUILD_LOG_RE = re.compile(rf"CLI_{_P}{_H}_{_C}_{_O}_{_DEV}_build_log\.txt")
PROGRAM_INPUT_BINARY_RE = re.compile(rf"CLI_{_P}{_H}_{_DEV}\.bin")
PROGRAM_OUTPUT_BINARY_RE = re.compile(rf"CLI_{_P}{_H}_{_C}_{_O}_{_DEV}\.bin")
PROGRAM_SPIRV_RE = re.compile(rf"CLI_{_P}{_H}_{_C}\.(spv|spvasm)")
PROGRAM_ISA_RE = re.compile(rf"CLI_{_P}{_H}_{_C}_{_O}_{_DEV}_(.+)\.isabin", re.DOTALL)
PROGRAM_CMDBUF_RE = re.compile(rf"CLI_(\d{{4,}})_{_H}_cmdbuf\.dot")


@dataclass(frozen=True, slots=True)
class ParsedProgramFileName:
    """``kind``: ``source``, ``options``, ``compile_options``, ``link_options``, ``build_log``,
    ``input_binary``, ``output_binary``, ``spirv``, ``spvasm``, ``isabin``, ``cmdbuf``.
    ``number`` is None for OmitProgramNumber names.  ``hash``/``options_hash`` are upper-case
    hex exactly as in the name."""

    kind: str
    number: int | None
    hash: str
    compile_count: int | None = None
    options_hash: str | None = None
    device: str | None = None  # "CPU", "GPU", "CPU_GPU_ACC", ...
    kernel: str | None = None  # isabin only

    @property
    def program_key(self) -> tuple[int | None, str]:
        """The (number, hash) pair that identifies the program a file belongs to."""
        return (self.number, self.hash)


def _num(s: str | None) -> int | None:
    return None if s is None else int(s)


def parse_program_file_name(name: str) -> ParsedProgramFileName | None:
    """Parse a top-level ``CLI_…`` file name; ``None`` if it is not one."""
    if not name.startswith("CLI_"):
        return None
    p = _parse_program_file_name(name)
    if p is None or any(n is not None and n > MAX_NUMBER for n in (p.number, p.compile_count)):
        return None
    return p


def _parse_program_file_name(name: str) -> ParsedProgramFileName | None:
    m = PROGRAM_SOURCE_RE.fullmatch(name)
    if m:
        return ParsedProgramFileName("source", _num(m[1]), m[2])
    m = PROGRAM_OPTIONS_RE.fullmatch(name)
    if m:
        kind = {None: "options", "_compile": "compile_options", "_link": "link_options"}[m[5]]
        return ParsedProgramFileName(kind, _num(m[1]), m[2], int(m[3]), m[4])
    m = PROGRAM_BUILD_LOG_RE.fullmatch(name)
    if m:
        return ParsedProgramFileName("build_log", _num(m[1]), m[2], int(m[3]), m[4], m[5])
    m = PROGRAM_OUTPUT_BINARY_RE.fullmatch(name)
    if m:
        return ParsedProgramFileName("output_binary", _num(m[1]), m[2], int(m[3]), m[4], m[5])
    m = PROGRAM_INPUT_BINARY_RE.fullmatch(name)
    if m:
        return ParsedProgramFileName("input_binary", _num(m[1]), m[2], device=m[3])
    m = PROGRAM_SPIRV_RE.fullmatch(name)
    if m:
        kind = "spirv" if m[4] == "spv" else "spvasm"
        return ParsedProgramFileName(kind, _num(m[1]), m[2], int(m[3]))
    m = PROGRAM_ISA_RE.fullmatch(name)
    if m:
        return ParsedProgramFileName("isabin", _num(m[1]), m[2], int(m[3]), m[4], m[5], kernel=m[6])
    m = PROGRAM_CMDBUF_RE.fullmatch(name)
    if m:
        return ParsedProgramFileName("cmdbuf", int(m[1]), m[2])
    return None


def too_large_number(name: str) -> bool:
    """Whether ``name`` is a dump, SetKernelArg, map/unmap, Replay or program file name that
    its parser refused only because a number in it does not fit in an int64."""
    for rx, groups in _NUMBER_GROUPS:
        m = rx.fullmatch(name)
        if m is not None and not _fits(m, *groups):
            return True
    if name.startswith("CLI_"):
        return _parse_program_file_name(name) is not None and parse_program_file_name(name) is None
    return False


_NUMBER_GROUPS: tuple[tuple[re.Pattern[str], tuple[int, ...]], ...] = (
    (BUFFER_DUMP_RE, (1, 3, 4)),
    (IMAGE_DUMP_RE, (1, 3, 4, 5, 6, 7, 8)),
    (SETKERNELARG_RE, (1, 3)),
    (MAPUNMAP_RE, (2, 3, 4)),
    (REPLAY_DIR_RE, (1,)),
    (REPLAY_INDEXED_RE, (2,)),
)


# ---------------------------------------------------------------------------------------------
# Safe path components

_WINDOWS_FORBIDDEN = set('<>:"/\\|?*')
_WINDOWS_RESERVED = {
    "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$",
    *(f"COM{i}" for i in "123456789¹²³"),
    *(f"LPT{i}" for i in "123456789¹²³"),
}  # fmt: skip
_SUFFIX_RE = re.compile(r"-h[0-9a-f]{12}\Z")  # the marker appended to altered names
_SUFFIX_LEN = 14  # "-h" + 12 hex digits


def _safe_char(ch: str) -> bool:
    if ch in _WINDOWS_FORBIDDEN:
        return False
    if ch == " ":
        return True
    # printable, and not a surrogate / private / unassigned code point or odd separator
    return ch.isprintable() and unicodedata.category(ch)[0] in "LMNPS"


def _utf8_len(s: str) -> int:
    return len(s.encode("utf-8"))


def _cut_utf8(s: str, max_bytes: int) -> str:
    out = s.encode("utf-8")[: max(0, max_bytes)]
    return out.decode("utf-8", "ignore")


def sanitize_component(name: str, max_len: int = 100, *, fold_case: bool = False) -> str:
    """A safe single path component (file or folder name) from an untrusted ``name``.

    The result never contains ``/``, ``\\``, NUL, control characters, Windows-forbidden
    characters (``< > : " | ? *``) or ``..``; it never starts with ``.``, ``-`` or a space, never
    ends with ``.`` or a space, is never a Windows reserved device name, is NFC-normalised and is
    at most ``max_len`` UTF-8 bytes (``max_len`` is raised to 32 if smaller).  A name that is
    already safe is returned unchanged; any other name is cleaned and gets ``-h<12 hex>`` (a
    SHA-256 prefix of the original) appended, so two different inputs never give the same
    output (an unchanged name never ends in that pattern: such a name is suffixed too).
    With ``fold_case=True`` outputs are case-folded and names that change under case folding are
    suffixed, so that outputs stay distinct on case-insensitive file systems (macOS, Windows).
    """
    max_len = max(32, max_len)
    cleaned = "".join(ch if _safe_char(ch) else "_" for ch in name)
    cleaned = unicodedata.normalize("NFC", cleaned)
    while ".." in cleaned:
        cleaned = cleaned.replace("..", "._")
    cleaned = cleaned.lstrip(". -").rstrip(". ")
    if fold_case:
        folded = cleaned.casefold()
        changed_by_case = folded != cleaned
        cleaned = folded
    else:
        changed_by_case = False
    reserved = cleaned.split(".", 1)[0].upper().rstrip(" ") in _WINDOWS_RESERVED
    altered = (
        changed_by_case
        or reserved
        or cleaned != name
        or not cleaned
        or _utf8_len(cleaned) > max_len
        or _SUFFIX_RE.search(cleaned) is not None
    )
    if not altered:
        return cleaned
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    if reserved:
        cleaned = "_" + cleaned
    head = _cut_utf8(cleaned, max_len - _SUFFIX_LEN).rstrip(". ")
    return f"{head or '_'}-h{digest}"
