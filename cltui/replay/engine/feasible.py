"""Will it run there?  The feasibility rule: a plan, a device's facts and (once a program is
built) a kernel's facts in, per kernel enqueue what cannot run on that device and why out.

Pure (standard library only): :mod:`.facts` gathers the facts from pyopencl, the engine
(:mod:`.preflight`) applies this rule before the first step, and the same rule serves
``cltui feasible``, the replay dialog, ``cltui replay``, the bundle's ``replay.py`` and the
fleet (through the runners' JSON).  Each finding names the enqueue, its kernel, a kind of
:data:`KINDS` and a one-line reason with the numbers.

Two sorts of facts: what the plan says for certain (work sizes, memory objects, image
formats, ``-cl-std``, local arguments: :func:`step_findings`), what only the built kernel
says (``CL_KERNEL_WORK_GROUP_SIZE``, ``reqd_work_group_size``, static local memory:
:func:`kernel_findings`), and what the source seems to need (double, half, images,
subgroups: :func:`source_needs`), which counts only when the program did not build
(:func:`build_findings`): a use behind ``#ifdef cl_khr_fp64`` builds anyway.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TypedDict

from .buildlog import build_errors, first_build_error
from .schema import Finding, FindingKind, Manifest, MemorySpec, ProgramSpec, StepSpec

__all__ = [
    "AT_LAUNCH",
    "KINDS",
    "DeviceFacts",
    "KernelFacts",
    "after_cannot_run",
    "build_findings",
    "cl_std",
    "kernel_findings",
    "memory_findings",
    "source_needs",
    "step_findings",
]

KINDS: tuple[FindingKind, ...] = (
    "work-group-size", "work-item-size", "kernel-work-group-size", "reqd-work-group-size",
    "non-uniform-work-group", "local-memory", "max-alloc", "global-memory", "images",
    "image-format", "image-size", "image-3d-writes", "svm", "fp64", "fp16", "subgroups",
    "opencl-c-version",
)  # fmt: skip


# Kinds the launch decides: the runners launch such a step anyway, and it cannot run only
# when the driver refuses the launch (CL_INVALID_WORK_GROUP_SIZE).  NVIDIA's OpenCL (driver
# 580, H200) reports CL_KERNEL_WORK_GROUP_SIZE 256 for every kernel, the one-line ones too,
# and runs 1024-item groups of them correctly; drivers that enforce the query refuse.
AT_LAUNCH: frozenset[FindingKind] = frozenset({"kernel-work-group-size"})


class DeviceFacts(TypedDict):
    """What the rule needs to know of a device (:func:`.facts.device_facts` queries it)."""

    name: str
    max_work_group_size: int
    max_work_item_sizes: list[int]
    extensions: list[str]
    fp64: bool  # cl_khr_fp64 or a double FP config
    fp16: bool  # cl_khr_fp16
    image_support: bool
    image_formats: dict[str, list[str]]  # "IMAGE2D" -> ["RGBA/FLOAT", ...] (read-write)
    image2d_max: list[int]  # width, height
    image3d_max: list[int]  # width, height, depth
    image_max_array: int
    svm: int  # CL_DEVICE_SVM_CAPABILITIES bits: 1 coarse, 2 fine buffer, 4 system, 8 atomics
    opencl_c_versions: list[str]  # "1.2", "2.0", "3.0": what -cl-std may ask for
    non_uniform: bool  # non-uniform work-groups (OpenCL 2.x, or 3.0 with the feature)
    max_mem_alloc_size: int
    global_mem_size: int
    local_mem_size: int


class KernelFacts(TypedDict):
    """What a built kernel says on the device (None: the query failed)."""

    work_group_size: int | None  # CL_KERNEL_WORK_GROUP_SIZE
    local_mem_size: int | None  # CL_KERNEL_LOCAL_MEM_SIZE before any argument is set
    reqd_work_group_size: list[int] | None  # CL_KERNEL_COMPILE_WORK_GROUP_SIZE, None if 0,0,0


SVM_FINE_BUFFER, SVM_ATOMICS = 2, 8


def _finding(st: StepSpec, kind: FindingKind, reason: str) -> Finding:
    return {"enqueue": int(st["enqueue"]), "kernel": str(st["kernel"]), "kind": kind,
            "reason": reason}  # fmt: skip


def _dims(sizes: Sequence[int]) -> str:
    return "x".join(str(int(s)) for s in sizes)


def _n(x: int) -> str:
    return f"{int(x):,}"


def _strip(name: str, *prefixes: str) -> str:
    for p in prefixes:
        if name.startswith(p):
            return name[len(p) :]
    return name


def image_key(spec: Mapping[str, object]) -> tuple[str, str]:
    """(image type, ``ORDER/TYPE``) of a plan's image spec, without the ``CL_`` prefixes
    (``IMAGE2D``, ``RGBA/FLOAT``): the keys of :attr:`DeviceFacts.image_formats`."""
    itype = _strip(str(spec.get("image_type") or "CL_MEM_OBJECT_IMAGE2D"), "CL_MEM_OBJECT_")
    order = _strip(str(spec.get("order", "")), "CL_")
    ctype = _strip(str(spec.get("type", "")), "CL_")
    return itype, f"{order}/{ctype}"


# --------------------------------------------------------------------- memory objects


def memory_findings(plan: Manifest, dev: DeviceFacts) -> dict[str, tuple[FindingKind, str]]:
    """The memory objects that cannot be made on the device: id -> (kind, reason).  Objects
    are counted against ``CL_DEVICE_GLOBAL_MEM_SIZE`` in the order of their first use: the
    first one that makes the total too big, and every later one, are refused."""
    out: dict[str, tuple[FindingKind, str]] = {}
    mems = plan.get("memory", {})
    for mid, info in mems.items():
        problem = _memory_problem(info, dev)
        if problem is not None:
            out[mid] = problem
    total, limit = 0, int(dev["global_mem_size"])
    for mid in _first_use_order(plan):
        used = mems.get(mid)
        if used is None or mid in out or used.get("kind") == "subbuffer":
            continue
        total += int(used.get("size") or 0)
        if limit and total > limit:
            out[mid] = ("global-memory", f"{used.get('label', mid)}: the range's objects up to it "
                        f"need {_n(total)} bytes > CL_DEVICE_GLOBAL_MEM_SIZE {_n(limit)} on "
                        f"{dev['name']}")  # fmt: skip
    return out


def _first_use_order(plan: Manifest) -> list[str]:
    seen: dict[str, None] = {}
    for st in plan.get("steps", []):
        for a in st.get("args", []):
            if a.get("mem") is not None:
                seen.setdefault(str(a["mem"]), None)
    return list(seen)


def _memory_problem(info: MemorySpec, dev: DeviceFacts) -> tuple[FindingKind, str] | None:
    label, name, size = info.get("label", "?"), dev["name"], int(info.get("size") or 0)
    if info.get("kind") == "image" and "image" in info:
        return _image_problem(info, dev)
    if info.get("kind") != "subbuffer" and size > int(dev["max_mem_alloc_size"]) > 0:
        return ("max-alloc", f"{label}: {_n(size)} bytes > CL_DEVICE_MAX_MEM_ALLOC_SIZE "
                f"{_n(dev['max_mem_alloc_size'])} on {name}")  # fmt: skip
    level = str(info.get("svm_level") or "")
    if info.get("kind") == "svm" and level.startswith("fine"):
        caps = int(dev["svm"])
        need = SVM_FINE_BUFFER | (SVM_ATOMICS if "atomics" in level else 0)
        if caps & need != need:
            what = "fine-grained SVM" + (" with atomics" if "atomics" in level else "")
            have = _svm_words(caps)
            return "svm", f"{label}: the capture allocated {what}; {name} offers {have}"
    return None


def _svm_words(caps: int) -> str:
    if not caps:
        return "no SVM"
    words = [w for bit, w in ((1, "coarse-grained"), (2, "fine-grained buffer"),
                              (4, "fine-grained system"), (8, "atomics")) if caps & bit]
    return "SVM: " + ", ".join(words)  # fmt: skip


def _image_problem(info: MemorySpec, dev: DeviceFacts) -> tuple[FindingKind, str] | None:
    im, label, name = info["image"], info.get("label", "?"), dev["name"]
    itype, fmt = image_key(dict(im))
    w, h, d = (int(x) for x in im["shape"])
    if not dev["image_support"]:
        return "images", f"{label} ({itype} {w}x{h}x{d} {fmt}): {name} has no image support"
    formats = dev["image_formats"].get(itype)
    if formats is not None and fmt not in formats:
        return ("image-format", f"{label}: format {fmt} is not supported for read-write "
                f"{itype} on {name}")  # fmt: skip
    limit: list[int] = []
    shape = [w, h, d]
    if itype == "IMAGE3D":
        limit = list(dev["image3d_max"])
    elif itype in ("IMAGE2D", "IMAGE1D"):
        limit, shape = list(dev["image2d_max"])[: 2 if itype == "IMAGE2D" else 1], shape[:2]
        shape = shape[: len(limit)]
    elif itype == "IMAGE2D_ARRAY":
        limit, shape = [*dev["image2d_max"][:2], int(dev["image_max_array"])], [w, h, d]
    elif itype == "IMAGE1D_ARRAY":
        limit, shape = [dev["image2d_max"][0], int(dev["image_max_array"])], [w, h]
    over = [i for i, (s, m) in enumerate(zip(shape, limit, strict=False)) if m and s > m]
    if over:
        return ("image-size", f"{label}: {itype} {_dims(shape)} > the device's largest "
                f"{_dims(limit)} on {name}")  # fmt: skip
    return None


# --------------------------------------------------------------------- one step


_STD = re.compile(r"-cl-std=(?:CL)?(\d+)\.(\d+)")


def cl_std(options: str) -> str | None:
    """The OpenCL C version ``-cl-std=CLx.y`` asks for (the last one), or None."""
    found = _STD.findall(options or "")
    return f"{found[-1][0]}.{found[-1][1]}" if found else None


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split(".") if x.isdigit())


def _above(want: str, dev: DeviceFacts) -> bool:
    """``-cl-std=CL<want>`` asks for more than the newest OpenCL C the device lists (certain);
    a version below it that the list leaves out (PoCL 3.0 lists 1.0-1.2 and 3.0, and builds
    CL2.0) counts only when the build fails (:func:`build_findings`)."""
    versions = [_version_key(v) for v in dev["opencl_c_versions"]]
    return not versions or _version_key(want) > max(versions)


def _std_reason(want: str, dev: DeviceFacts) -> str:
    have = ", ".join(dev["opencl_c_versions"]) or "none"
    return f"the program is built with -cl-std=CL{want}; {dev['name']} supports OpenCL C {have}"


def step_findings(
    plan: Manifest,
    st: StepSpec,
    dev: DeviceFacts,
    bad_mems: Mapping[str, tuple[FindingKind, str]],
) -> list[Finding]:
    """What the plan alone says step ``st`` cannot do on the device: its OpenCL C version,
    work sizes, memory objects (``bad_mems``: :func:`memory_findings`), 3D image writes,
    local arguments."""
    out: list[Finding] = []
    prog: ProgramSpec | None = plan.get("programs", {}).get(st["program"])
    options = str(prog.get("options") or "") if prog else ""
    want = cl_std(options)
    if want is not None and _above(want, dev):
        out.append(_finding(st, "opencl-c-version", _std_reason(want, dev)))
    out += _geometry(st, dev, want, options)
    seen: set[str] = set()
    for a in st.get("args", []):
        mid = a.get("mem")
        if mid is not None and mid in bad_mems and mid not in seen:
            seen.add(mid)
            kind, reason = bad_mems[mid]
            out.append(_finding(st, kind, f"argument {a.get('index')}: {reason}"))
        tname = str(a.get("type") or "")
        if (a.get("kind") == "image" and "image3d_t" in tname and "write" in tname
                and "cl_khr_3d_image_writes" not in dev["extensions"]):  # fmt: skip
            why = f"argument {a.get('index')} is a {tname}"
            out.append(_finding(st, "image-3d-writes",
                                f"{why}: {dev['name']} lacks cl_khr_3d_image_writes"))  # fmt: skip
    out += _local_memory(st, dev, 0)
    return out


def _geometry(st: StepSpec, dev: DeviceFacts, std: str | None, options: str) -> list[Finding]:
    local = [int(x) for x in st.get("local") or []]
    if not local:
        return []
    out: list[Finding] = []
    name, total = dev["name"], math.prod(local)
    items = dev["max_work_item_sizes"]
    for d, size in enumerate(local):
        if d < len(items) and size > int(items[d]) > 0:
            out.append(_finding(st, "work-item-size", f"local size {_dims(local)}: {size} in "
                                f"dimension {d} > CL_DEVICE_MAX_WORK_ITEM_SIZES[{d}] "
                                f"{items[d]} on {name}"))  # fmt: skip
    if total > int(dev["max_work_group_size"]) > 0:
        out.append(_finding(st, "work-group-size", f"local size {total} ({_dims(local)}) > "
                            f"CL_DEVICE_MAX_WORK_GROUP_SIZE {dev['max_work_group_size']} on "
                            f"{name}"))  # fmt: skip
    glob = [int(x) for x in st.get("global") or []]
    if any(g % size for g, size in zip(glob, local, strict=False) if size):
        modern = std is not None and _version_key(std) >= (2, 0)
        if not (dev["non_uniform"] and modern and "-cl-uniform-work-group-size" not in options):
            why = ("the device does not support them" if not dev["non_uniform"]
                   else "the program is not built with -cl-std=CL2.0 or later")  # fmt: skip
            out.append(_finding(st, "non-uniform-work-group", f"global size {_dims(glob)} is "
                                f"not a multiple of local size {_dims(local)} (non-uniform "
                                f"work-groups) and on {name} {why}"))  # fmt: skip
    return out


def _local_memory(st: StepSpec, dev: DeviceFacts, static: int) -> list[Finding]:
    args = sum(int(a.get("size") or 0) for a in st.get("args", []) if a.get("kind") == "local")
    need, limit = args + int(static), int(dev["local_mem_size"])
    if limit and need > limit:
        parts = [f"{_n(args)} in local arguments"] + ([f"{_n(static)} in the kernel"]
                                                      if static else [])  # fmt: skip
        return [_finding(st, "local-memory", f"local memory {_n(need)} bytes ("
                         f"{' + '.join(parts)}) > CL_DEVICE_LOCAL_MEM_SIZE {_n(limit)} on "
                         f"{dev['name']}")]  # fmt: skip
    return []


def kernel_findings(st: StepSpec, kf: KernelFacts, dev: DeviceFacts) -> list[Finding]:
    """What the built kernel says step ``st`` cannot do: a local size over its
    ``CL_KERNEL_WORK_GROUP_SIZE`` (a kind of :data:`AT_LAUNCH`: the launch decides), one its
    ``reqd_work_group_size`` contradicts, local memory (its static use plus the local
    arguments) over the device's."""
    out: list[Finding] = []
    local = [int(x) for x in st.get("local") or []]
    wgs, name = kf.get("work_group_size"), dev["name"]
    if local and wgs and math.prod(local) > wgs:
        out.append(_finding(st, "kernel-work-group-size", f"local size {math.prod(local)} "
                            f"({_dims(local)}) > kernel work-group size {wgs} on {name} "
                            "(CL_KERNEL_WORK_GROUP_SIZE)"))  # fmt: skip
    reqd = kf.get("reqd_work_group_size")
    if reqd:
        padded = [*local, 1, 1, 1][:3] if local else None
        if padded is None:
            out.append(_finding(st, "reqd-work-group-size", "the kernel requires work-group "
                                f"size {_dims(reqd)} (reqd_work_group_size); the capture "
                                "launched it without a local size"))  # fmt: skip
        elif padded != list(reqd)[:3]:
            out.append(_finding(st, "reqd-work-group-size", f"local size {_dims(padded)} "
                                f"contradicts reqd_work_group_size({_dims(reqd)})"))  # fmt: skip
    out += _local_memory(st, dev, int(kf.get("local_mem_size") or 0))
    return out


# --------------------------------------------------------------------- the source


_NOISE = re.compile(r'//[^\n]*|/\*.*?(?:\*/|\Z)|"(?:\\.|[^"\\\n])*"', re.S)

_NEEDS: tuple[tuple[FindingKind, re.Pattern[str], str], ...] = (
    ("fp64", re.compile(r"\bdouble(?:2|3|4|8|16)?\b|\bcl_khr_fp64\b"), "double"),
    # a scalar half pointer (vload_half, vstore_half) needs no cl_khr_fp16; a half value does
    ("fp16", re.compile(r"\bhalf(?:2|3|4|8|16)\b|\bhalf\b(?!\s*\*)|\bcl_khr_fp16\b"),
     "half"),
    ("images", re.compile(r"\bimage(?:1d|2d|3d)(?:_array|_buffer)?_t\b"), "images"),
    ("image-3d-writes", re.compile(r"\b(?:__)?(?:write_only|read_write)\s+image3d_t\b"),
     "writes to a 3D image"),
    ("subgroups", re.compile(r"\b(?:get_)?sub_group_\w+\s*\(|\bcl_khr_subgroups\b"),
     "subgroup functions"),
)  # fmt: skip


def source_needs(source: str) -> list[FindingKind]:
    """What an OpenCL C source seems to use that not every device has (comments and
    strings left out; linear in the source): fp64, fp16, images, 3D image writes,
    subgroups."""
    text = _NOISE.sub(" ", source)
    return [kind for kind, pattern, _ in _NEEDS if pattern.search(text)]


def _lacks(kind: FindingKind, dev: DeviceFacts) -> str | None:
    """Why the device lacks what ``kind`` needs, or None when it has it."""
    ext = dev["extensions"]
    lacks = {
        "fp64": None if dev["fp64"] else "cl_khr_fp64",
        "fp16": None if dev["fp16"] else "cl_khr_fp16",
        "images": None if dev["image_support"] else "image support",
        "image-3d-writes": None if "cl_khr_3d_image_writes" in ext else "cl_khr_3d_image_writes",
        "subgroups": None if ({"cl_khr_subgroups", "cl_intel_subgroups"} & set(ext))
        else "cl_khr_subgroups",
    }  # fmt: skip
    return lacks.get(kind)


# what the build log's error lines name when a need the device lacks made the build fail
_SAID: dict[FindingKind, tuple[str, ...]] = {
    "fp64": ("double", "fp64"),
    "fp16": ("half", "fp16"),
    "images": ("image",),
    "image-3d-writes": ("image3d", "3d_image"),
    "subgroups": ("sub_group", "subgroup"),
    "opencl-c-version": ("cl-std", "opencl c"),
}


def build_findings(
    plan: Manifest, pid: str, needs: Iterable[FindingKind], dev: DeviceFacts, error: str
) -> list[Finding]:
    """A program that did not build on the device, explained by what its source needs and
    the device lacks and the build log's errors name: a finding per step of it (empty when
    nothing explains the failure: a syntax error or a bad option stays a build failure)."""
    words = {kind: word for kind, _, word in _NEEDS}
    missing = [(k, f"the source uses {words[k]}, {dev['name']} lacks {why}")
               for k in needs if (why := _lacks(k, dev)) is not None]  # fmt: skip
    prog: ProgramSpec | None = plan.get("programs", {}).get(pid)
    want = cl_std(str(prog.get("options") or "")) if prog else None
    if want is not None and want not in dev["opencl_c_versions"]:
        missing.append(("opencl-c-version", _std_reason(want, dev)))
    said_by_log = " ".join(build_errors(error)).lower()
    missing = [(k, why) for k, why in missing if any(w in said_by_log for w in _SAID[k])]
    if not missing:
        return []
    kind = missing[0][0]
    said = "; ".join(why for _, why in missing)
    first = first_build_error(error)
    return [_finding(st, kind, f"{said} (build: {first})")
            for st in plan.get("steps", []) if st["program"] == pid]  # fmt: skip


# --------------------------------------------------------------------- what follows


_READ_ONLY = re.compile(r"\bconst\b|\b__constant\b|\bconstant\b|\b(?:__)?read_only\b")


def _written(st: StepSpec) -> list[str]:
    """The memory objects a step may write (all but const, constant and read-only ones)."""
    args = st.get("args", [])
    return [str(a["mem"]) for a in args
            if a.get("mem") is not None and not _READ_ONLY.search(str(a.get("type") or ""))]


def after_cannot_run(plan: Manifest, cannot: Iterable[int]) -> dict[int, dict[str, dict[str, int]]]:
    """The checks that follow an enqueue that could not run (its outputs were never made):
    step index -> ``{"pre": {mem: enqueue}, "post": {mem: enqueue}}``, the way the plan marks
    checks after an unreplayed host write.  A load of the object clears the mark; a step
    that reads a marked object marks what it writes."""
    skip = set(cannot)
    taint: dict[str, int] = {}
    out: dict[int, dict[str, dict[str, int]]] = {}
    for i, st in enumerate(plan.get("steps", [])):
        mems = [str(a["mem"]) for a in st.get("args", []) if a.get("mem") is not None]
        pre = {c["mem"]: taint[c["mem"]] for c in st.get("prechecks", []) if c["mem"] in taint}
        for ld in st.get("loads", []):
            taint.pop(ld["mem"], None)
        if i in skip:
            for mid in _written(st):
                taint.setdefault(mid, int(st["enqueue"]))
            continue
        marked = [taint[m] for m in mems if m in taint]
        post: dict[str, int] = {}
        if marked:
            at = min(marked)
            post = {c["mem"]: taint.get(c["mem"], at) for c in st.get("checks", [])}
            for mid in _written(st):
                taint.setdefault(mid, at)
        if pre or post:
            out[i] = {"pre": pre, "post": post}
    return out
