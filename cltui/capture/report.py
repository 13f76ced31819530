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
        data = path.read_bytes()
    except OSError:
        return None
    return parse_report_text(data, path)


def parse_report_text(data: bytes | str, path: Path | str = "") -> Report:
    """Parse report text (bytes: NULs dropped, UTF-8 with replacement)."""
    if isinstance(data, bytes):
        data = data.replace(b"\0", b"").decode("utf-8", "replace")
    rep = Report(Path(path))
    where = Path(path).name
    lines = data.replace("\r\n", "\n").split("\n")
    table: TimingTable | None = None
    hist: Histogram | None = None
    block = ""  # "", "leak", "mapping", "table", "hist", "mdapi"
    garbled = 0

    def problem(msg: str, lineno: int) -> None:
        rep.problems.append(Problem(f"line {lineno}: {msg}", where))

    for lineno, raw in enumerate(lines, 1):
        line = raw.rstrip()
        if not line:
            continue
        stripped = line.strip()
        if stripped.startswith("Total Enqueues:"):
            m = _INT_RE.fullmatch(stripped.split(":", 1)[1].strip())
            if rep.sessions:  # a new AppendFiles session: start over, keep the count
                sessions = rep.sessions
                rep = Report(rep.path, problems=rep.problems)
                rep.sessions = sessions
            rep.sessions += 1
            if m is None:
                problem("unreadable Total Enqueues", lineno)
            else:
                rep.total_enqueues = int(m[0])
            block, table, hist = "", None, None
            continue
        if stripped.startswith("*** WARNING ***"):
            rep.warnings.append(stripped)
            continue
        if stripped == "Leak Checking:":
            block, table, hist = "leak", None, None
            continue
        if stripped == "Kernel name mapping:":
            block, table, hist = "mapping", None, None
            continue
        if stripped == "Host Performance Timing Results:":
            table, hist, block = TimingTable("Host Performance Timing Results"), None, "table"
            rep.host = table
            continue
        m = _DEVICE_HEAD_RE.fullmatch(stripped)
        if m is not None:
            table = TimingTable(stripped[:-1], m[1], int(m[2]), int(m[3]))
            hist, block = None, "table"
            rep.devices.append(table)
            continue
        if stripped.startswith("Device Performance Timing Results for "):
            # heading without the "(nCUs, nMHz)" part (other layer versions)
            table = TimingTable(stripped.rstrip(":"), stripped[38:].rstrip(":"))
            hist, block = None, "table"
            rep.devices.append(table)
            continue
        m = _HIST_HEAD_RE.fullmatch(stripped)
        if m is not None:
            hist, table, block = Histogram(m[1]), None, "hist"
            rep.histograms.append(hist)
            continue
        if block == "leak":
            rep.leak_check.append(line.rstrip())
        elif block == "mapping":
            if stripped == "Short Name, Long Name":
                continue
            short, sep, long = line.partition(", ")
            if sep and short.strip():
                rep.kernel_name_mapping[short.strip()] = long
            else:
                problem("unreadable kernel name mapping line", lineno)
        elif block == "table" and table is not None:
            if stripped.startswith("Total Time (ns):"):
                tm = _INT_RE.fullmatch(stripped.split(":", 1)[1].strip())
                if tm is None:
                    problem("unreadable Total Time", lineno)
                else:
                    table.total_time_ns = int(tm[0])
                continue
            if stripped.startswith("Function Name,"):
                continue
            row = _parse_row(line)
            if row is None:
                garbled += 1
                problem(f"unreadable timing row: {stripped[:60]!r}", lineno)
            else:
                table.rows.append(row)
        elif block == "hist" and hist is not None:
            if stripped.startswith("Total Events:"):
                em = _INT_RE.fullmatch(stripped.split(":", 1)[1].strip())
                hist.total_events = int(em[0]) if em else None
                continue
            hm = _HIST_ROW_RE.fullmatch(line)
            if hm is None:
                problem(f"unreadable histogram row: {stripped[:60]!r}", lineno)
            else:
                hist.bins.append(HistogramBin(int(hm[2]), int(hm[3]), hm[1] == ">="))
        else:
            # MDAPI counters and other blocks this version does not know: kept silent only
            # if they come after a known block; text before "Total Enqueues" is a problem
            if rep.sessions == 0:
                problem(f"unexpected text before 'Total Enqueues': {stripped[:60]!r}", lineno)
    if rep.sessions == 0:
        rep.problems.append(Problem("no 'Total Enqueues' line: not a report or truncated", where))
    if data and not data.endswith("\n"):
        rep.problems.append(Problem("report ends mid-line (truncated?)", where))
    return rep
