"""A sweep in the app: the table grows as each configuration ends (status, the range's time
with its 95 % interval, the changes), a progress bar and *Cancel* (``escape``); at the end the
correct rows are ranked, the best variant marked and saved (``sweep-best``), and bars under
the table show the time per value of each dimension.

The sweep runs in a thread worker (:class:`cltui.replay.experiment.runs.SweepRun`, one child
per device); rows reach the screen through ``call_from_thread``.  ``task`` is what the worker
runs: it yields the rows; the caller builds it (plans, devices) so a test can give its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Button, DataTable, Footer, Label, ProgressBar, Static

from cltui.progress import CancelToken
from cltui.replay.experiment.sweep import Row
from cltui.replay.experiment.sweep_plot import bars_text
from cltui.text.escape import escape_controls
from cltui.text.units import fmt_ns

__all__ = ["SweepScreen", "SweepTask"]

# (cancel) -> (total rows expected, the rows as they end, the summary once they did)
SweepTask = Callable[[CancelToken], tuple[int, Iterator[Row], Callable[[list[Row], bool],
                                                                       dict[str, Any]]]]

_STYLE = {"pass": "green", "fail": "bold red", "error": "bold red", "refused": "yellow",
          "crash": "bold red", "hang": "bold red", "cancelled": "dim"}  # fmt: skip


class SweepScreen(Screen[None]):
    """One sweep; ``escape`` cancels a running sweep, then closes."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel_or_close", "Cancel/Close")]
    DEFAULT_CSS = """
    SweepScreen #sweep-progress-row { height: 1; }
    SweepScreen #sweep-status { width: 100%; height: auto; max-height: 3; }
    SweepScreen #sweep-table { height: 1fr; }
    SweepScreen #sweep-plot { height: auto; max-height: 12; display: none; }
    """

    def __init__(self, title: str, task: SweepTask) -> None:
        super().__init__()
        self.title_text = title
        self.task_fn = task
        self.cancel = CancelToken()
        self.rows: list[Row] = []
        self.total = 0
        self.running = True
        self.summary: dict[str, Any] | None = None
        self.error: str | None = None

    def compose(self) -> ComposeResult:
        yield Label(self.title_text, id="sweep-title", classes="action-title")
        with Horizontal(id="sweep-progress-row"):
            yield ProgressBar(total=None, show_eta=False, id="sweep-bar")
            yield Button("Cancel", id="sweep-cancel", compact=True)
        yield Label("starting…", id="sweep-status", markup=False)
        yield DataTable(id="sweep-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="sweep-plot", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#sweep-table", DataTable)
        self._cols = table.add_columns("#", "device", "status", "time", "95% interval",
                                       "configuration", "why")  # fmt: skip
        self._run()

    @work(thread=True, exclusive=True, group="sweep", exit_on_error=False)
    def _run(self) -> None:
        try:
            total, rows, summarize = self.task_fn(self.cancel)
            self.app.call_from_thread(self._started, total)
            for row in rows:
                self.app.call_from_thread(self._add, row)
            if not self.cancel.is_set():  # the fastest few run again beside the capture's
                self.app.call_from_thread(self._status, "re-measuring the fastest side by side "
                                          "with the capture's own configuration…")  # fmt: skip
            summary = summarize(self.rows, self.cancel.is_set())
        except Exception as exc:  # one line on the screen, no traceback
            self.app.call_from_thread(self._failed, f"{type(exc).__name__}: {exc}")
            return
        self.app.call_from_thread(self._finished, summary)

    def _started(self, total: int) -> None:
        self.total = total
        self.query_one("#sweep-bar", ProgressBar).update(total=max(total, 1), progress=0)

    def _add(self, row: Row) -> None:
        self.rows.append(row)
        t = row["time"]
        ok = row["status"] == "pass" and t["median"] is not None
        self.query_one("#sweep-table", DataTable).add_row(
            str(len(self.rows)), row["device"], Text(row["status"], style=_STYLE.get(
                row["status"], "")),
            fmt_ns(t["median"]) if ok else "",
            f"[{fmt_ns(t['lo'])}, {fmt_ns(t['hi'])}]" if ok else "",
            escape_controls(row["label"]), escape_controls(row["why"])[:80],
            key=f"{row['device']}/{row['id']}",
        )  # fmt: skip
        self.query_one("#sweep-bar", ProgressBar).update(progress=len(self.rows))
        self.query_one("#sweep-status", Label).update(f"{len(self.rows)} of {self.total} runs")

    def _finished(self, summary: dict[str, Any]) -> None:
        self.running = False
        self.summary = summary
        self.query_one("#sweep-status", Label).update(escape_controls(summary["verdict"]["line"]))
        self.query_one("#sweep-cancel", Button).label = "Close"
        bars = bars_text(summary, width=24)
        if bars:  # the time per value of each dimension, under the table
            plot = self.query_one("#sweep-plot", Static)
            plot.update("\n".join(escape_controls(line) for line in bars))
            plot.display = True
        table = self.query_one("#sweep-table", DataTable)
        for row_key in list(table.rows):  # "#" becomes the rank; "-" for the rows not ranked
            table.update_cell(row_key, self._cols[0], "-")
        for rank, row in enumerate(summary["ranking"], 1):
            key = f"{row['device']}/{row['id']}"
            best = row["id"] == summary.get("best_id")
            if key in table.rows:
                table.update_cell(key, self._cols[0], f"{rank} best" if best else str(rank),
                                  update_width=True)

    def _status(self, text: str) -> None:
        self.query_one("#sweep-status", Label).update(text)

    def _failed(self, error: str) -> None:
        self.running = False
        self.error = error
        self.query_one("#sweep-status", Label).update(f"sweep failed: {error}")
        self.query_one("#sweep-cancel", Button).label = "Close"

    def action_cancel_or_close(self) -> None:
        if self.running:
            self.cancel.cancel()
            self.query_one("#sweep-status", Label).update("cancelling…")
            return
        self.dismiss(None)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "sweep-cancel":
            event.stop()
            self.action_cancel_or_close()
