"""``cltui fleet``'s text matrix fits the terminal: as wide as ``$COLUMNS`` (80 for a pipe),
the device columns paged when they do not fit, the rows that differ anywhere first; a fault
is its own word in its cell, an output downstream of an enqueue that could not run is no
DIFF.  (Pure: a report made here, printed.)"""

from __future__ import annotations

from typing import Any

import pytest

from cltui.commands.fleet_text import pages, print_fleet
from cltui.fleet.matrix import cell_text


def _report(ncols: int) -> dict[str, Any]:
    cols = [{"id": f"host-number-{i}:0:0", "host": f"host-number-{i}", "runner": "python",
             "device": {"id": "0:0", "name": "pthread-skylake-avx512", "platform":
                        "Portable Computing Language", "driver": "6.0"},
             "status": "ok", "fault": None, "error": None, "failed_enqueue": None,
             "first_divergent": None, "verdict": {"line": "PASS: fine"}} for i in range(ncols)]
    rows = []
    for enq in range(6):
        cells = [{"column": c["id"], "status": "equal", "max_ulp": 0.0, "summary": ""}
                 for c in cols]
        if enq == 4:
            cells[-1] = {"column": cols[-1]["id"], "status": "different", "max_ulp": 3.0,
                         "summary": "1 of 4 elements differ"}
        rows.append({"enqueue": enq, "kernel": "k", "mem": f"m{enq}", "label": f"arg {enq}",
                     "args": [0], "cells": cells})
    return {"verdict": {"line": "FAIL: one differs"}, "columns": cols, "rows": rows,
            "cross": [], "hosts": []}


def test_a_wide_fleet_is_paged_to_the_terminal_and_differing_rows_come_first(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    rep = _report(9)
    print_fleet(rep)
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(len(ln) for ln in lines) <= 100, max(lines, key=len)
    for c in rep["columns"]:  # every column shown, none cut
        assert c["id"] in out
    assert "page 1/" in out
    body = [ln for ln in lines if ln.startswith("│") and ln.split("│")[1].strip().isdigit()]
    assert body[0].split("│")[1].strip() == "4"  # the row that differs first


def test_pages_fit_and_never_leave_a_column_out() -> None:
    assert pages([30, 30, 30, 30], 70) == [range(0, 2), range(2, 4)]
    assert pages([90, 10], 50) == [range(0, 1), range(1, 2)]  # too wide alone: its own page
    assert pages([], 50) == []


def test_fault_and_downstream_cells_have_their_own_words() -> None:
    words = {s: cell_text({"status": s, "max_ulp": None}) for s in
             ("hang", "device-crash", "runner-crash", "connection-lost", "cannot-run",
              "downstream", "not-reached")}
    assert words == {"hang": "HANG", "device-crash": "CRASH", "runner-crash": "runner crash",
                     "connection-lost": "conn lost", "cannot-run": "cannot run",
                     "downstream": "(diff)", "not-reached": "-"}


def test_an_output_that_differs_only_downstream_of_a_cannot_run_is_no_divergence() -> None:
    from typing import cast

    from cltui.fleet.host import DeviceRun, HostOutcome
    from cltui.fleet.inventory import Host
    from cltui.fleet.matrix import build_matrix
    from cltui.replay.engine import verdict
    from cltui.replay.engine.schema import Device, DeviceResult, Manifest

    plan = cast(Manifest, {"steps": [
        {"enqueue": 0, "kernel": "k", "checks": [{"mem": "a", "args": [0]}]},
        {"enqueue": 1, "kernel": "k", "checks": [{"mem": "b", "args": [0]}]}]})
    result = cast(DeviceResult, {"status": "ok", "ok": False, "error": None,
                                 "failed_enqueue": None, "steps": [
        {"enqueue": 0, "status": "cannot-run", "checks": [
            {"mem": "a", "status": "unchecked", "summary": "cannot run: too big"}]},
        {"enqueue": 1, "status": "fail", "checks": [
            {"mem": "b", "status": "different", "after_cannot_run": 0, "summary": "2 differ",
             "result": {"max_ulp": 5.0}}]}]})  # fmt: skip
    result["verdict"] = verdict(plan, result)
    dev = cast(Device, {"id": "0:0", "name": "d", "platform": "p", "version": "v"})
    out = HostOutcome(Host(name="h", address="h"), "python", devices=[DeviceRun(dev, result)])
    rep = build_matrix(plan, [out], [], {})
    assert [r["cells"][0]["status"] for r in rep["rows"]] == ["cannot-run", "downstream"]
    assert "downstream of enqueue 0" in rep["rows"][1]["cells"][0]["summary"]
    assert rep["columns"][0]["first_divergent"] is None
    assert rep["verdict"]["status"] == "incomplete"
    # an enqueue that cannot run: exit 3, as `cltui fleet --help` says
    from cltui.commands.fleet import fleet_cmd
    from cltui.fleet.matrix import exit_code

    assert exit_code(rep) == 3
    said = " ".join((fleet_cmd.help or "").split())
    assert "3 when nothing failed but something did not run" in said
    assert "an enqueue that cannot run on a device" in said.split("3 when", 1)[1]
