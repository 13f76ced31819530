"""``e`` on a selection: export the range as a standalone replay bundle.

``ExportDialog`` (``ModalScreen[ExportRequest | None]``) asks for the folder, the languages
(Python, C++), the mode (chain / isolated), whether to overwrite, whether to bundle pyopencl's
headers (from cltui's own pyopencl package) and the user's own header folders (``--include-dir``);
a folder the capture names is never read (:mod:`cltui.export.includes`).  It lists each header
it would copy with its host path, each include refused or missing and each captured folder not
read, updated as those two fields change; :func:`export_task` runs
:func:`cltui.export.export_range` under a :class:`ProgressScreen`, and :func:`export_message`
is the one-line result the app shows.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Checkbox, Input, Label, RadioSet

from cltui.progress import CancelToken
from cltui.text.escape import escape_controls
from cltui.tui.format import fmt_bytes
from cltui.tui.screens.form_dialog import FormDialog
from cltui.tui.screens.replay_progress import TaskControl, TaskFailed
from cltui.tui.widgets.tick_list import TickBox, TickRadio

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.capture.ranges import EnqueueRange
    from cltui.export import ExportResult
    from cltui.export.includes import RangePrograms

__all__ = ["EXPORT_MODES", "ExportDialog", "ExportRequest", "export_message", "export_task"]

EXPORT_MODES = ("chain", "isolated")


@dataclass(frozen=True)
class ExportRequest:
    outdir: Path
    langs: tuple[str, ...] = ("python", "cpp")
    mode: str = "chain"
    force: bool = False
    pyopencl_headers: bool = True  # bundle pyopencl's headers from its local package (listed)
    include_dirs: tuple[Path, ...] = ()  # the user's header folders (--include-dir)


def parse_include_dirs(text: str) -> list[Path]:
    """The folders of the dialog's field (``os.pathsep`` between them, ``~`` expanded)."""
    return [Path(p.strip()).expanduser() for p in text.split(os.pathsep) if p.strip()]


def default_folder(capture: Capture, rng: EnqueueRange) -> Path:
    """``./<capture>-<first>-<last>`` in the working directory (the name ``cltui export`` uses)."""
    from cltui.export import bundle_name

    return Path.cwd() / bundle_name(capture.path, rng)


class ExportDialog(FormDialog[ExportRequest]):
    """Folder, languages, mode, force; ``enter`` in the folder field or *Export* starts."""

    ID_PREFIX = "export"

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, capture: Capture, rng: EnqueueRange, folder: Path | None = None):
        super().__init__()
        self.capture = capture
        self.rng = rng
        self.folder = folder or default_folder(capture, rng)
        self._programs: RangePrograms | None = None  # the range's programs, read once

    def compose(self) -> ComposeResult:
        with Vertical(id="export-box", classes="action-box"):
            yield Label(f"Export enqueues {self.rng} as a replay bundle", classes="action-title")
            yield Label("Folder (created; must not exist unless overwrite is ticked)",
                        classes="action-label")
            yield Input(str(self.folder), id="export-folder", compact=True)
            with Horizontal(classes="action-row"):
                yield TickBox("Python (replay.py)", True, id="export-python", compact=True)
                yield TickBox("C++ (replay.cpp + CMake)", True, id="export-cpp", compact=True)
            yield Label("Mode", classes="action-label")
            with RadioSet(id="export-mode", compact=True):
                yield TickRadio("chain: carry state, reload at host-side changes", value=True,
                                  id="export-chain")
                yield TickRadio("isolated: every kernel from its own Pre dumps",
                                  id="export-isolated")
            yield TickBox("Overwrite an existing folder", False, id="export-force", compact=True)
            with Horizontal(classes="action-row"):
                yield TickBox("pyopencl's headers", True, id="export-pyopencl-headers",
                              compact=True)  # fmt: skip
                yield Label(" Your header folders: ", classes="export-inline-label")
                yield Input("", id="export-include-dirs", compact=True,
                            placeholder=f"optional, '{os.pathsep}' between")  # fmt: skip
            yield Label(self._host_files_text(True, []), id="export-host-files",
                        classes="action-label")  # fmt: skip
            yield Label("", id="export-error", classes="action-error")
            with Horizontal(classes="action-buttons"):
                yield Button("Export", variant="primary", id="export-go", compact=True)
                yield Button("Cancel", id="export-cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one("#export-folder", Input).focus()

    @on(Checkbox.Changed, "#export-pyopencl-headers")
    @on(Input.Changed, "#export-include-dirs")
    def _refresh_host_files(self) -> None:
        pyopencl = self.query_one("#export-pyopencl-headers", Checkbox).value
        dirs = parse_include_dirs(self.query_one("#export-include-dirs", Input).value)
        self.query_one("#export-host-files", Label).update(self._host_files_text(pyopencl, dirs))

    def _host_files_text(self, pyopencl: bool, dirs: list[Path]) -> str:
        """The headers the export would copy, refuse and lack (paths escaped)."""
        from cltui.export.includes import INCLUDE_DIR, preview_includes, range_programs

        lines = [f"Not a folder: {d}" for d in dirs if not d.is_dir()]
        try:
            if self._programs is None:
                self._programs = range_programs(self.capture, self.rng)
            good = [d.absolute() for d in dirs if d.is_dir()]
            pv = preview_includes(self._programs, good, pyopencl)
        except Exception as exc:  # a preview must not stop the dialog
            return escape_controls(f"Host headers: not listed ({type(exc).__name__})")
        origin = {INCLUDE_DIR: "your folder"}
        lines += [f"Header ({origin.get(o, o)}): {p}" for p, o in pv.copied[:8]]
        if len(pv.copied) > 8:
            lines.append(f"... and {len(pv.copied) - 8} more (listed in the bundle's manifest)")
        lines += [
            f"Refused: #include {r.include!r} -> {r.host_path} ({r.why}): "
            "the bundle may not build from source"
            for r in pv.refused[:4]
        ]
        lines += [
            f"Not read (the capture names it): {d}: add it to your header folders to bundle "
            "its headers"
            for d in list(pv.unread)[:4]
        ]
        if pv.missing:
            names = ", ".join(repr(m) for m in pv.missing[:6])
            lines.append(f"Not in the bundle: #include {names}: it may not build from source")
        if not pv.complete:
            lines.append("(first enqueues of a long range only: the summary lists them all)")
        return escape_controls("\n".join(lines) or "No host headers", keep_newlines=True)

    def show_error(self, text: str) -> None:
        self.query_one("#export-error", Label).update(text)

    def request(self) -> ExportRequest | None:
        text = self.query_one("#export-folder", Input).value.strip()
        if not text:
            self.show_error("Give a folder")
            return None
        outdir = Path(text).expanduser()
        if not outdir.is_absolute():
            outdir = Path.cwd() / outdir
        langs = tuple(
            lang for lang in ("python", "cpp")
            if self.query_one(f"#export-{lang}", Checkbox).value
        )
        if not langs:
            self.show_error("Tick at least one language")
            return None
        force = self.query_one("#export-force", Checkbox).value
        if outdir.exists() and not force:
            self.show_error(f"{outdir} exists: tick overwrite or choose another folder")
            return None
        if outdir.exists() and not outdir.is_dir():
            self.show_error(f"{outdir} is a file")
            return None
        if outdir.is_dir():  # overwrite replaces only a bundle or an empty folder
            from cltui.export.bundle import replace_refusal

            if (why := replace_refusal(outdir)) is not None:
                self.show_error(why)
                return None
        pressed = self.query_one("#export-mode", RadioSet).pressed_button
        mode = "isolated" if pressed is not None and pressed.id == "export-isolated" else "chain"
        host = self.query_one("#export-pyopencl-headers", Checkbox).value
        dirs = parse_include_dirs(self.query_one("#export-include-dirs", Input).value)
        for d in dirs:
            if not d.is_dir():
                self.show_error(f"{d}: not a folder (your header folders)")
                return None
        return ExportRequest(outdir, langs, mode, force, host, tuple(d.absolute() for d in dirs))


def export_task(
    capture: Capture, rng: EnqueueRange, request: ExportRequest
) -> Callable[[TaskControl], ExportResult]:
    """The export as a :class:`ProgressScreen` task (cancel removes what was written)."""

    def run(control: TaskControl) -> ExportResult:
        from cltui.export import ExportError, export_range

        cancel: CancelToken = control.cancel
        try:
            return export_range(
                capture,
                rng,
                request.outdir,
                list(request.langs),
                request.mode,
                request.force,
                progress=control.progress,
                cancel=cancel,
                pyopencl_headers=request.pyopencl_headers,
                include_dirs=request.include_dirs,
            )
        except ExportError as exc:
            raise TaskFailed(str(exc)) from None
        except OSError as exc:
            raise TaskFailed(f"cannot write {request.outdir}: {exc.strerror or exc}") from None

    return run


def export_message(result: ExportResult) -> str:
    """One line: what was written where."""
    n = result.steps
    text = (
        f"Exported {n} kernel enqueue{'s' if n != 1 else ''} ({result.mode}, "
        f"{', '.join(result.langs)}) to {result.outdir}: {result.files} files, "
        f"{result.data_files} distinct data contents ({fmt_bytes(result.data_bytes)})"
    )
    if result.host_files:
        paths = ", ".join(h.host_path for h in result.host_files[:3])
        more = f" and {len(result.host_files) - 3} more" if len(result.host_files) > 3 else ""
        text += f"; host headers copied: {paths}{more}"
    if result.refused_includes:
        text += (
            f"; {len(result.refused_includes)} include(s) refused: the bundle may not build "
            "from source"
        )
    if result.missing_includes:
        text += (
            f"; {len(result.missing_includes)} include(s) not in the bundle: it may not build "
            "from source"
        )
    if result.notes:
        text += f"; {len(result.notes)} note(s), see README.md"
    return escape_controls(text)
