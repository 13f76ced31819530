"""Everything the capture model reads from files other than the call log.

* :mod:`.dumps`: one-pass scans of the dump folders (§3, §4, §6.1);
* :mod:`.program_files`: the ``CLI_`` program files (§5);
* :mod:`.report`: ``clintercept_report.txt`` (§7);
* :mod:`.text`: lenient text reading and sampler descriptions;
* :mod:`.listing`: listing a folder without leaving the capture.

The layer's hash is :mod:`cltui.capture.hashing`, a ``Replay/`` folder
:mod:`cltui.capture.replayfolder`, memory maps :func:`cltui.capture.confine.map_bytes`, the
file-name grammar :mod:`cltui.capture.names`.  Nothing in this package raises on bad input:
unreadable or unexpected files become :class:`~cltui.capture.model.Problem` entries.
"""

from cltui.capture.files.dumps import (
    DumpIndex,
    DumpTable,
    MapUnmapDump,
    looks_like_hash_dump,
    scan_dumps,
)
from cltui.capture.files.program_files import ProgramFiles, scan_program_files, scan_programs
from cltui.capture.files.report import (
    HistogramBin,
    Report,
    TimingRow,
    TimingTable,
    parse_report,
)
from cltui.capture.files.text import parse_sampler_text, read_text_lenient, source_is_utf8

__all__ = [
    "DumpIndex",
    "DumpTable",
    "HistogramBin",
    "MapUnmapDump",
    "ProgramFiles",
    "Report",
    "TimingRow",
    "TimingTable",
    "looks_like_hash_dump",
    "parse_report",
    "parse_sampler_text",
    "read_text_lenient",
    "scan_dumps",
    "scan_program_files",
    "scan_programs",
    "source_is_utf8",
]
