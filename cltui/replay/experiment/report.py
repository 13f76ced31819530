"""What an experiment found, as JSON-able dicts (pure: plans and the children's point events
in, reports out): each side's verdict (the replay's one rule, :func:`engine.verdict`), the
timing per step and for the range, and the verdict line that leads the output.

Correctness first: a variant whose checks fail is ``FAIL`` whatever its speed, and its
timing is shown only as information.  Timing is a result only beyond the device's noise
floor (:mod:`.noise`); the per-step rows are a family of tests, their intervals widened
(Bonferroni, :func:`stats.family_level`) so that together they keep 95 %.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict, cast

from cltui.replay.engine import verdict
from cltui.replay.engine.schema import Device, DeviceResult, Manifest, Verdict, VerdictCounts
from cltui.replay.experiment.noise import Floor
from cltui.replay.experiment.stats import Diff, family_level, paired

if TYPE_CHECKING:
    from cltui.replay.engine.schema import CheckResult

__all__ = [
    "AbDevice", "AbReport", "Side", "ab_report", "noise_text", "point_verdict", "range_times",
]  # fmt: skip


class Side(TypedDict):
    """One side (A: the capture's configuration, B: the variant) on one device."""

    verdict: Verdict
    refused: str | None
    result: DeviceResult


class StepDiff(TypedDict):
    enqueue: int
    kernel: str
    timing: Diff


class AbDevice(TypedDict):
    device: Device
    a: Side
    b: Side
    timing: Diff  # the range: the sum of its steps, repetition by repetition
    steps: list[StepDiff]
    noise: Floor | None  # the minimum effect the readings used (None: none, any change)


class AbReport(TypedDict):
    verdict: Verdict
    variant: dict[str, Any]
    range: str
    repeat: int
    devices: list[AbDevice]


def point_verdict(plan: Manifest, ev: dict[str, Any]) -> tuple[Verdict, DeviceResult]:
    """The verdict of one point's event (a refused point is an ``error`` that says why)."""
    res = cast(DeviceResult, ev.get("result") or {"ok": False, "error": None, "steps": []})
    if ev.get("refused"):
        res = cast(DeviceResult, {"ok": False, "error": f"refused: {ev['refused']}",
                                  "steps": [], "builds": {}, "notes": []})  # fmt: skip
        res["status"] = "error"
    elif "status" not in res:
        res["status"] = "error" if res.get("error") else ("ok" if res.get("ok") else "mismatch")
    return verdict(plan, res), res


def range_times(times: list[list[int]]) -> list[int]:
    """The range's device time per repetition: the sum over its steps."""
    if not times:
        return []
    n = min(len(t) for t in times)
    return [sum(t[r] for t in times) for r in range(n)]


def ab_device(base: Manifest, plan: Manifest, ev_a: dict[str, Any], ev_b: dict[str, Any],
              device: Device, noise: Floor | None = None) -> AbDevice:  # fmt: skip
    """One device's A/B: both verdicts, the range's and each step's timing difference
    (results only beyond ``noise``'s minimum effect; the steps' intervals Bonferroni-wide)."""
    va, ra = point_verdict(base, ev_a)
    vb, rb = point_verdict(plan, ev_b)
    ta, tb = ev_a.get("times") or [], ev_b.get("times") or []
    floor = noise["min_effect"] if noise else 0.0
    level = family_level(len(plan["steps"]))
    steps: list[StepDiff] = []
    for i, st in enumerate(plan["steps"]):
        a = ta[i] if i < len(ta) else []
        b = tb[i] if i < len(tb) else []
        steps.append({"enqueue": st["enqueue"], "kernel": st["kernel"],
                      "timing": paired(a, b, min_effect=floor, level=level)})  # fmt: skip
    return {
        "device": device,
        "a": {"verdict": va, "refused": ev_a.get("refused"), "result": ra},
        "b": {"verdict": vb, "refused": ev_b.get("refused"), "result": rb},
        "timing": paired(range_times(ta), range_times(tb), min_effect=floor),
        "steps": steps,
        "noise": noise,
    }


def diff_text(d: Diff) -> str:
    """``12.1% faster: -3.2 µs [-4.0, -2.5] (median of 30 paired runs, 95% interval)`` or
    ``within noise: +0.1 µs [-0.3, 0.5] (..., noise floor ±40 ns)``: no percentage beside
    a difference that is not a result."""
    from cltui.text.units import fmt_ns

    if d["reading"] == "too few runs":
        return f"too few runs for an interval ({d['n']} paired; --repeat at least 6)"
    if d["diff"] is None or d["lo"] is None or d["hi"] is None:
        return "no timing (repeat at least 2)"
    sign = "+" if d["diff"] >= 0 else "-"
    floor = d.get("min_effect") or 0.0
    noise = f", noise floor ±{fmt_ns(floor * d['a'])}" if floor and d["a"] else ""
    body = (f"{sign}{fmt_ns(abs(d['diff']))} [{_signed(d['lo'])}, {_signed(d['hi'])}] "
            f"(median of {d['n']} paired runs, {d.get('level', 0.95) * 100:.3g}% interval"
            f"{noise})")  # fmt: skip
    if d["reading"] in ("faster", "slower") and d["relative"] is not None:
        return f"{abs(d['relative']) * 100:.1f}% {d['reading']}: {body}"
    return f"{d['reading']}: {body}"


def noise_text(dev: AbDevice) -> str:
    """Where the readings' noise floor came from, and the steps' wider intervals."""
    floor = dev.get("noise")
    steps = len(dev["steps"])
    family = (f"; the {steps} step rows use {dev['steps'][0]['timing'].get('level', 0.95):.2%} "
              "intervals (Bonferroni: together 95 %)") if steps > 1 else ""  # fmt: skip
    if floor is None:
        return f"noise floor: none (no A/A calibration): any interval off zero is a result{family}"
    pct = f"{floor['min_effect'] * 100:.2f} % of A's time"
    if floor["source"] == "--min-effect":
        return f"noise floor: {pct} (--min-effect){family}"
    return (f"noise floor: {pct} (A/A calibration on this device, {floor['measured']}, range "
            f"{floor['range']}, {floor['repeat']} runs; kept in the cltui cache){family}")




def _signed(ns: float) -> str:
    from cltui.text.units import fmt_ns

    return ("-" if ns < 0 else "+") + fmt_ns(abs(ns))


def ab_verdict(devices: list[AbDevice]) -> Verdict:
    """The line that leads: the variant's verdict (worst over the devices), then its timing
    against A; a variant that fails its checks is FAIL whatever its speed."""
    from cltui.replay.engine import combine_verdicts

    if not devices:
        zero = cast(VerdictCounts, {})
        return {"status": "error", "line": "ERROR: no device ran", "counts": zero}
    vb = combine_verdicts([d["b"]["verdict"] for d in devices],
                          [d["device"]["id"] for d in devices])  # fmt: skip
    head = vb["line"]
    if vb["status"] == "pass":
        timing = "; ".join(f"{d['device']['id']}: {diff_text(d['timing'])}" if len(devices) > 1
                           else diff_text(d["timing"]) for d in devices)  # fmt: skip
        line = f"{head} | the variant against the capture's configuration: {timing}"
    else:
        why = {"incomplete": "the variant is not fully checked",
               "error": "the variant did not run"}.get(vb["status"],
                                                       "the variant does not pass its checks")
        line = f"{head} | {why} (its timing is not a result)"
    bad_a = [f"{d['device']['id']} ({d['a']['verdict']['status']})" for d in devices
             if d["a"]["verdict"]["status"] != "pass"]  # fmt: skip
    if bad_a:
        line += f" | note: the capture's own configuration does not pass on {', '.join(bad_a)}"
    return {"status": vb["status"], "line": line, "counts": vb["counts"]}


def ab_report(base: Manifest, plan: Manifest, events: list[dict[str, Any]],
              devices: list[Device], repeat: int,
              noise: dict[str, Floor] | None = None) -> AbReport:  # fmt: skip
    """The whole A/B report from the point events of every device (``noise``: each
    device's floor by device id)."""
    rows: list[AbDevice] = []
    for dev in devices:
        mine = {str(e["id"]): e for e in events if e.get("device") == dev["id"]}
        if "A" not in mine or "B" not in mine:
            continue
        rows.append(ab_device(base, plan, mine["A"], mine["B"], dev,
                               (noise or {}).get(dev["id"])))
    return {
        "verdict": ab_verdict(rows),
        "variant": plan.get("variant") or {"name": None, "changes": {}, "lines": []},
        "range": str(base["source"].get("range")),
        "repeat": repeat,
        "devices": rows,
    }


def paired_checks(
    dev: AbDevice,
) -> list[tuple[int, str, str, CheckResult | None, CheckResult | None]]:
    """(enqueue, kernel, argument, A's check, B's check) per checked argument, in the order A
    then B name them (a side that has no such check: ``None``); the CLI's and the app's rows."""
    cells: dict[tuple[int, str], list[CheckResult | None]] = {}  # [A's, B's]
    order: list[tuple[int, str, str]] = []
    for k, side in enumerate((dev["a"], dev["b"])):
        for ran in side["result"].get("steps", []):
            for c in ran["checks"]:
                key = (ran["enqueue"], c["label"])
                if key not in cells:
                    cells[key] = [None, None]
                    order.append((ran["enqueue"], ran["kernel"] or "?", c["label"]))
                cells[key][k] = c
    return [(e, kern, label, cells[(e, label)][0], cells[(e, label)][1])
            for e, kern, label in order]  # fmt: skip
