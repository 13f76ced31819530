"""Opening a capture folder: :func:`open_capture` (the call log's index, the dump and program
scans, the report, then :class:`~cltui.capture.capture.Capture`), what names a capture
(:func:`check_capture_folder`) and the ``<path>.<pid>`` folders of the layer's AppendPid."""

from __future__ import annotations

import glob
import os
from pathlib import Path

from cltui.capture import files
from cltui.capture import log as li
from cltui.capture.capture import Capture
from cltui.capture.confine import is_file, leaves, outside_message
from cltui.capture.decode.dumpsizes import damaged_dumps
from cltui.capture.files.report import Report
from cltui.capture.model import CAPTURE_HOLDS, CaptureError, NotACapture, Problem
from cltui.progress import CancelToken, ProgressEvent, ProgressFn


def open_capture(
    path: str | Path,
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
) -> Capture:
    """Open a dump directory; raises only :class:`CaptureError`."""
    try:
        return _open(Path(path), progress, cancel)
    except CaptureError:
        raise
    except Exception as e:
        raise CaptureError(f"{path}: cannot open capture: {type(e).__name__}: {e}") from None


def pid_folders(root: Path) -> list[tuple[Path, int | None, int]]:
    """``<root>.<pid>`` folders beside ``root`` holding a call log (the layer's ``AppendPid``:
    each process writes its own), as (folder, the report's total enqueues or None, log size),
    the process with the most enqueues first (a process that left no report ranks by its
    log's size, after those whose report counts enqueues)."""
    out: list[tuple[Path, int | None, int]] = []
    try:
        siblings = list(root.parent.glob(f"{glob.escape(root.name)}.*"))
    except OSError:
        return out
    for d in siblings:
        if not d.name[len(root.name) + 1 :].isdigit() or not d.is_dir():
            continue
        logs = li.find_logs(d)
        if not logs:
            continue
        total = None
        rp = d / "clintercept_report.txt"
        if is_file(rp)[0]:
            rep = files.parse_report(rp)
            total = rep.total_enqueues if rep is not None else None
        out.append((d, total, logs[0].stat().st_size))

    def rank(t: tuple[Path, int | None, int]) -> tuple[int, int]:
        # the report's count first; a process without a report (it did not exit normally)
        # by its log's size, before one whose report says it made no enqueue
        if t[1] is None:
            return (1, t[2])
        return (2, t[1]) if t[1] > 0 else (0, t[2])

    out.sort(key=rank, reverse=True)
    return out


def _capture_folders(root: Path, limit: int = 8) -> list[str]:
    """Names of the folders directly inside ``root`` that hold a call log."""
    try:
        subs = sorted(d for d in root.iterdir() if d.is_dir())
    except OSError:
        return []
    return [d.name for d in subs if li.find_logs(d)][:limit]


def _shown(path: Path | str) -> str:
    """``path`` for a message: control and other unprintable characters escaped."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in str(path))


def _layer_file(name: str, is_dir: bool) -> bool:
    """True for a name the Intercept Layer writes into its dump folder."""
    if is_dir:
        return name.startswith("memDump") or name in ("SetKernelArg", "Replay")
    return name.startswith(("clintercept_", "CLI_"))


def check_capture_folder(path: str | Path) -> None:
    """Raise :class:`NotACapture` unless ``path`` names a capture: a folder holding at least
    one file or folder of the layer's (however damaged the capture is), or the
    ``<path>.<pid>`` folders of the layer's AppendPid.  Reads one directory listing."""
    root = Path(path)
    shown = _shown(root)
    try:
        is_dir = root.is_dir()
        exists = is_dir or root.exists()
    except OSError as e:  # e.g. a name too long, a folder we may not enter
        raise NotACapture(f"{shown}: {e.strerror or e}") from None
    if not exists:
        if pid_folders(root):
            return
        raise NotACapture(f"{shown} does not exist (a capture folder holds {CAPTURE_HOLDS})")
    if not is_dir:
        hint = ""
        if _layer_file(root.name, False) or root.suffix.lower() in (".bin", ".raw", ".cl"):
            hint = f"; give the folder that holds it: {_shown(root.parent)}"
        raise NotACapture(
            f"{shown} is a file, not a capture folder: expected {CAPTURE_HOLDS}{hint}"
        )
    try:
        with os.scandir(root) as it:
            for entry in it:
                try:
                    entry_is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if _layer_file(entry.name, entry_is_dir):
                    return
    except OSError as e:
        raise NotACapture(f"{shown}: cannot list the folder: {e.strerror or e}") from None
    inside = _capture_folders(root)
    hint = f"; captures inside it: {', '.join(_shown(n) for n in inside)}" if inside else ""
    raise NotACapture(f"{shown} is not a capture folder: expected {CAPTURE_HOLDS}{hint}")


def _open(root: Path, progress: ProgressFn | None, cancel: CancelToken | None) -> Capture:
    problems: list[Problem] = []
    check_capture_folder(root)  # NotACapture: missing, a file, none of the layer's files
    if not root.exists():
        root = _append_pid_root(root, problems)
    if not root.is_dir():
        raise NotACapture(f"{_shown(root)} is not a directory")
    logs = li.find_logs(root, problems)
    dumps = files.scan_dumps(root, None)
    problems.extend(dumps.problems)
    problems.extend(damaged_dumps(dumps))  # dump files cut short or emptied (a stat per dump)
    have_dumps = bool(dumps.pre or dumps.post or dumps.replay or dumps.setkernelarg)
    if not logs and not have_dumps:
        inside = _capture_folders(root)
        hint = f"; captures inside it: {', '.join(inside)}" if inside else ""
        why = "".join(f"; {p.where}: {p.message}" for p in problems if "clintercept_log" in p.where)
        raise CaptureError(
            f"{root} contains no readable clintercept_log.txt and no dump folders{why}{hint}"
        )
    log = _read_log(logs, have_dumps, problems, progress, cancel) if logs else None
    if not logs:
        problems.append(Problem("no clintercept_log.txt: enqueues come from the dump files only"))
    programs, pprobs = files.scan_programs(root)
    problems.extend(pprobs)
    rp = root / "clintercept_report.txt"
    report = _read_report(root, rp, problems)
    cap = Capture(root, log, dumps, programs, report, problems, log_missing=not logs)
    if report is not None and log is not None:
        total = report.total_enqueues
        if total is not None and len(cap) and total != int(cap.numbers.max()) + 1:
            problems.append(
                Problem(
                    f"the report says {total} enqueues, the log ends at "
                    f"{int(cap.numbers.max()) + 1}",
                    rp.name,
                )
            )
    if progress is not None:
        progress(ProgressEvent(1.0))
    return cap


def _append_pid_root(root: Path, problems: list[Problem]) -> Path:
    """For a ``root`` that does not exist: the AppendPid folder of the process with the
    most enqueues (a problem says which and names the others)."""
    pids = pid_folders(root)
    if not pids:
        raise NotACapture(f"{_shown(root)} does not exist")
    chosen = pids[0][0]
    others = ", ".join(
        f"{d.name} ({'no report' if t is None else f'{t:,} enqueues'})" for d, t, _ in pids[1:]
    )
    problems.append(
        Problem(
            f"{root.name} does not exist; opened {chosen.name}, one folder per process "
            f"(AppendPid)" + (f"; the others: {others}" if others else "")
        )
    )
    return chosen


def _read_log(
    logs: list[Path],
    have_dumps: bool,
    problems: list[Problem],
    progress: ProgressFn | None,
    cancel: CancelToken | None,
) -> li.LogIndex | None:
    """The index of the first call log; None (with a problem) when it cannot be read or
    holds no enqueue and the dump files can stand in for it."""
    log: li.LogIndex | None = None
    if len(logs) > 1:
        problems.append(Problem(f"{len(logs)} call logs found; using {logs[0].name}"))
    try:
        log = li.build_index(logs[0], progress, cancel)
    except li.IndexCancelled:
        raise
    except CaptureError as e:
        if not have_dumps:
            raise
        problems.append(Problem(f"{e}; using the dump files only", logs[0].name, None, "error"))
    if log is not None:
        problems.extend(log.problems)
        if len(log.numbers) == 0 and have_dumps:
            problems.append(
                Problem("the call log holds no enqueues; using the dump files", logs[0].name)
            )
            log.close()
            log = None
    return log


def _read_report(root: Path, rp: Path, problems: list[Problem]) -> Report | None:
    """The parsed ``clintercept_report.txt`` (None: none, a link out of the capture, not a
    file or unreadable: a problem says which)."""
    rp_target = leaves(root, rp) if rp.is_symlink() else None
    if rp_target is not None:
        problems.append(Problem(outside_message(rp_target), rp.name))
    elif (rp_state := is_file(rp))[1] is not None:
        problems.append(Problem(f"the report: {rp_state[1]}", rp.name))
    elif rp_state[0]:
        report = files.parse_report(rp)
        if report is None:
            problems.append(Problem("the report could not be read", rp.name))
        return report
    return None
