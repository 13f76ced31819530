"""Running a tool to its end within a time bound: its own session with no terminal (stdin is
/dev/null), killed with everything it started (:func:`.lifecycle.kill_group`) on cancel or
after ``timeout`` seconds; the output it wrote comes back whole."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Sequence
from pathlib import Path

from cltui.errors import CltuiError
from cltui.process.lifecycle import kill_group
from cltui.progress import CancelToken

__all__ = ["ToolFailed", "run_bounded"]


class ToolFailed(CltuiError):
    """The tool could not start, or did not finish in time (one line, its last words)."""


def run_bounded(
    cmd: Sequence[str], timeout: float, cancel: CancelToken | None = None,
    cwd: Path | None = None,
) -> tuple[int, str, str]:  # fmt: skip
    """Run ``cmd`` to its end: ``(rc, out, err)``; :class:`ToolFailed` when it cannot start
    or runs past ``timeout`` s; :class:`cltui.errors.Cancelled` when ``cancel`` is set."""
    try:
        proc = subprocess.Popen(
            list(cmd), cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
    except OSError as exc:
        raise ToolFailed(f"cannot start {cmd[0]}: {exc.strerror or exc}") from None
    if cancel is not None:
        cancel.on_cancel(lambda: kill_group(proc))
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        err = ""
        with contextlib.suppress(subprocess.TimeoutExpired):
            err = proc.communicate(timeout=10)[1] or ""
        last = err.strip().splitlines()[-1:]
        said = f" (its last words: {last[0][:200]})" if last else ""
        raise ToolFailed(f"{Path(cmd[0]).name} did not finish in {timeout:.0f} s{said}") from None
    if cancel is not None:
        cancel.raise_if_set()
    return proc.returncode, out, err
