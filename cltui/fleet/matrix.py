"""The fleet's one result: rows = enqueue and argument, columns = host:device, each cell the
check against the captured output (``equal``, ``within``, ``different`` with max ULP,
``unchecked``, ``downstream``: it differs only after an enqueue that could not run there),
``cannot-run`` (the runner's pre-flight, why), the fault that ended the column at the enqueue
it hit (``hang``, ``device-crash``, ``runner-crash``, ``connection-lost``, ``cancelled``,
``error``: :mod:`cltui.fleet.faults`), ``not-reached`` (after it: not run, and why); the first
divergent enqueue per column; the columns against each other; the verdict (the house rule,
device by device, and what did not run, with counts).  Pure: host outcomes and compare
results in, a JSON-ready dict out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from cltui.fleet.baseline import Baseline, apply_baseline, baseline_verdict
from cltui.fleet.faults import FAULTS, host_fault
from cltui.fleet.flaky import apply_flaky, flaky_fleet_verdict
from cltui.fleet.host import DeviceRun, HostOutcome
from cltui.replay.engine import combine_verdicts, verdict_exit
from cltui.replay.engine.schema import CheckResult, Manifest, Verdict

__all__ = ["Cell", "build_matrix", "cell_style", "cell_text", "column_id", "exit_code"]

ORDER = ("fail", "error", "incomplete", "pass")


class Cell(TypedDict):
    column: str
    status: str
    max_ulp: float | None
    summary: str


def cell_text(cell: Mapping[str, Any]) -> str:
    """One cell in a few characters: ``equal``, ``within 2ulp``, ``DIFF 4ulp``, ``cannot run``,
    ``HANG``, ``conn lost``... (the fault's word), ``(diff)`` downstream, ``-`` (not reached)."""
    status = str(cell["status"])
    ulp = cell.get("max_ulp")
    tail = f" {ulp:g}ulp" if ulp is not None and ulp > 0 else ""
    if cell.get("flaky"):
        return "FLAKY" + tail
    if status == "different":
        return ("known" if cell.get("baseline") == "known" else "DIFF") + tail
    if status == "within":
        return "within" + tail
    if status in FAULTS:
        return FAULTS[status].word
    return {"not-reached": "-", "downstream": "(diff)"}.get(status, status)


_STYLE = {"equal": "green", "within": "cyan", "different": "bold red", "cannot-run": "magenta",
          "not-reached": "dim", "unchecked": "yellow", "downstream": "dim yellow",
          "hang": "bold red", "device-crash": "bold red", "runner-crash": "red",
          "connection-lost": "red", "cancelled": "yellow", "error": "red"}


def cell_style(cell: Mapping[str, Any]) -> str:
    """A cell's rich style: by its status; a baseline's known divergence green, a fixed one
    yellow, a flaky one bold yellow."""
    if cell.get("flaky"):
        return "bold yellow"
    by_baseline = {"known": "green", "fixed": "yellow"}.get(str(cell.get("baseline")))
    return by_baseline or _STYLE.get(str(cell["status"]), "")


def column_id(host: HostOutcome, run: DeviceRun) -> str:
    return f"{host.host.name}:{run.device['id']}"


def _rows(plan: Manifest) -> list[dict[str, Any]]:
    rows = []
    for st in plan.get("steps", []):
        for c in st.get("checks", []):
            rows.append({"enqueue": int(st["enqueue"]), "kernel": str(st.get("kernel", "")),
                         "mem": str(c["mem"]), "label": str(c.get("label", c["mem"])),
                         "args": [int(a) for a in c.get("args", [])]})
    return rows


def _check_cell(col: str, chk: CheckResult) -> Cell:
    res: Mapping[str, Any] = chk.get("result") or {}
    ulp = res.get("max_ulp")
    status = str(chk.get("status"))
    summary = str(chk.get("summary") or "")
    if not summary and status == "different":
        summary = f"{res.get('n_bad', '?')} of {res.get('elements', '?')} elements differ"
    after = chk.get("after_cannot_run", chk.get("after_unreplayed"))
    if status == "different" and after is not None:  # not checked: its input was not made
        status = "downstream"
        summary = f"not checked: downstream of enqueue {after}, which did not run here " \
            f"({summary})"
    return {"column": col, "status": status, "max_ulp": None if ulp is None else float(ulp),
            "summary": summary}


def _cells(col: str, run: DeviceRun, rows: list[dict[str, Any]]) -> list[Cell]:
    """One column's cells, row by row: the finished steps' checks; the fault at the enqueue
    it hit (the first without a result when it hit none); after it, not reached."""
    result = run.result
    checks = {(int(st["enqueue"]), str(c["mem"])): c
              for st in result.get("steps") or [] for c in st.get("checks", [])}
    done = {int(st["enqueue"]) for st in result.get("steps") or []}
    cannot = {int(st["enqueue"]) for st in result.get("steps") or []
              if st.get("status") == "cannot-run"}  # the runner's pre-flight: not launched
    err = str(result.get("error") or "")
    fault = run.fault or ("error" if err else None)
    at = result.get("failed_enqueue")
    if fault is not None and at is None:
        at = next((r["enqueue"] for r in rows if r["enqueue"] not in done), None)
    word = FAULTS[fault].word if fault in FAULTS else str(fault)
    out: list[Cell] = []
    for row in rows:
        key, enq = (row["enqueue"], row["mem"]), row["enqueue"]
        if key in checks and enq in cannot:
            out.append({"column": col, "status": "cannot-run", "max_ulp": None,
                        "summary": str(checks[key].get("summary") or "cannot run")})
        elif key in checks:
            out.append(_check_cell(col, checks[key]))
        elif fault is not None and at is not None and enq == at:
            out.append({"column": col, "status": fault, "max_ulp": None, "summary": err})
        elif fault is not None and at is not None and enq > at:
            out.append({"column": col, "status": "not-reached", "max_ulp": None,
                        "summary": f"did not run: {word} at enqueue {at}"})
        else:
            why = "the runner reported no check" if fault is None else \
                f"no result: the run ended ({word})"
            out.append({"column": col, "status": "unchecked", "max_ulp": None, "summary": why})
    return out


def _column(host: HostOutcome, run: DeviceRun, cells: list[Cell], rows: list[dict[str, Any]]
            ) -> dict[str, Any]:
    dev = run.device
    res = run.result
    first = next((rows[i]["enqueue"] for i, c in enumerate(cells) if c["status"] == "different"),
                 None)
    return {
        "id": column_id(host, run), "host": host.host.name, "runner": host.runner,
        "device": {"id": dev["id"], "name": dev.get("name", ""),
                   "platform": dev.get("platform", ""),
                   "driver": dev.get("driver") or dev.get("version", "")},
        "status": res.get("status"), "fault": run.fault, "error": res.get("error"),
        "failed_enqueue": res.get("failed_enqueue"), "first_divergent": first,
        "verdict": res["verdict"], "seconds": round(run.seconds, 3),
    }


def _host(h: HostOutcome) -> dict[str, Any]:
    return {
        "name": h.host.name, "address": h.host.address, "runner": h.runner,
        "status": h.status, "fault": host_fault(h.status), "reason": h.reason,
        "devices": [f"{r.device['id']} {r.device.get('name', '')}" for r in h.devices],
        "sent": {"cached": h.sync.had_bundle, "files": h.sync.files_sent,
                 "bytes": h.sync.bytes_sent},
        "bytes_sent": h.bytes_sent, "bytes_received": h.bytes_received,
        "seconds": round(h.seconds, 3),
    }


def build_matrix(
    plan: Manifest,
    outcomes: Sequence[HostOutcome],
    cross: Sequence[Mapping[str, Any]],
    bundle: Mapping[str, Any],
    baseline: Baseline | None = None,
) -> dict[str, Any]:
    """The fleet report (``cltui fleet --json``): verdict first; with a ``baseline``, its
    known divergences marked and its findings in the verdict (cltui.fleet.baseline)."""
    rows = _rows(plan)
    columns: list[dict[str, Any]] = []
    for h in outcomes:
        for run in h.devices:
            col = column_id(h, run)
            cells = _cells(col, run, rows)
            columns.append(_column(h, run, cells, rows))
            for row, cell in zip(rows, cells, strict=True):
                row.setdefault("cells", []).append(cell)
    for row in rows:
        row.setdefault("cells", [])
    runs = [run for h in outcomes for run in h.devices]
    results = [run.result for run in runs]
    found = apply_baseline(baseline, plan, rows, columns, results) if baseline else None
    flaky = apply_flaky(rows, columns, runs)  # after the baseline: a flaky one never passes
    verdict = fleet_verdict(outcomes, columns)
    extra: dict[str, Any] = {}
    if found is not None:
        verdict, extra = baseline_verdict(verdict, found), {"baseline": found}
    if flaky:
        verdict = flaky_fleet_verdict(verdict, flaky)
    return {
        "verdict": verdict,
        "bundle": dict(bundle),
        "hosts": [_host(h) for h in outcomes],
        "columns": columns,
        "rows": rows,
        "cross": list(cross),
        "devices": [dict(run.result) | {"host": h.host.name}
                    for h in outcomes for run in h.devices],
        **extra,
    }


def fleet_verdict(outcomes: Sequence[HostOutcome], columns: Sequence[Mapping[str, Any]]
                  ) -> dict[str, Any]:
    """The house verdict over the devices that ran, made at least ``incomplete`` by a host
    that did not run; ``error`` when no device ran at all.  Counts of hosts and devices, and
    of the kernel enqueues that cannot run on a device (per device, as its own line says)."""
    verdicts: list[Verdict] = [c["verdict"] for c in columns]
    combined = combine_verdicts(verdicts, [c["id"] for c in columns])
    failed_hosts = [h for h in outcomes if h.status != "ok"]
    bad_devices = [c for c in columns if c["status"] not in ("ok", "mismatch")]
    status = str(combined["status"])
    if failed_hosts and status == "pass":
        status = "incomplete"
    if not columns:
        status = "error"
    by_status = {s: sum(1 for v in verdicts if v["status"] == s) for s in ORDER}
    head = ", ".join(f"{n} {s}" for s, n in by_status.items() if n) or "no device ran"
    parts = [f"{len(columns)} devices on {len(outcomes) - len(failed_hosts)} of "
             f"{len(outcomes)} hosts: {head}"]
    firsts = [f"{c['id']} first diverges at enqueue {c['first_divergent']}"
              for c in columns if c["first_divergent"] is not None]
    cannot = [f"{c['id']} {_word(c)}: {c['error']}" for c in bad_devices]
    if firsts:
        parts.append("; ".join(firsts))
    stuck = _cannot_run(columns)
    if stuck:
        n = sum(stuck.values())
        parts.append(f"{n} kernel enqueue{'s' if n != 1 else ''} cannot run on {len(stuck)} "
                     f"device{'s' if len(stuck) != 1 else ''} ("
                     + "; ".join(f"{col}: {k}" for col, k in stuck.items()) + ")")
    after = int(combined["counts"].get("after_cannot_run", 0))
    if after:
        parts.append(f"{after} check{'s' if after != 1 else ''} after an enqueue that cannot run")
    if cannot:
        parts.append(f"{len(cannot)} device{'s' if len(cannot) != 1 else ''} did not finish ("
                     + "; ".join(cannot) + ")")
    if failed_hosts:
        parts.append(f"{len(failed_hosts)} host{'s' if len(failed_hosts) != 1 else ''} did not "
                     "run (" + "; ".join(f"{h.host.name} {_host_word(h.status)}: {h.reason}"
                                         for h in failed_hosts) + ")")
    return {
        "status": status,
        "line": f"{status.upper()}: " + "; ".join(parts),
        "counts": dict(combined["counts"]),
        "hosts": {"total": len(outcomes), "ran": len(outcomes) - len(failed_hosts),
                  "failed": len(failed_hosts)},
        "devices": {"total": len(columns), "finished": len(columns) - len(bad_devices),
                    "failed": len(bad_devices), "cannot_run": len(stuck)},
        "by_status": by_status,
    }


def _word(col: Mapping[str, Any]) -> str:
    f = FAULTS.get(str(col.get("fault")))
    return f.value if f is not None else str(col["status"])


def _host_word(status: str) -> str:
    f = FAULTS.get(host_fault(status) or "")
    return status if f is None or f.value == "error" else f.value


def _cannot_run(columns: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Per column with any: how many of its kernel enqueues the runner's pre-flight found
    cannot run there (not launched; the column's verdict counts them as ``cannot_run``)."""
    found = {str(c["id"]): int(c["verdict"]["counts"].get("cannot_run", 0)) for c in columns}
    return {col: n for col, n in found.items() if n}


def exit_code(report: Mapping[str, Any]) -> int:
    """The verdict's exit code: 0 pass, 1 fail or error, 3 incomplete."""
    return verdict_exit(str(report["verdict"]["status"]))
