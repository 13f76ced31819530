"""``cltui explain`` on one device: whether the enqueue's outputs are the same in every run
(a second run, and one with the work-items in reverse order: :mod:`.order`), and when they
are not, the race (:mod:`.race`, added by the engine).

The report has the shape of the two-device one (``docs/cli.schema.json``, ``explain``) with
one device (``devices.a``), no ``where``, and the verdict ``order-dependent`` or
``no-divergence``.
"""

from __future__ import annotations

from typing import Any

from cltui.analysis.explain.judge import order_cause, order_runs
from cltui.analysis.explain.run import Runs
from cltui.replay.experiment.worker import BASE_ID

__all__ = ["single_report"]


def single_report(runs: Runs, capture: str, enqueue: int) -> dict[str, Any]:
    """The report of one device's runs (see the module doc)."""
    dev = runs.devices[0]
    head = {"capture": capture, "enqueue": enqueue, "kernel": runs.kernel,
            "program": runs.program, "options": runs.options,
            "devices": {"a": {"id": dev["id"], "name": dev["name"]}}, "where": []}  # fmt: skip
    what = f"enqueue {enqueue} ({runs.kernel}) on {dev['name']}"
    first = runs.runs[BASE_ID].get(dev["id"])
    order, how = order_runs(runs)
    if runs.cancelled or first is None or first.error or order.get("a") is None:
        why_not = ("cancelled" if runs.cancelled else first.error if first and first.error
                   else "not run" if first is None else "the second runs did not run")
        return {**head, "verdict": {"status": "incomplete",
                                    "line": f"INCOMPLETE: {what}: not replayed ({why_not})"},
                "why": None}  # fmt: skip
    if not order["a"]:
        return {**head, "why": {"order": order, "order_runs": how},
                "verdict": {"status": "no-divergence", "line": f"NO DIVERGENCE between runs: "
                            f"{what}: a second run and a run in reverse work-item order give "
                            "bit-exact the same outputs"}}  # fmt: skip
    why = {"order": order, "order_runs": how, **order_cause(runs, order, how)}
    line = (f"ORDER DEPENDENT: {what}: the outputs differ between runs; cause: {why['text']}; "
            "within the OpenCL specification")
    return {**head, "why": why, "verdict": {"status": "order-dependent", "line": line}}
