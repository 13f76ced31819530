"""What a fleet run keeps (``cltui fleet --artifacts DIR``; the app keeps them in a temporary
folder for its drill-down): per column (``DIR/<host>_<P>_<D>/``) the outputs that differ from
the capture (``enqueue-N-<file>``, fetched from the host before its scratch folder goes), the
runner's log (``runner.log``: its stderr) and its device result (``result.json``, each kept
check's ``output`` naming its file here); and ``DIR/report.json``, the fleet report.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cltui.errors import CltuiError
from cltui.fleet.host import DeviceRun, HostOutcome
from cltui.fleet.matrix import column_id
from cltui.fleet.transport import Transport
from cltui.progress import CancelToken

__all__ = ["ArtifactsError", "column_folder", "keep_artifacts", "write_report"]

Fetch = Callable[[DeviceRun, "Transport | None", str], "bytes | None"]


class ArtifactsError(CltuiError):
    """The artifacts folder cannot be written: one line."""


def column_folder(root: Path, column: str) -> Path:
    """``root/<host>_<P>_<D>``: a column's folder (host names hold no ``/``: names.py)."""
    return root / column.replace(":", "_")


def _write(path: Path, data: bytes) -> None:
    """``data`` to ``path``, never through a link someone put there."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except OSError as exc:
        raise ArtifactsError(f"cannot write {path}: {exc.strerror or exc}") from None


def keep_artifacts(
    root: Path,
    outcomes: Sequence[HostOutcome],
    transports: Sequence[Transport | None],
    fetch: Fetch,
    token: CancelToken,
) -> set[int]:
    """Fetch and keep every column's differing outputs, log and result under ``root``; the
    ``id`` of each check whose ``output`` now names a kept file (the others' name a file on
    the host, gone at the end of the run)."""
    kept: set[int] = set()
    for h, t in zip(outcomes, transports, strict=True):
        for run in h.devices:
            folder = column_folder(root, column_id(h, run))
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ArtifactsError(f"cannot make {folder}: {exc.strerror or exc}") from None
            _write(folder / "runner.log", run.log.encode("utf-8", "replace"))
            for st in run.result.get("steps") or []:
                for c in st.get("checks", []):
                    name = Path(str(c.get("output") or "")).name
                    if c.get("status") != "different" or not name or token.is_set():
                        continue
                    data = fetch(run, t, name)
                    if data is None:
                        continue
                    dest = folder / f"enqueue-{int(st['enqueue'])}-{name}"
                    _write(dest, data)
                    c["output"] = str(dest.resolve())
                    kept.add(id(c))
            result = [dict(run.result)]
            _write(folder / "result.json", _dump(_only_kept(result, kept)))
    return kept


def _only_kept(results: list[dict[str, Any]], kept: set[int]) -> list[dict[str, Any]]:
    """A copy of ``results`` whose checks name an output only where it was kept."""
    out = []
    for res in results:
        steps = []
        for st in res.get("steps") or []:
            checks = [dict(c) | ({} if id(c) in kept else {"output": None})
                      for c in st.get("checks", [])]
            steps.append(dict(st) | {"checks": checks})
        out.append(res | {"steps": steps})
    return out


def _dump(doc: Any) -> bytes:
    return (json.dumps(doc, indent=1) + "\n").encode()


def write_report(root: Path, report: Mapping[str, Any]) -> None:
    """``root/report.json``: the fleet report (``--json``'s)."""
    _write(root / "report.json", _dump(report))
