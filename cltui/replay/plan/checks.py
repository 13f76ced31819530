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
from cltui.replay.plan.args import _Args
from cltui.replay.plan.base import Obj


class _Checks(_Args):
    def obj(self, enq: Enqueue, mid: str, margs: list[KernelArg]) -> Obj:
        """The object ``mid`` at enqueue ``enq``: its label, dumps and element type."""
        label = self.check_label(mid, margs)
        pre, pre_damage = self.best_dump(enq, margs, "pre")
        post, post_damage = self.best_dump(enq, margs, "post")
        dspec, shape = self.dtype_for(mid, margs[0])
        return Obj(mid, margs, label, pre, post, dspec, shape, pre_damage, post_damage)

    def best_dump(
        self, enq: Enqueue, margs: list[KernelArg], when: Literal["pre", "post"]
    ) -> tuple[Dump | None, str | None]:
        """The argument's dump; a raw Replay dump beats a hash-only memDump of the same data.
        A damaged dump (cut short, emptied: :mod:`cltui.capture.decode.dumpsizes`) is never
        the object's bytes: (None, why) when every raw dump of it is damaged."""
        idx = self.cap.dumps
        damage: str | None = None
        raw: list[tuple[Dump, KernelArg]] = [
            (d, a) for a in margs if (d := a.pre if when == "pre" else a.post) is not None
        ]
        rf = self.replay(enq)
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

    def dtype_for(self, mid: str, a: KernelArg) -> tuple[DTypeSpec | None, list[int] | None]:
        """How the object's bytes compare: an image's texel type and shape, else the
        argument's element type (None: as bytes)."""
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

    def check(self, o: Obj, dump: Dump, note: str = "") -> CheckSpec:
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
            tol.update(self.arg_tol.get(a.index, {}))
        if tol:
            c["tol"] = tol
        if dump.hashed:
            hv = dump.hash_value()
            # the plan's key is ``hash64`` (the engine reads it); schema.CheckSpec says "hash"
            cast(dict[str, object], c)["hash64"] = f"{hv:x}" if hv is not None else None
        else:
            c["data"] = self.key(dump.path)
        if note:
            c["note"] = note
        return c

    def check_before(self, n: int, o: Obj) -> CheckSpec:
        """The pre-check of the object before enqueue ``n``: the replayed state against the
        captured Pre dump (after a host-side change the capture shows)."""
        assert o.pre is not None
        return self.check(o, o.pre, note=f"replayed state before enqueue {n} vs captured Pre")

    def unchecked(self, o: Obj, why: str) -> CheckSpec:
        """An output with nothing to compare with (``why`` says so)."""
        return {
            "mem": o.mid,
            "args": o.indices,
            "label": o.label,
            "dtype": o.dspec,
            "shape": o.shape,
            "note": why,
        }
