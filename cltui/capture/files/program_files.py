"""The top-level ``CLI_`` program files (capture-format §5): sources, options, build logs and
binaries grouped by (program number, hash), in one ``os.scandir``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cltui.capture.files.listing import (
    is_file,
    not_regular,
    not_regular_problem,
    rel,
    scandir,
    unrecognised,
)
from cltui.capture.files.text import read_text_lenient
from cltui.capture.model import Problem, Program
from cltui.capture.names import ParsedProgramFileName, parse_program_file_name

__all__ = ["ProgramFiles", "scan_program_files", "scan_programs"]


@dataclass
class ProgramFiles:
    """Every ``CLI_`` file of one program (number, hash), for the capture engineer."""

    number: int | None  # None with OmitProgramNumber
    hash: str
    source: Path | None = None
    # compile count -> (options hash, kind, file); kind: options / compile_options / link_options
    options: dict[int, list[tuple[str, str, Path]]] = field(default_factory=dict)
    build_logs: dict[tuple[int, str], Path] = field(default_factory=dict)  # (count, dev) -> file
    input_binaries: dict[str, Path] = field(default_factory=dict)  # dev -> file
    output_binaries: dict[tuple[int, str], Path] = field(default_factory=dict)
    spirv: Path | None = None
    spvasm: Path | None = None
    isa: list[tuple[ParsedProgramFileName, Path]] = field(default_factory=list)

    def last_options(self) -> tuple[int, str, Path] | None:
        """(compile count, options hash, file) of the highest compile count."""
        if not self.options:
            return None
        count = max(self.options)
        entries = sorted(self.options[count], key=lambda t: (t[1] != "options", t[0]))
        ohash, _kind, p = entries[0]
        return count, ohash, p

    def add(self, p: ParsedProgramFileName, fpath: Path) -> None:
        """File one ``CLI_`` file of this program by its kind."""
        cc = p.compile_count if p.compile_count is not None else 0
        if p.kind == "source":
            self.source = fpath
        elif p.kind in ("options", "compile_options", "link_options"):
            self.options.setdefault(cc, []).append((p.options_hash or "", p.kind, fpath))
        elif p.kind == "build_log":
            self.build_logs[(cc, p.device or "")] = fpath
        elif p.kind == "input_binary":
            self.input_binaries[p.device or ""] = fpath
        elif p.kind == "output_binary":
            self.output_binaries[(cc, p.device or "")] = fpath
        elif p.kind == "spirv":
            self.spirv = fpath
        elif p.kind == "spvasm":
            self.spvasm = fpath
        elif p.kind == "isabin":
            self.isa.append((p, fpath))


def scan_program_files(
    root: Path | str,
) -> tuple[dict[tuple[int | None, str], ProgramFiles], list[Problem]]:
    """Group the top-level ``CLI_`` files by (program number, hash), one ``os.scandir``."""
    root = Path(root)
    problems: list[Problem] = []
    progs: dict[tuple[int | None, str], ProgramFiles] = {}
    for entry in scandir(root, problems, root):
        if not entry.name.startswith("CLI_"):
            continue
        if (kind := not_regular(entry)) is not None:
            problems.append(not_regular_problem(kind, entry.name))
            continue
        if not is_file(entry):
            continue
        p = parse_program_file_name(entry.name)
        if p is None:
            problems.append(Problem(unrecognised("program file name", entry.name), entry.name))
            continue
        pf = progs.get(p.program_key)
        if pf is None:
            pf = progs[p.program_key] = ProgramFiles(p.number, p.hash)
        pf.add(p, Path(entry.path))
    for pf in progs.values():
        for lst in pf.options.values():
            lst.sort()
    ordered = sorted(progs.items(), key=lambda kv: (kv[0][0] is None, kv[0][0] or 0, kv[0][1]))
    return dict(ordered), problems


def _read_options(path: Path, problems: list[Problem], root: Path) -> str:
    try:
        return read_text_lenient(path, root)
    except OSError as e:
        problems.append(Problem(f"cannot read options: {e.strerror or e}", rel(path, root)))
        return ""


def scan_programs(root: Path | str) -> tuple[list[Program], list[Problem]]:
    """One :class:`~cltui.capture.model.Program` per (number, hash) found in ``CLI_`` names.

    ``options`` is the text of the last build's options file (highest compile count);
    ``build_logs`` / ``binaries`` map the device tag to the file of the last compile count that
    has one (``binaries`` also holds input binaries under ``"input:<dev>"``).  Programs named
    ``0000_00000000`` with only a build log are the §5.3 link quirk and are kept as they are.
    """
    root = Path(root)
    groups, problems = scan_program_files(root)
    out: list[Program] = []
    for pf in groups.values():
        last = pf.last_options()
        options, options_path = "", None
        if last is not None:
            options_path = last[2]
            options = _read_options(options_path, problems, root)
        logs: dict[str, Path] = {}
        for (_cc, dev), p in sorted(pf.build_logs.items()):
            logs[dev] = p  # later compile counts overwrite earlier ones
        bins: dict[str, Path] = {f"input:{d}": p for d, p in sorted(pf.input_binaries.items())}
        for (_cc, dev), p in sorted(pf.output_binaries.items()):
            bins[dev] = p
        out.append(
            Program(
                number=pf.number if pf.number is not None else -1,
                hash=pf.hash,
                source_path=pf.source or pf.spirv,
                options=options,
                options_path=options_path,
                build_logs=logs,
                binaries=bins,
            )
        )
    return out, problems
