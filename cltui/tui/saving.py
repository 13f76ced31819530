"""What the browser and the results screen copy and save (no Textual here).

Copy: the texts ``y`` offers (:func:`copy_choices`): the value or element under the cursor,
the enqueue range, the CLI commands that show, replay or export what is on screen.

Save: a buffer as ``.npy`` (typed by the element format in use) or ``.csv`` (index, Pre and
Post as displayed), an image as ``.png`` (written here with zlib: no imaging dependency), the
results table as ``.csv`` or ``.json``.  A path inside the capture is refused (a capture is
read-only); the caller asks before it overwrites (:func:`check_target`).
"""

from __future__ import annotations

import csv
import json
import shlex
import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from cltui.capture.cltypes import CType, decode_value, format_value
from cltui.capture.ranges import EnqueueRange
from cltui.errors import CltuiError

__all__ = [
    "CopyChoice",
    "SaveRefused",
    "buffer_array",
    "check_target",
    "cli_commands",
    "write_buffer_csv",
    "write_json",
    "write_npy",
    "write_png",
    "write_table_csv",
]

CSV_CHUNK = 1 << 16  # elements formatted per step (a cancel is seen between steps)


class SaveRefused(CltuiError):
    """The path cannot be written (inside the capture, no such folder): one line why."""


@dataclass(frozen=True)
class CopyChoice:
    """One thing ``y`` can copy: its key in the menu, what it is, the text."""

    key: str
    label: str
    text: str


def check_target(text: str, capture: Path, cwd: Path | None = None) -> Path:
    """The path ``text`` names (``~`` expanded, relative to ``cwd``), or :class:`SaveRefused`:
    empty, inside the capture folder, a folder, or in a folder that does not exist."""
    if not text.strip():
        raise SaveRefused("no path given")
    path = Path(text.strip()).expanduser()
    if not path.is_absolute():
        path = (cwd or Path.cwd()) / path
    resolved = path.parent.resolve() / path.name
    root = capture.resolve()
    if resolved == root or root in resolved.parents:
        raise SaveRefused(
            f"{resolved} is inside the capture folder {root}: a capture is read-only, "
            "choose a path outside it"
        )
    if resolved.is_dir():
        raise SaveRefused(f"{resolved} is a folder: give a file name")
    if not resolved.parent.is_dir():
        raise SaveRefused(f"the folder {resolved.parent} does not exist")
    return resolved


def cli_commands(
    capture: Path, rng: EnqueueRange, devices: Sequence[str] = (), shown: int | None = None
) -> list[CopyChoice]:
    """The CLI commands equivalent to the screen: show the enqueue ``shown`` (the cursor's,
    the one the details show; the range's first when not given), replay or export the range
    (with the devices the replay dialog used last, when known)."""
    cap = shlex.quote(str(capture))
    dev = "".join(f" -d {shlex.quote(d)}" for d in devices)
    show = rng.first if shown is None else shown
    return [
        CopyChoice("s", "show command", f"cltui show {cap} {show}"),
        CopyChoice("p", "replay command", f"cltui replay {cap} {rng}{dev}"),
        CopyChoice("e", "export command", f"cltui export {cap} {rng} -o replay_{rng}"),
    ]


def buffer_array(data: npt.NDArray[np.uint8], ctype: CType) -> npt.NDArray[Any]:
    """The bytes as elements of ``ctype`` (trailing bytes that make no element dropped)."""
    if ctype.dtype is None or not ctype.size:
        return np.asarray(data, dtype=np.uint8)
    n = len(data) // ctype.size
    return np.frombuffer(bytes(data[: n * ctype.size]), dtype=ctype.dtype)


def image_shaped(
    arr: npt.NDArray[Any], region: tuple[int, int, int] | None
) -> npt.NDArray[Any]:
    """An image argument's elements in its shape: (height, width) or (depth, height, width),
    and the lanes of a texel last when an element is less than one; as they were when the
    elements do not fill the region whole."""
    if region is None:
        return arr
    w, h, d = region
    texels = w * h * max(d, 1)
    n = arr.shape[0] if arr.ndim else 0
    if not texels or not n or n % texels:
        return arr
    per = n // texels
    shape = ([d] if d > 1 else []) + [h, w] + ([per] if per > 1 else [])
    return arr.reshape(*shape, *arr.shape[1:])


def write_npy(
    path: Path, data: npt.NDArray[np.uint8], ctype: CType,
    region: tuple[int, int, int] | None = None,
) -> int:
    """``data`` as a typed ``.npy`` (``numpy.load`` gives the elements back), an image
    argument's in its 2-D or 3-D shape (``region``: width, height, depth); elements."""
    arr = buffer_array(data, ctype)
    count = len(arr)
    arr = image_shaped(arr, region)
    with path.open("wb") as f:
        np.save(f, arr, allow_pickle=False)
    return count


def _texts(data: npt.NDArray[np.uint8] | None, ctype: CType, lo: int, hi: int) -> list[str]:
    if data is None:
        return [""] * (hi - lo)
    size = ctype.size or 1
    out = []
    for i in range(lo, hi):
        raw = bytes(data[i * size : (i + 1) * size])
        out.append(format_value(decode_value(raw, ctype), ctype) if len(raw) == size else "")
    return out


def write_buffer_csv(
    path: Path,
    pre: npt.NDArray[np.uint8] | None,
    post: npt.NDArray[np.uint8] | None,
    ctype: CType,
) -> int:
    """``index,pre,post`` (the sides there are), each element as the view shows it in the
    element format ``ctype``; the number of rows."""
    size = ctype.size or 1
    count = max(len(d) // size for d in (pre, post) if d is not None) if (pre is not None or
                                                                         post is not None) else 0
    sides = [(name, d) for name, d in (("pre", pre), ("post", post)) if d is not None]
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["index", *(f"{name} ({ctype.name})" for name, _ in sides)])
        for lo in range(0, count, CSV_CHUNK):
            hi = min(count, lo + CSV_CHUNK)
            columns = [_texts(d, ctype, lo, hi) for _, d in sides]
            writer.writerows([i, *(c[i - lo] for c in columns)] for i in range(lo, hi))
    return count


def write_png(path: Path, rgb: npt.NDArray[np.uint8]) -> None:
    """An (H, W, 3) uint8 array as an 8-bit RGB PNG."""
    h, w = int(rgb.shape[0]), int(rgb.shape[1])
    rows = np.ascontiguousarray(rgb, dtype=np.uint8).reshape(h, w * 3)
    raw = b"".join(b"\x00" + rows[y].tobytes() for y in range(h))  # filter 0 on each row

    def chunk(tag: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + tag + body + struct.pack(
            ">I", zlib.crc32(tag + body) & 0xFFFFFFFF
        )

    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 6))
        + chunk(b"IEND", b"")
    )


def write_table_csv(path: Path, columns: Sequence[str], rows: Iterable[Sequence[object]]) -> int:
    """A table as CSV (one header row); the number of rows."""
    n = 0
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([str(c) for c in row])
            n += 1
    return n


def write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
