"""``clintercept_report.txt`` (capture-format.md §7.1-§7.3).

The report is a sequence of blocks separated by empty lines.  Each recognised heading starts a
block; rows are parsed from the right (names may contain ``", "``).  A truncated or garbled report
gives a partial :class:`Report` with :attr:`Report.problems`; nothing here raises on bad input.
With ``AppendFiles`` one file can hold several sessions: the last one (the last
``Total Enqueues:``) is kept and the earlier ones are counted in :attr:`Report.sessions`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from cltui.capture.model import Problem
from cltui.capture.safeopen import MAX_REPORT, read_limited

__all__ = ["HistogramBin", "Report", "TimingRow", "TimingTable", "parse_report"]


@dataclass(frozen=True, slots=True)
class TimingRow:
    name: str  # function name or device tag (may contain ", ", "( )", "$")
    calls: int
    time_ns: int
    percent: float  # NaN when the layer printed nan%
    average_ns: int
    min_ns: int
    max_ns: int


@dataclass
class TimingTable:
    """One host or device timing table (§7.2)."""

    title: str  # the heading line without the trailing ':'
    device_name: str | None = None  # device tables only
    compute_units: int | None = None
    mhz: int | None = None
    total_time_ns: int | None = None
    rows: list[TimingRow] = field(default_factory=list)

    def row(self, name: str) -> TimingRow | None:
        for r in self.rows:
            if r.name == name:
                return r
        return None


@dataclass(frozen=True, slots=True)
class HistogramBin:
    upper_ns: int  # "< upper" bins; the last ">=" bin has lower bound here and at_least=True
    count: int
    at_least: bool = False


@dataclass
class Histogram:
    device_name: str
    total_events: int | None = None
    bins: list[HistogramBin] = field(default_factory=list)


@dataclass
class Report:
    path: Path
    total_enqueues: int | None = None
    warnings: list[str] = field(default_factory=list)  # "*** WARNING *** ..." lines
    leak_check: list[str] = field(default_factory=list)  # lines of the Leak Checking block
    kernel_name_mapping: dict[str, str] = field(default_factory=dict)  # short -> long
    host: TimingTable | None = None
    devices: list[TimingTable] = field(default_factory=list)
    histograms: list[Histogram] = field(default_factory=list)
    sessions: int = 0  # number of "Total Enqueues:" lines seen (AppendFiles)
    problems: list[Problem] = field(default_factory=list)

    @property
    def has_leaks(self) -> bool:
        return any(ln.startswith(("Possible leak", "Unexpected counts")) for ln in self.leak_check)


# numbers of at most 30 digits (a report's counts and times fit in 64 bits): a longer one is
# an unreadable line, not a ValueError from int() (over 4300 digits) or a quadratic conversion
_DEVICE_HEAD_RE = re.compile(
    r"Device Performance Timing Results for (.*) \((\d{1,30})CUs, (\d{1,30})MHz\):"
)
_HIST_HEAD_RE = re.compile(r"Device Performance Timing Histogram for (.*):")
_HIST_ROW_RE = re.compile(r"\s*(<|>=)\s*(\d{1,30}) ns:\s*(\d{1,30}) :.*")
_INT_RE = re.compile(r"-?\d{1,30}")


def _parse_row(line: str) -> TimingRow | None:
    parts = line.rsplit(",", 6)
    if len(parts) != 7:
        return None
    name = parts[0].strip()
    vals = [p.strip() for p in parts[1:]]
    pct = vals[2]
    if not pct.endswith("%"):
        return None
    try:
        percent = float(pct[:-1])
    except ValueError:
        if pct[:-1].lstrip("-").lower() != "nan":
            return None
        percent = math.nan
    ints = [vals[0], vals[1], vals[3], vals[4], vals[5]]
    if not all(_INT_RE.fullmatch(v) for v in ints) or not name:
        return None
    c, t, a, lo, hi = (int(v) for v in ints)
    return TimingRow(name, c, t, percent, a, lo, hi)


def parse_report(path: Path | str) -> Report | None:
    """Parse a report file; ``None`` only if the file cannot be read at all (or is absent)."""
    path = Path(path)
    try:
        data = read_limited(path, MAX_REPORT, follow=True)
    except OSError:  # absent, unreadable, not a regular file, larger than a report may be
        return None
    return parse_report_text(data, path)


def parse_report_text(data: bytes | str, path: Path | str = "") -> Report:
    """Parse report text (bytes: NULs dropped, UTF-8 with replacement)."""
    if isinstance(data, bytes):
        data = data.replace(b"\0", b"").decode("utf-8", "replace")
    parser = _ReportParser(Path(path))
    for lineno, raw in enumerate(data.replace("\r\n", "\n").split("\n"), 1):
        line = raw.rstrip()
        if line and not parser.heading(line.strip(), lineno):
            parser.body(line, lineno)
    rep = parser.rep
    if rep.sessions == 0:
        rep.problems.append(
            Problem("no 'Total Enqueues' line: not a report or truncated", parser.where)
        )
    if data and not data.endswith("\n"):
        rep.problems.append(Problem("report ends mid-line (truncated?)", parser.where))
    return rep


class _ReportParser:
    """The state of one pass over a report: the report so far and the open block."""

    def __init__(self, path: Path) -> None:
        self.rep = Report(path)
        self.where = path.name
        self.table: TimingTable | None = None
        self.hist: Histogram | None = None
        self.block = ""  # "", "leak", "mapping", "table", "hist"

    def problem(self, msg: str, lineno: int) -> None:
        self.rep.problems.append(Problem(f"line {lineno}: {msg}", self.where))

    def _open(
        self, block: str, table: TimingTable | None = None, hist: Histogram | None = None
    ) -> None:
        self.block, self.table, self.hist = block, table, hist

    def heading(self, stripped: str, lineno: int) -> bool:
        """Take a line that starts a block (or a warning line); False for any other line."""
        rep = self.rep
        if stripped.startswith("Total Enqueues:"):
            self._total(stripped, lineno)
        elif stripped.startswith("*** WARNING ***"):
            rep.warnings.append(stripped)
        elif stripped == "Leak Checking:":
            self._open("leak")
        elif stripped == "Kernel name mapping:":
            self._open("mapping")
        elif stripped == "Host Performance Timing Results:":
            rep.host = TimingTable("Host Performance Timing Results")
            self._open("table", table=rep.host)
        elif (m := _DEVICE_HEAD_RE.fullmatch(stripped)) is not None:
            rep.devices.append(TimingTable(stripped[:-1], m[1], int(m[2]), int(m[3])))
            self._open("table", table=rep.devices[-1])
        elif stripped.startswith("Device Performance Timing Results for "):
            # heading without the "(nCUs, nMHz)" part (other layer versions)
            rep.devices.append(TimingTable(stripped.rstrip(":"), stripped[38:].rstrip(":")))
            self._open("table", table=rep.devices[-1])
        elif (m := _HIST_HEAD_RE.fullmatch(stripped)) is not None:
            rep.histograms.append(Histogram(m[1]))
            self._open("hist", hist=rep.histograms[-1])
        else:
            return False
        return True

    def _total(self, stripped: str, lineno: int) -> None:
        """``Total Enqueues: N``: a session starts (AppendFiles: start over, keep the count)."""
        m = _INT_RE.fullmatch(stripped.split(":", 1)[1].strip())
        if self.rep.sessions:
            sessions = self.rep.sessions
            self.rep = Report(self.rep.path, problems=self.rep.problems)
            self.rep.sessions = sessions
        self.rep.sessions += 1
        if m is None:
            self.problem("unreadable Total Enqueues", lineno)
        else:
            self.rep.total_enqueues = int(m[0])
        self._open("")

    def body(self, line: str, lineno: int) -> None:
        """A line inside the open block."""
        stripped = line.strip()
        if self.block == "leak":
            self.rep.leak_check.append(line.rstrip())
        elif self.block == "mapping":
            self._mapping(line, stripped, lineno)
        elif self.block == "table" and self.table is not None:
            self._table_line(self.table, line, stripped, lineno)
        elif self.block == "hist" and self.hist is not None:
            self._hist_line(self.hist, line, stripped, lineno)
        elif self.rep.sessions == 0:
            # MDAPI counters and other blocks this version does not know: kept silent only
            # if they come after a known block; text before "Total Enqueues" is a problem
            self.problem(f"unexpected text before 'Total Enqueues': {stripped[:60]!r}", lineno)

    def _mapping(self, line: str, stripped: str, lineno: int) -> None:
        if stripped == "Short Name, Long Name":
            return
        short, sep, long = line.partition(", ")
        if sep and short.strip():
            self.rep.kernel_name_mapping[short.strip()] = long
        else:
            self.problem("unreadable kernel name mapping line", lineno)

    def _table_line(self, table: TimingTable, line: str, stripped: str, lineno: int) -> None:
        if stripped.startswith("Total Time (ns):"):
            tm = _INT_RE.fullmatch(stripped.split(":", 1)[1].strip())
            if tm is None:
                self.problem("unreadable Total Time", lineno)
            else:
                table.total_time_ns = int(tm[0])
            return
        if stripped.startswith("Function Name,"):
            return
        row = _parse_row(line)
        if row is None:
            self.problem(f"unreadable timing row: {stripped[:60]!r}", lineno)
        else:
            table.rows.append(row)

    def _hist_line(self, hist: Histogram, line: str, stripped: str, lineno: int) -> None:
        if stripped.startswith("Total Events:"):
            em = _INT_RE.fullmatch(stripped.split(":", 1)[1].strip())
            hist.total_events = int(em[0]) if em else None
            return
        hm = _HIST_ROW_RE.fullmatch(line)
        if hm is None:
            self.problem(f"unreadable histogram row: {stripped[:60]!r}", lineno)
        else:
            hist.bins.append(HistogramBin(int(hm[2]), int(hm[3]), hm[1] == ">="))
