"""The Timing tab: this enqueue's device-time stages and its kernel's distribution."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Sparkline, Static

from cltui.capture.model import Enqueue
from cltui.text.escape import escape_controls
from cltui.tui.format import fmt_ns

if TYPE_CHECKING:
    import numpy.typing as npt

    from cltui.capture.capture import Capture
    from cltui.capture.model import DeviceTime

__all__ = ["TimingView"]

BINS = 48


class TimingView(Vertical):
    """Queued->submit->start->end of the enqueue; histogram and run order of its kernel."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: tuple[int, int | None] | None = None
        self.summary = ""

    def compose(self) -> ComposeResult:
        yield Static("", id="timing-stages", markup=False)
        yield Static("", id="timing-hist-label", markup=False)
        yield Sparkline([], id="timing-hist")
        yield Static("", id="timing-seq-label", markup=False)
        yield Sparkline([], id="timing-seq")

    def show(self, cap: Capture, enq: Enqueue | None, arg: int | None) -> None:
        key = (id(cap), enq.number if enq else None)
        if key == self._shown:
            return
        self._shown = key
        stages = self.query_one("#timing-stages", Static)
        hist_label = self.query_one("#timing-hist-label", Static)
        seq_label = self.query_one("#timing-seq-label", Static)
        hist = self.query_one("#timing-hist", Sparkline)
        seq = self.query_one("#timing-seq", Sparkline)
        hist.data, seq.data = [], []
        hist_label.update("")
        seq_label.update("")
        if enq is None:
            stages.update("No enqueue")
            return
        t = enq.row.device_time
        text = _stages_text(enq)
        pos = cap.position_of(enq.number)
        kid = int(cap.kernel_ids[pos]) if pos is not None else -1
        if kid < 0:
            stages.update(text)
            self.summary = text.plain
            return
        mask = cap.kernel_ids == kid
        times = cap.device_times[mask, 2]
        times = times[times >= 0]
        name = escape_controls(cap.kernel_names[kid])
        if not len(times):
            text.append(f"\n{name}: no device times in the capture")
            stages.update(text)
            self.summary = text.plain
            return
        text.append(_kernel_times_text(name, times, t))
        stages.update(text)
        self.summary = text.plain
        self._charts(times, hist, hist_label, seq, seq_label)

    def _charts(
        self,
        times: npt.NDArray[np.int64],
        hist: Sparkline,
        hist_label: Static,
        seq: Sparkline,
        seq_label: Static,
    ) -> None:
        """The histogram of the kernel's start→end times and the times in capture order."""
        lo, hi = int(times.min()), int(times.max())
        if hi > lo:
            counts, _edges = np.histogram(times, bins=BINS, range=(lo, hi))
        else:
            counts = np.array([len(times)])
        hist.data = [float(c) for c in counts]
        hist_label.update(f"histogram of start→end: {fmt_ns(lo)} … {fmt_ns(hi)}")
        width = max(8, self.size.width or 80)
        step = max(1, -(-len(times) // width))
        usable = (len(times) // step) * step
        if usable:
            binned = times[:usable].reshape(-1, step).mean(axis=1)
        else:
            binned = times.astype(np.float64)
        seq.data = [float(v) for v in binned]
        seq_label.update(f"start→end in capture order ({len(times):,} enqueues, {step} per column)")


def _stages_text(enq: Enqueue) -> Text:
    """The enqueue's device time stages (or why there are none)."""
    t = enq.row.device_time
    text = Text()
    if t is None:
        text.append(f"enqueue {enq.number}: no Device Time line in the log")
        return text
    total = t.queued_to_submit + t.submit_to_start + t.start_to_end
    text.append(f"enqueue {enq.number} ", "bold")
    text.append(f"queued→submit {fmt_ns(t.queued_to_submit)} · ")
    text.append(f"submit→start {fmt_ns(t.submit_to_start)} · ")
    text.append(f"start→end {fmt_ns(t.start_to_end)}", "bold")
    text.append(f" · total {fmt_ns(total)}")
    return text


def _kernel_times_text(
    name: str, times: npt.NDArray[np.int64], t: DeviceTime | None
) -> str:
    """The statistics of every start→end time of the kernel, and where this one ranks."""
    p50, p95 = np.percentile(times, [50, 95])
    out = (
        f"\n{name} ×{len(times):,}: min {fmt_ns(int(times.min()))} · "
        f"median {fmt_ns(int(p50))} · mean {fmt_ns(int(times.mean()))} · "
        f"p95 {fmt_ns(int(p95))} · max {fmt_ns(int(times.max()))}"
    )
    if t is not None and t.start_to_end >= 0:
        rank = 100.0 * float(np.count_nonzero(times < t.start_to_end)) / len(times)
        out += f"\nthis one is slower than {rank:.0f}% of them"
    return out
