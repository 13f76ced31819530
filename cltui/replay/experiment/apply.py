"""A variant applied to a replay plan: a changed plan the engine and the exporter take as
they take any plan.

A changed source is written to ``workdir`` (named by its content) and the plan's data table
gains an entry ``variant:<program>`` with the file's absolute path and ``origin:
"variant"`` (the loaders read such a file where it is; every other file stays inside the
capture).  The plan's ``variant`` section records the changes (name, the changes, one line
each) and its notes say them too.
"""

from __future__ import annotations

import copy
import hashlib
import struct
from pathlib import Path

from cltui.capture.confine import read_bytes_inside
from cltui.capture.safeopen import MAX_SOURCE
from cltui.replay.engine.schema import ArgSpec, Manifest, StepSpec
from cltui.replay.experiment.params import overriding_site, set_param
from cltui.replay.experiment.patch import apply_patch
from cltui.replay.experiment.variant import ALL, SizeChange, Variant, VariantError
from cltui.text.shellwords import driver_join, replace_spans, spans_of, split_words

__all__ = ["apply_variant", "changes_nothing", "program_id", "program_source", "programs_of"]


def program_id(manifest: Manifest, ref: str) -> str:
    """The plan's program id that ``ref`` names: ``p17``, ``17``, ``0017``, its label."""
    progs = manifest["programs"]
    text = ref.strip()
    if text in progs:
        return text
    if text.isdigit() and f"p{int(text)}" in progs:
        return f"p{int(text)}"
    for pid, spec in progs.items():
        if spec.get("label") == text or spec.get("label") == f"program {text}":
            return pid
    names = ", ".join(sorted(progs)) or "none"
    raise VariantError(f"program {ref!r} is not one of the range's programs ({names})")


def programs_of(manifest: Manifest, kernel: str | None) -> list[str]:
    """The programs the steps use, in order; only ``kernel``'s when it is given (a kernel
    name, or an enqueue number)."""
    out: list[str] = []
    for st in manifest["steps"]:
        if kernel is not None and kernel not in (st["kernel"], str(st["enqueue"])):
            continue
        if st["program"] not in out:
            out.append(st["program"])
    if kernel is not None and not out:
        raise VariantError(f"no kernel {kernel!r} in the range")
    return out


def program_source(manifest: Manifest, pid: str, root: str | Path) -> str:
    """A program's source text as the plan names it (a variant's file, else the capture's)."""
    key = manifest["programs"][pid].get("source")
    if not key:
        raise VariantError(f"{manifest['programs'][pid].get('label', pid)} has no source "
                           "in the capture (only a device binary)")  # fmt: skip
    ref = manifest["data"][key]
    if ref.get("origin") == "variant":
        data = read_bytes_inside(None, ref["path"], MAX_SOURCE)
    else:
        data = read_bytes_inside(root, Path(root) / ref["path"], MAX_SOURCE)
    return data.rstrip(b"\0").decode("utf-8", "replace")


def apply_variant(
    manifest: Manifest, variant: Variant, root: str | Path, workdir: str | Path
) -> Manifest:
    """``manifest`` (not modified) with ``variant``'s changes; :class:`VariantError` says
    which change does not fit the range."""
    plan = copy.deepcopy(manifest)
    if variant.empty:
        return plan
    targets = programs_of(plan, variant.kernel)
    for change in variant.programs:
        if change.program:
            pids = [program_id(plan, change.program)]
        else:
            pids = targets if variant.kernel is not None else [_only(targets)]
        for pid in pids:
            if change.source is not None:
                text = change.source
            else:
                text = apply_patch(program_source(plan, pid, root), change.patch or "",
                                   plan["programs"][pid].get("label", pid))  # fmt: skip
            _set_source(plan, pid, text, Path(workdir))
    as_defines = _apply_params(plan, variant, targets, root, Path(workdir))
    _refuse_overridden(plan, variant.defines, targets, root)
    if variant.options_add or variant.options_remove or variant.defines or as_defines or (
        variant.options_replace is not None
    ):
        for pid in targets:
            spec = plan["programs"][pid]
            if not spec.get("source") and not spec.get("il"):
                raise VariantError(f"{spec.get('label', pid)} has no source in the capture: "
                                   "its build options cannot change")  # fmt: skip
            spec["options"] = edit_options(spec.get("options") or "", variant,
                                           as_defines.get(pid, ()))
    for size in variant.sizes:
        for st in _matching(plan["steps"], size.target):
            _set_sizes(st, size)
    for sc in variant.scalars:
        for st in _matching(plan["steps"], sc.target):
            _set_scalar(st, sc.index, sc.value)
    lines = variant.describe()
    plan["variant"] = {"name": variant.name, "changes": variant.changes(), "lines": lines}
    plan["notes"] = [*plan.get("notes", []), *(f"variant: {ln}" for ln in lines)]
    return plan


def _apply_params(
    plan: Manifest, variant: Variant, targets: list[str], root: str | Path, workdir: Path
) -> dict[str, tuple[tuple[str, str], ...]]:
    """Each parameter set in the target programs' sources (their own ``#define NAME``
    lines rewritten); per program, the parameters its source does not define (they become
    ``-D NAME=V``).  A program without a source, or one whose ``#undef NAME`` would undo a
    ``-D``, is refused."""
    extra: dict[str, tuple[tuple[str, str], ...]] = {}
    if not variant.params:
        return extra
    for pid in targets:
        label = plan["programs"][pid].get("label", pid)
        if not plan["programs"][pid].get("source"):
            raise VariantError(f"{label} has no source in the capture: --param cannot "
                               "change it")  # fmt: skip
        text = program_source(plan, pid, root)
        added: list[tuple[str, str]] = []
        for key, value in variant.params:
            changed = set_param(text, key, value)
            if changed is None:
                site = overriding_site(text, key)
                if site is not None:
                    raise VariantError(f"--param {key}: {label} line {site.line} "
                                       f"({site.text}) undoes a -D {key}")  # fmt: skip
                added.append((key, value))
            else:
                text = changed
        if text != program_source(plan, pid, root):
            _set_source(plan, pid, text, workdir)
        if added:
            extra[pid] = tuple(added)
    return extra


def _refuse_overridden(
    plan: Manifest, defines: tuple[tuple[str, str], ...], targets: list[str], root: str | Path
) -> None:
    """A ``-D NAME`` that the source's own ``#define NAME`` (or ``#undef``) would override
    does nothing: refused, with the line, before anything runs."""
    for pid in targets:
        if not defines or not plan["programs"][pid].get("source"):
            continue
        text = program_source(plan, pid, root)
        for key, _value in defines:
            site = overriding_site(text, key)
            if site is not None:
                label = plan["programs"][pid].get("label", pid)
                raise VariantError(
                    f"--define {key} would do nothing: {label} line {site.line} "
                    f"({site.text}) overrides it; change it with --param {key}=VALUE"
                )


def _only(targets: list[str]) -> str:
    if len(targets) != 1:
        raise VariantError(f"the range builds {len(targets)} programs: say which one "
                           "(PROG=FILE, or --kernel NAME)")  # fmt: skip
    return targets[0]


def _set_source(plan: Manifest, pid: str, text: str, workdir: Path) -> None:
    data = text.encode("utf-8")
    digest = hashlib.sha256(data).hexdigest()[:16]
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"{pid}_{digest}.cl"
    if not path.exists():
        path.write_bytes(data)
    key = f"variant:{pid}"
    plan["data"][key] = {"path": str(path.resolve()), "size": len(data), "origin": "variant"}
    spec = plan["programs"][pid]
    spec["source"] = key
    spec["il"] = None
    spec["binaries"] = []  # the captured binaries were built from the old source


def edit_options(
    options: str, variant: Variant, extra: tuple[tuple[str, str], ...] = ()
) -> str:
    """Build options with the variant's removals, additions and defines (``extra``: more
    defines, the parameters a program's source does not define).  What is not removed
    stays as written (the driver gets the captured text); what is added follows it, joined
    as :func:`~cltui.text.shellwords.driver_join` spells it."""
    text = variant.options_replace if variant.options_replace is not None else options
    for gone in variant.options_remove:
        text = _cut(text, _runs(spans_of(text), split_words(gone)))
    added = [w for opt in variant.options_add for w in split_words(opt)]
    for key, value in (*variant.defines, *extra):
        text = _cut(text, _define_spans(spans_of(text), key))
        added = [*_undefine(added, key), "-D", f"{key}={value}" if value else key]
    if not added:
        return text
    kept = text.rstrip()
    return f"{kept} {driver_join(added)}" if kept.strip() else driver_join(added)


def _cut(text: str, spans: list[tuple[int, int]]) -> str:
    return replace_spans(text, [(start, end, None) for start, end in spans]) if spans else text


def _runs(spans: list[tuple[int, int, str]], drop: list[str]) -> list[tuple[int, int]]:
    """Where ``spans`` hold a run of words equal to ``drop``: (start, end), not overlapping."""
    out: list[tuple[int, int]] = []
    if not drop:
        return out
    i = 0
    while i < len(spans):
        if [w for _s, _e, w in spans[i : i + len(drop)]] == drop:
            out.append((spans[i][0], spans[i + len(drop) - 1][1]))
            i += len(drop)
            continue
        i += 1
    return out


def _define_spans(spans: list[tuple[int, int, str]], key: str) -> list[tuple[int, int]]:
    """Where ``spans`` define ``key``: ``-D key``, ``-Dkey``, ``-D key=...``, ``-Dkey=...``."""
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(spans):
        start, end, w = spans[i]
        if w == "-D" and i + 1 < len(spans) and spans[i + 1][2].split("=", 1)[0] == key:
            out.append((start, spans[i + 1][1]))
            i += 2
            continue
        if w.startswith("-D") and w[2:].split("=", 1)[0] == key:
            out.append((start, end))
        i += 1
    return out


def _undefine(words: list[str], key: str) -> list[str]:
    """``words`` without any ``-D key``, ``-Dkey``, ``-D key=...``, ``-Dkey=...``."""
    out: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w == "-D" and i + 1 < len(words) and words[i + 1].split("=", 1)[0] == key:
            i += 2
            continue
        if w.startswith("-D") and w[2:].split("=", 1)[0] == key:
            i += 1
            continue
        out.append(w)
        i += 1
    return out


def _matching(steps: list[StepSpec], target: str) -> list[StepSpec]:
    if target == ALL:
        found = list(steps)
    elif target.isdigit():
        found = [st for st in steps if st["enqueue"] == int(target)]
    else:
        found = [st for st in steps if st["kernel"] == target]
    if not found:
        what = f"enqueue {target}" if target.isdigit() else f"kernel {target!r}"
        raise VariantError(f"no {what} among the range's replayed kernel enqueues")
    return found


def _set_sizes(st: StepSpec, size: SizeChange) -> None:
    where = f"enqueue {st['enqueue']} ({st['kernel']})"
    glob = list(size.global_size) if size.global_size else list(st["global"])
    dims = len(glob)
    for label, val in (("local", size.local_size), ("offset", size.offset)):
        if val is not None and len(val) != dims:
            raise VariantError(f"{where}: a {len(val)}-dimensional {label} size for a "
                               f"{dims}-dimensional range")  # fmt: skip
    st["global"] = glob
    if size.local_size is not None:
        st["local"] = list(size.local_size)
    elif size.global_size is not None and st.get("local") and len(st["local"] or []) != dims:
        st["local"] = None
    if size.offset is not None:
        st["offset"] = list(size.offset)


def _set_scalar(st: StepSpec, index: int, value: str) -> None:
    arg: ArgSpec | None = next((a for a in st["args"] if a.get("index") == index), None)
    where = f"enqueue {st['enqueue']} ({st['kernel']})"
    if arg is None or arg.get("kind") != "scalar" or "hex" not in arg:
        raise VariantError(f"{where}: argument {index} is not a scalar")
    size = len(str(arg["hex"])) // 2
    ctype = str(arg.get("type") or "").lower()
    is_float = any(t in ctype for t in ("float", "double", "half")) or isinstance(
        arg.get("value"), float
    )
    try:
        if is_float and size in (4, 8):
            number: float | int = float(value)
            raw = struct.pack("<f" if size == 4 else "<d", number)
        elif not is_float and size in (1, 2, 4, 8):
            number = int(value, 0)
            signed = number < 0
            raw = number.to_bytes(size, "little", signed=signed)
        else:
            raise VariantError(f"{where}: argument {index} ({ctype or size}) is not a "
                               "number this variant can set")  # fmt: skip
    except (ValueError, OverflowError, struct.error):
        raise VariantError(f"{where}: {value!r} does not fit argument {index} "
                           f"({ctype or f'{size} bytes'})") from None  # fmt: skip
    arg["hex"] = raw.hex()
    arg["value"] = number


def changes_nothing(base: Manifest, plan: Manifest) -> bool:
    """``plan`` runs exactly what ``base`` runs (a size equal to the captured one, an option
    removed that was not there): the same programs, data and steps."""
    return (plan["steps"] == base["steps"] and plan["programs"] == base["programs"]
            and plan["data"] == base["data"])  # fmt: skip
