"""A kernel argument's entry in a step: a memory object, a scalar's bytes, a ``__local``
size, a sampler, or null; or the problem that keeps the step from running."""

from __future__ import annotations

import numpy as np

from cltui.capture.model import ArgKind, Enqueue, KernelArg
from cltui.replay.engine.schema import ArgSpec
from cltui.replay.plan.base import PlanState
from cltui.replay.plan.memory import mem


def arg(
    st: PlanState, enq: Enqueue, a: KernelArg, mem_args: dict[str, list[KernelArg]]
) -> tuple[ArgSpec, str | None]:
    """The argument's entry, or the problem; a memory argument joins ``mem_args``."""
    base: ArgSpec = {"index": a.index, "name": a.name, "type": a.type_name}
    if a.kind in (ArgKind.BUFFER, ArgKind.IMAGE, ArgKind.SVM):
        mid, problem = mem(st, enq, a)
        if problem is not None:
            return base, problem
        mem_args.setdefault(mid, []).append(a)
        base["kind"] = a.kind.value
        base["mem"] = mid
        if a.kind is ArgKind.SVM:
            base["offset"] = a.svm_offset
        return base, None
    return base, _value_arg(a, base)


def _value_arg(a: KernelArg, base: ArgSpec) -> str | None:
    """Fill ``base`` for an argument passed by value (scalar, local, sampler, null); the
    problem, or None."""
    i = a.index
    if a.kind is ArgKind.SCALAR:
        if a.raw is None:
            return f"no value for argument {i} ({a.size}-byte scalar)"
        base["kind"] = "scalar"
        base["hex"] = a.raw.hex()
        base["value"] = _jsonable(a.value)
        return None
    if a.kind is ArgKind.LOCAL:
        size = a.local_size or a.size
        if not size:
            return f"unknown __local size of argument {i}"
        base["kind"] = "local"
        base["size"] = int(size)
        return None
    if a.kind is ArgKind.SAMPLER:
        s = a.sampler
        if s is None:
            return f"unknown sampler of argument {i}"
        base["kind"] = "sampler"
        base["normalized"] = s.normalized_coords
        base["addressing"] = s.addressing_mode
        base["filter"] = s.filter_mode
        return None
    if a.kind is ArgKind.NULL:
        base["kind"] = "null"
        return None
    return f"argument {i} is of unknown kind (no value, type or dump)"


def _jsonable(v: object) -> object:
    """A decoded scalar value as JSON (the value is whatever the decoder made of the bytes:
    numbers, tuples for vectors, dicts for structs)."""
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
