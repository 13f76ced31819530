"""Image arguments as terminal pictures: two pixels per cell with the upper-half block."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt
from rich.color import Color
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.widget import Widget

from cltui.capture import images
from cltui.capture.model import ArgKind, Dump, Enqueue, ImageFormat, KernelArg
from cltui.tui.browse import arg_by_index

if TYPE_CHECKING:
    from cltui.capture.capture import Capture

__all__ = ["ImageView", "image_rgb"]

def image_rgb(
    data: npt.NDArray[np.uint8], region: tuple[int, int, int], bpp: int,
    fmt: ImageFormat | None, z: int = 0,
) -> npt.NDArray[np.uint8]:
    """Slice ``z`` of a packed image dump as an (H, W, 3) uint8 RGB array."""
    w, h, d = region
    texel = max(1, bpp // 8)
    channels, (code, normalized) = 4, ("u1", True)
    ctype = images.channel_type(fmt.channel_data_type) if fmt is not None else None
    if fmt is not None and ctype is not None and not ctype.packed:
        code, normalized = ctype.component, ctype.normalized
        channels = images.channels(fmt.channel_order) or 4
    else:  # no format in the log: guess from the bits per texel
        channels, code = {8: (1, "u1"), 16: (1, "u2"), 32: (4, "u1"), 64: (4, "u2"),
                          128: (4, "f4")}.get(bpp, (texel, "u1"))
        normalized = code != "f4"
    lane = np.dtype(code)
    if lane.itemsize * channels != texel:
        channels = max(1, texel // lane.itemsize)
    per_slice = w * h * texel
    z = max(0, min(z, d - 1))
    raw = np.asarray(data[z * per_slice : (z + 1) * per_slice])
    if len(raw) < per_slice or w * h == 0:
        return np.zeros((max(h, 1), max(w, 1), 3), dtype=np.uint8)
    values = raw.view(lane).reshape(h, w, channels).astype(np.float64)
    if normalized and lane.kind in "iu":
        values /= float(np.iinfo(lane).max)
    finite = np.isfinite(values)
    values = np.where(finite, values, 0.0)
    if not normalized or lane.kind == "f":
        lo, hi = float(values.min()), float(values.max())
        if lo < 0.0 or hi > 1.0:  # not in [0, 1]: stretch to the range that is there
            values = (values - lo) / (hi - lo) if hi > lo else np.zeros_like(values)
    order = fmt.channel_order if fmt is not None else ""
    if channels == 1:
        rgb = np.repeat(values, 3, axis=2)
    elif channels == 2:
        rgb = np.concatenate([values, np.zeros((h, w, 1))], axis=2)
    else:
        rgb = values[:, :, :3]
        if order in ("CL_BGRA", "CL_sBGRA"):
            rgb = rgb[:, :, ::-1]
        elif order == "CL_ARGB":
            rgb = values[:, :, 1:4]
        elif order == "CL_ABGR":
            rgb = values[:, :, 3:0:-1]
    out: npt.NDArray[np.uint8] = (np.clip(rgb, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    return out


class _Picture:
    """Pre and Post pictures side by side, scaled to fit, as half-block cells."""

    def __init__(self, images: list[tuple[str, npt.NDArray[np.uint8]]], note: str) -> None:
        self.images = images
        self.note = note

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        height = (options.height or 12) - 1
        if not self.images:
            yield Segment(self.note[:width])
            return
        if self.note:
            yield Segment(self.note[:width] + "\n")
            height -= 1
        gap = 2
        col = (width - gap * (len(self.images) - 1)) // len(self.images)
        scaled = []
        for _label, img in self.images:
            ih, iw = img.shape[:2]
            scale = min(col / iw, (height * 2) / ih)
            tw, th = max(1, int(iw * scale)), max(2, int(ih * scale))
            ys = np.minimum((np.arange(th) / scale).astype(int), ih - 1)
            xs = np.minimum((np.arange(tw) / scale).astype(int), iw - 1)
            scaled.append(img[ys][:, xs])
        labels = "".join(
            (f"{label} {img.shape[1]}x{img.shape[0]}")[:col].ljust(col) + " " * gap
            for (label, img) in self.images
        )
        yield Segment(labels.rstrip()[:width] + "\n", Style(bold=True))
        rows = max(-(-s.shape[0] // 2) for s in scaled)
        for r in range(min(rows, height)):
            for k, s in enumerate(scaled):
                if k:
                    yield Segment(" " * gap)
                used = 0
                if 2 * r < s.shape[0]:
                    top = s[2 * r]
                    bottom = s[2 * r + 1] if 2 * r + 1 < s.shape[0] else None
                    for x in range(s.shape[1]):
                        fg = Color.from_rgb(*(int(c) for c in top[x]))
                        bg = (
                            Color.from_rgb(*(int(c) for c in bottom[x]))
                            if bottom is not None else None
                        )
                        yield Segment("▀", Style(color=fg, bgcolor=bg))
                    used = s.shape[1]
                yield Segment(" " * (col - used))
            yield Segment("\n")


class ImageView(Widget, can_focus=True):
    """Pre and Post of an image argument (``[``/``]`` step through 3-D slices)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left_square_bracket", "slice(-1)", "Prev slice", key_display="["),
        Binding("right_square_bracket", "slice(1)", "Next slice", key_display="]"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.arg: KernelArg | None = None
        self.z = 0
        self.depth = 1
        self.message = "No image"
        self.images: list[tuple[str, npt.NDArray[np.uint8]]] = []
        self._shown: tuple[Any, ...] | None = None

    def show(self, cap: Capture, enq: Enqueue | None, arg: int | None) -> None:
        key = (id(cap), enq.number if enq else None, arg)
        if key == self._shown:
            return
        self._shown = key
        self.z = 0
        self.arg = None
        self.images = []
        target = _pick_image(enq, arg)
        if target is None:
            self.message = (
                "No image argument in this enqueue" if enq is not None and enq.args
                else "Not a kernel enqueue" if enq is not None else "No enqueue"
            )
            self.refresh()
            return
        self.arg = target
        self._decode()

    def _decode(self) -> None:
        arg = self.arg
        self.images = []
        if arg is None:
            return
        fmt = arg.mem.image if arg.mem is not None else None
        notes: list[str] = []
        for label, dump in (("pre", arg.pre), ("post", arg.post)):
            if dump is None:
                continue
            image = self._load(dump, fmt, notes)
            if image is not None:
                self.images.append((label, image))
        first = arg.pre or arg.post
        region = first.image_region if first is not None else None
        self.depth = region[2] if region else 1
        where = f" · slice {self.z + 1}/{self.depth} ([ ])" if self.depth > 1 else ""
        desc = ""
        if fmt is not None:
            desc = f" {fmt.channel_order.removeprefix('CL_')}/"
            desc += fmt.channel_data_type.removeprefix("CL_")
        self.message = f"arg {arg.index} {arg.name or ''}{desc}{where}"
        if notes:
            self.message += " · " + "; ".join(notes)
        if not self.images and not notes:
            self.message += " · no Pre/Post image dump"
        self.refresh()

    @staticmethod
    def _load(
        dump: Dump, fmt: ImageFormat | None, notes: list[str]
    ) -> npt.NDArray[np.uint8] | None:
        if dump.hashed:
            notes.append("hash-only dump")
            return None
        if dump.image_region is None or dump.image_bpp is None:
            notes.append(f"{dump.path.name}: no size in the file name")
            return None
        try:
            data = dump.array()
        except OSError as exc:
            notes.append(f"cannot read {dump.path.name}: {exc.strerror or exc}")
            return None
        return image_rgb(data, dump.image_region, dump.image_bpp, fmt)

    def action_slice(self, delta: int) -> None:
        if self.arg is None or self.depth <= 1:
            return
        self.z = max(0, min(self.depth - 1, self.z + delta))
        fmt = self.arg.mem.image if self.arg.mem is not None else None
        self.images = []
        for label, dump in (("pre", self.arg.pre), ("post", self.arg.post)):
            if dump is not None and dump.image_region and dump.image_bpp and not dump.hashed:
                try:
                    data = dump.array()
                except OSError:
                    continue
                self.images.append(
                    (label, image_rgb(data, dump.image_region, dump.image_bpp, fmt, self.z))
                )
        where = f"slice {self.z + 1}/{self.depth}"
        self.message = self.message.split(" · slice")[0] + f" · {where} ([ ])"
        self.refresh()

    def render(self) -> _Picture:
        return _Picture(self.images, self.message)


def _pick_image(enq: Enqueue | None, arg: int | None) -> KernelArg | None:
    if enq is None or not enq.args:
        return None
    chosen = arg_by_index(enq, arg)
    if chosen is not None and chosen.kind is ArgKind.IMAGE:
        return chosen
    return next((a for a in enq.args if a.kind is ArgKind.IMAGE), None)
