"""The bundle a fleet run sends: a bundle folder as given, or a range exported into a private
temp folder with cltui's exporter; per-argument tolerances (``--arg-tol``) written into its
checks (the runners read a check's ``tol``), in a private copy (hard links) when the bundle
is the user's."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from cltui.capture.capture import Capture
from cltui.export import export_range
from cltui.fleet.cache import CacheError
from cltui.progress import CancelToken, ProgressFn
from cltui.replay import lifecycle
from cltui.replay.engine.schema import ArgTolerance

__all__ = ["export_temp", "private_copy", "with_arg_tolerance"]


def export_temp(
    capture: Capture,
    range_text: str,
    mode: str,
    *,
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
) -> tuple[Path, Path]:
    """The range exported (Python and C++) into a new private temp folder: (folder to remove
    at the end, the bundle)."""
    tmp = lifecycle.temp_dir("fleet-bundle")
    out = tmp / "bundle"
    export_range(capture, range_text, out, langs=("python", "cpp"), mode=mode,
                 progress=progress, cancel=cancel)
    return tmp, out


def private_copy(bundle: Path) -> tuple[Path, Path]:
    """A copy of the user's bundle to change (hard links where the disk allows)."""
    tmp = lifecycle.temp_dir("fleet-bundle")
    out = tmp / "bundle"

    def link(src: str, dst: str) -> object:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)
        return dst

    shutil.copytree(bundle, out, copy_function=link, symlinks=True)
    return tmp, out


def with_arg_tolerance(bundle: Path, arg_tol: ArgTolerance) -> None:
    """Write ``arg_tol`` into the checks of the bundle's manifest (each check of an argument
    it names gets that argument's tolerance) and its line of ``SHA256SUMS``."""
    if not arg_tol:
        return
    mpath = bundle / "manifest.json"
    try:
        plan: dict[str, Any] = json.loads(mpath.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CacheError(f"{mpath}: cannot read the manifest: {exc}") from None
    for st in plan.get("steps", []):
        for c in [*st.get("checks", []), *st.get("prechecks", [])]:
            tol = dict(c.get("tol") or {})
            for a in c.get("args", []):
                tol.update(arg_tol.get(int(a), {}))
            if tol:
                c["tol"] = tol
    data = (json.dumps(plan, indent=1) + "\n").encode()
    mpath.unlink()  # a hard link to the user's file: replaced, never written through
    mpath.write_bytes(data)
    sums = bundle / "SHA256SUMS"
    digest = hashlib.sha256(data).hexdigest()
    lines = [f"{digest}  manifest.json" if ln.endswith("  manifest.json") else ln
             for ln in sums.read_text(encoding="utf-8").splitlines()]
    sums.unlink()
    sums.write_text("\n".join(lines) + "\n", encoding="utf-8")
