"""Nondeterminism probe: which outputs vary across repetitions on one device.

Before anyone blames a compiler for a difference between two devices, the range should
give the same results twice on one device. :func:`probe_outputs` takes the outputs of
several repetitions (per output: the bytes read back after each repetition) and flags
each output whose bytes vary, with how many distinct variants there were, the typed
comparison of the first differing repetition against the first one (count, ULP, first
element), and the enqueue, kernel and arguments it belongs to.

``cltui replay --probe`` gets those outputs from the replay runner: every timing
repetition of the engine also reads back the checked outputs
(``cltui.replay.cross.probe_runs``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from cltui.replay.engine.compare import EQUAL, CompareResult, Tolerance, compare_bytes

OutputKey = tuple[int, str]  # (enqueue, memory id)


@dataclass(frozen=True)
class OutputMeta:
    """What an output is: its kernel, label, argument indexes and element dtype spec."""

    kernel: str = ""
    label: str = ""
    args: tuple[int, ...] = ()
    dtype: Any = None  # a compare.make_dtype spec (JSON-able) or a numpy dtype
    shape: tuple[int, ...] | None = None


@dataclass
class VaryingOutput:
    enqueue: int
    mem: str
    meta: OutputMeta
    runs: int  # repetitions that produced this output
    variants: int  # distinct byte contents among them
    first_run: int  # the first repetition whose bytes differ from repetition 0
    result: CompareResult  # repetition ``first_run`` against repetition 0

    def summary(self) -> str:
        return (f"{self.variants} different results in {self.runs} runs; run {self.first_run} "
                f"vs run 0: {self.result.summary()}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "enqueue": self.enqueue,
            "mem": self.mem,
            "kernel": self.meta.kernel,
            "label": self.meta.label,
            "args": list(self.meta.args),
            "runs": self.runs,
            "variants": self.variants,
            "first_run": self.first_run,
            "summary": self.summary(),
            "compare": self.result.to_dict(),
        }


@dataclass
class ProbeReport:
    runs: int
    outputs: int  # outputs compared
    varying: list[VaryingOutput] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # outputs absent from some runs
    errors: list[str] = field(default_factory=list)  # runs that failed
    device: str | None = None

    @property
    def deterministic(self) -> bool:
        return not self.varying and not self.errors

    def varying_args(self) -> dict[int, list[int]]:
        """enqueue -> argument indexes whose outputs vary (what ``--probe`` flags)."""
        out: dict[int, list[int]] = {}
        for v in self.varying:
            out.setdefault(v.enqueue, []).extend(v.meta.args)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "runs": self.runs,
            "outputs": self.outputs,
            "deterministic": self.deterministic,
            "varying": [v.to_dict() for v in self.varying],
            "missing": list(self.missing),
            "errors": list(self.errors),
        }


Bytes = bytes | bytearray | memoryview | npt.NDArray[Any]


def probe_outputs(
    runs: Sequence[Mapping[OutputKey, Bytes]],
    meta: Mapping[OutputKey, OutputMeta] | None = None,
) -> ProbeReport:
    """Flag the outputs whose bytes vary across ``runs`` (one mapping per repetition)."""
    meta = meta or {}
    keys: list[OutputKey] = sorted({k for r in runs for k in r})
    rep = ProbeReport(runs=len(runs), outputs=len(keys))
    for key in keys:
        present = [(i, r[key]) for i, r in enumerate(runs) if key in r]
        if len(present) < len(runs):
            rep.missing.append(f"enqueue {key[0]} {key[1]}: read back in {len(present)} of "
                               f"{len(runs)} runs")
        if len(present) < 2:
            continue
        digests = [hashlib.blake2b(_u8(b).data, digest_size=16).digest() for _, b in present]
        variants = len(set(digests))
        if variants == 1:
            continue
        j = next(k for k, d in enumerate(digests) if d != digests[0])
        m = meta.get(key, OutputMeta())
        res = compare_bytes(_u8(present[0][1]), _u8(present[j][1]), m.dtype, Tolerance(),
                            m.shape)
        if res.status == EQUAL:  # cannot happen for different digests; keep it honest
            continue
        rep.varying.append(VaryingOutput(key[0], key[1], m, len(present), variants,
                                         present[j][0], res))
    return rep


def _u8(b: Bytes) -> npt.NDArray[np.uint8]:
    if isinstance(b, np.ndarray):
        return np.ascontiguousarray(b).reshape(-1).view(np.uint8)
    return np.frombuffer(b, dtype=np.uint8)


def saved_outputs(result: Mapping[str, Any]) -> Iterator[tuple[Any, Any, str]]:
    """(step, check, file) of every output one engine result saved (``checks[].output``)."""
    for st in result.get("steps", []):
        for c in st.get("checks", []):
            if path := c.get("output"):
                yield st, c, str(path)


def outputs_of(result: Mapping[str, Any]) -> dict[OutputKey, npt.NDArray[np.uint8]]:
    """The outputs one engine result saved (``checks[].output`` files), by (enqueue, mem)."""
    out: dict[OutputKey, npt.NDArray[np.uint8]] = {}
    for st, c, path in saved_outputs(result):
        try:
            out[(int(st["enqueue"]), str(c["mem"]))] = np.fromfile(path, dtype=np.uint8)
        except OSError:
            continue
    return out


def meta_of(plan: Mapping[str, Any]) -> dict[OutputKey, OutputMeta]:
    """Output descriptions from a plan's checks."""
    out: dict[OutputKey, OutputMeta] = {}
    for st in plan.get("steps", []):
        for c in st.get("checks", []):
            shape = c.get("shape")
            out[(int(st["enqueue"]), str(c["mem"]))] = OutputMeta(
                kernel=str(st.get("kernel", "")),
                label=str(c.get("label", c["mem"])),
                args=tuple(int(a) for a in c.get("args", [])),
                dtype=c.get("dtype"),
                shape=tuple(int(s) for s in shape) if shape else None,
            )
    return out
