"""Image arguments as terminal pictures: two pixels per cell with the upper-half block."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt
from rich.color import Color
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.style import Style
from textual import events
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
    channels, lane, normalized = _lanes(bpp, fmt)
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


def _lanes(bpp: int, fmt: ImageFormat | None) -> tuple[int, np.dtype[Any], bool]:
    """Channels per texel, the numpy type of one channel, and whether it is normalized."""
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
    return channels, lane, normalized


def texel_text(
    data: npt.NDArray[np.uint8], region: tuple[int, int, int], bpp: int,
    fmt: ImageFormat | None, x: int, y: int, z: int = 0,
) -> str:
    """The stored channel values of texel (x, y, z), as the dump holds them: ``"(12, 7, 0,
    255)"``; ``"?"`` outside the dump."""
    w, h, _d = region
    texel = max(1, bpp // 8)
    channels, lane, _normalized = _lanes(bpp, fmt)
    start = ((z * h + y) * w + x) * texel
    if not (0 <= x < w and 0 <= y < h) or start + channels * lane.itemsize > len(data):
        return "?"
    raw = np.asarray(data[start : start + channels * lane.itemsize]).view(lane)
    parts = [f"{float(v):.6g}" if lane.kind == "f" else str(int(v)) for v in raw]
    return parts[0] if len(parts) == 1 else "(" + ", ".join(parts) + ")"


@dataclass
class Placed:
    """Where one picture was drawn: its first cell (x, line), its scale (cells per pixel
    across, half-cells per pixel down) and its size in pixels."""

    x: int
    line: int
    scale: float
    width: int
    height: int

    def pixel_at(self, x: int, y: int) -> tuple[int, int] | None:
        """The pixel under cell (x, y) of the widget (its upper half), or None."""
        px = int((x - self.x) / self.scale)
        py = int(2 * (y - self.line) / self.scale)
        if x < self.x or y < self.line or px >= self.width or py >= self.height:
            return None
        return px, py


class _Picture:
    """Pre and Post pictures side by side, scaled to fit, as half-block cells; the pixel
    under the cursor drawn as a ``+``."""

    def __init__(
        self, images: list[tuple[str, npt.NDArray[np.uint8]]], notes: list[str],
        cursor: tuple[int, int] | None, placed: list[Placed],
    ) -> None:
        self.images = images
        self.notes = [n for n in notes if n]
        self.cursor = cursor
        self.placed = placed  # filled while drawing (the view maps the mouse with it)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        height = (options.height or 12) - 1
        self.placed.clear()
        for note in self.notes:
            yield Segment(note[:width] + "\n")
            height -= 1
        if not self.images:
            return
        gap = 2
        col = (width - gap * (len(self.images) - 1)) // len(self.images)
        scaled = []
        for k, (_label, img) in enumerate(self.images):
            ih, iw = img.shape[:2]
            scale = min(col / iw, (height * 2) / ih)
            tw, th = max(1, int(iw * scale)), max(2, int(ih * scale))
            ys = np.minimum((np.arange(th) / scale).astype(int), ih - 1)
            xs = np.minimum((np.arange(tw) / scale).astype(int), iw - 1)
            scaled.append(img[ys][:, xs])
            self.placed.append(Placed(k * (col + gap), len(self.notes) + 1, scale, iw, ih))
        labels = "".join(
            (f"{label} {img.shape[1]}x{img.shape[0]}")[:col].ljust(col) + " " * gap
            for (label, img) in self.images
        )
        yield Segment(labels.rstrip()[:width] + "\n", Style(bold=True))
        rows = max(-(-s.shape[0] // 2) for s in scaled)
        marks = [self._mark(p) for p in self.placed]
        for r in range(min(rows, height)):
            for k, s in enumerate(scaled):
                if k:
                    yield Segment(" " * gap)
                yield from _picture_row(s, r, col, marks[k])
            yield Segment("\n")

    def _mark(self, placed: Placed) -> tuple[int, int] | None:
        """The cell (column, row) of the cursor's pixel in a placed picture."""
        if self.cursor is None:
            return None
        x, y = self.cursor
        return int(x * placed.scale), int(y * placed.scale) // 2


def _picture_row(
    s: npt.NDArray[np.uint8], r: int, col: int, mark: tuple[int, int] | None
) -> RenderResult:
    used = 0
    if 2 * r < s.shape[0]:
        top = s[2 * r]
        bottom = s[2 * r + 1] if 2 * r + 1 < s.shape[0] else None
        for x in range(s.shape[1]):
            fg = Color.from_rgb(*(int(c) for c in top[x]))
            bg = Color.from_rgb(*(int(c) for c in bottom[x])) if bottom is not None else None
            if mark == (x, r):  # the cursor: a + that stands out from the pixel
                light = int(top[x].astype(int).sum()) > 3 * 128
                ink = Color.from_rgb(0, 0, 0) if light else Color.from_rgb(255, 255, 255)
                yield Segment("+", Style(color=ink, bgcolor=fg, bold=True))
            else:
                yield Segment("▀", Style(color=fg, bgcolor=bg))
        used = s.shape[1]
    yield Segment(" " * (col - used))


Raw = tuple[str, npt.NDArray[np.uint8], tuple[int, int, int], int]  # side, data, region, bpp


class ImageView(Widget, can_focus=True):
    """Pre and Post of an image argument (``[``/``]`` step through 3-D slices; the arrows,
    or the mouse, move a pixel cursor whose coordinates and stored values are shown)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left_square_bracket", "slice(-1)", "Prev slice", key_display="["),
        Binding("right_square_bracket", "slice(1)", "Next slice", key_display="]"),
        Binding("left", "pixel(-1, 0)", "Pixel left", show=False),
        Binding("right", "pixel(1, 0)", "Pixel right", show=False),
        Binding("up", "pixel(0, -1)", "Pixel up", show=False),
        Binding("down", "pixel(0, 1)", "Pixel down", show=False),
        Binding("shift+left", "pixel(-8, 0)", "8 pixels left", show=False),
        Binding("shift+right", "pixel(8, 0)", "8 pixels right", show=False),
        Binding("shift+up", "pixel(0, -8)", "8 pixels up", show=False),
        Binding("shift+down", "pixel(0, 8)", "8 pixels down", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.arg: KernelArg | None = None
        self.z = 0
        self.depth = 1
        self.message = "No image"
        self.images: list[tuple[str, npt.NDArray[np.uint8]]] = []
        self.raw: list[Raw] = []  # the dumps shown, for the values under the cursor
        self.cursor = (0, 0)  # pixel (x, y) of the slice shown
        self._placed: list[Placed] = []
        self._shown: tuple[Any, ...] | None = None

    def show(self, cap: Capture, enq: Enqueue | None, arg: int | None) -> None:
        key = (id(cap), enq.number if enq else None, arg)
        if key == self._shown:
            return
        self._shown = key
        self.z = 0
        self.cursor = (0, 0)
        self.arg = None
        self.images = []
        self.raw = []
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

    @property
    def fmt(self) -> ImageFormat | None:
        return self.arg.mem.image if self.arg is not None and self.arg.mem is not None else None

    def _decode(self) -> None:
        arg = self.arg
        self.images, self.raw = [], []
        if arg is None:
            return
        fmt = self.fmt
        notes: list[str] = []
        for label, dump in (("pre", arg.pre), ("post", arg.post)):
            if dump is None:
                continue
            data = self._load(dump, notes)
            if data is not None and dump.image_region and dump.image_bpp:
                self.raw.append((label, data, dump.image_region, dump.image_bpp))
                self.images.append(
                    (label, image_rgb(data, dump.image_region, dump.image_bpp, fmt, self.z))
                )
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
    def _load(dump: Dump, notes: list[str]) -> npt.NDArray[np.uint8] | None:
        if dump.hashed:
            notes.append("hash-only dump")
            return None
        if dump.image_region is None or dump.image_bpp is None:
            notes.append(f"{dump.path.name}: no size in the file name")
            return None
        try:
            return dump.array()
        except OSError as exc:
            notes.append(f"cannot read {dump.path.name}: {exc.strerror or exc}")
            return None

    def action_slice(self, delta: int) -> None:
        if self.arg is None or self.depth <= 1:
            return
        self.z = max(0, min(self.depth - 1, self.z + delta))
        self._decode()

    # ----------------------------------------------------------- the cursor
    def action_pixel(self, dx: int, dy: int) -> None:
        self.move_pixel(self.cursor[0] + dx, self.cursor[1] + dy)

    def move_pixel(self, x: int, y: int) -> None:
        if not self.raw:
            return
        w, h, _d = self.raw[0][2]
        self.cursor = (max(0, min(w - 1, x)), max(0, min(h - 1, y)))
        self.refresh()

    def cursor_text(self) -> str:
        """``x 3 y 5 · pre (…) · post (…)``: the cursor's pixel and its stored values."""
        if not self.raw:
            return ""
        x, y = self.cursor
        where = f"x {x} y {y}" + (f" z {self.z}" if self.depth > 1 else "")
        values = " · ".join(
            f"{side} {texel_text(data, region, bpp, self.fmt, x, y, self.z)}"
            for side, data, region, bpp in self.raw
        )
        return f"{where} · {values} · arrows or mouse move"

    def on_mouse_move(self, event: events.MouseMove) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        for placed in self._placed:
            pixel = placed.pixel_at(offset.x, offset.y)
            if pixel is not None:
                self.move_pixel(*pixel)
                return

    def render(self) -> _Picture:
        notes = [self.message, self.cursor_text()]
        return _Picture(self.images, notes, self.cursor if self.raw else None, self._placed)


def _pick_image(enq: Enqueue | None, arg: int | None) -> KernelArg | None:
    if enq is None or not enq.args:
        return None
    chosen = arg_by_index(enq, arg)
    if chosen is not None and chosen.kind is ArgKind.IMAGE:
        return chosen
    return next((a for a in enq.args if a.kind is ArgKind.IMAGE), None)
