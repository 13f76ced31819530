"""``r`` on a selection: pick devices (several allowed), mode, tolerances and repetitions.

``ReplayDialog`` is a ``ModalScreen[ReplayRequest | None]``.  The OpenCL devices are listed in a
thread (``cltui.replay.devices.list_devices`` loads the ICDs); the device the capture ran on is
ticked when it is present.  Then, in the background, the engine's feasibility pre-flight
(:mod:`cltui.replay.feasibility`: a child process per device, as a replay) marks each device
that cannot run the range; the line under the list says why for the highlighted one.

The *hosts* field names an inventory: ``enter`` in it, leaving it or ``ctrl+l`` lists its hosts'
devices in a worker (:mod:`cltui.tui.screens.replay_hosts`) after the local ones.  One run is
local (the ticked local devices) or a fleet run (exactly the ticked remote devices per host),
not both: ticking both says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, RadioSet, SelectionList
from textual.widgets.selection_list import Selection
from textual.worker import get_current_worker

from cltui.capture.devinfo import DeviceIdentity
from cltui.replay.engine.schema import Device, Feasibility
from cltui.tui.capture_state import REPLAY_FIELDS, ReplaySettings
from cltui.tui.screens import replay_hosts as rh
from cltui.tui.screens.form_dialog import FormDialog
from cltui.tui.screens.replay_request import (
    DEFAULT_TIMEOUT,
    MODE_HELP,
    MODES,
    ReplayRequest,
    feasibility_line,
    parse_arg_tolerances,
    parse_replay_fields,
)
from cltui.tui.widgets.tick_list import TickList, TickRadio

if TYPE_CHECKING:
    from cltui.capture.capture import Capture
    from cltui.capture.ranges import EnqueueRange
    from cltui.fleet.discover import HostDevices
    from cltui.replay.plan import Plan

__all__ = ["CANNOT_MARK", "ReplayDialog"]

CANNOT_MARK = "  ✗ cannot run"


class ReplayDialog(FormDialog[ReplayRequest]):
    """Devices (space ticks), mode, tolerances; ``enter`` in a field or *Replay* starts."""

    ID_PREFIX = "replay"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+r", "accept", "Replay", show=False),
        Binding("ctrl+l", "load_hosts", "Load hosts", show=False),
    ]

    def __init__(
        self, capture: Capture, rng: EnqueueRange, remembered: ReplaySettings | None = None
    ) -> None:
        super().__init__()
        self.remembered = remembered  # the last replay's settings on this capture
        self.settings: ReplaySettings = {}  # what was accepted, to remember
        self.capture = capture
        self.rng = rng
        self.plan: Plan | None = None  # the pre-flight's plan: the replay's too, in its mode
        self.devices: list[Device] = []
        self.device_choice: dict[str, str] = {}  # the default tick's rule and why
        self.listing = True
        self.start_when_listed = False  # start was asked for while the devices were listed
        self.feasible: dict[str, Feasibility] | None = None  # device id -> its pre-flight
        self.remote: list[HostDevices] = []  # the hosts field's hosts and their devices
        self.hosts_for: str | None = None  # the inventory listed (or being listed)
        self.discovering = False
        self._remote_rows = 0  # remote rows at the end of the list
        self._default_ticked: list[str] = []  # what the rule ticked (the "ticked:" line's why)
        self._shown_ticked: list[str] = []  # the ticks the "ticked:" line describes

    def compose(self) -> ComposeResult:
        with Vertical(id="replay-box", classes="action-box"):
            yield Label(f"Replay enqueues {self.rng}", id="replay-title", classes="action-title")
            yield Label("Devices (space ticks, several allowed; ctrl+r or enter in a field starts)",
                        classes="action-label")
            yield TickList[str](id="replay-devices", compact=True)
            yield Label("", id="replay-device-why", classes="action-hint")
            yield Label("", id="replay-feasible", classes="action-hint")
            yield Label("Mode", classes="action-label")
            with RadioSet(id="replay-mode", compact=True):
                for i, mode in enumerate(MODES):
                    yield TickRadio(f"{mode}: {MODE_HELP[mode]}", value=i == 0, id=f"mode-{mode}")
            rows = (
                (("atol", "atol", ""), ("rtol", "rtol", ""), ("ULP", "ulp", "")),
                (("repeat", "repeat", "1"), ("timeout s", "timeout", f"{DEFAULT_TIMEOUT:g}")),
                (("per argument", "argtol", ""),),
                (("hosts", "hosts", ""),),
            )
            for row in rows:
                with Horizontal(classes="action-row"):
                    for label, name, value in row:
                        yield Label(label, classes="field-label")
                        hint = {"argtol": "e.g. 0:ulp=2; 3:atol=1e-6",
                                "hosts": "an inventory: enter or ctrl+l lists its devices"}.get(
                            name, "0")
                        yield Input(value, placeholder=hint, id=f"replay-{name}",
                                    classes="field-input", compact=True)
            yield Label("", id="replay-error", classes="action-error")
            with Horizontal(classes="action-buttons"):
                yield Button("Replay", variant="primary", id="replay-go", disabled=True,
                             compact=True)
                yield Button("Cancel", id="replay-cancel", compact=True)

    def on_mount(self) -> None:
        lst = self.query_one("#replay-devices", SelectionList)
        lst.add_option(Selection("listing OpenCL devices…", "", disabled=True))
        lst.focus()
        last = self.remembered or {}
        for name, text in last.get("fields", {}).items():
            self.query_one(f"#replay-{name}", Input).value = text
        if last.get("mode") in MODES:
            self.query_one(f"#mode-{last['mode']}", TickRadio).value = True
        self._list_devices()

    @work(thread=True, exclusive=True, group="replay-devices", exit_on_error=False)
    def _list_devices(self) -> None:
        from cltui.replay.devices import DeviceError, list_devices

        error: str | None = None
        devices: list[Device] = []
        captured: list[DeviceIdentity] = []
        try:
            devices = list_devices()
        except DeviceError as exc:
            error = str(exc)
        except Exception as exc:  # an ICD that fails to load must not reach the user raw
            error = f"cannot list OpenCL devices: {type(exc).__name__}: {exc}"
        if not error:
            captured = self._captured_device()
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._devices_listed, devices, captured, error)

    def _captured_device(self) -> list[DeviceIdentity]:
        """The capture's device for the range (:func:`cltui.replay.devices.capture_devices`,
        the rule's input everywhere); [] when the capture does not say."""
        from cltui.replay.devices import capture_devices

        try:
            return capture_devices(self.capture, self.rng.first, self.rng.last, self.rng.kernel)
        except Exception:  # only a default; the user picks anyway
            return []

    def _devices_listed(
        self, devices: list[Device], captured: list[DeviceIdentity], error: str | None
    ) -> None:
        self.listing = False
        self.devices = devices
        lst = self.query_one("#replay-devices", SelectionList)
        remote_ticked = [v for v in lst.selected if rh.split_remote(v) is not None]
        lst.clear_options()
        self._remote_rows = 0
        if error or not devices:
            self.start_when_listed = False
            self.show_error(error or "No OpenCL device found")
            self._show_remote(remote_ticked)
            return
        from cltui.replay.devices import default_device

        default, choice = default_device(devices, captured)
        ticked = {default["id"]} if default is not None else set()
        used = [(d.get("name"), d.get("platform")) for d in (self.remembered or {}).get(
            "devices", []) if "host" not in d]
        again = {d["id"] for d in devices if (d["name"], d["platform"]) in used}
        if again:  # the devices of the last replay of this capture, where they are still here
            ticked = again
            choice = {"rule": "remembered",
                      "why": "the devices of the last replay of this capture"}
        marks = {
            "captured": "  (captured here)",
            "most-alike": "  (similar to captured)",
            "real-before-simulator": "  (first real device)",
        }
        self.device_choice = choice
        self.query_one("#replay-device-why", Label).update(
            Text(f"ticked: {choice['why']}")
        )
        for d in devices:
            is_default = default is not None and d["id"] == default["id"]
            mark = marks.get(choice["rule"], "") if is_default else ""
            # the mark before the platform: a long line is cut at its end
            prompt = f"{d['id']}  {d['name']}{mark} · {d['platform']}"
            lst.add_option(Selection(prompt, str(d["id"]), d["id"] in ticked
                                     and not remote_ticked))
        # the highlight on the first ticked device: space there unticks what is ticked
        lst.highlighted = next((i for i, d in enumerate(devices) if d["id"] in lst.selected), 0)
        self.query_one("#replay-go", Button).disabled = False
        self._show_remote(remote_ticked)
        self._default_ticked = self._shown_ticked = self._ticked()
        self._show_feasible()
        self._check_feasible(list(devices), self.mode)
        if self.start_when_listed:  # asked for during the listing: the ticks are the rule's
            self.start_when_listed = False
            self.show_error("")
            self.action_accept()

    # ------------------------------------------------------------------ the hosts' devices
    def action_load_hosts(self) -> None:
        """List the devices of the hosts field's inventory (a worker: over ssh)."""
        path = self.query_one("#replay-hosts", Input).value.strip()
        self.hosts_for = path
        if not path:
            self.remote = []
            self._show_remote([])
            return
        self.discovering = True
        self.query_one("#replay-device-why", Label).update(
            Text(f"listing the devices of the hosts of {path}…"))
        self._discover(path)

    @on(Input.Blurred, "#replay-hosts")
    def _hosts_left(self, _event: Input.Blurred) -> None:
        if self.query_one("#replay-hosts", Input).value.strip() != (self.hosts_for or ""):
            self.action_load_hosts()

    @work(thread=True, exclusive=True, group="replay-hosts", exit_on_error=False)
    def _discover(self, path: str) -> None:
        from pathlib import Path

        from cltui.errors import CltuiError
        from cltui.fleet.discover import discover_devices
        from cltui.fleet.inventory import read_inventory
        from cltui.tui.workers import worker_token

        worker = get_current_worker()
        found: list[HostDevices] = []
        error = ""
        try:
            hosts = read_inventory(Path(path).expanduser())
            found = discover_devices(hosts, timeout=30.0, cancel=worker_token(worker))
        except CltuiError as exc:
            error = str(exc)
        except Exception as exc:  # no traceback reaches the user
            error = f"cannot list the hosts' devices: {type(exc).__name__}: {exc}"
        if not worker.is_cancelled:
            self.app.call_from_thread(self._hosts_found, path, found, error)

    def _hosts_found(self, path: str, found: list[HostDevices], error: str) -> None:
        if path != self.hosts_for:  # the field changed meanwhile: its own listing follows
            return
        self.discovering = False
        self.remote = found
        self.show_error(error)
        lst = self.query_one("#replay-devices", SelectionList)
        self._show_remote(None)
        if rh.ticked_by_host(lst.selected):  # loaded to run there: the local ticks go
            for v in [v for v in lst.selected if rh.split_remote(v) is None]:
                lst.deselect(v)
        self._shown_ticked = self._ticked()
        ok = sum(1 for hd in found if hd.status == "ok")
        self.query_one("#replay-device-why", Label).update(Text(
            f"hosts: {ok} of {len(found)} answered; tick local or remote devices, not both"
            if found else ""))

    def _show_remote(self, ticked: list[str] | None) -> None:
        """The remote rows again at the end of the list: ticked as ``ticked`` says, or
        (None) by default / as remembered."""
        lst = self.query_one("#replay-devices", SelectionList)
        for _ in range(self._remote_rows):
            lst.remove_option_at_index(lst.option_count - 1)
        remembered = (self.remembered or {}).get("devices", [])
        rows = rh.remote_rows(self.remote, remembered)
        for row in rows:
            tick = row.ticked if ticked is None else row.value in ticked
            lst.add_option(Selection(row.prompt, row.value, tick, disabled=row.disabled))
        self._remote_rows = len(rows)

    # ------------------------------------------------------------------ will it run there?
    @work(thread=True, exclusive=True, group="replay-feasible", exit_on_error=False)
    def _check_feasible(self, devices: list[Device], mode: str) -> None:
        """The pre-flight of the range on every device (a child process each: it builds
        the programs), then the marks.  Its plan (``mode``'s) is kept for the replay."""
        from cltui.replay import feasibility
        from cltui.replay.plan import PlanError, build_plan
        from cltui.tui.workers import worker_token

        worker = get_current_worker()
        try:
            self.plan = plan = build_plan(self.capture, self.rng, mode)
            found = feasibility.check(plan.to_manifest(), devices, plan.capture_path,
                                      cancel=worker_token(worker))  # fmt: skip
        except PlanError as exc:  # the replay itself says so again
            why = f"not checked: {exc}"
        except Exception as exc:  # only a hint: the dialog goes on without it
            why = f"not checked: {type(exc).__name__}: {exc}"
        else:
            if not worker.is_cancelled:
                self.app.call_from_thread(self._feasible_found, found)
            return
        if not worker.is_cancelled:
            self.app.call_from_thread(self._feasible_unknown, why)

    def _feasible_unknown(self, why: str) -> None:
        self.feasible = {}
        self.query_one("#replay-feasible", Label).update(Text(why))

    def _feasible_found(self, found: list[Feasibility]) -> None:
        self.feasible = {r["device"]["id"]: r for r in found}
        lst = self.query_one("#replay-devices", SelectionList)
        for i in range(lst.option_count):
            option = lst.get_option_at_index(i)
            res = self.feasible.get(str(option.value))
            if res is not None and res["status"] != "ok":
                marked = str(option.prompt).replace(" · ", CANNOT_MARK + " · ", 1)
                lst.replace_option_prompt_at_index(i, Text(marked))
        self._show_feasible()

    def _show_feasible(self) -> None:
        """The line under the list: the highlighted device's pre-flight."""
        lst = self.query_one("#replay-devices", SelectionList)
        i = lst.highlighted
        if i is not None and i < lst.option_count and (
                hit := rh.split_remote(str(lst.get_option_at_index(i).value))) is not None:
            self.query_one("#replay-feasible", Label).update(Text(
                f"{hit[0]}: the pre-flight runs on the host when the range runs there"))
            return
        if i is None or not self.devices or i >= len(self.devices):
            return
        if self.feasible == {}:  # the check could not run: its line stays
            return
        res = None if self.feasible is None else self.feasible.get(self.devices[i]["id"])
        self.query_one("#replay-feasible", Label).update(Text(feasibility_line(res)))

    def on_selection_list_selection_highlighted(
        self, _event: SelectionList.SelectionHighlighted[str]
    ) -> None:
        self._show_feasible()

    def on_selection_list_selected_changed(
        self, _event: SelectionList.SelectedChanged[str]
    ) -> None:
        """The user ticked or unticked: the "ticked:" line says what is ticked now."""
        if self.listing or not self.device_choice:
            return
        ticked = self._ticked()
        if ticked == self._shown_ticked:  # the dialog's own (un)ticking: its line stays
            return
        self._shown_ticked = ticked
        shown = self.device_choice["why"] if ticked == self._default_ticked else (
            ", ".join(ticked) + " (by you)" if ticked else "nothing")
        self.query_one("#replay-device-why", Label).update(Text(f"ticked: {shown}"))

    def _ticked(self) -> list[str]:
        """The ticked devices as the "ticked:" line names them."""
        selected = self.query_one("#replay-devices", SelectionList).selected
        ticked = [f"{d['id']} {d['name']}" for d in self.devices if d["id"] in selected]
        return ticked + [v for v in selected if rh.split_remote(v) is not None]

    def plan_for(self, mode: str) -> Plan | None:
        """The plan the pre-flight built, if it is ``mode``'s (the replay's then)."""
        plan = self.plan
        return plan if plan is not None and plan.manifest["source"]["mode"] == mode else None

    def show_error(self, text: str) -> None:
        self.query_one("#replay-error", Label).update(text)

    # ------------------------------------------------------------------ choose
    @property
    def mode(self) -> str:
        pressed = self.query_one("#replay-mode", RadioSet).pressed_button
        if pressed is None or pressed.id is None:
            return MODES[0]
        return pressed.id.removeprefix("mode-")

    def select_devices(self, ids: list[str]) -> None:
        """Tick exactly ``ids`` (tests and scripts)."""
        lst = self.query_one("#replay-devices", SelectionList)
        lst.deselect_all()
        for i in ids:
            lst.select(i)

    def request(self) -> ReplayRequest | None:
        """The request the fields describe, or ``None`` after showing what is wrong."""
        if self.listing:
            self.start_when_listed = True
            self.show_error("Still listing the devices… the replay starts on the ticked ones "
                            "once they are listed (escape cancels)")
            return None
        selected = self.query_one("#replay-devices", SelectionList).selected
        chosen = set(selected)
        devices = [d for d in self.devices if d["id"] in chosen]
        inventory = self.query_one("#replay-hosts", Input).value.strip()
        if inventory != (self.hosts_for or ""):
            self.action_load_hosts()
        if self.discovering:
            self.show_error("Listing the hosts' devices… tick them, then start again")
            return None
        hosts = rh.ticked_by_host(selected)
        if devices and hosts:
            self.show_error("Tick local or remote devices, not both: one run is a local "
                            "replay or a run on the hosts")
            return None
        if not devices and not hosts:
            self.show_error("Tick at least one device (space)")
            return None
        try:
            tol, repeat, timeout = parse_replay_fields(
                *(
                    self.query_one(f"#replay-{name}", Input).value
                    for name in ("atol", "rtol", "ulp", "repeat", "timeout")
                )
            )
            per_arg = parse_arg_tolerances(self.query_one("#replay-argtol", Input).value)
        except ValueError as exc:
            self.show_error(str(exc))
            return None
        self.settings = {
            "devices": [{"name": str(d["name"]), "platform": str(d["platform"])}
                        for d in devices] + rh.remote_settings(self.remote, hosts),
            "mode": self.mode,
            "fields": {name: self.query_one(f"#replay-{name}", Input).value
                       for name in REPLAY_FIELDS},
        }
        return ReplayRequest(devices, self.mode, tol, repeat, timeout, per_arg, inventory,
                             hosts)
