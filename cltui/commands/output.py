"""The output formats of the commands: one place decides which there are, how each is
chosen (``--format``, with ``--json`` its alias for JSON) and how each is written.

A command builds one :class:`Report` (its JSON value, how it prints as text, and what it is
as JUnit, CSV or a trace where it has that) and hands it to :func:`emit`; the renderers are
one per format: :func:`cltui.replay.junit.junit_document` (JUnit XML: every report type maps
to its suites and cases), :func:`cltui.text.tabular.csv_document` (CSV: a header and rows),
the Chrome trace-event / Perfetto JSON of :mod:`cltui.latency.trace` and the JSON of
:func:`cltui.commands._common.emit_json`.  A format a command also writes to a file beside
its report (``sweep --csv FILE``, ``latency --trace FILE``, ``fleet --junit FILE``) goes
through :func:`write_file` with the same renderer."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from cltui.commands._common import emit_json, fail, json_text

__all__ = ["FORMATS", "Report", "emit", "format_option", "render", "write_file"]

F = TypeVar("F", bound=Callable[..., Any])

# Every format a command may offer, in this order in its --format choice, and what it is
FORMATS: dict[str, str] = {
    "text": "text for a person (the verdict line first)",
    "json": "JSON (docs/cli-json.md)",
    "junit": "JUnit XML for CI",
    "csv": "CSV, one row per line",
    "trace": "a Chrome trace-event / Perfetto JSON (chrome://tracing, ui.perfetto.dev)",
}


@dataclass
class Report:
    """One command's report in each format it has (``None``: the command has not that one).

    ``data`` is the JSON value; ``text`` prints the text report; ``junit`` makes the JUnit
    document (through :func:`cltui.replay.junit.junit_document`); ``csv`` gives the header
    and the rows; ``trace`` the trace-event object."""

    data: Any
    text: Callable[[], None]
    junit: Callable[[], str] | None = None
    csv: Callable[[], tuple[list[str], list[list[Any]]]] | None = None
    trace: Callable[[], Any] | None = None


def format_option(*formats: str, what: str = "the report") -> Callable[[F], F]:
    """``--format`` with the ``formats`` the command has (the first is the default) and
    ``--json`` (``--format json``, as every command had it; with another --format: bad
    input); the command gets the two as one ``fmt`` argument."""
    unknown = [f for f in formats if f not in FORMATS]
    assert not unknown and "text" in formats, unknown
    listed = "; ".join(f"{f}: {FORMATS[f]}" for f in formats)

    def decorate(f: F) -> F:
        @functools.wraps(f)
        def command(*args: Any, fmt: str, as_json: bool, **kw: Any) -> Any:
            if as_json and fmt not in ("text", "json"):
                fail(f"--json is --format json: it does not go with --format {fmt}")
            return f(*args, fmt="json" if as_json else fmt, **kw)

        opts = [click.option("--format", "fmt", type=click.Choice(list(formats)),
                             default=formats[0], show_default=True,
                             help=f"How {what} is written ({listed})."),
                click.option("--json", "as_json", is_flag=True,
                             help=f"{what[0].upper()}{what[1:]} as JSON (--format json).")]
        for opt in reversed(opts):
            command = opt(command)
        return command  # type: ignore[return-value]

    return decorate


def render(report: Report, fmt: str) -> str:
    """The report in a format other than text, as the text of a file (or of stdout)."""
    if fmt == "json":
        return json_text(report.data) + "\n"
    if fmt == "junit" and report.junit is not None:
        return report.junit()
    if fmt == "csv" and report.csv is not None:
        from cltui.text.tabular import csv_document

        return csv_document(*report.csv())
    if fmt == "trace" and report.trace is not None:
        return json.dumps(report.trace()) + "\n"
    raise ValueError(f"no {fmt} renderer for this report")


def emit(report: Report, fmt: str) -> None:
    """The report on stdout in the format chosen."""
    if fmt == "text":
        report.text()
    elif fmt == "json":
        emit_json(report.data)
    else:
        sys.stdout.write(render(report, fmt))
        sys.stdout.flush()


def write_file(path: str, text: str) -> None:
    """``text`` written whole to ``path`` (a temporary file beside it, then renamed); a
    failure is one line and exit 2."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        fail(f"cannot write {path}: {exc.strerror or exc}")
