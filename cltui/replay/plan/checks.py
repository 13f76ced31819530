"""What a step compares: the checks after it (its outputs against the captured Post dumps),
the pre-checks before it (the replayed state against a captured Pre dump), each with its
element type, shape and tolerance; the best dump of an object (raw bytes before a hash)."""

from __future__ import annotations

from typing import Literal, cast

import numpy as np

from cltui.capture import images
from cltui.capture.decode.dumpsizes import dump_damage
from cltui.capture.model import Dump, Enqueue, KernelArg
from cltui.replay.engine.dtypes import DTypeSpec, dtype_spec
from cltui.replay.engine.schema import CheckSpec, ToleranceSpec
from cltui.replay.plan.base import Obj, PlanState


def obj(st: PlanState, enq: Enqueue, mid: str, margs: list[KernelArg]) -> Obj:
    """The object ``mid`` at enqueue ``enq``: its label, dumps and element type."""
    label = check_label(st, mid, margs)
    pre, pre_damage = best_dump(st, enq, margs, "pre")
    post, post_damage = best_dump(st, enq, margs, "post")
    dspec, shape = dtype_for(st, mid, margs[0])
    return Obj(mid, margs, label, pre, post, dspec, shape, pre_damage, post_damage)


def best_dump(
    st: PlanState, enq: Enqueue, margs: list[KernelArg], when: Literal["pre", "post"]
) -> tuple[Dump | None, str | None]:
    """The argument's dump; a raw Replay dump beats a hash-only memDump of the same data.
    A damaged dump (cut short, emptied: :mod:`cltui.capture.decode.dumpsizes`) is never
    the object's bytes: (None, why) when every raw dump of it is damaged."""
    idx = st.cap.dumps
    damage: str | None = None
    raw: list[tuple[Dump, KernelArg]] = [
        (d, a) for a in margs if (d := a.pre if when == "pre" else a.post) is not None
    ]
    rf = st.replay(enq)
    if rf is not None:
        table = rf.pre if when == "pre" else rf.post
        raw += [(d, a) for a in margs if (d := table.get(a.index)) is not None]
    for d, a in raw:
        if d.hashed:
            continue
        why = dump_damage(idx, d, a)
        if why is None:
            return d, None
        damage = damage or why
    hashed = next((d for d, _a in raw if d.hashed), None)
    return (hashed, None) if hashed is not None else (None, damage)


def dtype_for(st: PlanState, mid: str, a: KernelArg) -> tuple[DTypeSpec | None, list[int] | None]:
    """How the object's bytes compare: an image's texel type and shape, else the
    argument's element type (None: as bytes)."""
    info = st.memory[mid]
    if info["kind"] == "image":
        im = info["image"]
        return images.texel_dtype_spec(im["order"], im["type"]), list(im["shape"])
    if a.dtype is not None:
        try:
            return dtype_spec(np.dtype(a.dtype)), None
        except TypeError:
            return None, None
    return None, None


def check_label(st: PlanState, mid: str, margs: list[KernelArg]) -> str:
    idx = ",".join(str(a.index) for a in margs)
    word = "arg" if len(margs) == 1 else "args"
    return f"{word} {idx} ({st.memory[mid]['label']})"


def check(st: PlanState, o: Obj, dump: Dump, note: str = "") -> CheckSpec:
    """The comparison of the object with ``dump`` (its bytes, or its hash)."""
    c: CheckSpec = {
        "mem": o.mid,
        "args": o.indices,
        "label": o.label,
        "dtype": o.dspec,
        "shape": o.shape,
    }
    tol: ToleranceSpec = {}
    for a in o.margs:
        tol.update(st.arg_tol.get(a.index, {}))
    if tol:
        c["tol"] = tol
    if dump.hashed:
        hv = dump.hash_value()
        # the plan's key is ``hash64`` (the engine reads it); schema.CheckSpec says "hash"
        cast(dict[str, object], c)["hash64"] = f"{hv:x}" if hv is not None else None
    else:
        c["data"] = st.key(dump.path)
    if note:
        c["note"] = note
    return c


def check_before(st: PlanState, n: int, o: Obj) -> CheckSpec:
    """The pre-check of the object before enqueue ``n``: the replayed state against the
    captured Pre dump (after a host-side change the capture shows)."""
    assert o.pre is not None
    return check(st, o, o.pre, note=f"replayed state before enqueue {n} vs captured Pre")


def unchecked(st: PlanState, o: Obj, why: str) -> CheckSpec:
    """An output with nothing to compare with (``why`` says so)."""
    return {
        "mem": o.mid,
        "args": o.indices,
        "label": o.label,
        "dtype": o.dspec,
        "shape": o.shape,
        "note": why,
    }
