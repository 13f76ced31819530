"""``cltui fleet --retry-flaky N``: a column whose outputs differ from the capture is run again
on its device, up to N times, on the same connection; an output whose result changes between
runs (its check's status or its sha256, or a run that ends otherwise) makes the column *flaky*:
reported as such (``FLAKY`` cells, the column's verdict a FAIL that says which outputs changed),
never as a pass, whatever a baseline says.  A column that differs the same way every time keeps
its verdict, with the runs counted (``retries``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cltui.fleet.host import DeviceRun, HostOutcome, HostRunner
from cltui.replay.engine.schema import Verdict

__all__ = ["apply_flaky", "flaky_fleet_verdict", "flaky_verdict", "retry_flaky"]


def _differs(run: DeviceRun) -> bool:
    return any(c.get("status") == "different"
               for st in run.result.get("steps") or [] for c in st.get("checks", []))


def _fingerprint(run: DeviceRun) -> dict[tuple[int, str], tuple[str, str]]:
    """Each checked output: (its check's status, its sha256 there)."""
    out = {}
    for st in run.result.get("steps") or []:
        for c in st.get("checks", []):
            name = Path(str(c.get("output") or "")).name
            out[(int(st["enqueue"]), str(c["mem"]))] = (str(c.get("status")),
                                                        run.sums.get(name, ""))
    return out


def _labels(run: DeviceRun) -> dict[tuple[int, str], str]:
    return {(int(st["enqueue"]), str(c["mem"])): f"enqueue {st['enqueue']} "
            f"{c.get('label', c['mem'])}"
            for st in run.result.get("steps") or [] for c in st.get("checks", [])}


def retry_flaky(runner: HostRunner, out: HostOutcome, times: int) -> None:
    """Run each differing column of ``out`` again, up to ``times`` times; mark it flaky at the
    first run whose results change."""
    if out.status != "ok" or times <= 0:
        return
    for run in out.devices:
        if not _differs(run):
            continue
        first, names = _fingerprint(run), _labels(run)
        for _ in range(times):
            if runner.cancel.is_set():
                return
            again = runner.replay_again(run.device)
            run.retries += 1
            seen = _fingerprint(again)
            changed = [k for k in first if seen.get(k) != first[k]]
            changed += [k for k in seen if k not in first]
            if changed:
                run.flaky = [names.get(k, f"enqueue {k[0]} {k[1]}") for k in sorted(changed)]
                break


def flaky_verdict(verdict: Verdict, run: DeviceRun) -> Verdict:
    """A flaky column's verdict: a FAIL that leads with what changed between runs."""
    if not run.flaky:
        return verdict
    body = str(verdict["line"]).partition(": ")[2]
    n = len(run.flaky)
    head = (f"flaky: {n} output{'s' if n != 1 else ''} changed between {run.retries + 1} runs "
            f"({', '.join(run.flaky[:5])})")
    return {"status": "fail", "line": f"FAIL: {head}; {body}", "counts": verdict["counts"]}


def apply_flaky(rows: Sequence[dict[str, Any]], columns: Sequence[dict[str, Any]],
                runs: Sequence[DeviceRun]) -> list[str]:
    """Each column's ``retries`` and ``flaky`` (the outputs that changed), its changed cells
    marked ``flaky``, a flaky column's verdict a FAIL; ``column: outputs`` per flaky one."""
    found = []
    for i, (col, run) in enumerate(zip(columns, runs, strict=True)):
        col["retries"], col["flaky"] = run.retries, list(run.flaky)
        if not run.flaky:
            continue
        for row in rows:
            if f"enqueue {row['enqueue']} {row['label']}" in run.flaky:
                row["cells"][i]["flaky"] = True
        col["verdict"] = flaky_verdict(col["verdict"], run)
        found.append(f"{col['id']}: {', '.join(run.flaky[:3])}")
    return found


def flaky_fleet_verdict(fleet: dict[str, Any], found: Sequence[str]) -> dict[str, Any]:
    """The fleet verdict's line with the flaky columns (their FAIL is in it already)."""
    n = len(found)
    part = (f"{n} device{'s' if n != 1 else ''} flaky: results changed between runs ("
            + "; ".join(found) + ")")
    return fleet | {"line": f"{fleet['line']}; {part}"}
