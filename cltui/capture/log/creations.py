"""The memory objects, kernels, programs, queues and samplers the log creates, built from the
scanned creation lines (``Create*`` calls and their exit lines)."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

from cltui.capture.log.grammar import (
    _CREATED_RE,
    _PTR,
    _flags,
    _queue_device,
    kv_pairs,
    parse_ptr,
    parse_sampler_props,
    split_kernel_name,
    strip_counter,
)
from cltui.capture.log.index import (
    RELEASED_KINDS,
    LogIndex,
)
from cltui.capture.log.objects import (
    KernelRecord,
    ProgramRecord,
    QueueRecord,
    _image_bytes,
    _image_format,
)
from cltui.capture.model import (
    MemObject,
    Problem,
)


class _Builder:
    """Pairs rare entry/exit lines (sorted by offset) into the handle tables."""

    def __init__(self, idx: LogIndex) -> None:
        self.idx = idx
        self.pending: dict[str, list[tuple[int, str, int]]] = {}
        self.options_path: str | None = None
        self.last_program: ProgramRecord | None = None

    def entry(self, off: int, fn: str, rest: str, counter: int) -> None:
        if fn.startswith("clRelease"):
            self._release(off, fn, rest)
            return
        if fn in ("clBuildProgram", "clCompileProgram"):
            _, args = split_kernel_name(rest)
            m = re.search(r"program = " + _PTR.decode(), args)
            if m and self.options_path is not None:
                p = parse_ptr(m.group(1))
                if p is not None:
                    rec = self.idx.program_at(p, off)
                    if rec is not None:
                        rec.options_path = self.options_path
            self.options_path = None
            return
        if fn in ("clSVMFree", "clMemFreeINTEL"):
            m = re.search(r"(?:svm_pointer|ptr) = " + _PTR.decode(), rest)
            if m:
                p = parse_ptr(m.group(1))
                if p is not None:
                    self._close_mem(p, off)
            return
        self.pending.setdefault(fn, []).append((off, rest, counter))

    def _close_mem(self, handle: int, off: int) -> None:
        lst = self.idx.mem.get(handle)
        if lst:
            o, rel, obj = lst[-1]
            if rel is None and o < off:
                lst[-1] = (o, off, obj)

    def _release(self, off: int, fn: str, rest: str) -> None:
        m = re.search(r"\[ ref count = (\d+) \] \w+ = " + _PTR.decode(), rest)
        if not m or m.group(1) != "1":
            return
        h = parse_ptr(m.group(2))
        if h is not None:
            self.close(fn, h, off)

    def close(self, fn: str, handle: int, off: int) -> None:
        """The last release of an object (``fn``: its ``clRelease*``) at ``off``: the end of
        the identity its handle had (a later creation of the handle is another object)."""
        if fn == "clReleaseMemObject":
            self._close_mem(handle, off)
            return
        kind = RELEASED_KINDS.get(fn)
        if kind is not None:
            self.idx.released.setdefault((kind, handle), []).append(off)

    def exit(self, off: int, fn: str, rest: str) -> None:
        stack = self.pending.get(fn)
        if not stack:
            return
        eoff, args, counter = stack.pop()
        try:
            self._created(fn, eoff, off, args, rest, counter)
        except (ValueError, IndexError, KeyError, OverflowError):
            self.idx.problems.append(
                Problem(f"could not decode {fn} at byte {eoff}", "clintercept_log.txt")
            )

    def _created(self, fn: str, eoff: int, xoff: int, args: str, ret: str, counter: int) -> None:
        idx = self.idx
        args, _ = strip_counter(args)
        args = args[2:] if args.startswith(": ") else args
        m = _CREATED_RE.search(ret)
        handle = parse_ptr(m.group(1)) if m else None
        if fn == "clCreateKernelsInProgram":
            pm = re.search(r"program = " + _PTR.decode(), args)
            prog = parse_ptr(pm.group(1)) if pm else None
            for k in re.findall(_PTR.decode(), ret.split("kernels = ", 1)[-1]):
                h = parse_ptr(k)
                if h:
                    idx.kernels.setdefault(h, []).append(KernelRecord(h, prog, "", eoff, xoff))
            return
        if not handle:
            return
        kv = kv_pairs(args)
        obj = _mem_object(fn, handle, kv, args, counter, eoff)
        if obj is not None:
            idx.mem.setdefault(handle, []).append((eoff, None, obj))
        elif fn == "clCreateKernel":
            pm = re.search(r"program = " + _PTR.decode(), args)
            prog = parse_ptr(pm.group(1)) if pm else None
            name = args.split("kernel_name = ", 1)[1].strip() if "kernel_name = " in args else ""
            idx.kernels.setdefault(handle, []).append(KernelRecord(handle, prog, name, eoff, xoff))
        elif fn.startswith("clCreateProgramWith") or fn == "clLinkProgram":
            nm = re.search(r"program number = (\d+)", ret)
            rec = ProgramRecord(handle, int(nm.group(1)) if nm else None, eoff)
            idx.programs.setdefault(handle, []).append(rec)
            self.last_program = rec
        elif fn.startswith("clCreateCommandQueue"):
            idx.queues.setdefault(handle, []).append(QueueRecord(handle, _queue_device(args), eoff))
        elif fn.startswith("clCreateSampler"):
            s = parse_sampler_props(args)
            if s is not None:
                idx.samplers.setdefault(handle, []).append((eoff, s))

    def side(self, off: int, tag: str, rest: str) -> None:
        idx = self.idx
        if tag.startswith("Dumping program to file") or tag.startswith("Dumping input program"):
            path = rest.split(": ", 1)[-1].strip()
            if self.last_program is not None and self.last_program.source_path is None:
                self.last_program.source_path = path
                if self.last_program.number is None:
                    pm = re.search(r"CLI_(\d{4,})_", Path(path).name)
                    if pm:
                        self.last_program.number = int(pm.group(1))
        elif tag.startswith("Dumping program options to file"):
            self.options_path = rest.split(": ", 1)[-1].strip()
        elif tag.startswith("Build Info for program "):
            m = re.match(_PTR.decode() + r" \((\w+)\)", rest)
            if m:
                h = parse_ptr(m.group(1))
                rec = idx.program_at(h, off) if h is not None else None
                if rec is not None:
                    rec.build_tag = m.group(2)
                    if self.options_path is not None and m.group(2) in self.options_path:
                        rec.options_path = self.options_path
                    if rec.number is None:
                        with contextlib.suppress(ValueError):
                            rec.number = int(m.group(2).split("_")[0])
        elif tag.startswith("Added kernel name mapping"):
            m = re.match(r"(.*) to (k_\d+)$", rest.strip())
            if m:
                idx.name_mapping[m.group(2)] = m.group(1)
        elif tag.startswith("Control "):
            m = re.match(r"(\w+) is set to non-default value: (.*)$", rest)
            if m:
                idx.controls[m.group(1)] = m.group(2).rstrip("\r")
        elif tag.startswith("-=-=-="):
            idx.sessions.append(off)
        elif tag.startswith("CLIntercept is shutting down"):
            idx.shutdowns += 1
        elif tag.startswith("Dumping kernel capture replay"):
            idx.replay_lines += 1


def _mem_object(
    fn: str, handle: int, kv: dict[str, str], args: str, counter: int, eoff: int
) -> MemObject | None:
    """The memory object a creator ``fn`` made (buffer, sub-buffer, image, SVM/USM
    allocation); None when ``fn`` creates no memory object."""
    flags = _flags(kv.get("flags", ""))
    if fn.startswith("clCreateBuffer"):
        return MemObject(handle, "buffer", int(kv.get("size", "0") or 0), flags, counter, eoff)
    if fn == "clCreateSubBuffer":
        parent = parse_ptr(kv.get("buffer", ""))
        rm = re.search(r"origin = (\d+), size = (\d+)", args)
        kv["origin"], kv["size"] = (rm.group(1), rm.group(2)) if rm else ("0", "0")
        return MemObject(
            handle,
            "subbuffer",
            int(kv.get("size", "0") or 0),
            flags,
            counter,
            eoff,
            parent=parent,
            origin=int(kv.get("origin", "0") or 0),
        )
    if fn.startswith("clCreateImage") or fn.startswith("clCreateFromGL"):
        img = _image_format(kv, fn)
        return MemObject(handle, "image", _image_bytes(img), flags, counter, eoff, image=img)
    if fn in ("clSVMAlloc", "clSVMAllocWithPropertiesKHR") or fn.endswith("MemAllocINTEL"):
        kind = "svm" if fn.startswith("clSVM") else "usm"
        return MemObject(handle, kind, int(kv.get("size", "0") or 0), flags, counter, eoff)
    return None
