"""Helpers shared by the CLI commands: opening a capture, errors, JSON output."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

if TYPE_CHECKING:
    from rich.console import Console

    from cltui.capture.capture import Capture
    from cltui.capture.model import EnqueueRow
    from cltui.replay.engine.schema import ToleranceSpec

from cltui.errors import (
    EXIT_BAD_INPUT,
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    EXIT_MISMATCH,
    EXIT_OK,
)

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_INCOMPLETE",
    "EXIT_INTERRUPTED",
    "EXIT_MISMATCH",
    "EXIT_OK",
    "echo",
    "emit_json",
    "escape_tree",
    "fail",
    "import_ahead",
    "json_text",
    "load_capture",
    "row_json",
    "tolerance_given",
]


# True when cltui is the process (its console script, ``python -m cltui``), not a library
# an embedding program or a test calls: process-wide settings (the collector) are its then
STANDALONE = False


def echo(text: str = "", err: bool = False) -> None:
    """``click.echo`` for human text: control characters from a capture are escaped
    (:func:`cltui.text.escape.escape_controls`); line breaks of the text stay."""
    from cltui.text.escape import escape_controls

    click.echo(escape_controls(text, keep_newlines=True), err=err)


def text_console(**kw: Any) -> Console:
    """A rich console on stdout for a text report.  A reader that leaves early (``| head``)
    ends cltui with 141, as every command says it (:data:`~cltui.errors.EXIT_BROKEN_PIPE`,
    through ``cli``'s handler): rich's own way exits 1, which reads as FAIL."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

    return _Console(**kw)


def escape_tree(value: Any) -> Any:
    """A copy of a JSON-like value with every string escaped for display (dict keys too)."""
    from cltui.text.escape import escape_controls

    if isinstance(value, str):
        return escape_controls(value, keep_newlines=True)
    if isinstance(value, dict):
        return {escape_tree(k): escape_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [escape_tree(v) for v in value]
    return value


def import_ahead(*modules: str) -> None:
    """Import ``modules`` on a thread of their own: what the report needs (rich), made
    while this process only waits for a child (the import is there when the report asks)."""
    import importlib
    import threading

    def load() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except ImportError:  # the report's own import says it, where it is needed
                return

    threading.Thread(target=load, name="cltui-import-ahead", daemon=True).start()


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print one line to stderr and exit (no traceback); control characters are escaped."""
    from cltui.text.escape import escape_controls

    click.echo(f"cltui: {escape_controls(message)}", err=True)
    sys.exit(code)


def load_capture(path: str | Path, *, quiet: bool = False) -> Capture:
    """Open a capture for a CLI command; bad input exits 2 with a specific message."""
    from cltui.capture import CaptureError, open_capture

    try:
        cap = open_capture(path)
    except CaptureError as exc:
        fail(str(exc))
    if not quiet:
        for problem in cap.problems:
            echo(f"cltui: warning: {escape_tree(str(problem))}", err=True)
    return cap


def row_json(row: EnqueueRow) -> dict[str, Any]:
    """The fields of ``cltui ls --json`` for one enqueue (``show`` starts from them too)."""
    dt = row.device_time
    return {
        "number": row.number,
        "kind": row.kind.label,
        "function": row.function,
        "kernel": row.kernel,
        "global_size": list(row.global_size) if row.global_size else None,
        "local_size": list(row.local_size) if row.local_size else None,
        "device_time_ns": None
        if dt is None
        else {
            "queued_to_submit": dt.queued_to_submit,
            "submit_to_start": dt.submit_to_start,
            "start_to_end": dt.start_to_end,
        },
        "data": {
            "pre": row.has_pre,
            "post": row.has_post,
            "replay": row.has_replay,
            "hashes_only": row.hashes_only,
        },
        "recovered": row.recovered,
    }


def tolerance_given(atol: float | None, rtol: float | None, ulp: int | None) -> ToleranceSpec:
    """The tolerance keys the user gave (``--atol``, ``--rtol``, ``--ulp``: the plan's or
    the bundle's defaults stand for the others)."""
    tol: ToleranceSpec = {}
    if atol is not None:
        tol["atol"] = atol
    if rtol is not None:
        tol["rtol"] = rtol
    if ulp is not None:
        tol["ulp"] = ulp
    return tol


def json_text(data: Any) -> str:
    """``data`` as the JSON every command writes (numpy values, paths and bytes too)."""
    return json.dumps(data, indent=2, sort_keys=False, default=_json_default)


def emit_json(data: Any) -> None:
    click.echo(json_text(data))


def _json_default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, bytes):
        return obj.hex()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")
