"""Known divergences for CI (``cltui fleet --baseline FILE``), as deqp-runner's baselines.

A baseline file (YAML or JSON) lists the divergences a fleet is known to show, each for the
devices whose pattern it names::

    known:
      - device: "*Oclgrind*"   # glob on the device name, platform or column (host:P:D)
        driver: "*"            # optional glob on the driver version
        host: "*"              # optional glob on the inventory host
        enqueue: 2
        argument: 2            # optional: an argument index or the output's label
        max_ulp: 2             # or: differs: true (any difference)
        why: Oclgrind rounds sample_linear's interpolation differently

A differing cell that an entry covers is ``known`` (its column passes when nothing else is
wrong: the verdict is made again as if that output had been within tolerance, the counts
still say ``different``); a differing cell that none covers is ``new`` (a worse ULP than the
entry's is new too); an entry that matches a column and a row of the run whose cell no longer
differs is ``fixed``: the baseline is out of date, which fails the run as a new divergence
does, so CI says so.  Pure: the file read once, then rows, columns and results in.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from cltui.capture.safeopen import MAX_INVENTORY, read_text_limited
from cltui.errors import CltuiError
from cltui.replay.engine import verdict
from cltui.replay.engine.schema import DeviceResult, Manifest, Verdict

__all__ = ["Baseline", "BaselineError", "Known", "apply_baseline", "baseline_verdict",
           "read_baseline", "write_baseline"]

_BODY = re.compile(r"\d+/\d+ kernel enqueues replayed")
_KEYS = {"device", "driver", "host", "enqueue", "argument", "max_ulp", "differs", "why"}


class BaselineError(CltuiError):
    """A baseline file that cannot be used: one line, ``file: entry N: what``."""


@dataclass(frozen=True)
class Known:
    """One known divergence."""

    device: str
    enqueue: int
    driver: str = "*"
    host: str = "*"
    argument: int | str | None = None
    max_ulp: float | None = None  # None: any difference ("differs")
    why: str = ""

    def text(self) -> str:
        arg = "" if self.argument is None else f" argument {self.argument}"
        how = "differs" if self.max_ulp is None else f"max {self.max_ulp:g} ULP"
        return f"{self.device} enqueue {self.enqueue}{arg} ({how})"

    def matches_column(self, col: Mapping[str, Any]) -> bool:
        dev = col["device"]
        names = (str(dev.get("name", "")), str(dev.get("platform", "")), str(col["id"]))
        return (any(_glob(n, self.device) for n in names)
                and _glob(str(dev.get("driver", "")), self.driver)
                and _glob(str(col["host"]), self.host))

    def matches_row(self, row: Mapping[str, Any]) -> bool:
        if int(row["enqueue"]) != self.enqueue:
            return False
        if self.argument is None:
            return True
        if isinstance(self.argument, int):
            return self.argument in [int(a) for a in row.get("args", [])]
        return self.argument in (str(row["label"]), str(row["mem"]))

    def covers(self, cell: Mapping[str, Any]) -> bool:
        if self.max_ulp is None:
            return True
        ulp = cell.get("max_ulp")
        return ulp is not None and float(ulp) <= self.max_ulp


@dataclass(frozen=True)
class Baseline:
    path: str
    known: tuple[Known, ...]


def _literal(text: str) -> str:
    """``text`` as a glob that matches only itself."""
    return "".join(f"[{ch}]" if ch in "*?[" else ch for ch in text)


def _glob(text: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(text.lower(), pattern.lower())


def read_baseline(path: str | Path) -> Baseline:
    """The baseline at ``path`` (YAML or JSON: a list of entries, or ``known:`` holding it)."""
    import yaml

    p = Path(path)
    try:
        text = read_text_limited(p, MAX_INVENTORY, follow=True)
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise BaselineError(f"{p}: cannot read the baseline: {why}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else "bad syntax"
        raise BaselineError(f"{p}: not valid YAML or JSON: {first}") from None
    entries = doc.get("known") if isinstance(doc, dict) else doc
    if doc is None or entries is None:
        entries = []
    if not isinstance(entries, list):
        raise BaselineError(f"{p}: want a list of known divergences (or known: LIST)")
    return Baseline(str(p), tuple(_entry(p, i, e) for i, e in enumerate(entries, 1)))


def _entry(p: Path, i: int, e: Any) -> Known:
    where = f"{p}: entry {i}"
    if not isinstance(e, dict):
        raise BaselineError(f"{where}: want a mapping with device and enqueue")
    unknown = sorted(str(k) for k in e if k not in _KEYS)
    if unknown:
        raise BaselineError(f"{where}: unknown key {unknown[0]!r} (want "
                            + ", ".join(sorted(_KEYS)) + ")")
    enq = e.get("enqueue")
    if isinstance(enq, bool) or not isinstance(enq, int) or enq < 0:
        raise BaselineError(f"{where}: enqueue must be an enqueue number")
    dev = e.get("device")
    if not isinstance(dev, str) or not dev:
        raise BaselineError(f"{where}: device must be a pattern (e.g. \"*Oclgrind*\")")
    arg = e.get("argument")
    if arg is not None and (isinstance(arg, bool) or not isinstance(arg, (int, str))):
        raise BaselineError(f"{where}: argument must be an index or an output's label")
    ulp, differs = e.get("max_ulp"), e.get("differs")
    if ulp == "differs":
        ulp, differs = None, True
    if (ulp is None) == (differs is not True):
        raise BaselineError(f"{where}: give max_ulp: N or differs: true (one of them)")
    if ulp is not None and (isinstance(ulp, bool) or not isinstance(ulp, (int, float))
                            or ulp < 0):
        raise BaselineError(f"{where}: max_ulp must be a number of ULP, 0 or more")
    return Known(device=dev, enqueue=enq, driver=str(e.get("driver") or "*"),
                 host=str(e.get("host") or "*"), argument=arg,
                 max_ulp=None if ulp is None else float(ulp), why=str(e.get("why") or ""))


def apply_baseline(
    base: Baseline,
    plan: Manifest,
    rows: Sequence[dict[str, Any]],
    columns: Sequence[dict[str, Any]],
    results: Sequence[DeviceResult],
) -> dict[str, Any]:
    """Mark each differing cell ``known`` or ``new``, each stale entry ``fixed``; a column
    whose every difference is known gets the verdict it would have without them (its line
    says how many were known).  The summary for the report's ``baseline``."""
    new: list[str] = []
    known: list[str] = []
    fixed: list[str] = []
    for i, col in enumerate(columns):
        entries = [k for k in base.known if k.matches_column(col)]
        masked: set[tuple[int, str]] = set()
        for row in rows:
            cell = row["cells"][i]
            hits = [k for k in entries if k.matches_row(row)]
            where = f"{col['id']} enqueue {row['enqueue']} {row['label']}"
            if cell["status"] == "different":
                if any(k.covers(cell) for k in hits):
                    cell["baseline"] = "known"
                    masked.add((int(row["enqueue"]), str(row["mem"])))
                    known.append(where)
                else:
                    cell["baseline"] = "new"
                    ulp = cell.get("max_ulp")
                    allowed = [k.max_ulp for k in hits if k.max_ulp is not None]
                    more = (f" ({ulp:g} ULP; the baseline allows {max(allowed):g})"
                            if allowed and ulp is not None else "")
                    new.append(where + more)
        for k in entries:  # an entry whose outputs all came out equal or within: fixed
            mine = [(row, row["cells"][i]) for row in rows if k.matches_row(row)]
            if mine and all(c["status"] in ("equal", "within") for _r, c in mine):
                for _r, c in mine:
                    c["baseline"] = "fixed"
                fixed.append(f"{col['id']}: {k.text()}")
        if masked:
            col["verdict"] = _masked_verdict(plan, results[i], masked, len(masked))
    return {"path": base.path, "entries": len(base.known), "known": known, "new": new,
            "fixed": fixed}


def _masked_verdict(plan: Manifest, result: DeviceResult, masked: set[tuple[int, str]],
                    n: int) -> Verdict:
    """The house verdict of ``result`` with the known differences taken as within tolerance
    (the same rule, not a copy of it); the counts as they were."""
    copy = cast(DeviceResult, json.loads(json.dumps(result)))
    for st in copy.get("steps") or []:
        for c in st.get("checks", []):
            if (int(st["enqueue"]), str(c["mem"])) in masked and c.get("status") == "different":
                c["status"] = "within"
    v = verdict(plan, copy)
    real = verdict(plan, result)
    status, _, said = v["line"].partition(": ")
    heads = [f"{n} known divergence{'s' if n != 1 else ''} (baseline)"]
    m, r = _BODY.search(said), _BODY.search(str(real["line"]))
    if m is None or r is None:  # a line of another shape: the masked one, as it is
        return {"status": v["status"], "line": f"{status}: {heads[0]}; {said}",
                "counts": real["counts"]}
    if said[: m.start()].strip("; "):  # what else the masked verdict says (incomplete...)
        heads.append(said[: m.start()].strip("; "))
    body = str(real["line"])[r.start():]  # the true counts: "1 different", never "within"
    return {"status": v["status"], "line": f"{status}: " + "; ".join([*heads, body]),
            "counts": real["counts"]}


def baseline_verdict(fleet: dict[str, Any], summary: Mapping[str, Any]) -> dict[str, Any]:
    """The fleet verdict with the baseline's findings: a new divergence already fails (its
    column's verdict), a fixed one fails the run too (the baseline is out of date)."""
    def n(key: str, what: str) -> str:
        k = len(summary[key])
        return f"{k} {what}{'s' if k != 1 else ''}"

    parts = []
    if summary["known"]:
        parts.append(n("known", "known divergence") + " (baseline)")
    if summary["new"]:
        parts.append(n("new", "new divergence") + " not in the baseline ("
                     + "; ".join(summary["new"][:5]) + ")")
    if summary["fixed"]:
        parts.append(n("fixed", "known divergence") + " fixed: update the baseline ("
                     + "; ".join(summary["fixed"][:5]) + ")")
    status = str(fleet["status"])
    if summary["fixed"] and status in ("pass", "incomplete"):
        status = "fail"
    body = str(fleet["line"]).partition(": ")[2]
    line = f"{status.upper()}: {body}" + ("; " + "; ".join(parts) if parts else "")
    return fleet | {"status": status, "line": line}


def write_baseline(report: Mapping[str, Any], path: Path) -> int:
    """Every differing cell of ``report`` as a baseline entry (by device name and driver,
    the ULP seen); how many.  A start for a CI's baseline: review it before use."""
    cols = report["columns"]
    seen: dict[tuple[str, str, int, str], dict[str, Any]] = {}
    for row in report["rows"]:
        for col, cell in zip(cols, row["cells"], strict=True):
            if cell["status"] != "different":
                continue
            dev = col["device"]
            key = (str(dev["name"]), str(dev["driver"]), int(row["enqueue"]), str(row["label"]))
            ent = seen.setdefault(key, {
                "device": _literal(dev["name"]), "driver": _literal(dev["driver"]) or "*",
                "enqueue": int(row["enqueue"]), "argument": str(row["label"])})
            ulp = cell.get("max_ulp")
            if ulp is None or ent.get("differs"):
                ent.pop("max_ulp", None)
                ent["differs"] = True
            else:
                ent["max_ulp"] = max(float(ulp), float(ent.get("max_ulp", 0.0)))
    import yaml

    path.write_text(yaml.safe_dump({"known": list(seen.values())}, sort_keys=False),
                    encoding="utf-8")
    return len(seen)
