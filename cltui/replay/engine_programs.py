"""Building a plan's programs: from source (with a binary cache), from SPIR-V or from the
captured binary of the device named most alike.  A mixin of :class:`engine.Engine`; copied
beside ``engine.py`` in a bundle."""

from __future__ import annotations

import os
import time
import warnings
from typing import Any

if __package__:
    from ..capture.shellwords import split_words
    from .engine_base import (
        EngineError,
        _build_options,
        _cl_msg,
        _EngineState,
        _pick_binary,
    )
else:  # pragma: no cover - the exported bundle runs this file as a script
    from engine_base import (  # type: ignore[no-redef, import-not-found]
        EngineError,
        _build_options,
        _cl_msg,
        _EngineState,
        _pick_binary,
    )
    from shellwords import split_words  # type: ignore[no-redef, import-not-found]


class _Programs(_EngineState):
    """Building a plan's programs: from source (with a binary cache), from SPIR-V or from the"""

    def _build_programs(self) -> dict[str, Any]:
        import pyopencl as cl

        built: dict[str, Any] = {}
        used = {s["program"] for s in self.plan["steps"]}
        for pid, info in self.plan["programs"].items():
            if pid not in used:
                continue
            self.progress({"type": "build", "program": pid, "label": info.get("label", pid)})
            options, notes = _build_options(info.get("options") or "")
            for note in notes:  # the same include mapping for every program: say it once
                if note not in self.notes:
                    self.notes.append(note)
            t0 = time.perf_counter()
            how = ""
            try:
                if info.get("source"):
                    src = (
                        bytes(self.loader(info["source"])).rstrip(b"\0").decode("utf-8", "replace")
                    )
                    key = self._cache_key(src, options)
                    prg = self._cached_program(key, options)
                    if prg is not None:
                        self.builds[pid] = {
                            "how": "source (cached binary)",
                            "seconds": time.perf_counter() - t0,
                        }
                        built[pid] = prg
                        continue
                    prg = cl.Program(self.ctx, src)
                    how = "source"
                elif info.get("il"):
                    prg = cl.Program(self.ctx, bytes(self.loader(info["il"])))
                    how = "il"
                else:
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
                    prg = cl.Program(self.ctx, [self.dev], [bytes(self.loader(chosen["data"]))])
                with warnings.catch_warnings():  # compiler chatter is not a replay problem
                    warnings.simplefilter("ignore")
                    prg.build(options=options)
            except cl.Error as exc:
                log = ""
                try:
                    prg_any: Any = prg
                    log = str(prg_any.get_build_info(self.dev, cl.program_build_info.LOG))
                except Exception:
                    log = ""
                self.build_log = log
                lines = [ln.strip() for ln in log.splitlines() if "error" in ln.lower()]
                first = lines[0] if lines else _cl_msg(exc).splitlines()[0]
                if how.startswith("binary made on "):
                    raise EngineError(
                        f"{info.get('label', pid)}: the {how} (no source in the capture) "
                        f"does not load on {self.device['name']}: {first}"
                    ) from None
                raise EngineError(
                    f"{info.get('label', pid)}: build failed on {self.device['name']}: {first}"
                ) from None
            if how == "source":
                self._cache_store(key, prg)
            self.builds[pid] = {"how": how, "seconds": time.perf_counter() - t0}
            built[pid] = prg
        return built

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
        parts = split_words(options)
        for i, part in enumerate(parts):
            folder = parts[i + 1] if part == "-I" and i + 1 < len(parts) else None
            if folder is None and part.startswith("-I") and len(part) > 2:
                folder = part[2:]
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

    def _cached_program(self, key: str | None, options: str) -> Any:
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
                prg.build(options=options)
        except (cl.Error, ValueError, RuntimeError):  # stale or foreign: build from source
            return None
        return prg

    def _cache_store(self, key: str | None, prg: Any) -> None:
        import pyopencl as cl

        if key is None or self.binary_cache is None:
            return
        try:
            binary = prg.get_info(cl.program_info.BINARIES)[0]
            if not binary:
                return
            self.binary_cache.mkdir(parents=True, exist_ok=True)
            tmp = self.binary_cache / f".{key}.{os.getpid()}.tmp"
            tmp.write_bytes(bytes(binary))
            os.replace(tmp, self.binary_cache / f"{key}.bin")  # atomic: readers see all or none
        except (OSError, cl.Error, IndexError, TypeError):
            return  # a cache that cannot be written is only slower
