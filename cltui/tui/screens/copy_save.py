"""``y`` copies and ``s`` saves what the screen shows (:mod:`cltui.tui.saving` does the work).

``y`` opens a small menu (:class:`ChoiceScreen`): the value or the row under the buffer's
cursor, the argument's value, the range, or the CLI command that shows, replays or exports it;
the text goes to the clipboard through the terminal (OSC 52: over SSH too).  ``s`` saves the
buffer as ``.npy``/``.csv``, the image as ``.png`` (browser) or the results table as
``.csv``/``.json`` (results screen), after a path dialog; a path inside the capture is refused,
an existing file is overwritten only after a yes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from cltui.text.escape import escape_controls
from cltui.tui.browse import arg_by_index
from cltui.tui.saving import (
    CopyChoice,
    SaveRefused,
    check_target,
    cli_commands,
    write_buffer_csv,
    write_json,
    write_npy,
    write_png,
    write_table_csv,
)
from cltui.tui.screens.prompt import PromptScreen
from cltui.tui.widgets.args_table import format_arg_value
from cltui.tui.widgets.buffer_view import BufferView
from cltui.tui.widgets.image_view import ImageView

if TYPE_CHECKING:
    from cltui.tui.screens.main import MainScreen
    from cltui.tui.screens.results import ReplayResultsScreen

__all__ = ["ChoiceScreen", "copy_choices", "save_file", "start_copy", "start_save"]

Writer = Callable[[Path], str]  # writes the file; says what it wrote


class ChoiceScreen(ModalScreen[str | None]):
    """A short menu: a choice's key or ``enter`` picks it, ``esc`` cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, choices: Sequence[CopyChoice]) -> None:
        super().__init__()
        self.title_text = title
        self.choices = list(choices)

    def compose(self) -> ComposeResult:
        with Vertical(id="choice-box"):
            yield Label(self.title_text, id="choice-title", markup=False)
            options = [
                Option(f"{c.key}  {c.label}: {_preview(c.text)}", id=c.key) for c in self.choices
            ]
            yield OptionList(*options, id="choice-list", markup=False)

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_key(self, event: Any) -> None:
        key = getattr(event, "character", None)
        if key and any(c.key == key for c in self.choices):
            event.stop()
            self.dismiss(key)

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


def _preview(text: str, width: int = 60) -> str:
    one = escape_controls(text.replace("\n", " ⏎ ").replace("\t", " · "))
    return one if len(one) <= width else one[: width - 1] + "…"


# ----------------------------------------------------------------------------------- copy
def copy_choices(screen: MainScreen) -> list[CopyChoice]:
    """What ``y`` offers on the browser, for what it shows now."""
    cap, rng = screen.capture, screen.enqueue_list.selected_range
    if cap is None or rng is None:
        return []
    out: list[CopyChoice] = []
    details = screen.details
    view = screen.query_one(BufferView)
    if details.active == "buffer" and view.ctype is not None and view.row_count and not (
        view.hex_mode
    ):
        i = view.cursor
        side = "post" if view.post is not None else "pre"
        out.append(CopyChoice("v", f"{side} value of element {i}", view.value_text(side, i)))
        row = [str(i), view.value_text("pre", i), view.value_text("post", i)]
        out.append(CopyChoice("l", f"element {i} (index, pre, post)", "\t".join(row)))
    arg = arg_by_index(details.enqueue, details.arg)
    if arg is not None and arg.value is not None:
        out.append(CopyChoice("a", f"value of argument {arg.index}", format_arg_value(arg)))
    out.append(CopyChoice("r", "enqueue range", str(rng)))
    cursor = screen.enqueue_list.cursor_pos  # the enqueue the details show
    shown = int(cap.numbers[cursor]) if cursor is not None else None
    out.extend(cli_commands(cap.path, rng, screen.last_devices, shown))
    return out


def start_copy(screen: MainScreen, key: str | None = None) -> None:
    """``y``: the menu, then the choice to the clipboard (``key`` picks one at once)."""
    choices = copy_choices(screen)
    if not choices:
        return

    def chosen(picked: str | None) -> None:
        choice = next((c for c in choices if c.key == picked), None)
        if choice is None:
            return
        screen.app.copy_to_clipboard(choice.text)
        screen.notify(f"Copied {choice.label}: {_preview(choice.text)}", timeout=4, markup=False)

    if key is not None:
        chosen(key)
        return
    screen.app.push_screen(ChoiceScreen("Copy (key or enter; esc cancels)", choices), chosen)


# ----------------------------------------------------------------------------------- save
def save_file(screen: Screen[Any], capture: Path, default: str, writer: Writer) -> None:
    """The path dialog, the refusal inside the capture, the overwrite question, the write
    (in a thread) and a notice of what was written."""

    def write(path: Path) -> None:
        def run() -> None:
            try:
                said = writer(path)
            except (OSError, ValueError) as exc:
                screen.app.call_from_thread(
                    screen.notify, f"Cannot write {path}: {exc}", severity="error", markup=False
                )
                return
            screen.app.call_from_thread(screen.notify, f"Saved {said} to {path}", timeout=8,
                                        markup=False)

        screen.run_worker(run, thread=True, group="save", exit_on_error=False)

    def answered(text: str | None) -> None:
        if text is None:
            return
        try:
            path = check_target(text, capture)
        except SaveRefused as exc:
            screen.notify(str(exc), severity="error", timeout=10, markup=False)
            return
        if not path.exists():
            write(path)
            return
        ask = [CopyChoice("y", "yes, overwrite", str(path)), CopyChoice("n", "no", "keep it")]
        screen.app.push_screen(
            ChoiceScreen(f"{path.name} exists: overwrite it?", ask),
            lambda yes: write(path) if yes == "y" else None,
        )

    hint = "a file outside the capture (.npy .csv .png .json by what is saved); esc cancels"
    screen.app.push_screen(PromptScreen("Save to", hint, default, "path"), answered)


def _side_keys(sides: set[str], letter: str) -> list[tuple[str, str]]:
    """The save menus' one rule for the sides (``"pre"``, ``"post"``): the lowercase key comes
    first (``enter`` saves it) and saves Post, or Pre where there is no Post; the uppercase key
    saves Pre next to a Post."""
    if "post" not in sides:
        return [(letter, "pre")] if "pre" in sides else []
    return [(letter, "post")] + ([(letter.upper(), "pre")] if "pre" in sides else [])


def start_save(screen: MainScreen) -> None:
    """``s`` on the browser: the visible Buffer or Image tab."""
    cap = screen.capture
    enq = screen.details.enqueue
    if cap is None or enq is None:
        return
    active = screen.details.active
    arg = arg_by_index(enq, screen.details.arg)
    stem = f"enqueue{enq.number}" + (f"_arg{arg.index}" if arg is not None else "")
    if active == "buffer":
        view = screen.query_one(BufferView)
        ctype = view.ctype
        if ctype is None or (view.pre is None and view.post is None):
            screen.notify("No buffer data to save here", severity="warning")
            return
        pre, post = view.pre, view.post
        data = {"pre": pre, "post": post}
        sides = _side_keys({k for k, d in data.items() if d is not None}, "n")
        choices = [CopyChoice(k, f"{side} as .npy ({ctype.name})", f"{stem}_{side}.npy")
                   for k, side in sides]  # fmt: skip
        choices.append(CopyChoice("c", f"pre and post as .csv ({ctype.name})", f"{stem}.csv"))

        def npy(data: Any, region: tuple[int, int, int] | None) -> Writer:
            shape = f" ({region[0]}×{region[1]}{f'×{region[2]}' if region[2] > 1 else ''})" \
                if region else ""
            return lambda p: f"{write_npy(p, data, ctype, region):,} × {ctype.name}{shape}"

        def region_of(side: str) -> tuple[int, int, int] | None:  # an image argument's size
            dump = None if arg is None else (arg.pre if side == "pre" else arg.post)
            return dump.image_region if dump is not None else None

        writers: dict[str, Writer] = {k: npy(data[side], region_of(side)) for k, side in sides}
        writers["c"] = lambda p: f"{write_buffer_csv(p, pre, post, ctype):,} rows of {ctype.name}"
    elif active == "image":
        images = dict(screen.query_one(ImageView).images)
        if not images:
            screen.notify("No image to save here", severity="warning")
            return
        sides = _side_keys(set(images), "p")
        choices = [CopyChoice(k, f"{side} as .png", f"{stem}_{side}.png") for k, side in sides]

        def png(rgb: Any) -> Writer:
            def write(p: Path) -> str:
                write_png(p, rgb)
                return f"a {rgb.shape[1]}×{rgb.shape[0]} PNG"

            return write

        writers = {k: png(images[side]) for k, side in sides}
    else:
        screen.notify("s saves the Buffer or Image tab (3, 4)", severity="warning")
        return

    def chosen(key: str | None) -> None:
        choice = next((c for c in choices if c.key == key), None)
        if choice is not None:
            save_file(screen, cap.path, choice.text, writers[choice.key])

    screen.app.push_screen(ChoiceScreen("Save (key or enter; esc cancels)", choices), chosen)


def save_results(screen: ReplayResultsScreen) -> None:
    """``s`` on the results screen: the table as ``.csv``, or the whole report as ``.json``
    (by the extension given)."""
    from cltui.tui.result_rows import COLUMNS

    outcome = screen.outcome
    default = f"replay_{outcome.range_text}.csv"

    def writer(path: Path) -> str:
        if path.suffix.lower() == ".json":
            write_json(path, {"range": outcome.range_text, "report": outcome.report})
            return "the report"
        rows = [[getattr(c, "plain", c) for c in r.cells()] for r in screen.rows]
        n = write_table_csv(path, COLUMNS, rows)
        return f"{n} rows"

    save_file(screen, screen.capture.path, default, writer)
