"""The terminal report of ``cltui latency`` (plain lines; the app's Latency view shows the
same lines): stage tables with block histograms, per kernel, outliers, the runners
against the floor, the delay ladder and the sensitivity line."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from cltui.latency.schema import DeviceLatency, LatencyReport, Sensitivity, StageSummary
from cltui.latency.stats import STAGE_SHORT, STAGE_TITLES, STAGES, Launch, blocks
from cltui.text.escape import escape_controls
from cltui.text.units import fmt_ns

HIST_WIDTH = 24


def _ns(v: float | None) -> str:
    return fmt_ns(v, "-") if v is None or v >= 0 else f"-{fmt_ns(-v)}"


def stage_table(summary: StageSummary) -> list[str]:
    """Per stage: count, p50, p90, p99, max and the histogram (min to max)."""
    lines = [f"  {'stage':<18} {'n':>6} {'p50':>9} {'p90':>9} {'p99':>9} {'max':>9}  histogram"]
    for stage in STAGES:
        d = summary["stages"].get(stage)
        title = STAGE_TITLES[stage]
        if d is None:
            lines.append(f"  {title:<18} {0:>6} {'-':>9} {'-':>9} {'-':>9} {'-':>9}")
            continue
        lines.append(
            f"  {title:<18} {d['count']:>6} {_ns(d['p50']):>9} {_ns(d['p90']):>9} "
            f"{_ns(d['p99']):>9} {_ns(d['max']):>9}  {blocks(d['hist'], HIST_WIDTH)} "
            f"{_ns(d['min'])}…{_ns(d['max'])}"
        )
    return lines


def kernel_table(summary: StageSummary) -> list[str]:
    """Per kernel: launches and the p50 of each stage."""
    heads = "".join(f" {STAGE_SHORT[s]:>12}" for s in STAGES)
    lines = [f"  {'kernel (p50)':<24} {'n':>5}{heads}"]
    for k in summary["kernels"]:
        cells = ""
        for s in STAGES:
            d = k["stages"].get(s)
            cells += f" {_ns(d['p50'] if d else None):>12}"
        name = escape_controls(k["kernel"])[:24]
        lines.append(f"  {name:<24} {k['launches']:>5}{cells}")
    return lines


def outlier_lines(summary: StageSummary) -> list[str]:
    if not summary["outliers"]:
        return ["  outliers: none (no value beyond Q3 + 3 IQR and twice the median)"]
    out = ["  outliers (beyond Q3 + 3 IQR and twice the median):"]
    for o in summary["outliers"]:
        rep = f", repetition {o['repetition']}" if o["repetition"] else ""
        out.append(
            f"    enqueue {o['enqueue']} {escape_controls(o['kernel'])}: "
            f"{STAGE_TITLES.get(o['stage'], o['stage'])} {_ns(o['ns'])} = "
            f"{o['times_median']:.1f}x its median {_ns(o['median_ns'])}{rep}"
        )
    return out


def summary_lines(title: str, summary: StageSummary | None) -> list[str]:
    if summary is None:
        return [f"== {title}: not measured"]
    return [f"== {title} ({summary['launches']} launches)", *stage_table(summary),
            *kernel_table(summary), *outlier_lines(summary)]  # fmt: skip


def runner_lines(res: DeviceLatency) -> list[str]:
    lines = [f"== host time per launch, three runners side by side on {res['device']['name']}",
             f"  {'runner':<24} {'per launch':>11} {'quartiles':>19} {'x floor':>8} "
             f"{'passes':>7}  what"]  # fmt: skip
    for r in res["runners"]:
        ratio = "-" if r["ratio_to_floor"] is None else f"{r['ratio_to_floor']:.2f}"
        sp = r.get("spread")
        quart = "-" if not sp else f"{_ns(sp[0])}..{_ns(sp[1])}"
        lines.append(f"  {r['runner']:<24} {_ns(r['host_ns_per_launch']):>11} {quart:>19} "
                     f"{ratio:>8} {r['passes']:>7}  {r['what']}")  # fmt: skip
    lines += [f"  warning: {w}" for w in res.get("warnings") or []]
    return lines


def _ci(ci: list[float] | None) -> str:
    return "" if ci is None else f" (95 % CI {ci[0]:.3f} to {ci[1]:.3f})"


def sensitivity_lines(s: Sensitivity | None, device: str) -> list[str]:
    if s is None:
        return [f"== sensitivity on {device}: not measured (needs the C++ runner)"]
    lines = [f"== sensitivity to a host delay per launch on {device}",
             f"  {'delay/launch':>12} {'injected':>10} {'passes':>7} {'wall (median)':>14}"]
    for p in s["ladder"]:
        lines.append(f"  {_ns(p['delay_ns']):>12} {_ns(p['injected_ns_per_launch']):>10} "
                     f"{p['passes']:>7} {_ns(p['wall_ns_median']):>14}")  # fmt: skip
    noise = s.get("noise_ns")
    if noise is not None:
        lines.append(f"  the wall's noise (one pass, paired by round): {_ns(noise)}")
    if s["slope"] is None:
        slope = "not measurable" if s["bound"] == "not measurable" else "-"
        lines.append(f"  slope (wall on injected time, whole ladder): {slope}")
    elif s.get("slope_wait") is None:
        lines.append(f"  slope (wall on injected time, whole ladder; Theil-Sen, clipped to 0..1): "
                     f"{s['slope']:.3f}{_ci(s['ci95'])} -> {s['bound']}")  # fmt: skip
    else:
        lines += [f"  slope (the device's wait for launches, at most the wall's; clipped to "
                  f"0..1): {s['slope']:.3f}{_ci(s['ci95'])} -> {s['bound']}",
                  f"    the wall on injected time: {s['slope_wall'] or 0.0:.3f}"
                  f"{_ci(s.get('ci95_wall'))}",
                  f"    the device's wait for launches (an event per launch): "
                  f"{s['slope_wait']:.3f}{_ci(s.get('ci95_wait'))}"]  # fmt: skip
    if s.get("contention"):
        lines += textwrap.wrap(str(s["contention"]), 98, initial_indent="  ",
                               subsequent_indent="    ")  # fmt: skip
    if s.get("flag"):
        lines.append(f"  flag: {s['flag']} (unclipped {s['slope_raw']:.3f}{_ci(s['ci95_raw'])})")
    if s["slope_small"] is not None:
        lines.append(f"  slope near 0 (delays ≤ {_ns(s['small_max_ns'])}): {s['slope_small']:.3f}"
                     f"{_ci(s['ci95_small'])}")  # fmt: skip
    elif s["slope"] is not None:
        lines.append(f"  slope near 0 (delays ≤ {_ns(s['small_max_ns'])}): not measurable "
                     "(they inject less per pass than the wall's noise)")  # fmt: skip
    lines.append(f"  {s['line']}")
    lines += [f"  warning: {w}" for w in s.get("warnings") or []
              if not w.startswith("slope near 0")]  # fmt: skip
    return lines


def incomplete_line(res: DeviceLatency, kernels: int) -> str | None:
    """``INCOMPLETE on DEVICE: ...`` when launches of the range cannot run there."""
    found = res.get("cannot_run") or []
    if not found:
        return None
    why: dict[int, str] = {}
    for f in found:
        why.setdefault(f["enqueue"], f"enqueue {f['enqueue']} {f['kernel']}: {f['reason']}")
    shown = "; ".join(list(why.values())[:3]) + (f"; {len(why) - 3} more" if len(why) > 3 else "")
    return (f"INCOMPLETE on {res['device'].get('name', '?')}: {len(why)} of {kernels} kernel "
            f"launches cannot run there, not launched and not in its figures ({shown})")


def report_lines(
    rep: LatencyReport,
    replays: Sequence[tuple[str, Sequence[Launch]]] = (),
    width: int = 100,
) -> list[str]:
    """The whole report: its head (what was measured, and what was not, first), one
    repetition of each replay drawn on a time axis (``replays``), then the figures."""
    ct = rep["capture_timing"]
    lines = [f"latency: {escape_controls(rep['capture'])} {rep['range']}: {rep['kernels']} "
             f"kernel launches, {rep['repeat']} repetitions per runner"]  # fmt: skip
    if rep.get("not_measured"):
        lines.append(f"INCOMPLETE: not measured: {rep['not_measured']}")
    lines += [x for res in rep["devices"] if (x := incomplete_line(res, rep["kernels"]))]
    for title, launches in replays:
        lines += timeline_lines(title, launches, width)
    lines += summary_lines("the capture (what the application saw)", ct)
    lines += [f"  note: {n}" for n in ct["notes"]]
    for res in rep["devices"]:
        name = str(res["device"].get("name", "?"))
        lines.append("")
        why = res["device_choice"]["why"]
        lines.append(f"device: {res['device'].get('id', '?')} {name} ({why})")
        if res["error"]:
            lines.append(f"  error: {res['error']}")
        if (gone := incomplete_line(res, rep["kernels"])) is not None:
            lines.append(f"  {gone}")
        lines += summary_lines(f"Python engine on {name}", res["engine"])
        lines += summary_lines(f"C++ runner on {name}", res["native"])
        lines += runner_lines(res)
        lines += sensitivity_lines(res["sensitivity"], name)
        lines += [f"  note: {n}" for n in res["notes"]]
    if rep["trace"]:
        lines.append(f"trace: {rep['trace']} (open in https://ui.perfetto.dev)")
    return [escape_controls(x) for x in lines]


LETTERS = "abcdefghijklmnopqrstuvwxyz"


def timeline_lines(title: str, launches: Sequence[Launch], width: int = 100) -> list[str]:
    """One repetition of a replay drawn on the terminal: a host row (``▄`` while an enqueue
    call runs) and a device row (each kernel's letter while it runs, ``·`` idle) on one time
    axis (the device clock put on the host's, as the trace does), and the letters' kernels."""
    from cltui.latency.trace import clock_offset

    rep = [ln for ln in launches if ln.rep == (launches[0].rep if launches else 0)]
    timed = [ln for ln in rep if ln.host_start is not None and ln.device_times is not None]
    if not timed:
        return [f"== timeline: {title}: no timestamps"]
    off = clock_offset(timed)
    spans: list[tuple[float, float, str]] = []  # (start, end, char) on the host clock
    host: list[tuple[float, float]] = []
    names = list(dict.fromkeys(ln.kernel for ln in timed))
    for ln in timed:
        assert ln.host_start is not None and ln.device_times is not None
        host.append((ln.host_start, ln.host_start + (ln.stages.get("host_enqueue") or 0.0)))
        letter = LETTERS[names.index(ln.kernel) % len(LETTERS)]
        spans.append((ln.device_times[2] - off, ln.device_times[3] - off, letter))
    t0 = min(min(a for a, _ in host), min(a for a, _, _ in spans))
    t1 = max(max(b for _, b in host), max(b for _, b, _ in spans))
    scale = max(t1 - t0, 1.0) / width
    host_row = [" "] * width
    dev_row = ["·"] * width
    for a, b in host:
        for c in range(int((a - t0) / scale), min(width, int((b - t0) / scale) + 1)):
            host_row[c] = "▄"
    for a, b, ch in spans:
        for c in range(int((a - t0) / scale), min(width, int((b - t0) / scale) + 1)):
            dev_row[c] = ch
    legend = ", ".join(f"{LETTERS[i % len(LETTERS)]} {escape_controls(n)}"
                       for i, n in enumerate(names))  # fmt: skip
    return [
        f"== timeline: {title}, repetition {timed[0].rep} ({_ns(t1 - t0)}; "
        f"1 column = {_ns(scale)})",
        f"  host   {''.join(host_row)}",
        f"  device {''.join(dev_row)}",
        f"  {legend}",
    ]
