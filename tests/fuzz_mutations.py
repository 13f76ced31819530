"""The bad-input campaign: named mutations of real captures, each run as a user's commands would.

One *input* is ``(capture, kind, seed)``: a copy of a small shared capture, damaged by the
mutation ``kind`` (one of :data:`KINDS`) drawn from ``random.Random(seed)``, then read the way
the CLI reads it (:func:`exercise`): open the capture, list every enqueue (``ls`` and
``ls --json``), decode every enqueue (``show`` and ``show --json``), ``info`` (text and
``--json``) and plan a replay of the whole range (no device run).

Allowed outcomes: success, a :class:`~cltui.capture.CaptureError` from opening (one line, the
whole capture unreadable) and a :class:`~cltui.replay.plan.PlanError` (nothing replayable).
Findings:

- ``traceback``: any other exception, or a :class:`CaptureError` / decode problem that only
  wraps an internal exception (``cannot open capture: OverflowError: ...``, ``could not decode
  this enqueue: ...``): the user would see a failure that is not about their input;
- ``outside``: text from a file outside the capture (reached through a symlink) in the output;
- ``hang``: the input did not finish within the deadline (the driver kills its worker).

:func:`run_campaign` runs inputs in worker processes, one copy of each capture per worker,
restored after every input (only the paths the mutation touched), each input under a
deadline.  Every finding carries ``capture kind seed``, which :func:`run_one` replays alone on
a fresh copy: ``python benchmarks/fuzz_long.py --repro 'images_svm_pocl truncate_log 12'``.

Used by ``tests/test_fuzz_captures.py`` (the standing, bounded run) and
``benchmarks/fuzz_long.py`` (the long run).
"""

from __future__ import annotations

import contextlib
import io
import json
import multiprocessing as mp
import os
import random
import re
import shutil
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CAPTURES = Path(os.environ.get("CLTUI_SHARED", REPO.parent / "shared")).resolve() / "captures"

#: the mutation kinds, by name (each input applies one)
KINDS: tuple[str, ...] = (
    "truncate_log",
    "truncate_report",
    "truncate_dump",
    "truncate_source",
    "byte_flips",
    "nul_run_head",
    "nul_run_middle",
    "nul_run_tail",
    "nul_runs_several",
    "duplicate_lines",
    "delete_lines",
    "delete_file",
    "zero_length_file",
    "huge_number_log",
    "huge_number_name",
    "long_word",
    "non_utf8_bytes",
    "non_utf8_name",
    "control_chars_log",
    "control_chars_name",
    "symlink_outside",
    "symlink_loop",
    "symlink_dangling",
    "repeated_tags",
    "one_line_log",
    "binary_garbage",
    "fifo_file",
    "device_link",
    "socket_file",
)

#: small shared captures the campaign damages (the first is the cheapest: most inputs use it)
BASES: tuple[str, ...] = ("images_svm_pocl", "pyopencl_lib_pocl", "opencv_tapi_pocl")

#: text a file outside the capture holds; seen in any output = a read outside the capture
OUTSIDE_MARKER = "CLTUI_FUZZ_OUTSIDE_FILE"
#: the marker, and a line of /etc/passwd (the other file the links lead to)
OUTSIDE_SIGNS = (OUTSIDE_MARKER, "root:x:0:0:")

_LOG = "clintercept_log.txt"
_REPORT = "clintercept_report.txt"
_HUGE = (  # the last ones are too long for a file name (255 bytes)
    "9" * 25,
    str(2**63),
    str(2**64),
    str(2**31),
    "18446744073709551615",
    "-1",
    "-" + "9" * 30,
    "1" + "0" * 400,
)
_CONTROL = ("\x1b[31m", "\x07", "\x00", "\x1b]0;t\x07", "\r", "\x08", "\x7f", "\x9b")
_NON_UTF8 = (b"\xff", b"\xfe\xff", b"\x80", b"\xc3(", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80")
_NUM_RE = re.compile(rb"\d+")
#: what the log index and the report parser look for
_TAGS = (
    b">>>> ",
    b"<<<< ",
    b"; EnqueueCounter: ",
    b"clEnqueueNDRangeKernel( k ): ",
    b"EnqueueCounter: 1\n",
    b">>>> clEnqueueNDRangeKernel",
    b"-------> Start of Build Log:\n",
    b"Device Time for ",
    b"\x00>>>> clCreateKernel",
    b" = ",
    b"Build Info for program ",
    b"-=-=-=-=",
    b"\n",
)


# ---------------------------------------------------------------------------- the captures
@dataclass
class Base:
    """A shared capture, read-only: what the mutations pick from."""

    name: str
    src: Path
    files: list[str] = field(default_factory=list)  # relative paths, sorted
    dirs: list[str] = field(default_factory=list)
    sizes: dict[str, int] = field(default_factory=dict)

    @classmethod
    def load(cls, name: str) -> Base:
        src = CAPTURES / name
        b = cls(name, src)
        for dirpath, dirnames, filenames in os.walk(src):
            rel = os.path.relpath(dirpath, src)
            dirnames.sort()
            for d in dirnames:
                b.dirs.append(os.path.normpath(os.path.join(rel, d)))
            for f in sorted(filenames):
                rf = os.path.normpath(os.path.join(rel, f))
                b.files.append(rf)
                b.sizes[rf] = os.path.getsize(os.path.join(dirpath, f))
        return b

    def pick(self, rng: random.Random, pred: Callable[[str], bool]) -> str | None:
        """A non-empty file for which ``pred`` holds."""
        cands = [f for f in self.files if pred(f) and self.sizes[f]]
        return rng.choice(cands) if cands else None

    def dumps(self) -> list[str]:
        return [f for f in self.files if f.startswith(("memDump", "Replay", "SetKernelArg"))]


def is_dump(rel: str) -> bool:
    return rel.startswith(("memDump", "Replay", "SetKernelArg"))


def is_program_text(rel: str) -> bool:
    return "/" not in rel and rel.startswith("CLI_")


def is_text(rel: str) -> bool:
    return rel in (_LOG, _REPORT) or is_program_text(rel)


class Workspace:
    """A writable copy of a :class:`Base`, restored after each mutation (touched paths only)."""

    def __init__(self, base: Base, root: Path) -> None:
        self.base = base
        self.root = root
        self.touched: set[bytes] = set()
        shutil.copytree(base.src, root, symlinks=True)
        for p in [root, *root.rglob("*")]:
            p.chmod(p.stat().st_mode | 0o200)
        self._files = set(base.files)
        self._dirs = set(base.dirs)

    def path(self, rel: str | bytes) -> bytes:
        return os.path.join(os.fsencode(self.root), os.fsencode(rel))

    def read(self, rel: str) -> bytes:
        return (self.base.src / rel).read_bytes()

    def write(self, rel: str | bytes, data: bytes) -> None:
        self.touched.add(os.fsencode(rel))
        p = self.path(rel)
        if os.path.islink(p):
            os.unlink(p)
        with open(p, "wb") as f:
            f.write(data)

    def remove(self, rel: str | bytes) -> None:
        self.touched.add(os.fsencode(rel))
        _remove(self.path(rel))

    def symlink(self, rel: str | bytes, target: str | bytes) -> None:
        self.remove(rel)
        os.symlink(target, self.path(rel))

    def rename(self, rel: str | bytes, new: str | bytes) -> None:
        self.touched.add(os.fsencode(rel))
        self.touched.add(os.fsencode(new))
        os.rename(self.path(rel), self.path(new))

    def restore(self) -> None:
        for rel in sorted(self.touched, key=len):
            p = self.path(rel)
            _remove(p)
            name = os.fsdecode(rel)
            if name in self._files:
                shutil.copyfile(self.base.src / name, os.fsdecode(p))
            elif name in self._dirs:
                shutil.copytree(self.base.src / name, os.fsdecode(p), symlinks=True)
                for q in [Path(os.fsdecode(p)), *Path(os.fsdecode(p)).rglob("*")]:
                    q.chmod(q.stat().st_mode | 0o200)
        self.touched.clear()

    def listing(self) -> list[tuple[str, int]]:
        """(relative path, size) of every entry: to check that a restore is complete."""
        out = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            for n in dirnames + filenames:
                p = os.path.join(dirpath, n)
                st = os.lstat(p)
                size = -1 if os.path.isdir(p) and not os.path.islink(p) else st.st_size
                out.append((os.path.relpath(p, self.root), size))
        return sorted(out)


def _remove(p: bytes) -> None:
    if os.path.islink(p) or os.path.isfile(p):
        os.unlink(p)
    elif os.path.isdir(p):
        shutil.rmtree(p)
    elif os.path.lexists(p):
        os.unlink(p)


# ---------------------------------------------------------------------------- mutations
def _log_weighted(rng: random.Random, lo: int, hi: int) -> int:
    """An integer in [lo, hi], log-uniform (most small, some huge)."""
    import math

    return round(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _pick_text(ws: Workspace, rng: random.Random) -> str:
    """A text file, the call log most often."""
    r = rng.random()
    if r < 0.6 or not ws.base.files:
        return _LOG
    if r < 0.75 and _REPORT in ws.base.files:
        return _REPORT
    return ws.base.pick(rng, is_program_text) or _LOG


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _enqueue_line_indexes(lines: list[bytes]) -> list[int]:
    return [i for i, ln in enumerate(lines) if ln.startswith(b">>>>") and b"Enqueue" in ln]


def _truncate(ws: Workspace, rng: random.Random, rel: str | None) -> str:
    if rel is None:
        return "nothing to truncate"
    data = ws.read(rel)
    r = rng.random()
    if r < 0.1:
        cut = 0
    elif r < 0.3 and b"\n" in data:  # at a line end, or just before one
        nl = [m.start() for m in re.finditer(rb"\n", data)]
        cut = rng.choice(nl) + rng.choice((0, 1))
    else:
        cut = rng.randrange(0, len(data)) if data else 0
    cut = max(0, min(cut, len(data) - 1))  # at least one byte goes
    ws.write(rel, data[:cut])
    return f"{rel} cut at {cut} of {len(data)} bytes"


def _nul_run(ws: Workspace, rng: random.Random, where: str, runs: int = 1) -> str:
    rel = _pick_text(ws, rng) if rng.random() < 0.3 else _LOG
    data = bytearray(ws.read(rel))
    desc = []
    for _ in range(runs):
        n = _log_weighted(rng, 1, 2_000_000)
        if where == "head":
            at = 0
        elif where == "tail":
            at = len(data)
        else:
            at = rng.randrange(0, len(data) + 1)
        if rng.random() < 0.5:  # overwrite (as a cold cache loses a page) or insert
            end = min(len(data), at + n)
            if where == "tail":
                at = max(0, len(data) - n)
                end = len(data)
            data[at:end] = b"\x00" * n
            desc.append(f"{n} NULs over {at}")
        else:
            data[at:at] = b"\x00" * n
            desc.append(f"{n} NULs inserted at {at}")
    ws.write(rel, bytes(data))
    return f"{rel}: " + ", ".join(desc)


def _line_edit(ws: Workspace, rng: random.Random, dup: bool) -> str:
    rel = _LOG if rng.random() < 0.8 else (_REPORT if _REPORT in ws.base.files else _LOG)
    lines = _lines(ws.read(rel))
    if not lines:
        return f"{rel} is empty"
    enq = _enqueue_line_indexes(lines)
    count = _log_weighted(rng, 1, 40)
    picks = sorted(
        {
            rng.choice(enq) if enq and rng.random() < 0.5 else rng.randrange(len(lines))
            for _ in range(count)
        },
        reverse=True,
    )
    for i in picks:
        if dup:
            to = i if rng.random() < 0.6 else rng.randrange(len(lines) + 1)
            lines.insert(to, lines[i])
        else:
            del lines[i]
    ws.write(rel, b"".join(lines))
    return f"{rel}: {'duplicated' if dup else 'deleted'} lines {sorted(picks)[:8]}"


def _huge_number_log(ws: Workspace, rng: random.Random) -> str:
    lines = _lines(ws.read(_LOG))
    cands = _enqueue_line_indexes(lines) if rng.random() < 0.7 else list(range(len(lines)))
    cands = [i for i in cands if _NUM_RE.search(lines[i])]
    if not cands:
        return "no number in the log"
    out = []
    for _ in range(rng.randint(1, 3)):
        i = rng.choice(cands)
        nums = list(_NUM_RE.finditer(lines[i]))
        m = rng.choice(nums)
        huge = rng.choice(_HUGE).encode()
        lines[i] = lines[i][: m.start()] + huge + lines[i][m.end() :]
        out.append(f"line {i + 1}: {m.group().decode()} -> {huge[:30].decode()}")
    ws.write(_LOG, b"".join(lines))
    return "; ".join(out)


def _rename_piece(name: str, rng: random.Random, new_piece: Callable[[str], str]) -> str:
    """``name`` with one of its numbers (or its kernel name part) replaced."""
    nums = list(re.finditer(r"\d+", name))
    if not nums:
        return name + new_piece("")
    m = rng.choice(nums)
    return name[: m.start()] + new_piece(m.group()) + name[m.end() :]


def _named_entries(ws: Workspace) -> list[str]:
    """Files and folders whose names the capture model parses."""
    return [f for f in ws.base.files if is_dump(f) or is_program_text(f)] + [
        d for d in ws.base.dirs if d.startswith("Replay/")
    ]


def _rename_entry(ws: Workspace, rng: random.Random, new_name: Callable[[str], bytes]) -> str:
    ents = _named_entries(ws)
    if not ents:
        return "no named file"
    rel = rng.choice(ents)
    head, tail = os.path.split(rel)
    new_rel = os.path.join(os.fsencode(head), new_name(tail)) if head else new_name(tail)
    if os.path.lexists(ws.path(new_rel)):  # the new name is taken (a number hit another's)
        return f"{rel}: its new name {os.fsdecode(new_rel)[:120]!r} is taken: not renamed"
    ws.rename(rel, new_rel)
    return f"{rel} -> {os.fsdecode(new_rel)[:120]!r}"


def _long_word(ws: Workspace, rng: random.Random) -> str:
    rel = _LOG if rng.random() < 0.75 else _pick_text(ws, rng)
    n = _log_weighted(rng, 1_000, 2_000_000)
    word = rng.choice((b"a", b"x=", b"0x", b"9", b"<", b"Enqueue")) * (n // 2 + 1)
    word = word[:n]
    lines = _lines(ws.read(rel))
    if not lines:
        ws.write(rel, word)
        return f"{rel}: one word of {n} bytes"
    enq = _enqueue_line_indexes(lines)
    i = rng.choice(enq) if enq and rng.random() < 0.7 else rng.randrange(len(lines))
    ln = lines[i]
    at = rng.randrange(0, len(ln) + 1)
    lines[i] = ln[:at] + word + ln[at:]
    ws.write(rel, b"".join(lines))
    return f"{rel} line {i + 1}: a word of {n} bytes at column {at}"


def _control_log(ws: Workspace, rng: random.Random) -> str:
    data = ws.read(_LOG)
    names = sorted(set(re.findall(rb"kernel_name = (\w+)", data)) | set(
        re.findall(rb"clEnqueueNDRangeKernel\( (\w+) \)", data)
    ))
    if not names:
        return "no kernel names in the log"
    name = rng.choice(names)
    at = rng.randrange(len(name) + 1)
    bad = name[:at] + rng.choice(_CONTROL).encode() + name[at:]
    ws.write(_LOG, data.replace(name, bad))
    return f"kernel {name.decode()!r} -> {bad.decode('latin-1')!r} in the log"


def _outside_target(ws: Workspace, rng: random.Random, want_dir: bool) -> str:
    outside = ws.root.parent / "outside"
    if want_dir:
        return rng.choice((str(outside), "/etc", "/", str(ws.root.parent)))
    secret = str(outside / "secret.txt")
    return rng.choice((secret, secret, "/etc/passwd", "/proc/self/environ"))


#: Replay folder files read when an enqueue is decoded (a FIFO there hung show and info)
_REPLAY_SLOTS = re.compile(
    r"(worksizes|buildOptions|enqueueNumber|kernelName|ArgumentDataTypes)\.txt$|Argument\d+\.bin$"
)


def _special_file(ws: Workspace, rng: random.Random, kind: str) -> str:
    """A file of the capture replaced by what is not a regular file: a FIFO (an open for
    reading blocks), a link to a device that never ends (``/dev/zero``), a socket."""
    import stat

    b = ws.base
    r = rng.random()
    rel = (
        (b.pick(rng, lambda f: bool(_REPLAY_SLOTS.search(f))) if r < 0.4 else None)
        or (_LOG if r < 0.5 else (_REPORT if r < 0.55 and _REPORT in b.files else None))
        or rng.choice(b.files)
    )
    ws.remove(rel)
    p = ws.path(rel)
    if kind == "fifo_file":
        os.mkfifo(p)
        return f"{rel} is a FIFO"
    if kind == "socket_file":
        os.mknod(p, stat.S_IFSOCK | 0o600)  # a socket's node (no path length limit of bind)
        return f"{rel} is a socket"
    target = rng.choice(("/dev/zero", "/dev/urandom", "/dev/zero", "/dev/stdin"))
    os.symlink(target, p)
    return f"{rel} -> {target}"


def mutate(ws: Workspace, kind: str, rng: random.Random) -> str:
    """Damage ``ws`` by one mutation of ``kind``; returns a one-line description."""
    b = ws.base
    if kind == "truncate_log":
        return _truncate(ws, rng, _LOG)
    if kind == "truncate_report":
        return _truncate(ws, rng, _REPORT if _REPORT in b.files else None)
    if kind == "truncate_dump":
        return _truncate(ws, rng, b.pick(rng, is_dump))
    if kind == "truncate_source":
        return _truncate(ws, rng, b.pick(rng, is_program_text))
    if kind == "byte_flips":
        rel = _LOG if rng.random() < 0.5 else (b.pick(rng, lambda f: True) or _LOG)
        data = bytearray(ws.read(rel))
        n = _log_weighted(rng, 1, 64)
        for _ in range(n if data else 0):
            data[rng.randrange(len(data))] ^= rng.randrange(1, 256)
        ws.write(rel, bytes(data))
        return f"{rel}: {n} bytes flipped"
    if kind.startswith("nul_run"):
        where = {"nul_run_head": "head", "nul_run_tail": "tail"}.get(kind, "middle")
        return _nul_run(ws, rng, where, rng.randint(2, 6) if kind == "nul_runs_several" else 1)
    if kind == "duplicate_lines":
        return _line_edit(ws, rng, dup=True)
    if kind == "delete_lines":
        return _line_edit(ws, rng, dup=False)
    if kind == "delete_file":
        r = rng.random()
        rel = (
            rng.choice(b.dirs)
            if r < 0.2 and b.dirs
            else (_LOG if r < 0.35 else rng.choice(b.files))
        )
        ws.remove(rel)
        return f"{rel} deleted"
    if kind == "zero_length_file":
        rels = [rng.choice(b.files) for _ in range(rng.randint(1, 4))]
        if rng.random() < 0.3:
            rels.append(_LOG)
        for rel in rels:
            ws.write(rel, b"")
        return "emptied " + ", ".join(sorted(set(rels)))
    if kind == "huge_number_log":
        return _huge_number_log(ws, rng)
    if kind == "huge_number_name":
        huge = rng.choice(_HUGE[:-1]).lstrip("-")
        return _rename_entry(
            ws, rng, lambda n: os.fsencode(_rename_piece(n, rng, lambda _old: huge))
        )
    if kind == "long_word":
        return _long_word(ws, rng)
    if kind == "non_utf8_bytes":
        rel = _pick_text(ws, rng)
        data = bytearray(ws.read(rel))
        for _ in range(rng.randint(1, 8)):
            at = rng.randrange(len(data) + 1)
            data[at:at] = rng.choice(_NON_UTF8)
        ws.write(rel, bytes(data))
        return f"{rel}: invalid UTF-8 inserted"
    if kind == "non_utf8_name":
        bad = rng.choice(_NON_UTF8)

        def non_utf8(name: str) -> bytes:
            raw = os.fsencode(name)
            at = rng.randrange(len(raw) + 1)
            return raw[:at] + bad + raw[at:]

        return _rename_entry(ws, rng, non_utf8)
    if kind == "control_chars_log":
        return _control_log(ws, rng)
    if kind == "control_chars_name":
        ctl = rng.choice([c for c in _CONTROL if "\x00" not in c])

        def control(name: str) -> bytes:
            m = re.search(r"Kernel_(.+?)_Arg", name) or re.search(r"_\d+_(.+)$", name)
            if m and rng.random() < 0.8:
                at = rng.randrange(m.start(1), m.end(1) + 1)
            else:
                at = rng.randrange(len(name) + 1)
            return os.fsencode(name[:at] + ctl + name[at:])

        return _rename_entry(ws, rng, control)
    if kind == "symlink_outside":
        if rng.random() < 0.25 and b.dirs:
            rel = rng.choice([d for d in b.dirs if "/" not in d] or b.dirs)
            target = _outside_target(ws, rng, True)
        else:
            r = rng.random()
            rel = (
                b.pick(rng, lambda f: f.endswith("_options.txt"))
                if r < 0.3
                else (_LOG if r < 0.4 else (_REPORT if r < 0.5 else rng.choice(b.files)))
            ) or rng.choice(b.files)
            target = _outside_target(ws, rng, False)
        ws.symlink(rel, target)
        return f"{rel} -> {target}"
    if kind == "symlink_loop":
        r = rng.random()
        if r < 0.4 and b.dirs:  # a folder inside a dump folder that leads back up
            d = rng.choice(b.dirs)
            rel = os.path.join(d, "loop")
            target = rng.choice(("..", ".", "../..", os.fsdecode(ws.path(d))))
            ws.touched.add(os.fsencode(rel))
            os.symlink(target, ws.path(rel))
            return f"{rel} -> {target}"
        rel = rng.choice(b.files)
        if r < 0.7:
            ws.symlink(rel, os.path.basename(rel))
            return f"{rel} -> itself"
        other = rel + ".loop"
        ws.symlink(rel, os.path.basename(other))
        ws.touched.add(os.fsencode(other))
        os.symlink(os.path.basename(rel), ws.path(other))
        return f"{rel} <-> {other}"
    if kind == "symlink_dangling":
        rel = rng.choice(b.files + b.dirs) if rng.random() < 0.8 else _LOG
        target = rng.choice(("missing", "/nonexistent/cltui-fuzz", "../../gone", ""))
        if target == "":
            target = "x" * 300
        ws.symlink(rel, target)
        return f"{rel} -> {target[:40]} (dangling)"
    if kind == "repeated_tags":  # a tag the index looks for, repeated up to a million times
        tag = rng.choice(_TAGS)
        n = _log_weighted(rng, 10, 1_000_000)
        data = bytearray(ws.read(_LOG))
        at = rng.randrange(len(data) + 1)
        data[at:at] = tag * n
        ws.write(_LOG, bytes(data))
        return f"{tag[:30]!r} x {n} at {at}"
    if kind == "one_line_log":  # every line end gone (or turned into another separator)
        sep = rng.choice((b"", b" ", b"\r", b"\x00", b"\t"))
        ws.write(_LOG, ws.read(_LOG).replace(b"\n", sep))
        return f"log as one line (line ends -> {sep!r})"
    if kind == "binary_garbage":  # random bytes: inserted into, or instead of, a text file
        rel = _pick_text(ws, rng)
        n = _log_weighted(rng, 16, 2_000_000)
        junk = rng.randbytes(n)
        if rng.random() < 0.5:
            ws.write(rel, junk)
            return f"{rel} replaced by {n} random bytes"
        data = ws.read(rel)
        at = rng.randrange(len(data) + 1)
        ws.write(rel, data[:at] + junk + data[at:])
        return f"{rel}: {n} random bytes at {at}"
    if kind in ("fifo_file", "device_link", "socket_file"):
        return _special_file(ws, rng, kind)
    raise ValueError(f"unknown mutation kind {kind!r}")


# ---------------------------------------------------------------------------- the commands
@dataclass
class Finding:
    what: str  # "traceback" | "outside" | "hang"
    signature: str  # groups findings of one cause
    detail: str  # the message / last lines of the traceback

    def to_dict(self) -> dict[str, str]:
        return {"what": self.what, "signature": self.signature, "detail": self.detail}


_WRAPPED = re.compile(
    r"(?:cannot open capture|could not decode this enqueue): (\w+(?:Error|Exception)\b)?"
)


def _signature(exc: BaseException) -> str:
    """``Type at file:function`` of the innermost cltui frame (the bug's place)."""
    tb = traceback.extract_tb(exc.__traceback__)
    where = "?"
    for fr in reversed(tb):
        if "/cltui/" in fr.filename:
            where = f"{fr.filename.split('/cltui/')[-1]}:{fr.name}"
            break
    return f"{type(exc).__name__} at {where}"


def _tb_text(exc: BaseException) -> str:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return "".join(lines)[-1500:]


def exercise(path: Path) -> list[Finding]:
    """Read the capture at ``path`` as ``ls``, ``ls --json``, ``show``, ``show --json``,
    ``info``, ``info --json`` and a whole-range replay plan would; returns the findings."""
    from cltui.capture import CaptureError, open_capture
    from cltui.capture.ranges import EnqueueRange
    from cltui.commands import info as info_cmd
    from cltui.commands import show as show_cmd
    from cltui.commands import show_text
    from cltui.commands._common import _json_default, row_json
    from cltui.commands.ls import fmt_size
    from cltui.replay.plan import PlanError, build_plan
    from cltui.text.units import fmt_ns

    findings: list[Finding] = []
    texts: list[str] = []

    def emit(data: Any) -> None:  # what emit_json prints (less its indent: the same values)
        texts.append(json.dumps(data, default=_json_default))

    try:
        cap = open_capture(path)
    except CaptureError as exc:
        msg = str(exc)
        m = _WRAPPED.search(msg)
        if m and m.group(1):
            findings.append(Finding("traceback", f"{m.group(1)} (open: wrapped)", msg[:500]))
        elif "\n" in msg or not msg:
            findings.append(Finding("traceback", "CaptureError not one line", msg[:500]))
        return findings
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            texts.extend(str(p) for p in cap.problems)
            # ls and ls --json
            for pos in range(len(cap)):
                row = cap.row(pos)
                texts.append(json.dumps(row_json(row)))
                name = row.kernel if row.kernel is not None else row.function
                dev = fmt_ns(row.device_time.start_to_end, "-") if row.device_time else "-"
                gsz = fmt_size(row.global_size) if row.global_size is not None else ""
                texts.append(f"{row.number:>7}  {row.kind.label} {name[:32]:<32} {gsz} {dev}")
            # show and show --json, every enqueue
            for n in cap.numbers.tolist():
                data = show_cmd.enqueue_to_json(cap, int(n))
                for p in data["problems"]:
                    m = _WRAPPED.search(p)
                    if m:
                        findings.append(
                            Finding("traceback", f"{m.group(1)} (decode: wrapped)", p[:500])
                        )
                emit(data)
                show_text.print_text(data)
            # info and info --json
            data = cap.info()
            data["problems"] = [str(p) for p in cap.problems]
            emit(data)
            info_cmd._print_tree(data)
            # a replay plan of the whole range
            try:
                plan = build_plan(cap, EnqueueRange(None, None), "chain")
                texts.append(json.dumps(plan.to_manifest()))
            except PlanError as exc:
                if "\n" in str(exc):
                    findings.append(Finding("traceback", "PlanError not one line", str(exc)[:500]))
    except Exception as exc:
        findings.append(Finding("traceback", _signature(exc), _tb_text(exc)))
    finally:
        cap.close()
    texts.append(out.getvalue())
    # click caches its stdout wrapper per stream in a WeakKeyDictionary whose value is the
    # stream itself (a StringIO under redirect_stdout): the object is never freed, so its
    # buffer is (a worker grew ~27 KB an input, MemoryError after ~40,000 inputs)
    out.close()
    if any(sign in t for t in texts for sign in OUTSIDE_SIGNS):
        findings.append(
            Finding("outside", "read outside the capture", "a file outside it shows in the output")
        )
    return findings


# ---------------------------------------------------------------------------- inputs
@dataclass(frozen=True)
class Spec:
    capture: str
    kind: str
    seed: int

    def __str__(self) -> str:
        return f"{self.capture} {self.kind} {self.seed}"

    @classmethod
    def parse(cls, text: str) -> Spec:
        cap, kind, seed = text.split()
        if kind not in KINDS:
            raise ValueError(f"unknown mutation kind {kind!r} (one of {', '.join(KINDS)})")
        return cls(cap, kind, int(seed))


def specs(
    n: int,
    seed: int,
    bases: tuple[str, ...] = BASES,
    rare_every: int = 29,
    kinds: tuple[str, ...] = KINDS,
) -> Iterator[Spec]:
    """``n`` inputs: every kind in turn (each is tried once in any ``len(KINDS)`` inputs in a
    row), on the first capture of ``bases`` except every ``rare_every``-th input, which takes
    the other captures in turn (they are slower to read).  Input ``i``'s seed is a function
    of ``seed`` and ``i`` alone."""
    for i in range(n):
        kind = kinds[i % len(kinds)]
        cap = bases[0]
        if len(bases) > 1 and i % rare_every == rare_every - 1:
            cap = bases[1 + (i // rare_every) % (len(bases) - 1)]
        yield Spec(cap, kind, seed * 1_000_003 + i)


class Runner:
    """Applies inputs on workspaces of one process (one copy per capture)."""

    def __init__(self, work: Path, verify: bool = False) -> None:
        self.work = work
        self.verify = verify
        self.spaces: dict[str, Workspace] = {}
        self.listings: dict[str, list[tuple[str, int]]] = {}
        outside = work / "outside"
        outside.mkdir(exist_ok=True)
        (outside / "secret.txt").write_text(f"-I {OUTSIDE_MARKER} {OUTSIDE_MARKER}\n")
        (outside / _LOG).write_text(f">>>> {OUTSIDE_MARKER}\n")

    def space(self, name: str) -> Workspace:
        ws = self.spaces.get(name)
        if ws is None:
            ws = self.spaces[name] = Workspace(Base.load(name), self.work / "cap" / name)
            if self.verify:
                self.listings[name] = ws.listing()
        return ws

    def run(self, spec: Spec, started: Callable[[str], None] | None = None) -> dict[str, Any]:
        """Mutate, read, restore; ``started(description)`` is called before the reading."""
        ws = self.space(spec.capture)
        t0 = time.perf_counter()
        try:
            desc = mutate(ws, spec.kind, random.Random(spec.seed))
        except Exception as exc:  # a harness bug: say so, loudly
            ws.restore()
            return {
                "spec": str(spec),
                "desc": "mutation failed",
                "seconds": 0.0,
                "findings": [Finding("harness", _signature(exc), _tb_text(exc)).to_dict()],
            }
        if started is not None:
            started(desc)
        findings = exercise(ws.root)
        seconds = time.perf_counter() - t0
        ws.restore()
        if self.verify and ws.listing() != self.listings[spec.capture]:
            findings.append(Finding("harness", "restore incomplete", desc))
        return {
            "spec": str(spec),
            "desc": desc,
            "seconds": seconds,
            "findings": [f.to_dict() for f in findings],
        }


#: address space of a worker: a runaway read fails there as a MemoryError (a finding)
#: instead of taking the machine's memory
WORKER_MEMORY = 3 << 30
#: inputs a worker process runs before a fresh one takes its place
RECYCLE_EVERY = 5000


def _worker(conn: Connection, work: str, verify: bool, bases: tuple[str, ...]) -> None:
    import faulthandler
    import resource
    import signal

    resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY, WORKER_MEMORY))
    import cltui.commands.info
    import cltui.commands.show
    import cltui.commands.show_text
    import cltui.replay.plan  # noqa: F401  (imported before the first input's clock starts)

    runner = Runner(Path(work), verify)
    for name in bases:  # the copies are made before the first input's clock starts
        runner.space(name)
    # where a hang is: the driver asks for the stacks (SIGUSR1) before it kills this process
    with open(Path(work) / "stack.txt", "w") as stack:
        faulthandler.register(signal.SIGUSR1, file=stack, all_threads=True)
        conn.send({"ready": True})
        while True:
            msg = conn.recv()
            if msg is None:
                return
            stack.seek(0)
            stack.truncate()
            c0 = time.process_time()
            result = runner.run(Spec.parse(msg), lambda desc: conn.send({"desc": desc}))
            result["cpu"] = time.process_time() - c0
            conn.send(result)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def hang_place(stack: str) -> str:
    """``file:line in function`` of the innermost cltui frame of a faulthandler dump."""
    for line in stack.splitlines():
        m = re.search(r'File "[^"]*/cltui/([^"]+)", line (\d+) in (\S+)', line)
        if m:
            return f"{m.group(1)}:{m.group(2)} in {m.group(3)}"
    return "?"


def run_one(spec: Spec) -> dict[str, Any]:
    """One input on a fresh copy, in this process (to reproduce a finding)."""
    with tempfile.TemporaryDirectory(prefix="cltui-fuzz-") as work:
        return Runner(Path(work)).run(spec)


@dataclass
class Summary:
    """What a campaign found, per kind and per signature."""

    inputs: int = 0
    per_kind: dict[str, int] = field(default_factory=dict)
    per_capture: dict[str, int] = field(default_factory=dict)
    tracebacks: int = 0
    outside: int = 0
    hangs: int = 0
    harness: int = 0
    signatures: dict[str, dict[str, Any]] = field(default_factory=dict)
    slowest: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    deadline: float = 0.0
    workers: int = 0
    seed: int = 0
    stopped: bool = False  # ended early (max_hangs)
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds per capture

    def add(self, result: dict[str, Any]) -> None:
        spec = Spec.parse(result["spec"])
        self.inputs += 1
        self.per_kind[spec.kind] = self.per_kind.get(spec.kind, 0) + 1
        self.per_capture[spec.capture] = self.per_capture.get(spec.capture, 0) + 1
        cpu = result.get("cpu", result["seconds"])
        self.cpu[spec.capture] = self.cpu.get(spec.capture, 0.0) + cpu
        if not self.slowest or cpu > self.slowest["cpu_seconds"]:
            self.slowest = {
                "spec": result["spec"],
                "kind": spec.kind,
                "desc": result["desc"],
                "cpu_seconds": round(cpu, 3),
                "seconds": round(result["seconds"], 3),
            }
        seen: set[str] = set()
        for f in result["findings"]:
            key = f"{f['what']}: {f['signature']}"
            if key in seen:
                continue
            seen.add(key)
            if f["what"] == "traceback":
                self.tracebacks += 1
            elif f["what"] == "outside":
                self.outside += 1
            elif f["what"] == "hang":
                self.hangs += 1
            else:
                self.harness += 1
            sig = self.signatures.setdefault(
                key,
                {"count": 0, "kinds": {}, "repro": result["spec"], "desc": result["desc"],
                 "detail": f["detail"]},
            )
            sig["count"] += 1
            sig["kinds"][spec.kind] = sig["kinds"].get(spec.kind, 0) + 1

    @property
    def clean(self) -> bool:
        return not (self.tracebacks or self.outside or self.hangs or self.harness)

    def to_dict(self) -> dict[str, Any]:
        return {
            "inputs": self.inputs,
            "seed": self.seed,
            "workers": self.workers,
            "deadline_cpu_s": self.deadline,
            "seconds": round(self.seconds, 1),
            "tracebacks": self.tracebacks,
            "outside_reads": self.outside,
            "hangs": self.hangs,
            "harness_errors": self.harness,
            "stopped_early": self.stopped,
            "per_kind": dict(sorted(self.per_kind.items())),
            "per_capture": self.per_capture,
            "cpu_seconds_per_capture": {k: round(v, 1) for k, v in self.cpu.items()},
            "slowest": self.slowest,
            "signatures": self.signatures,
        }

    def report(self) -> str:
        lines = [
            f"{self.inputs} inputs in {self.seconds:.0f} s ({self.workers} workers, "
            f"deadline {self.deadline:g} CPU s, seed {self.seed}): {self.tracebacks} tracebacks, "
            f"{self.hangs} hangs, {self.outside} reads outside the capture"
            + (f", {self.harness} harness errors" if self.harness else "")
            + (" (stopped early: too many hangs)" if self.stopped else ""),
        ]
        if self.slowest:
            s = self.slowest
            lines.append(
                f"slowest: {s['cpu_seconds']} CPU s ({s['seconds']} s)  {s['spec']}  "
                f"({s['desc'][:100]})"
            )
        for key, sig in sorted(self.signatures.items(), key=lambda kv: -kv[1]["count"]):
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(sig["kinds"].items()))
            lines.append(f"{sig['count']:>6}  {key}  [{kinds}]")
            lines.append(f"        repro: {sig['repro']}  ({sig['desc'][:100]})")
            last = sig["detail"].strip().splitlines()[-1:] or [""]
            lines.append(f"        {last[0][:160]}")
        return "\n".join(lines)


def run_campaign(
    inputs: Iterable[Spec],
    *,
    workers: int = 2,
    deadline: float = 20.0,
    wall_factor: float = 10.0,
    verify: bool = False,
    max_hangs: int | None = None,
    bases: tuple[str, ...] = BASES,
    seed: int = 0,
    progress: Callable[[Summary], None] | None = None,
) -> Summary:
    """Run ``inputs`` in ``workers`` processes; an input that takes ``deadline`` CPU seconds (or
    ``wall_factor`` times as long in wall time: one that waits) is a hang: its worker's stacks
    are taken, it is killed and replaced by a fresh one.  CPU time, not wall time, so that a
    loaded machine does not make hangs of slow inputs.  With ``max_hangs``, no new input starts
    once that many hangs were seen (a failing run ends sooner; ``Summary.stopped`` says so)."""
    import signal

    ctx = mp.get_context("spawn")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")  # one core per worker
    summary = Summary(workers=workers, deadline=deadline, seed=seed)
    todo = iter(inputs)
    top = Path(tempfile.mkdtemp(prefix="cltui-fuzz-"))
    started = time.perf_counter()
    slots: list[dict[str, Any]] = []
    serial = 0

    def spawn() -> dict[str, Any]:
        nonlocal serial
        serial += 1
        work = top / f"w{serial}"
        work.mkdir()
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_worker, args=(child, str(work), verify, bases), daemon=True)
        proc.start()
        child.close()
        if not parent.poll(300) or not parent.recv().get("ready"):
            raise RuntimeError("a fuzz worker did not start")
        return {"proc": proc, "conn": parent, "work": work, "spec": None, "t0": 0.0,
                "cpu0": 0.0, "desc": ""}

    def feed(slot: dict[str, Any]) -> bool:
        if max_hangs is not None and summary.hangs >= max_hangs:
            summary.stopped = True
            spec = None
        else:
            spec = next(todo, None)
        if spec is None:
            slot["spec"] = None
            return False
        slot["spec"] = spec
        slot["desc"] = ""
        slot["t0"] = time.perf_counter()
        slot["cpu0"] = _cpu_seconds(slot["proc"].pid)
        slot["conn"].send(str(spec))
        return True

    def hang(s: dict[str, Any], cpu: float, wall: float) -> None:
        with contextlib.suppress(OSError):
            os.kill(s["proc"].pid, signal.SIGUSR1)
        time.sleep(0.5)
        s["proc"].kill()
        s["proc"].join()
        try:
            stack = (s["work"] / "stack.txt").read_text(errors="replace")
        except OSError:
            stack = ""
        summary.add(
            {
                "spec": str(s["spec"]),
                "desc": s["desc"] or "(the mutation itself did not finish)",
                "seconds": wall,
                "cpu": cpu,
                "findings": [
                    {"what": "hang", "signature": f"at {hang_place(stack)}",
                     "detail": f"killed after {cpu:.1f} CPU s, {wall:.1f} s\n{stack[:1500]}"}
                ],
            }
        )

    try:
        for _ in range(workers):
            slot = spawn()
            slots.append(slot)
            feed(slot)
        while any(s["spec"] is not None for s in slots):
            busy = [s for s in slots if s["spec"] is not None]
            ready = wait([s["conn"] for s in busy], timeout=0.5)
            for s in list(busy):
                if s["conn"] in ready:
                    try:
                        result = s["conn"].recv()
                        if "desc" in result and "spec" not in result:
                            s["desc"] = result["desc"]
                            continue
                    except EOFError:  # the worker died (a crash of the interpreter)
                        result = {
                            "spec": str(s["spec"]),
                            "desc": s["desc"] or "worker died",
                            "seconds": time.perf_counter() - s["t0"],
                            "cpu": 0.0,
                            "findings": [
                                {"what": "traceback", "signature": "worker process died",
                                 "detail": f"exit code {s['proc'].exitcode}"}
                            ],
                        }
                        summary.add(result)
                        _replace(s, spawn())
                        feed(s)
                        continue
                    summary.add(result)
                    s["done"] = s.get("done", 0) + 1
                    if s["done"] >= RECYCLE_EVERY:  # a fresh process: bounded caches and
                        _replace(s, spawn())  # heap fragmentation start over
                        s["done"] = 0
                    feed(s)
                    continue
                wall = time.perf_counter() - s["t0"]
                cpu = _cpu_seconds(s["proc"].pid) - s["cpu0"]
                if cpu >= deadline or wall >= deadline * wall_factor:
                    hang(s, cpu, wall)
                    _replace(s, spawn())
                    feed(s)
            if progress is not None:
                summary.seconds = time.perf_counter() - started
                progress(summary)
    finally:
        for s in slots:
            with contextlib.suppress(Exception):
                s["conn"].send(None)
        for s in slots:
            s["proc"].join(5)
            if s["proc"].is_alive():
                s["proc"].kill()
                s["proc"].join()
        shutil.rmtree(top, ignore_errors=True)
    summary.seconds = time.perf_counter() - started
    return summary


def _replace(slot: dict[str, Any], fresh: dict[str, Any]) -> None:
    """Kill ``slot``'s worker, drop its copies, and put ``fresh`` in its place."""
    slot["proc"].kill()
    slot["proc"].join()
    slot["conn"].close()
    shutil.rmtree(slot["work"], ignore_errors=True)
    slot.update({k: v for k, v in fresh.items() if k != "spec"})
