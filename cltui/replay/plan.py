"""A range of enqueues -> a JSON-able replay plan (the engine's and the bundle's manifest).

:func:`build_plan` reads a :class:`~cltui.capture.capture.Capture` and works out, for the
kernel enqueues of a range, in order:

* the programs to build (source + captured options, or a device binary on its own device);
* one memory object per captured object (aliasing kept: two arguments naming one object
  share it), images with their own format and size, SVM allocations with the offset of
  each argument;
* per step the arguments, the inputs to load before it, and the checks after it;
* host-side changes: where the capture's Pre dump of an object differs from what the
  range left in it (its last Post dump), something that is not a replayed kernel changed
  it (a host write, copy, fill, map, or a kernel outside the range/filter).

Modes (see the issue): ``chain`` carries state through the range and reloads at each
host-side change (reported, with a pre-check of the replayed state against the capture);
``isolated`` loads every kernel's own Pre dumps; ``strict`` never reloads and pre-checks
where the capture changed, so the report shows where the chain departs.

Missing data never raises: each gap becomes a specific note ("enqueue 41: no Pre dump of
argument 2 (buffer 0007)") and the step still runs when it can.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from cltui.capture import images
from cltui.capture.model import ArgKind, Dump, Enqueue, EnqueueKind, KernelArg, MemObject
from cltui.capture.ranges import EnqueueRange
from cltui.capture.replayfolder import ReplayFolder, read_replay_folder
from cltui.errors import CltuiError
from cltui.replay.engine import PLAN_FORMAT, PLAN_VERSION
from cltui.replay.engine.compare import Tolerance
from cltui.replay.engine.dtypes import dtype_spec
from cltui.replay.engine.schema import Manifest, StepSpec
from cltui.replay.modes import MODES, input_rule, input_source
from cltui.replay.transfers import _pre_state, _Transfers


class PlanError(CltuiError, ValueError):
    """Nothing in the range can be replayed (one-line message)."""


@dataclass
class Plan:
    """The plan: a thin wrapper over the manifest dict the engine reads."""

    manifest: Manifest
    capture_path: Path
    notes: list[str] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)
    # kernel enqueues of the range that are not replayed: {enqueue, kernel, why, recovered}
    skipped: list[dict[str, Any]] = field(default_factory=list)
    # runs of numbers inside the range that the log lost and no file names:
    # {first, last, count, why}
    lost: list[dict[str, Any]] = field(default_factory=list)

    @property
    def steps(self) -> list[StepSpec]:
        return self.manifest["steps"]

    @property
    def enqueues(self) -> list[int]:
        return [int(s["enqueue"]) for s in self.steps]

    def to_manifest(self) -> Manifest:
        """The JSON-able manifest (data paths relative to the capture directory)."""
        return self.manifest

    def data_path(self, key: str) -> Path:
        return Path(self.capture_path / str(self.manifest["data"][key]["path"]))


class _Builder(_Transfers):
    def __init__(
        self, cap: Any, mode: str, tolerance: Tolerance, arg_tol: dict[int, dict[str, Any]]
    ) -> None:
        self.cap = cap
        self.root = Path(cap.path)
        self.mode = mode
        self.tol = tolerance
        self.arg_tol = arg_tol
        self.data: dict[str, dict[str, Any]] = {}
        self.programs: dict[str, dict[str, Any]] = {}
        self.memory: dict[str, dict[str, Any]] = {}
        self.steps: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.changes: list[dict[str, Any]] = []
        # mem id -> (enqueue of the last step touching it, its captured Post dump or None)
        self.state: dict[str, tuple[int, Dump | None]] = {}
        self._replays: dict[int, ReplayFolder] = {}
        # host-side transfers seen in the log (see :meth:`transfer`): per memory id the
        # ones since its last step, the ops waiting for the next step, the scope entries
        # (one per transfer that changes an object a later step uses), and per memory id
        # the enqueue of the unreplayed transfer its replayed state follows
        self.pending: dict[str, list[dict[str, Any]]] = {}
        self.queued_ops: list[dict[str, Any]] = []
        self.transfers: dict[int, dict[str, Any]] = {}
        self.taint: dict[str, int] = {}
        self.kernels: list[dict[str, Any]] = []
        self.skipped: list[dict[str, Any]] = []
        self.lost: list[dict[str, Any]] = []

    def add_lost(self, cap: Any, first: int, last: int) -> None:
        """Numbers in ``first..last`` that the log lost and no file names (not replayed)."""
        rec = getattr(cap, "recovery", None)
        if rec is None:
            return
        runs = rec.unknown_runs(first, last)
        if not runs:
            return
        by = rec.unknown_by_report
        kinds = (
            f"; by the report's counts the {rec.unknown_count} such enqueues of the capture are "
            "not kernels ("
            + ", ".join(f"{c} {f.removeprefix('clEnqueue')}" for f, c in sorted(by.items()))
            + ")"
            if by and "clEnqueueNDRangeKernel" not in by
            else ""
        )
        why = "lost with the log; no file names it"
        count = 0
        for a, b in runs:
            self.lost.append({"first": a, "last": b, "count": b - a + 1, "why": why})
            count += b - a + 1
        text = ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs[:12])
        text += ",..." if len(runs) > 12 else ""
        self.notes.append(
            f"enqueue{'s' if count > 1 else ''} {text} lost with the log and "
            f"named by no file{kinds}: not replayed, and what they did to the range's memory "
            "objects is known only where a Pre dump shows it"
        )

    def replay(self, enq: Enqueue) -> ReplayFolder | None:
        if enq.replay_dir is None:
            return None
        if enq.number not in self._replays:
            self._replays[enq.number] = read_replay_folder(enq.replay_dir)
        return self._replays[enq.number]

    # ---- data keys
    def key(self, path: Path) -> str:
        try:  # the name inside the capture, links not followed (the exporter refuses them)
            rel = str(path.relative_to(self.root))
        except ValueError:
            try:
                rel = str(path.resolve().relative_to(self.root.resolve()))
            except ValueError:
                rel = str(path)
        if rel not in self.data:
            try:
                size = path.stat().st_size
            except OSError:
                size = 0
            self.data[rel] = {"path": rel, "size": size}
        return rel

    # ---- programs
    def program(self, enq: Enqueue) -> str | None:
        prog = enq.program
        rf = self.replay(enq)
        if prog is not None:
            pid = f"p{prog.number}"
            if pid not in self.programs:
                binaries = []
                for tag, path in sorted(prog.binaries.items()):
                    binaries.append({"data": self.key(path), "device": enq.device or tag})
                src = self.key(prog.source_path) if prog.source_path is not None else None
                if src is None and rf is not None and rf.kernel_source_path and rf.kernel_source:
                    src = self.key(rf.kernel_source_path)
                if src is None and rf is not None:
                    for p in rf.device_binaries[:1]:
                        binaries.append({"data": self.key(p), "device": enq.device or ""})
                self.programs[pid] = {
                    "label": f"program {prog.number:04d}",
                    "source": src,
                    "il": self.key(rf.spirv) if src is None and rf and rf.spirv else None,
                    "options": prog.options or "",
                    "binaries": binaries,
                }
            return pid
        if rf is not None:
            pid = f"r{enq.number}"
            src = (
                self.key(rf.kernel_source_path)
                if rf.kernel_source and rf.kernel_source_path
                else None
            )
            bins = [
                {"data": self.key(p), "device": enq.device or ""} for p in rf.device_binaries[:1]
            ]
            il = self.key(rf.spirv) if src is None and rf.spirv else None
            if src is None and il is None and not bins:
                return None
            self.programs[pid] = {
                "label": f"Replay/{rf.path.name}",
                "source": src,
                "il": il,
                "options": rf.build_options or "",
                "binaries": bins,
            }
            return pid
        return None

    # ---- memory objects
    def mem_id(self, enq: Enqueue, a: KernelArg) -> str:
        d = a.pre or a.post
        if a.mem is not None:
            return f"h{a.mem.handle:x}@{a.mem.line_offset}"
        if d is not None:
            return f"m{d.mem_id:04d}"
        return f"e{enq.number}a{a.index}"

    def mem(self, enq: Enqueue, a: KernelArg) -> tuple[str, str | None]:
        """(memory id, problem) for a buffer/image/SVM argument."""
        mid = self.mem_id(enq, a)
        d = a.pre or a.post
        kind = {ArgKind.IMAGE: "image", ArgKind.SVM: "svm"}.get(a.kind, "buffer")
        label_kind = "image" if kind == "image" else ("svm" if kind == "svm" else "buffer")
        num = f"{d.mem_id:04d}" if d is not None else (f"{a.handle:#x}" if a.handle else "?")
        label = f"{label_kind} {num}"
        if mid in self.memory:
            if d is not None and "0x" in self.memory[mid]["label"]:
                self.memory[mid]["label"] = label  # the dumps name it: use the layer's number
            return mid, None
        m: MemObject | None = a.mem
        info: dict[str, Any] = {"kind": kind, "label": label, "size": 0}
        if kind == "image":
            fmt = m.image if m is not None else None
            rf = self.replay(enq)
            meta = rf.image_meta.get(a.index) if rf is not None else None
            if fmt is not None:
                order, ctype, itype = fmt.channel_order, fmt.channel_data_type, fmt.image_type
                w, h, dd = _region(fmt.image_type, fmt.width, fmt.height, fmt.depth, fmt.array_size)
            elif meta is not None:
                order, ctype = meta.channel_order_name, meta.channel_data_type_name
                itype = meta.image_type_name
                w, h, dd = meta.region
            else:
                return mid, f"no format known for the image of argument {a.index} ({label})"
            # the layer marks 1D images as 2D (capture-format §6.2): trust the kernel signature
            tname = (a.type_name or "").replace(" ", "")
            if "image1d_array_t" in tname and not itype.endswith("IMAGE1D_ARRAY"):
                itype, w, h, dd = "CL_MEM_OBJECT_IMAGE1D_ARRAY", w, max(h, 1), 1
            elif "image1d_t" in tname and not itype.endswith("IMAGE1D"):
                itype, h, dd = "CL_MEM_OBJECT_IMAGE1D", 1, 1
            esize = 0
            if d is not None and d.image_bpp:
                esize = d.image_bpp // 8
            elif meta is not None:
                esize = meta.element_size
            else:
                esize = images.texel_bytes(order, ctype)
            if not esize:
                return mid, f"unknown texel size for the image of argument {a.index} ({label})"
            info["image"] = {
                "order": order,
                "type": ctype,
                "image_type": itype,
                "shape": [w, h, dd],
                "element_size": esize,
            }
            info["size"] = w * h * dd * esize
        else:
            size = m.size if m is not None else 0
            if not size and d is not None and not d.hashed:
                size = d.size
            if not size:
                return mid, f"unknown size of argument {a.index} ({label})"
            info["size"] = size
            if m is not None and m.kind == "subbuffer":
                self.notes.append(
                    f"enqueue {enq.number}: argument {a.index} is a sub-buffer; replayed as a "
                    "separate buffer (aliasing with its parent is not kept)"
                )
        self.memory[mid] = info
        return mid, None

    # ---- steps
    def add(self, enq: Enqueue) -> None:
        n = enq.number
        if enq.row.kind is not EnqueueKind.KERNEL:
            self.notes.append(
                f"enqueue {n}: {enq.row.function} is not replayed (only clEnqueueNDRangeKernel is)"
            )
            return
        kname = enq.row.kernel or ""
        gsz = enq.row.global_size
        scope: dict[str, Any] = {"enqueue": n, "kernel": kname, "replayed": False}
        if enq.recovered:
            scope["recovered"] = True
        self.kernels.append(scope)
        if enq.recovered and not gsz:
            from cltui.capture.recovery import sources_text

            self.skip(
                scope,
                f"recovered from {sources_text(enq.recovered_from)}, without its work sizes: "
                "the log that held them is lost and no Replay/ folder has them",
            )
            return
        pid = self.program(enq)
        if pid is None:
            self.skip(scope, f"no program source or binary for {kname!r}")
            return
        if not gsz:
            self.skip(scope, "no global work size")
            return
        args: list[dict[str, Any]] = []
        mem_args: dict[str, list[KernelArg]] = {}
        for a in enq.args:
            spec, problem = self.arg(enq, a, mem_args)
            if problem is not None:
                self.skip(scope, problem)
                return
            args.append(spec)
        scope["replayed"] = True
        written: set[str] = set()
        loads: list[dict[str, Any]] = []
        checks: list[dict[str, Any]] = []
        prechecks: list[dict[str, Any]] = []
        for mid, margs in mem_args.items():
            a0 = margs[0]
            label = self.check_label(mid, margs)
            pre = self.best_dump(enq, margs, "pre")
            post = self.best_dump(enq, margs, "post")
            dspec, shape = self.dtype_for(mid, a0)
            first_use = mid not in self.state
            if any(not _reads_only(a) for a in margs):
                written.add(mid)
            moved = self.pending.pop(mid, [])
            source = input_source(self.mode, first_use=first_use, transfers=bool(moved))
            if source == "transfers":
                self.settle(enq, mid, margs, label, pre, dspec, shape, moved, loads, prechecks)
            elif source == "fresh":
                # transfers before the object's first use (or isolated): its input load
                # holds their result, when there is one
                covered = pre is not None and not pre.hashed
                for t in moved:
                    if covered:
                        self.decide(t, mid, "input", "")
                    elif t["runnable"] and t["op"]["op"] != "fill":
                        self.decide(t, mid, "op", "")  # a copy into a fresh object
                    else:
                        why = "the fill pattern is not logged and no later dump shows it"
                        self.decide(t, mid, None, why if t["op"] else "")
                        self.taint.setdefault(mid, t["enqueue"])
                if input_rule(self.mode, source, pre=_pre_state(pre)).load == "input":
                    assert pre is not None
                    loads.append(
                        {"mem": mid, "data": self.key(pre.path), "why": "input", "note": ""}
                    )
                else:
                    what = "only a hash Pre dump" if pre is not None else "no Pre dump"
                    self.notes.append(
                        f"enqueue {n}: {what} of argument {a0.index} "
                        f"({self.memory[mid]['label']}); it starts zero-filled"
                    )
            else:
                prev_n, prev_post = self.state[mid]
                rule = input_rule(
                    self.mode,
                    source,
                    pre=_pre_state(pre),
                    previous_post=prev_post is not None,
                    changed=self.host_change(prev_post, pre),
                )
                if rule.precheck and rule.action is None:
                    assert pre is not None
                    # the capture does not say what enqueue prev_n left: verify at run time
                    note = (
                        f"no Post dump of enqueue {prev_n}: the replayed state is compared "
                        f"with the Pre dump of enqueue {n}"
                    )
                    prechecks.append(self.check(mid, margs, label, pre, dspec, shape, note=note))
                    if rule.load is not None:
                        loads.append(
                            {
                                "mem": mid,
                                "data": self.key(pre.path),
                                "why": rule.load,
                                "note": note + " and reloaded if it differs",
                            }
                        )
                elif rule.action is not None:
                    assert pre is not None
                    by = self.changed_by(mid, prev_n, n)
                    rec = {
                        "enqueue": n,
                        "mem": mid,
                        "label": self.memory[mid]["label"],
                        "args": [a.index for a in margs],
                        "after": prev_n,
                        "by": by,
                        "transfers": [],
                        "action": rule.action,
                    }
                    self.changes.append(rec)
                    if rule.action == "unreplayed":  # no bytes to put back: checks after it
                        self.taint.setdefault(mid, prev_n + 1)  # are marked
                    why = f"changed between enqueue {prev_n} and {n}" + (
                        f" by {', '.join(by)}" if by else " outside the replayed kernels"
                    )
                    prechecks.append(self.check_before(n, mid, margs, label, pre, dspec, shape))
                    if rule.load is not None:
                        loads.append(
                            {"mem": mid, "data": self.key(pre.path), "why": rule.load, "note": why}
                        )
            if post is not None:
                checks.append(self.check(mid, margs, label, post, dspec, shape))
            else:
                why = (
                    f"no Post dump of argument {a0.index} ({self.memory[mid]['label']}): "
                    "not checked"
                )
                self.notes.append(f"enqueue {n}: {why}")
                checks.append(
                    {
                        "mem": mid,
                        "args": [a.index for a in margs],
                        "label": label,
                        "dtype": dspec,
                        "shape": shape,
                        "note": why,
                    }
                )
            self.state[mid] = (n, post)
        # an unreplayed host write an input follows taints what this kernel writes
        loaded = {ld["mem"] for ld in loads}
        for mid in loaded:
            self.taint.pop(mid, None)
        tainted = [self.taint[mid] for mid in mem_args if mid in self.taint]
        if tainted:
            at = min(tainted)
            for c in checks:
                c["after_unreplayed"] = self.taint.get(c["mem"], at)
            for mid in written:
                self.taint.setdefault(mid, at)
        step = {
            "enqueue": n,
            "kernel": kname,
            "program": pid,
            "global": list(gsz),
            "local": list(enq.row.local_size) if enq.row.local_size else None,
            "offset": list(enq.global_offset) if enq.global_offset else None,
            "device": enq.device,
            "args": args,
            "loads": loads,
            "prechecks": prechecks,
            "checks": checks,
        }
        if self.queued_ops:
            step["transfers"] = self.queued_ops
            self.queued_ops = []
        if scope.get("recovered"):
            step["recovered"] = True
        if enq.row.device_time is not None:
            dt = enq.row.device_time
            step["captured_time"] = {
                "queued_to_submit": dt.queued_to_submit,
                "submit_to_start": dt.submit_to_start,
                "start_to_end": dt.start_to_end,
            }
        self.steps.append(step)

    def skip(self, scope: dict[str, Any], why: str) -> None:
        """A kernel enqueue of the range that is not replayed, and why (in its scope entry,
        the plan's ``skipped`` list and a note)."""
        scope["why"] = why
        rec = {"enqueue": scope["enqueue"], "kernel": scope["kernel"], "why": why}
        if scope.get("recovered"):
            rec["recovered"] = True
        self.skipped.append(rec)
        self.notes.append(f"enqueue {scope['enqueue']} skipped: {why}")


    def best_dump(self, enq: Enqueue, margs: list[KernelArg], when: str) -> Dump | None:
        """The argument's dump; a raw Replay dump beats a hash-only memDump of the same data."""
        dumps = [getattr(a, when) for a in margs]
        found: Dump | None = next((d for d in dumps if d is not None and not d.hashed), None)
        if found is not None:
            return found
        rf = self.replay(enq)
        if rf is not None:
            table = rf.pre if when == "pre" else rf.post
            for a in margs:
                d = table.get(a.index)
                if d is not None and not d.hashed:
                    return d
        return next((d for d in dumps if d is not None), None)

    def arg(
        self, enq: Enqueue, a: KernelArg, mem_args: dict[str, list[KernelArg]]
    ) -> tuple[dict[str, Any], str | None]:
        i = a.index
        base: dict[str, Any] = {"index": i, "name": a.name, "type": a.type_name}
        if a.kind in (ArgKind.BUFFER, ArgKind.IMAGE, ArgKind.SVM):
            mid, problem = self.mem(enq, a)
            if problem is not None:
                return base, problem
            mem_args.setdefault(mid, []).append(a)
            base.update(kind=a.kind.value, mem=mid)
            if a.kind is ArgKind.SVM:
                base["offset"] = a.svm_offset
            return base, None
        if a.kind is ArgKind.SCALAR:
            if a.raw is None:
                return base, f"no value for argument {i} ({a.size}-byte scalar)"
            base.update(kind="scalar", hex=a.raw.hex(), value=_jsonable(a.value))
            return base, None
        if a.kind is ArgKind.LOCAL:
            size = a.local_size or a.size
            if not size:
                return base, f"unknown __local size of argument {i}"
            base.update(kind="local", size=int(size))
            return base, None
        if a.kind is ArgKind.SAMPLER:
            s = a.sampler
            if s is None:
                return base, f"unknown sampler of argument {i}"
            base.update(
                kind="sampler",
                normalized=s.normalized_coords,
                addressing=s.addressing_mode,
                filter=s.filter_mode,
            )
            return base, None
        if a.kind is ArgKind.NULL:
            base.update(kind="null")
            return base, None
        return base, f"argument {i} is of unknown kind (no value, type or dump)"

    def dtype_for(self, mid: str, a: KernelArg) -> tuple[Any, list[int] | None]:
        info = self.memory[mid]
        if info["kind"] == "image":
            im = info["image"]
            return images.texel_dtype_spec(im["order"], im["type"]), list(im["shape"])
        if a.dtype is not None:
            try:
                return dtype_spec(np.dtype(a.dtype)), None
            except TypeError:
                return None, None
        return None, None

    def check_label(self, mid: str, margs: list[KernelArg]) -> str:
        idx = ",".join(str(a.index) for a in margs)
        word = "arg" if len(margs) == 1 else "args"
        return f"{word} {idx} ({self.memory[mid]['label']})"

    def check(
        self,
        mid: str,
        margs: list[KernelArg],
        label: str,
        dump: Dump,
        dspec: Any,
        shape: list[int] | None,
        note: str = "",
    ) -> dict[str, Any]:
        c: dict[str, Any] = {
            "mem": mid,
            "args": [a.index for a in margs],
            "label": label,
            "dtype": dspec,
            "shape": shape,
        }
        tol: dict[str, Any] = {}
        for a in margs:
            tol.update(self.arg_tol.get(a.index, {}))
        if tol:
            c["tol"] = tol
        if dump.hashed:
            hv = dump.hash_value()
            c["hash64"] = f"{hv:x}" if hv is not None else None
        else:
            c["data"] = self.key(dump.path)
        if note:
            c["note"] = note
        return c


def _reads_only(a: KernelArg) -> bool:
    """The kernel cannot write the argument (``__constant``, ``const``, read-only image)."""
    tname = a.type_name or ""
    return (
        a.address_space == "constant"
        or a.access == "read_only"
        or re.search(r"\bconst\b", tname) is not None
    )


def _region(itype: str, w: int, h: int, d: int, array_size: int) -> tuple[int, int, int]:
    """The region the layer dumps (capture-format §3.3)."""
    if itype.endswith("IMAGE1D_ARRAY"):
        return max(w, 1), max(array_size, 1), 1
    hh = h if h else (array_size if array_size else 1)
    dd = d if d else (array_size if array_size else 1)
    if itype.endswith("IMAGE2D") or itype.endswith("IMAGE1D") or itype.endswith("BUFFER"):
        dd = 1
    if itype.endswith("IMAGE1D") or itype.endswith("IMAGE1D_BUFFER"):
        hh = 1
    return max(w, 1), max(hh, 1), max(dd, 1)


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, bytes):
        return v.hex()
    if v is None or isinstance(v, int | float | str | bool):
        return v
    return str(v)


def build_plan(
    cap: Any,
    rng: EnqueueRange | Sequence[int],
    mode: str = "chain",
    tolerance: Tolerance | None = None,
    arg_tolerance: dict[int, dict[str, Any]] | None = None,
) -> Plan:
    """The plan for the kernel enqueues of ``rng`` in ``cap`` (see the module doc).

    ``rng`` is a range (with its kernel filter) or an explicit set of enqueue numbers,
    holes allowed (replayed in increasing order; an enqueue that is not a kernel launch
    becomes a note, one that is not in the capture a :class:`PlanError`).  Inputs a
    removed enqueue would have produced come from the capture, as for a range.
    """
    if mode not in MODES:
        raise PlanError(f"unknown mode {mode!r} (chain, isolated or strict)")
    b = _Builder(cap, mode, tolerance or Tolerance(), arg_tolerance or {})
    if isinstance(rng, EnqueueRange):
        what = str(rng)
        positions = cap.find(
            kernel=rng.kernel, kinds=[EnqueueKind.KERNEL], first=rng.first, last=rng.last
        )
        if len(positions) == 0:
            kname = f" of kernel {rng.kernel!r}" if rng.kernel else ""
            lost = _lost_text(cap, rng.first, rng.last)
            raise PlanError(f"no kernel enqueue{kname} in range {rng}{lost}")
        numbers = [int(cap.numbers[pos]) for pos in positions]
    else:
        numbers = sorted({int(n) for n in rng})
        if not numbers:
            raise PlanError("no enqueue to replay: the set is empty")
        what = set_text(numbers)
        missing = [n for n in numbers if cap.position_of(n) is None]
        if missing:
            is_lost = getattr(cap, "is_lost", None)
            if is_lost is not None and is_lost(missing[0]):
                raise PlanError(
                    f"enqueue {missing[0]} was lost with the log and no dump file names it"
                )
            raise PlanError(f"no enqueue {missing[0]} in this capture")
    selected = set(numbers)
    for n in _with_transfers(cap, numbers, mode):
        enq = cap.enqueue(n)
        if n in selected:
            b.add(enq)
        else:
            b.transfer(enq)
    # the transfers a later step depends on, each with how it is replayed
    for st in b.steps:
        kept = [t for t in st.get("transfers", []) if t["enqueue"] in b.transfers]
        for t in kept:
            t.pop("runnable", None)
            t.pop("deps", None)
        if kept:
            st["transfers"] = kept
        else:
            st.pop("transfers", None)
    b.add_lost(cap, numbers[0], numbers[-1])
    for t in b.transfers.values():
        if t["replayed"] is None:
            b.notes.append(
                f"enqueue {t['enqueue']}: {t['function']} on {t['label']} is not replayed "
                f"({t['why']}): later checks of what it changed follow an unreplayed host write"
            )
    if not b.steps:
        raise PlanError(f"nothing in {what} can be replayed: " + "; ".join(b.notes[:3]))
    manifest: dict[str, Any] = {
        "format": PLAN_FORMAT,
        "version": PLAN_VERSION,
        "source": {"capture": str(cap.path), "range": what, "mode": mode},
        "tolerance": (tolerance or Tolerance()).to_dict(),
        "data": b.data,
        "programs": b.programs,
        "memory": b.memory,
        "steps": b.steps,
        "changes": b.changes,
        "notes": b.notes,
        "scope": {
            "kernels": b.kernels,
            "transfers": [b.transfers[k] for k in sorted(b.transfers)],
        },
    }
    if b.skipped:
        manifest["skipped"] = b.skipped
    if b.lost:
        manifest["lost"] = b.lost
    # the builder assembles plain dicts; tests/test_schema_types.py holds them to Manifest
    return Plan(cast(Manifest, manifest), Path(cap.path), b.notes, b.changes, b.skipped, b.lost)


def _lost_text(cap: Any, first: int | None, last: int | None) -> str:
    """``: enqueues 2-13 were lost with the log ...`` when the log lost numbers of the range."""
    rec = getattr(cap, "recovery", None)
    if rec is None:
        return ""
    lo = 0 if first is None else first
    hi = (1 << 62) if last is None else last
    runs = rec.unknown_runs(lo, hi)
    if not runs:
        return ""
    one = len(runs) == 1 and runs[0][0] == runs[0][1]
    word, verb = ("enqueue", "was") if one else ("enqueues", "were")
    text = ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs[:12])
    text += ",..." if len(runs) > 12 else ""
    return f" ({word} {text} {verb} lost with the log and no dump file names them)"


_CHANGES = (
    EnqueueKind.WRITE,
    EnqueueKind.COPY,
    EnqueueKind.FILL,
    EnqueueKind.MAP,
    EnqueueKind.SVM,
    EnqueueKind.USM,
)


def _with_transfers(cap: Any, numbers: list[int], mode: str) -> list[int]:
    """The steps' enqueue numbers with the transfers the log shows between the first and
    the last (in log order); isolated mode loads every kernel's own inputs: none."""
    if mode == "isolated" or cap.log is None or len(numbers) < 2:
        return numbers
    kinds = [int(k) for k in _CHANGES]
    positions = cap.find(first=numbers[0] + 1, last=numbers[-1] - 1)
    mask = np.isin(np.asarray(cap.kinds)[positions], kinds)
    extra = {int(cap.numbers[p]) for p in np.asarray(positions)[mask]}
    return sorted(extra.union(numbers))


def set_text(numbers: Sequence[int]) -> str:
    """Sorted enqueue numbers as text, consecutive ones joined: ``[1, 4, 5, 6]`` -> ``1,4-6``."""
    parts: list[str] = []
    nums = sorted(set(numbers))
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        parts.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ",".join(parts)
