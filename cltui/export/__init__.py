"""Export a range of a capture as a standalone replay bundle (Python and C++/CMake)."""

from cltui.export.bundle import BundleWriter, ExportCancelled, ExportError, stream_tar
from cltui.export.exporter import (
    ExportResult,
    bundle_name,
    export_plan,
    export_range,
    parse_langs,
)

__all__ = [
    "BundleWriter",
    "ExportCancelled",
    "ExportError",
    "ExportResult",
    "bundle_name",
    "export_plan",
    "export_range",
    "parse_langs",
    "stream_tar",
]
