"""The divergence map drawn in the terminal (pure: numpy in, rich ``Text`` out): for an image
argument a difference heat map over the picture (two texel rows a character, half blocks:
the picture in grey, texels that differ in red, brighter where more of a cell differs); for
a buffer a strip map (one character for each run of elements, its height how many of them
differ) with the cursor of the three-way diff marked."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from rich.text import Text

__all__ = ["LEVELS", "diff_mask", "grey_of", "heat_map", "strip_map"]

LEVELS = " ▁▂▃▄▅▆▇█"
Mask = npt.NDArray[np.bool_]


def diff_mask(a: bytes | npt.NDArray[Any], b: bytes | npt.NDArray[Any], itemsize: int) -> Mask:
    """Per item (``itemsize`` bytes: an element, a texel): whether its bytes differ; items
    that only one side has count as differing."""
    x = np.frombuffer(bytes(a), dtype=np.uint8)
    y = np.frombuffer(bytes(b), dtype=np.uint8)
    size = max(1, itemsize)
    n = min(x.size, y.size) // size
    longest = max(x.size, y.size) // size
    same = (x[: n * size].reshape(n, size) == y[: n * size].reshape(n, size)).all(axis=1)
    out = np.ones(longest, dtype=bool)
    out[:n] = ~same
    return out


def grey_of(values: npt.NDArray[Any], lanes: int) -> npt.NDArray[np.float64]:
    """Per texel a brightness 0..1 (the mean of its first three channels, scaled between
    the picture's finite extremes)."""
    v = values.astype(np.float64)
    n = v.size // max(1, lanes)
    v = v[: n * lanes].reshape(n, max(1, lanes))[:, : min(3, max(1, lanes))].mean(axis=1)
    ok = np.isfinite(v)
    if not ok.any():
        return np.zeros(n)
    lo, hi = float(v[ok].min()), float(v[ok].max())
    out = np.where(ok, (v - lo) / (hi - lo) if hi > lo else 0.5, 0.0)
    return np.asarray(out, dtype=np.float64)


def _cells(m: npt.NDArray[np.float64], rows: int, cols: int) -> npt.NDArray[np.float64]:
    """The mean of ``m`` (h x w) over a rows x cols grid of blocks."""
    h, w = m.shape
    ys = np.linspace(0, h, rows + 1).astype(int)
    xs = np.linspace(0, w, cols + 1).astype(int)
    out = np.zeros((rows, cols))
    for r in range(rows):
        for c in range(cols):
            block = m[ys[r] : max(ys[r + 1], ys[r] + 1), xs[c] : max(xs[c + 1], xs[c] + 1)]
            out[r, c] = float(block.mean()) if block.size else 0.0
    return out


def heat_map(mask: Mask, grey: npt.NDArray[np.float64] | None, width: int, height: int,
             max_cols: int = 64, max_rows: int = 16) -> Text:  # fmt: skip
    """The heat map of an image of ``width`` x ``height`` texels (the first slice of a 3-D
    one): ``mask`` per texel, ``grey`` the picture (None: black)."""
    n = width * height
    if n == 0:
        return Text("")
    m = np.zeros(n)
    m[: min(n, mask.size)] = mask[:n]
    g = np.zeros(n)
    if grey is not None:
        g[: min(n, grey.size)] = grey[:n]
    cols = min(width, max_cols)
    rows = min((height + 1) // 2, max_rows) * 2
    rows = max(2, min(rows, height if height % 2 == 0 else height + 1))
    dm = _cells(m.reshape(height, width), rows, cols)
    gm = _cells(g.reshape(height, width), rows, cols)
    text = Text()
    for r in range(0, rows, 2):
        for c in range(cols):
            top, bottom = _colour(dm[r, c], gm[r, c]), _colour(dm[r + 1, c], gm[r + 1, c])
            text.append("▀", style=f"{top} on {bottom}")
        text.append("\n")
    return text


def _colour(differ: float, grey: float) -> str:
    if differ > 0:
        red = int(140 + 115 * min(1.0, differ * 4))
        return f"rgb({red},0,0)"
    level = int(30 + 150 * grey)
    return f"rgb({level},{level},{level})"


def strip_map(mask: Mask, width: int, cursor: int | None = None) -> Text:
    """One line of ``width`` characters over the items of ``mask``: each character's height
    how many of its items differ (none: a dot), the cell holding ``cursor`` reversed."""
    n = int(mask.size)
    text = Text()
    if n == 0 or width <= 0:
        return text
    cols = min(width, n)
    edges = np.linspace(0, n, cols + 1).astype(int)
    counts = np.add.reduceat(mask.astype(np.int64), edges[:-1]) if n else np.zeros(cols)
    sizes = np.maximum(np.diff(edges), 1)
    at = None if cursor is None else int(np.searchsorted(edges, cursor, side="right") - 1)
    for c in range(cols):
        frac = counts[c] / sizes[c]
        ch = "·" if counts[c] == 0 else LEVELS[max(1, int(np.ceil(frac * 8)))]
        style = "dim" if counts[c] == 0 else "bold red"
        if c == at:
            style += " reverse"
        text.append(ch, style=style)
    return text
