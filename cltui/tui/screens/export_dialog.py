"""``e`` on a selection: export the range as a standalone replay bundle.

``ExportDialog`` (``ModalScreen[ExportRequest | None]``) asks for the folder, the languages
(Python, C++), the mode (chain / isolated), whether to overwrite and whether to copy the headers
the sources include from this machine (it lists each one with its host path, and each include
that would be refused); :func:`export_task` runs
:func:`cltui.export.export_range` under a :class:`ProgressScreen`, and :func:`export_message`
is the one-line result the app shows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Checkbox, Input, Label, RadioSet

from cltui.capture.display import escape_controls
from cltui.progress import CancelToken
from cltui.tui.format import fmt_bytes
from cltui.tui.screens.form_dialog import FormDialog
from cltui.tui.screens.replay_progress import TaskControl, TaskFailed
from cltui.tui.widgets.tick_list import TickBox, TickRadio

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.export import ExportResult

__all__ = ["EXPORT_MODES", "ExportDialog", "ExportRequest", "export_message", "export_task"]

EXPORT_MODES = ("chain", "isolated")


@dataclass(frozen=True)
class ExportRequest:
    outdir: Path
    langs: tuple[str, ...] = ("python", "cpp")
    mode: str = "chain"
    force: bool = False
    host_includes: bool = True  # copy included headers from this machine (listed)


def default_folder(capture: Capture, first: int, last: int) -> Path:
    """``./<capture>-<first>-<last>`` in the working directory (the name ``cltui export`` uses)."""
    from cltui.capture.ranges import EnqueueRange
    from cltui.export import bundle_name

    return Path.cwd() / bundle_name(capture.path, EnqueueRange(first, last))


class ExportDialog(FormDialog[ExportRequest]):
    """Folder, languages, mode, force; ``enter`` in the folder field or *Export* starts."""

    ID_PREFIX = "export"

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, capture: Capture, first: int, last: int, folder: Path | None = None):
        super().__init__()
        self.capture = capture
        self.first = first
        self.last = last
        self.folder = folder or default_folder(capture, first, last)

    def compose(self) -> ComposeResult:
        what = f"{self.first}" if self.first == self.last else f"{self.first}-{self.last}"
        with Vertical(id="export-box", classes="action-box"):
            yield Label(f"Export enqueues {what} as a replay bundle", classes="action-title")
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
            yield TickBox(
                "Copy the headers the sources include from this machine (listed below)",
                True,
                id="export-host-includes",
                compact=True,
            )
            yield Label(self._host_files_text(), id="export-host-files", classes="action-label")
            yield Label("", id="export-error", classes="action-error")
            with Horizontal(classes="action-buttons"):
                yield Button("Export", variant="primary", id="export-go", compact=True)
                yield Button("Cancel", id="export-cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one("#export-folder", Input).focus()

    def _host_files_text(self) -> str:
        """The host headers the export would copy and refuse (paths escaped)."""
        from cltui.capture.display import escape_controls
        from cltui.export.includes import preview_host_includes

        try:
            pv = preview_host_includes(self.capture, self.first, self.last)
        except Exception as exc:  # a preview must not stop the dialog
            return escape_controls(f"Host headers: not listed ({type(exc).__name__})")
        lines = [f"Host header: {p}" for p in pv.copied[:8]]
        if len(pv.copied) > 8:
            lines.append(f"... and {len(pv.copied) - 8} more (listed in the bundle's manifest)")
        lines += [
            f"Refused: #include {r.include!r} -> {r.host_path} ({r.why}): "
            "the bundle may not build from source"
            for r in pv.refused[:4]
        ]
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
        pressed = self.query_one("#export-mode", RadioSet).pressed_button
        mode = "isolated" if pressed is not None and pressed.id == "export-isolated" else "chain"
        host = self.query_one("#export-host-includes", Checkbox).value
        return ExportRequest(outdir, langs, mode, force, host)


def export_task(
    capture: Capture, first: int, last: int, request: ExportRequest
) -> Callable[[TaskControl], ExportResult]:
    """The export as a :class:`ProgressScreen` task (cancel removes what was written)."""

    def run(control: TaskControl) -> ExportResult:
        from cltui.capture.ranges import EnqueueRange
        from cltui.export import ExportError, export_range

        cancel: CancelToken = control.cancel
        try:
            return export_range(
                capture,
                EnqueueRange(first, last),
                request.outdir,
                list(request.langs),
                request.mode,
                request.force,
                progress=control.progress,
                cancel=cancel,
                host_includes=request.host_includes,
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
    if result.notes:
        text += f"; {len(result.notes)} note(s), see README.md"
    return escape_controls(text)
