"""An explanation saved for a driver bug report: the Markdown report (``cltui explain``'s
:func:`~cltui.analysis.explain.text.markdown`) with the minimal bundle beside it: the one
enqueue exported isolated (its inputs from the capture, both runners), the kernel's original
source, and the instrumented source when the report has one, each linked from the report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cltui.analysis.explain.run import enqueue_plan
from cltui.analysis.explain.text import markdown
from cltui.capture.capture import Capture
from cltui.capture.ranges import EnqueueRange
from cltui.errors import CltuiError
from cltui.export.exporter import export_range
from cltui.replay.experiment.apply import program_source
from cltui.replay.experiment.variant import VariantError
from cltui.text.escape import escape_controls

__all__ = ["instrumented_source", "save_explanation"]


def instrumented_source(report: dict[str, Any]) -> str | None:
    """The instrumented kernel's source that the report's ``line`` section carries, if any."""
    line = report.get("line")
    if isinstance(line, dict):
        for key in ("instrumented_source", "instrumented"):
            if isinstance(line.get(key), str):
                return str(line[key])
    return None


def save_explanation(cap: Capture, report: dict[str, Any], md_path: Path) -> str:
    """``md_path`` (the report) and ``<stem>_bundle/`` beside it (the exported enqueue),
    ``<stem>_kernel.cl`` (the program's original source) and ``<stem>_instrumented.cl`` when
    there is one; what was written, in words.  :class:`~cltui.export.bundle.ExportError` or
    ``OSError`` when something cannot be written (the bundle is never left half written)."""
    enqueue = int(report["enqueue"])
    stem = md_path.with_suffix("")
    bundle = stem.parent / f"{stem.name}_bundle"
    export_range(cap, EnqueueRange(enqueue, enqueue), bundle, mode="isolated",
                 force=bundle.is_dir())
    attached = [f"- Bundle (enqueue {enqueue} alone, its inputs from the capture; run "
                f"`python {bundle.name}/replay.py` or build `replay.cpp`): `{bundle.name}/`"]
    plan = enqueue_plan(cap, enqueue)
    pid = plan["steps"][0]["program"]
    try:
        source: str | None = program_source(plan, pid, cap.path)
    except (VariantError, OSError, CltuiError):  # built from a binary: no source to attach
        source = None
    if source is not None:
        kernel = stem.parent / f"{stem.name}_kernel.cl"
        kernel.write_text(source, encoding="utf-8")
        attached.append(f"- The kernel's original source: `{kernel.name}`")
    instrumented = instrumented_source(report)
    if instrumented is not None:
        path = stem.parent / f"{stem.name}_instrumented.cl"
        path.write_text(instrumented, encoding="utf-8")
        attached.append(f"- The instrumented kernel (records each statement's value): "
                        f"`{path.name}`")
    text = markdown(report) + "\n## Attached\n\n" + "\n".join(attached) + "\n"
    md_path.write_text(escape_controls(text, keep_newlines=True), encoding="utf-8")
    return f"the report and {len(attached)} attachment(s)"
