"""``cltui explain`` as a user runs it, for the explain tests: the ``--json`` report (held to
its schema) and its sections, a missing one failing with the verdict's line (a report whose
runs did not happen has no ``line`` section, and its verdict says why)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from cltui.cli import main
from tests.schemas import validate

BOTH = ("pocl", "oclgrind")


def explain_json(capture: Path, enqueue: int, *extra: str,
                 devices: tuple[str, ...] = BOTH) -> tuple[int, Any]:  # fmt: skip
    """(the exit code, the report): ``explain CAPTURE ENQUEUE -d …`` with ``--json``."""
    picks = [a for d in devices for a in ("-d", d)]
    res = CliRunner().invoke(main, ["explain", str(capture), str(enqueue), *picks, "--json",
                                    *extra])  # fmt: skip
    rep = json.loads(res.stdout) if res.stdout.strip() else res.output
    validate(rep, "cli.schema.json", "explain")
    return res.exit_code, rep


def line_of(rep: dict[str, Any]) -> dict[str, Any]:
    """The report's ``line`` section; none fails with the verdict."""
    assert "line" in rep, f"no line section: {rep['verdict']['line']}"
    line: dict[str, Any] = rep["line"]
    return line
