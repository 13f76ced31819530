"""The three-way diff of one replay result: captured Pre, captured Post and replayed Post of
one argument in a :class:`~cltui.tui.widgets.diff_view.DiffView` (``enter`` on a row of the
replay results)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Static

from cltui.capture.cltypes import CType, parse_type
from cltui.capture.confine import map_bytes
from cltui.capture.elements import element_ctype
from cltui.capture.model import Dump
from cltui.errors import CltuiError
from cltui.replay.engine.dtypes import make_dtype
from cltui.replay.engine.schema import Report
from cltui.text.escape import escape_controls
from cltui.tui.browse import arg_by_index
from cltui.tui.result_rows import ResultRow
from cltui.tui.screens.replay_progress import ReplayOutcome
from cltui.tui.widgets.diff_view import DiffView, as_bytes
from cltui.tui.widgets.keys_footer import KeysFooter
from cltui.tui.widgets.row_cursor import RowCursorView

if TYPE_CHECKING:
    from cltui.capture.capture import Capture

__all__ = ["DiffScreen", "DiffUnavailable", "ctype_for"]

Array = npt.NDArray[np.generic]  # a dump, a replayed output: any element type, read as bytes


class DiffUnavailable(CltuiError):
    """The row has no data to diff (one-line reason)."""


def ctype_for(capture: Capture, enqueue: int, arg: int | None, spec: Any) -> CType:
    """The element type: the kernel signature's, else the plan's dtype, else bytes."""
    if arg is not None:
        try:
            enq = capture.enqueue(enqueue)
            chosen = arg_by_index(enq, arg)
            if chosen is not None:
                ctype = element_ctype(chosen)
                if ctype is not None:
                    return ctype
        except Exception:  # the plan's dtype below is as good
            pass
    name = _cl_name(spec)
    return parse_type(name or "uchar")


_CL_SCALARS = {
    "f2": "half", "f4": "float", "f8": "double", "i1": "char", "u1": "uchar", "i2": "short",
    "u2": "ushort", "i4": "int", "u4": "uint", "i8": "long", "u8": "ulong", "b1": "uchar",
}  # fmt: skip


def _cl_name(spec: Any) -> str | None:  # a plan dtype spec (JSON)
    try:
        dt = make_dtype(spec)
    except (TypeError, ValueError):
        return None
    lanes = 1
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        if len(shape) != 1:
            return None
        dt, lanes = base, int(shape[0])
    name = _CL_SCALARS.get(f"{dt.kind}{dt.itemsize}")
    if name is None:
        return None
    return name if lanes == 1 else f"{name}{lanes}"


def _load(path: Path | None) -> npt.NDArray[np.uint8] | None:
    if path is None or not path.is_file():
        return None
    return map_bytes(path).view(np.uint8)  # never blocks: a FIFO is an OSError


class DiffScreen(Screen[None]):
    """Captured Pre, captured Post, replayed Post of one checked argument."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back"),
        Binding("e", "explain", "Explain", tooltip="Explain where and why the devices differ "
                "(cltui explain)"),
    ]

    def __init__(
        self,
        title: str,
        detail: str,
        pre: Array | None,
        post: Array | None,
        replayed: Array | None,
        ctype: CType,
        first: int | None,
        headings: tuple[str, str, str] | None = None,
        image: tuple[int, int, int, int] | None = None,
    ) -> None:
        """``image``: (width, height, depth, bytes per texel) of an image argument, for the
        pixel coordinates of the element under the cursor."""
        super().__init__()
        self.image = image
        self.title_text = title
        self.detail = detail
        self.data = (pre, post, replayed)
        self.ctype = ctype
        self.first = first
        self.headings = headings
        self.source_row: tuple[Capture, ReplayOutcome, ResultRow] | None = None  # for explain
        self.mask: Any = None  # per element: post and replayed differ (the strip map)

    @classmethod
    def for_row(cls, capture: Capture, outcome: ReplayOutcome, row: ResultRow) -> DiffScreen:
        """The diff of a results row (raises :class:`DiffUnavailable`)."""
        if row.enqueue is None:
            raise DiffUnavailable("This row has no enqueue")
        step = outcome.step(row.enqueue)
        src = row.cross if row.cross is not None else row.check
        assert src is not None
        mem = src.get("mem")
        planned = None
        if step is not None:
            for c in [*step.get("checks", []), *step.get("prechecks", [])]:
                if c.get("mem") == mem:
                    planned = c
                    break
        root = Path(capture.path)
        checked = row.check["args"] if row.check is not None else None
        args = list(checked or (planned or {}).get("args") or [])
        arg = int(args[0]) if args else None
        pre = post = None
        image = None
        try:
            enq = capture.enqueue(row.enqueue)
            a = arg_by_index(enq, arg)
            if a is not None:
                pre = a.pre.array() if a.pre is not None and not a.pre.hashed else None
                post = a.post.array() if a.post is not None and not a.post.hashed else None
                image = _image_geometry(a.pre or a.post)
        except (OSError, ValueError) as exc:
            raise DiffUnavailable(f"enqueue {row.enqueue}: cannot read the dumps: {exc}") from None
        if planned is not None and planned.get("data"):
            post = _load(root / str(planned["data"])) if post is None else post
        if step is not None and pre is None:
            for load in step.get("loads", []):
                if load.get("mem") == mem and load.get("data"):
                    pre = _load(root / str(load["data"]))
        spec = src.get("dtype") if "dtype" in src else (planned or {}).get("dtype")
        ctype = ctype_for(capture, row.enqueue, arg, spec)
        res = row.result
        first = res.get("first") or {}
        first_index = first.get("index")
        detail = f"{row.status}: {src.get('summary', '')}".strip()
        if row.prechecks:
            detail = (f"before the enqueue, the replayed state against the capture's Pre dump: "
                      f"{detail} (that replayed state is not kept: captured Pre and Post shown)")
        if row.cross is not None:
            a_out = _load(_path(outcome.report, row.cross["a"], row.enqueue, mem))
            b_out = _load(_path(outcome.report, row.cross["b"], row.enqueue, mem))
            if a_out is None or b_out is None:
                raise DiffUnavailable("The replayed outputs of this comparison are gone")
            title = (f"enqueue {row.enqueue} {escape_controls(row.kernel)} · {row.label} · "
                     f"{row.cross['b']} against {row.cross['a']}")
            screen = cls(title, detail, pre, a_out, b_out, ctype, first_index,
                         ("captured pre", f"{row.cross['a']} replayed",
                          f"{row.cross['b']} replayed"), image)  # fmt: skip
            screen.source_row = (capture, outcome, row)
            return screen
        out = row.check.get("output") if row.check is not None else None
        replayed = _load(Path(out)) if out else None
        if replayed is None and post is None:
            raise DiffUnavailable(f"enqueue {row.enqueue} {row.label}: no data to compare")
        title = (f"enqueue {row.enqueue} {escape_controls(row.kernel)} · {row.label} · "
                 f"device {row.device}")
        screen = cls(title, detail, pre, post, replayed, ctype, first_index, image=image)
        screen.source_row = (capture, outcome, row)
        return screen

    def compose(self) -> ComposeResult:
        yield Static(self.title_text, id="diff-title", markup=False)
        yield Static(self.detail, id="diff-detail", markup=False)
        yield Static("", id="diff-strip")
        yield DiffView(id="diff-view")
        yield Static("", id="diff-cursor", markup=False)
        yield KeysFooter()

    @property
    def view(self) -> DiffView:
        return self.query_one(DiffView)

    def on_mount(self) -> None:
        pre, post, rep = (None if d is None else as_bytes(d) for d in self.data)
        view = self.view
        if self.headings is not None:
            view.headings = dict(zip(("pre", "post", "replayed"), self.headings, strict=True))
        view.set_three(("diff", self.title_text), pre, post, rep, self.ctype)
        target = self.first if self.first is not None else view.first_mismatch()
        if target is not None and not view.hex_mode:
            view.move_cursor(int(target))
        mismatches = view.mismatch_count()
        extra = f" · {mismatches:,} differing element(s) highlighted; ] / [ jump between them"
        if view.replayed is None:
            extra = " · no replayed data to compare"
        elif view.post is None:
            extra = " · no captured Post dump to compare with"
        self.query_one("#diff-detail", Static).update(
            f"{self.detail} · elements as {self.ctype.name}{extra}"
        )
        if view.post is not None and view.replayed is not None:
            from cltui.tui.widgets.divergence_map import diff_mask

            self.mask = diff_mask(view.post, view.replayed, view.itemsize)
        view.focus()
        self._show_cursor()

    def on_row_cursor_view_cursor_moved(self, message: RowCursorView.CursorMoved) -> None:
        self._show_cursor()

    def _show_cursor(self) -> None:
        self.query_one("#diff-cursor", Static).update(cursor_line(self.view, self.image))
        strip = self.query_one("#diff-strip", Static)
        strip.display = self.mask is not None and bool(self.mask.any())
        if strip.display:
            from cltui.tui.widgets.divergence_map import strip_map

            width = max(16, (self.app.size.width or 80) - 2)
            strip.update(strip_map(self.mask, width, self.view.cursor))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "explain":  # a diff opened from a row of the replay results only
            return self.source_row is not None
        return True

    def action_explain(self) -> None:
        if self.source_row is None:
            return
        from cltui.tui.screens.explain import start_explain

        start_explain(self, *self.source_row, cursor=None if self.view.hex_mode
                      else self.view.cursor)  # fmt: skip

    def action_close(self) -> None:
        self.dismiss(None)


def _image_geometry(dump: Dump | None) -> tuple[int, int, int, int] | None:
    if dump is None or dump.image_region is None or not dump.image_bpp:
        return None
    w, h, d = dump.image_region
    return w, h, d, max(1, dump.image_bpp // 8)


def cursor_line(view: DiffView, image: tuple[int, int, int, int] | None) -> str:
    """``element 37 · pixel x 5 y 1 · captured pre 0.5 · …``: where the cursor is and the
    values there."""
    row = view.cursor
    if view.row_count == 0:
        return ""
    if view.hex_mode:
        return f"offset 0x{row * view.row_bytes:x}"
    parts = [f"element {row:,}"]
    if image is not None:
        w, h, d, texel = image
        t = row * view.itemsize // texel
        parts.append(f"pixel x {t % w} y {t // w % h}" + (f" z {t // (w * h)}" if d > 1 else ""))
    for which in ("pre", "post", "replayed"):
        if view.side(which) is not None:
            parts.append(f"{view.headings[which]} {view.value_text(which, row) or '—'}")
    return " · ".join(parts)


def _path(report: Report, device: str, enqueue: int, mem: str | None) -> Path | None:
    for res in report.get("devices", []):
        if res.get("device", {}).get("id") != device:
            continue
        for st in res.get("steps", []):
            if int(st["enqueue"]) != enqueue:
                continue
            for c in st.get("checks", []):
                if c.get("mem") == mem and (out := c.get("output")):
                    return Path(out)
    return None
