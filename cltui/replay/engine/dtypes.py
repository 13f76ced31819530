"""Element types: numpy dtypes from the JSON-able specs a plan carries, and back (pure
numpy)."""

from __future__ import annotations

from typing import Any

import numpy as np

DTypeSpec = str | list[Any]  # a dtype string, or [[name, spec(, offset)], ...] (JSON)


def make_dtype(spec: DTypeSpec | np.dtype[np.generic] | None) -> np.dtype[np.generic]:
    """A numpy dtype from a JSON-able spec.

    ``"<f4"``/``"float32"``: a scalar type; ``"(4,)<f4"``: a vector; a list of
    ``[name, spec]`` or ``[name, spec, offset]``: a struct (offsets keep padding).
    ``None`` means raw bytes (``uint8``).
    """
    if spec is None:
        return np.dtype(np.uint8)
    if isinstance(spec, np.dtype):
        return spec
    if isinstance(spec, str):
        return np.dtype(spec)
    if isinstance(spec, list):
        names: list[str] = []
        formats: list[np.dtype[np.generic]] = []
        offsets: list[int] = []
        has_offsets = all(len(f) >= 3 for f in spec)
        for f in spec:
            names.append(str(f[0]))
            formats.append(make_dtype(f[1]))
            if has_offsets:
                offsets.append(int(f[2]))
        if has_offsets:
            return np.dtype({"names": names, "formats": formats, "offsets": offsets})
        return np.dtype({"names": names, "formats": formats})
    raise ValueError(f"not a dtype spec: {spec!r}")


def dtype_spec(dt: np.dtype[np.generic]) -> DTypeSpec:
    """The JSON-able spec of a dtype (inverse of :func:`make_dtype`)."""
    if dt.fields:
        return [
            [name, dtype_spec(dt.fields[name][0]), int(dt.fields[name][1])]
            for name in dt.names or ()
        ]
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        return f"({','.join(str(s) for s in shape)},){base.str}"
    return dt.str


def dtype_label(dt: np.dtype[np.generic]) -> str:
    if dt.fields:
        inner = ", ".join(f"{n}: {dtype_label(dt.fields[n][0])}" for n in dt.names or ())
        return "struct{" + inner + "}"
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        return f"{base.name}x{'x'.join(str(s) for s in shape)}"
    return dt.name


def dtype_leaves(
    dt: np.dtype[np.generic], prefix: str = ""
) -> list[tuple[str, np.dtype[np.generic]]]:
    """(field path, dtype) for every non-struct leaf (subarrays kept as one leaf)."""
    if dt.fields:
        out: list[tuple[str, np.dtype[np.generic]]] = []
        for name in dt.names or ():
            sub = dt.fields[name][0]
            out.extend(dtype_leaves(sub, f"{prefix}.{name}" if prefix else name))
        return out
    return [(prefix, dt)]
