"""Building a plan's programs: from source (with a binary cache), from SPIR-V or from the
captured binary of the device named most alike.  The :class:`Programs` part of
:class:`.core.Engine` owns what was built and how."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...text.shellwords import include_option, include_spans, replace_spans
from .base import (
    EngineError,
    EngineOptions,
    Shared,
    _cl_msg,
    build_program,
    include_spelling,
)
from .buildlog import at_source, build_errors, log_lines
from .choice import most_alike
from .feasible import build_findings, source_needs
from .schema import BuildInfo, ProgramSpec

if TYPE_CHECKING:
    import pyopencl as cl

    from .preflight import Preflight


def _build_options(options: str) -> tuple[str, list[str]]:
    """Captured options with an include folder that does not exist here mapped to this
    machine's (pyopencl's headers), and one with a space named as
    :func:`.base.include_spelling` says; the rest of the text as captured, a folder that is
    not here included (drivers pass over it; the C++ runner passes the same text)."""
    notes: list[str] = []
    edits: list[tuple[int, int, str | None]] = []
    for start, end, path in include_spans(options):
        if os.path.isdir(path):
            spelled = include_spelling(path)
            if spelled != path:
                edits.append((start, end, include_option(spelled)))
            continue
        local = _local_include(path)
        if local is not None:
            edits.append((start, end, include_option(include_spelling(local))))
            notes.append(f"include path {path} mapped to {local}")
        else:
            notes.append(f"include path {path} does not exist here: given as captured")
    return replace_spans(options, edits), notes


def _local_include(path: str) -> str | None:
    norm = path.rstrip("/")
    if norm.endswith("pyopencl/cl"):
        try:
            import pyopencl

            cand = os.path.join(os.path.dirname(pyopencl.__file__), "cl")
            if os.path.isdir(cand):
                return cand
        except ImportError:  # pragma: no cover
            return None
    return None


def _pick_binary(binaries: list[dict[str, str]], device: str) -> tuple[dict[str, str] | None, str]:
    """The captured binary to build a program from on ``device``: the one made on it
    (``"binary"``), else the one made on the device named most like it (``"binary made on
    <name>"``: PoCL's binaries load on another CPU of the same target, NVIDIA's are PTX),
    else (None, "")."""
    made_on = [str(b.get("device", "")).strip() for b in binaries]
    if device in made_on:
        return binaries[made_on.index(device)], "binary"
    i = most_alike(made_on, device)
    if i is None:
        return None, ""
    return binaries[i], f"binary made on {made_on[i]}"


_SAVED = re.compile(r"\(source saved as ([^\n]+\.cl)\)")


def drop_saved_source(message: str) -> None:
    """Remove the temp file pyopencl saved a failed build's source in and never removes
    (where the driver has no build cache of its own: Oclgrind); ``message`` is its error's.
    Only a regular file named like Python's temp files in the temp folder."""
    m = _SAVED.search(message)
    if m is None:
        return
    path = Path(m.group(1))
    if path.parent != Path(tempfile.gettempdir()) or not re.fullmatch(r"tmp\w+\.cl", path.name):
        return
    with contextlib.suppress(OSError):
        if stat.S_ISREG(path.lstat().st_mode):
            path.unlink()


def _cause_lines(message: str) -> list[str]:
    """The lines of pyopencl's build-failure message that say why (an empty build log: a bad
    option), without its own wrapping (``clBuildProgram failed``, ``Build on``, the options,
    where it saved the source)."""
    wrap = ("clbuildprogram failed", "build on ", "(options:", "(source saved")
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    return [ln for ln in lines if not ln.lower().startswith(wrap)]


class Programs:
    """Building a plan's programs (see the module doc): how each was built (``builds``), the
    last failed build's log (``build_log``); the steps a failed build that the source's needs
    explain become cannot-run in the :class:`.preflight.Preflight`."""

    def __init__(self, opts: EngineOptions, notes: list[str], preflight: Preflight) -> None:
        self.plan = opts.plan
        self.device = opts.device
        self.loader = opts.loader
        self.progress = opts.progress
        self.binary_cache: Path | None = opts.binary_cache
        self.notes = notes  # the engine's notes (one list for every part)
        self.preflight = preflight
        self.builds: dict[str, BuildInfo] = {}
        self.build_log = ""
        self.shared: Shared | None = None
        self._stamps: dict[str, bytes] = {}  # include folder -> its files' stamp

    def build_all(
        self, dev: cl.Device, ctx: cl.Context, shared: Shared | None = None
    ) -> dict[str, cl.Program]:
        """Every program a step that can run here uses, built for ``dev`` in ``ctx`` (a
        :class:`.base.Shared` keeps them for the next engine); a build failure that the
        source's needs explain (double on a device without fp64, ...) makes its steps
        cannot-run."""
        self.dev, self.ctx, self.shared = dev, ctx, shared
        built: dict[str, cl.Program] = {}
        steps = self.plan["steps"]
        used = {s["program"] for i, s in enumerate(steps) if i not in self.preflight.cannot}
        for pid, info in self.plan["programs"].items():
            if pid not in used:
                continue
            self.progress({"type": "build", "program": pid, "label": info.get("label", pid)})
            options, notes = _build_options(info.get("options") or "")
            for note in notes:  # the same include mapping for every program: say it once
                if note not in self.notes:
                    self.notes.append(note)
            try:
                built[pid] = self._build_program(pid, info, options)
            except EngineError as exc:
                if not self._explain_build(pid, info, str(exc)):
                    raise
        return built

    def _explain_build(self, pid: str, info: ProgramSpec, error: str) -> bool:
        """A failed build that what the source needs and the device lacks explains: its
        steps become cannot-run (True); else False (the build error stands)."""
        facts = self.preflight.facts
        if facts is None or not info.get("source"):
            return False
        try:
            text = bytes(self.loader(str(info["source"]))).decode("utf-8", "replace")
        except EngineError:
            return False
        name = self._source_name(info)  # the log's positions, in the program's own file
        log = "".join(at_source(ln, name) + "\n" for ln in log_lines(self.build_log or error))
        found = build_findings(self.plan, pid, source_needs(text), facts, log)
        index = {int(s["enqueue"]): i for i, s in enumerate(self.plan["steps"])}
        for f in found:
            self.preflight.cannot.setdefault(index[f["enqueue"]], []).append(f)
        return bool(found)

    def _build_program(self, pid: str, info: ProgramSpec, options: str) -> cl.Program:
        """One program, from a cached binary, its source, its SPIR-V or a captured binary;
        ``builds[pid]`` says how and how long it took."""
        import pyopencl as cl

        t0 = time.perf_counter()
        how = ""
        key: str | None = None
        prg: cl.Program | None = None
        text = ""
        try:
            if info.get("source"):
                src = bytes(self.loader(str(info["source"]))).rstrip(b"\0")
                text = src.decode("utf-8", "replace")
                shared = self.shared.programs if self.shared is not None else None
                if shared is not None and (text, options) in shared:
                    self.builds[pid] = {"how": "source (built before)",
                                        "seconds": time.perf_counter() - t0}  # fmt: skip
                    return shared[(text, options)]
                key = self._cache_key(text, options)
                cached = self._cached_program(key, options)
                if cached is not None:
                    if shared is not None:
                        shared[(text, options)] = cached
                    self.builds[pid] = {
                        "how": "source (cached binary)",
                        "seconds": time.perf_counter() - t0,
                    }
                    return cached
                prg, how = cl.Program(self.ctx, text), "source"
            elif info.get("il"):
                prg, how = cl.Program(self.ctx, bytes(self.loader(str(info.get("il"))))), "il"
            else:
                data, how = self._binary_for(pid, info)  # how first: a load failure names it
                prg = cl.Program(self.ctx, [self.dev], [bytes(self.loader(data))])
            with warnings.catch_warnings():  # compiler chatter is not a replay problem
                warnings.simplefilter("ignore")
                build_program(prg, options)
        except cl.Error as exc:
            drop_saved_source(str(exc))
            raise self._build_error(pid, info, how, prg, exc) from None
        if how == "source":
            self._cache_store(key, prg)
            if self.shared is not None:
                self.shared.programs[(text, options)] = prg
        self.builds[pid] = {"how": how, "seconds": time.perf_counter() - t0}
        return prg

    def _binary_for(self, pid: str, info: ProgramSpec) -> tuple[str, str]:
        """A program without source: the data key of the binary made on this device, else on
        the one named most like it (a note says so); how (``binary``, ``binary made on
        <name>``)."""
        chosen, how = _pick_binary(info.get("binaries", []), self.device["name"])
        if chosen is None:
            devs = ", ".join(b.get("device", "?") for b in info.get("binaries", []))
            raise EngineError(
                f"{info.get('label', pid)} has no source and no binary for "
                f"{self.device['name']} (binaries for: {devs or 'none'})"
            )
        if how != "binary":
            self.notes.append(
                f"{info.get('label', pid)}: no source in the capture; built from "
                f"the binary made on {chosen.get('device')}, a device named like "
                f"{self.device['name']} (its driver decides whether it loads)"
            )
        return chosen["data"], how

    def _build_error(
        self, pid: str, info: ProgramSpec, how: str, prg: cl.Program | None, exc: Exception
    ) -> EngineError:
        """The one-line error of a failed build (the first error line of its log, kept in
        ``build_log``)."""
        import pyopencl as cl

        log = ""
        try:
            if prg is not None:
                build_info: Any = prg.get_build_info  # untyped in pyopencl
                log = str(build_info(self.dev, cl.program_build_info.LOG))
        except Exception:
            log = ""
        self.build_log = log or str(exc)  # pyopencl's message holds the log where the query fails
        lines = build_errors(log) or _cause_lines(str(exc))
        first = lines[0][:200].rstrip() if lines else _cl_msg(exc).splitlines()[0]
        if how == "source":  # the position in the driver's temp file is the source's own
            first = at_source(first, self._source_name(info))
        if how.startswith("binary made on "):
            return EngineError(
                f"{info.get('label', pid)}: the {how} (no source in the capture) "
                f"does not load on {self.device['name']}: {first}"
            )
        return EngineError(
            f"{info.get('label', pid)}: build failed on {self.device['name']}: {first}"
        )

    def _source_name(self, info: ProgramSpec) -> str:
        """The program's source file as the capture or the bundle names it."""
        key = str(info.get("source") or "")
        ref = self.plan.get("data", {}).get(key)
        return str(ref.get("path") or key) if ref else key

    # ---- program binary cache (off unless ``binary_cache`` names a folder) --------------
    # Building from source costs PoCL ~45 ms a program even when its own cache hits (it
    # still preprocesses); from the binary it built, ~1.5 ms.  The key covers the source,
    # the options, the device and driver, pyopencl, and the files in every -I folder.

    def _cache_key(self, src: str, options: str) -> str | None:
        if self.binary_cache is None:
            return None
        import hashlib

        import pyopencl as cl

        h = hashlib.sha256()
        d = self.device
        for part in (
            d.get("name"),
            d.get("driver"),
            d.get("version"),
            d.get("platform_version"),
            cl.VERSION_TEXT,
            options,
            src,
        ):
            h.update(str(part).encode("utf-8", "replace") + b"\0")
        for _start, _end, folder in include_spans(options):
            if folder:
                h.update(self._include_stamp(folder))
        return h.hexdigest()

    def _include_stamp(self, folder: str) -> bytes:
        """Names, sizes and mtimes of the files under an include folder (once per engine)."""
        hit = self._stamps.get(folder)
        if hit is None:
            rows: list[str] = []
            for dirpath, _dirs, names in os.walk(folder):
                for name in sorted(names):
                    try:
                        st = os.stat(os.path.join(dirpath, name))
                    except OSError:
                        continue
                    rows.append(f"{dirpath}/{name}:{st.st_size}:{st.st_mtime_ns}")
            hit = self._stamps[folder] = "\n".join(sorted(rows)).encode("utf-8", "replace")
        return hit

    def _cached_program(self, key: str | None, options: str) -> cl.Program | None:
        """The program built from a cached binary, or None (no cache, a miss, a failure)."""
        import pyopencl as cl

        if key is None or self.binary_cache is None:
            return None
        try:
            binary = (self.binary_cache / f"{key}.bin").read_bytes()
        except OSError:
            return None
        try:
            prg = cl.Program(self.ctx, [self.dev], [binary])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                build_program(prg, options)
        except (cl.Error, ValueError, RuntimeError):  # stale or foreign: build from source
            return None
        return prg

    def _cache_store(self, key: str | None, prg: cl.Program) -> None:
        import pyopencl as cl

        if key is None or self.binary_cache is None:
            return
        try:
            binaries: Any = prg.get_info(cl.program_info.BINARIES)  # typed object by pyopencl
            binary = binaries[0]
            if not binary:
                return
            self.binary_cache.mkdir(parents=True, exist_ok=True)
            tmp = self.binary_cache / f".{key}.{os.getpid()}.tmp"
            tmp.write_bytes(bytes(binary))
            os.replace(tmp, self.binary_cache / f"{key}.bin")  # atomic: readers see all or none
        except (OSError, cl.Error, IndexError, TypeError):
            return  # a cache that cannot be written is only slower
