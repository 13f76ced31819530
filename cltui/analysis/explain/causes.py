"""The known causes of a cross-device difference, each as a controlled rebuild (a
:class:`~cltui.replay.experiment.variant.Variant` of the enqueue) that removes it, with its
wording and what the OpenCL specification says about it.

The order is the order of preference when several rebuilds remove a difference: the most
specific change first, ``-cl-opt-disable`` (which changes everything) last.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cltui.analysis.explain.imagewrite import STEP_RULE, spec_image_writes
from cltui.analysis.explain.linearfilter import LinearSampler, linear_reads
from cltui.analysis.explain.order import reversed_order
from cltui.analysis.explain.rewrite import (
    ULP_LIMITS,
    builtins_called,
    full_precision,
    reference_builtins,
    without_contraction,
)
from cltui.replay.experiment.variant import ProgramChange, Variant
from cltui.text.shellwords import split_words

__all__ = [
    "ACCURACY", "BUMPED", "IMAGE_WRITE", "LINEAR_FILTER", "RELAXED", "REVERSED", "Rebuild",
    "rebuilds",
]  # fmt: skip

ACCURACY = "accuracy"  # the math built-ins computed in double precision
BUMPED = "accuracy-bumped"  # and moved by their ULP limits (a measurement)
IMAGE_WRITE = "image-write"  # write_imagef's conversion done as the specification writes it
LINEAR_FILTER = "linear-filter"  # read_imagef's linear filter done in the kernel, in float
REVERSED = "reversed-order"  # every id read in reverse (a measurement: order dependence)

RELAXED = ("-cl-fast-relaxed-math", "-cl-unsafe-math-optimizations", "-cl-finite-math-only",
           "-cl-mad-enable")  # fmt: skip
DAZ = "-cl-denorms-are-zero"
CR_DIV = "-cl-fp32-correctly-rounded-divide-sqrt"


@dataclass(frozen=True)
class Rebuild:
    """One controlled rebuild: its id (a point id), what it changes, the cause it removes,
    and whether a difference of that cause is within the specification (None: the
    specification does not settle it) with the reason."""

    id: str
    change: str  # what the rebuild does, for people
    cause: str  # the cause named when this rebuild removes the difference
    within_spec: bool | None
    spec: str  # why (or why not) within the specification
    variant: Variant
    measure: bool = False  # not a cause test: a measurement the analysis uses


def rebuilds(range_text: str, source: str | None, options: str, kernel: str = "",
             samplers: Mapping[str, LinearSampler] | None = None) -> list[Rebuild]:
    """The rebuilds that apply to ``kernel`` of ``source`` built with ``options`` (a source
    rewrite only when the program has a source; ``samplers``: its linear samplers, by name,
    :func:`.linearfilter.linear_samplers`)."""
    words = split_words(options)
    out: list[Rebuild] = []
    if source is not None:
        full, names = full_precision(source)
        if names:
            out.append(Rebuild(
                "full-precision", f"{', '.join(names)} replaced by the full-precision built-in",
                f"{'/'.join(sorted({n.split('_')[0] + '_' for n in names}))} accuracy "
                f"({', '.join(names)})", True,
                "the accuracy of native_ functions is implementation-defined, half_ "
                "functions may be off by 8,192 ULP",
                Variant(range_text, programs=(ProgramChange("", full),))))  # fmt: skip
        unfused, calls = without_contraction(source)
        what = "#pragma OPENCL FP_CONTRACT OFF" + (
            f", {calls} mad/fma call{'s' if calls != 1 else ''} written a*b+c" if calls else "")
        out.append(Rebuild(
            "contraction", what,
            "contraction: one device computes a*b+c (or mad) as one fused multiply-add "
            "(one rounding), the other as a multiply then an add (two roundings)", True,
            "mad may be computed either way, and a*b+c may be contracted while "
            "FP_CONTRACT is on (the default)",
            Variant(range_text, programs=(ProgramChange("", unfused),))))  # fmt: skip
        out += _image_write(range_text, source)
        out += _linear_filter(range_text, source, kernel, samplers or {})
        out += _accuracy(range_text, full, names, builtins_called(source))
        rev, ids = reversed_order(source)
        if ids:
            out.append(Rebuild(
                REVERSED, "every work-item and work-group id read in reverse (the opposite "
                "work-item and work-group order on the same device)",
                "order dependence", True, "", Variant(range_text,
                programs=(ProgramChange("", rev),)), measure=True))  # fmt: skip
    if DAZ in words:
        out.append(Rebuild(
            "denormals", f"{DAZ} removed",
            f"subnormals flushed to zero under {DAZ} on one device and kept on the other",
            True, f"{DAZ} allows a device to flush subnormal floats to zero",
            Variant(range_text, options_remove=(DAZ,))))  # fmt: skip
    else:
        out.append(Rebuild(
            "denormals", f"{DAZ} added",
            "subnormals: one device flushes subnormal floats to zero, the other keeps them",
            True, "single-precision subnormal support is optional (CL_FP_DENORM)",
            Variant(range_text, options_add=(DAZ,))))  # fmt: skip
    relaxed = [w for w in RELAXED if w in words]
    if relaxed:
        out.append(Rebuild(
            "relaxed-math", f"{', '.join(relaxed)} removed, {CR_DIV} added",
            f"relaxed math under {', '.join(relaxed)} (e.g. a division or sqrt that is not "
            "correctly rounded)", True,
            f"{relaxed[0]} allows results of lower accuracy",
            Variant(range_text, options_remove=tuple(relaxed),
                    options_add=() if CR_DIV in words else (CR_DIV,))))  # fmt: skip
    elif CR_DIV not in words:
        out.append(Rebuild(
            "division", f"{CR_DIV} added",
            "single-precision division or sqrt that is not correctly rounded on one device",
            True, "without the option x/y may be off by 2.5 ULP and sqrt by 3 ULP",
            Variant(range_text, options_add=(CR_DIV,))))  # fmt: skip
    out.append(Rebuild(
        "opt-disable", "-cl-opt-disable added",
        "an optimisation of one device's compiler (the difference goes with -cl-opt-disable)",
        None, "the specification does not say which optimisations keep results bit-exact",
        Variant(range_text, options_add=("-cl-opt-disable",))))  # fmt: skip
    return out


def _accuracy(range_text: str, full: str, native: list[str], called: list[str]
              ) -> list[Rebuild]:  # fmt: skip
    """The built-ins (``native_``/``half_`` ones as full-precision ones: ``full``) computed
    in double precision, then (a measurement) moved by their ULP limits; none when the
    source calls no math built-in.  ``native``, ``called``: what the source itself calls."""
    ref, rewritten = reference_builtins(full)
    if not rewritten:
        return []
    limits = ", ".join(f"{n} ≤ {ULP_LIMITS[n]:g} ULP" for n in called)
    parts = []
    if native:
        parts.append(f"{'/'.join(sorted({n.split('_')[0] + '_' for n in native}))} accuracy "
                     f"({', '.join(native)}: implementation-defined)")
    if called:
        parts.append(f"built-in accuracy ({limits})")
    cause = " and ".join(parts) + ": the devices' math libraries round differently"
    spec = ("native_ and half_ accuracy is implementation-defined" if not called else
            f"the specification bounds the built-ins' error: {limits}")
    out = [Rebuild(
        ACCURACY, "the math built-ins computed in double precision, rounded to float",
        cause, True if not called else None, spec,
        Variant(range_text, programs=(ProgramChange("", ref),)))]  # fmt: skip
    if called:
        bumped, _ = reference_builtins(full, bump=True)
        out.append(Rebuild(
            BUMPED, "the built-ins in double precision, each moved up by its ULP limit",
            cause, None, spec, Variant(range_text, programs=(ProgramChange("", bumped),)),
            measure=True))  # fmt: skip
    return out


def _linear_filter(range_text: str, source: str, kernel: str,
                   samplers: Mapping[str, LinearSampler]) -> list[Rebuild]:  # fmt: skip
    """The linear filter done in the kernel (none when no read goes through a linear
    sampler the rewrite knows)."""
    filtered, calls = linear_reads(source, kernel, samplers)
    if not calls:
        return []
    return [Rebuild(
        LINEAR_FILTER, f"each read_imagef through a linear sampler filtered in the kernel: four "
        f"nearest texels weighted in float ({calls} call{'s' if calls != 1 else ''})",
        "the image's linear filtering: the devices weight the four texels differently (the "
        "order of the float operations, or their precision: a GPU's texture unit keeps the "
        "weights in fixed point, 8 fractional bits on NVIDIA's)", None,
        "the specification gives the linear filter's formula, not the precision of its "
        "weights", Variant(range_text, programs=(ProgramChange("", filtered),)))]  # fmt: skip


def _image_write(range_text: str, source: str) -> list[Rebuild]:
    """The image writes' conversion pinned (none when the source calls no write_imagef)."""
    pinned, calls = spec_image_writes(source)
    if not calls:
        return []
    return [Rebuild(
        IMAGE_WRITE, f"each write_imagef colour converted in the kernel as the specification "
        f"writes it ({calls} call{'s' if calls != 1 else ''})",
        "the image format's conversion: the devices convert the float colour to the "
        "image's channel type differently (its rounding, or a NaN or out-of-range value)",
        None, STEP_RULE, Variant(range_text, programs=(ProgramChange("", pinned),)))]
