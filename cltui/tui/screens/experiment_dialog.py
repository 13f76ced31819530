"""``X`` (and ``E`` after the editor): the experiment dialog on the selected range: build
options to add and remove, defines, work sizes, the kernel they apply to, devices and runs;
*Try* runs an A/B, *Sweep* tries every value listed (commas separate values, ``x``
dimensions: ``16,32,64`` or ``8x8,16x16``; ``VWM=2,4``).

``ExperimentDialog`` is a ``ModalScreen[ExperimentRequest | None]``; :func:`parse_request`
is its pure part (a ``ValueError`` names the field).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label

from cltui.replay.experiment.sweep import SweepSpec
from cltui.replay.experiment.variant import (
    ProgramChange,
    SizeChange,
    Variant,
    parse_define,
    parse_size,
    parse_target,
)
from cltui.tui.screens.form_dialog import FormDialog

__all__ = ["ExperimentDialog", "ExperimentRequest", "parse_request"]

FIELDS = (
    ("kernel", "kernel (name or enqueue; empty: every kernel)"),
    ("options", "build options to add"),
    ("remove", "build options to remove"),
    ("defines", "defines K=V (space between, commas: values to sweep)"),
    ("local", "local size (16x16; commas: sizes to sweep)"),
    ("global", "global size"),
    ("devices", "devices (pocl, oclgrind, 1:0; empty: the capture's)"),
    ("repeat", "runs of each configuration"),
)


@dataclass(frozen=True)
class ExperimentRequest:
    """What the user asked: a variant (try) or a sweep, the devices and the runs."""

    sweep: bool
    variant: Variant
    spec: SweepSpec
    devices: list[str] = field(default_factory=list)
    repeat: int = 10


def parse_request(range_text: str, values: dict[str, str], sweep: bool,
                  program: ProgramChange | None) -> ExperimentRequest:  # fmt: skip
    """The dialog's fields -> a request; ``ValueError`` says which field is wrong."""
    kernel = values.get("kernel", "").strip() or None
    target = parse_target(kernel)
    defines: list[tuple[str, str]] = []
    for word in values.get("defines", "").split():
        try:
            defines.append(parse_define(word))
        except ValueError as exc:
            raise ValueError(f"defines: {exc}") from None
    try:
        locals_ = [parse_size(v) for v in values.get("local", "").split(",") if v.strip()]
        globals_ = [parse_size(v) for v in values.get("global", "").split(",") if v.strip()]
    except ValueError as exc:
        raise ValueError(f"sizes: {exc}") from None
    rep = values.get("repeat", "").strip() or "10"
    if not rep.isdigit() or int(rep) < 2:
        raise ValueError("runs: a whole number of at least 2")
    options = [o for o in values.get("options", "").split(",") if o.strip()]
    if not sweep and (len(locals_) > 1 or len(globals_) > 1 or len(options) > 1
                      or any("," in v for _k, v in defines)):  # fmt: skip
        raise ValueError("several values are listed: press Sweep to try each one")
    sizes: tuple[SizeChange, ...] = ()
    if locals_ or globals_:
        sizes = (SizeChange(target, globals_[0] if globals_ else None,
                            locals_[0] if locals_ else None),)  # fmt: skip
    variant = Variant(
        range_text, kernel=kernel, programs=(program,) if program else (),
        options_add=tuple(o.strip() for o in options),
        options_remove=tuple(o for o in values.get("remove", "").split(",") if o.strip()),
        defines=tuple(defines), sizes=sizes,
    )  # fmt: skip
    spec = SweepSpec(
        range_text, kernel=kernel, target=target, local=tuple(locals_), global_=tuple(globals_),
        options=tuple(o.strip() for o in options),
        defines=tuple((k, tuple(v.split(","))) for k, v in defines),
    )  # fmt: skip
    devices = [d for d in values.get("devices", "").replace(",", " ").split() if d]
    return ExperimentRequest(sweep, variant, spec, devices, int(rep))


class ExperimentDialog(FormDialog[ExperimentRequest]):
    """The changes and the runs of an experiment on ``first..last``."""

    ID_PREFIX = "exp"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "sweep", "Sweep"),
    ]

    def __init__(self, range_text: str, kernel: str | None = None,
                 program: ProgramChange | None = None) -> None:  # fmt: skip
        super().__init__()
        self.range_text = range_text
        self.kernel = kernel
        self.program = program
        self.sweep = False

    def compose(self) -> ComposeResult:
        with Vertical(id="exp-box", classes="action-box"):
            what = " with the edited source" if self.program is not None else ""
            yield Label(f"Experiment on {self.range_text}{what}", classes="action-title")
            for key, label in FIELDS:
                yield Label(label, classes="action-label")
                value = {"kernel": self.kernel or "", "repeat": "10"}.get(key, "")
                yield Input(value=value, id=f"exp-{key}", compact=True)
            yield Label("", id="exp-error", classes="action-error", markup=False)
            with Horizontal(classes="action-buttons"):
                yield Button("Try (A/B)", id="exp-go", variant="primary", compact=True)
                yield Button("Sweep", id="exp-sweep", compact=True)
                yield Button("Cancel", id="exp-cancel", compact=True)

    def values(self) -> dict[str, str]:
        return {key: self.query_one(f"#exp-{key}", Input).value for key, _l in FIELDS}

    def request(self) -> ExperimentRequest | None:
        try:
            return parse_request(self.range_text, self.values(), self.sweep, self.program)
        except ValueError as exc:
            self.query_one("#exp-error", Label).update(str(exc))
            return None

    def action_sweep(self) -> None:
        self.sweep = True
        self.action_accept()
        self.sweep = False

    @on(Button.Pressed, "#exp-sweep")
    def _sweep_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_sweep()
