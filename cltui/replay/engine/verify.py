"""A bundle verifies itself before anything of it runs: its ``manifest.json`` is held to
``manifest.schema.json`` (:mod:`.schemacheck`), every data key the plan names is in ``data``,
every path is confined to the bundle (not absolute, no ``..``, no control character, no link
on the way, a regular file or, for include folders, a folder), and every data file has the
manifest's size and the sha256 both the manifest and ``SHA256SUMS`` give it.

The first problem is one line (:class:`BundleRefused`, exit 2 in the runners); no file is
opened outside the bundle.  replay.cpp's ``cpp/verify.hpp`` checks the same, in the same
order, with the same words (``tests/fixtures/bundle_cases.json`` holds both).  Standard
library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from ...capture.safeopen import TooLarge, read_limited
from .base import EngineError
from .schema import Manifest
from .schemacheck import first_problem, manifest_schema, printable

__all__ = ["MANIFEST_LIMIT", "BundleRefused", "read_manifest", "verify_bundle"]

MANIFEST_LIMIT = 256 << 20  # bytes: a larger manifest.json is refused unread
SUMS_LIMIT = 16 << 20
CHUNK = 1 << 20


class BundleRefused(EngineError):
    """A bundle that is damaged or whose manifest is bad or points outside it (one line)."""


def _damaged(what: str) -> BundleRefused:
    return BundleRefused(f"bundle damaged: {what}")


def _bad(what: str) -> BundleRefused:
    return BundleRefused(f"bad manifest: {what}")


def _read_limited(base: Path, name: str, limit: int) -> bytes:
    _walk(base, name, want="file")
    try:  # a regular file, no link, never blocking, never more than limit + 1 bytes
        return read_limited(base / name, limit)
    except TooLarge:
        raise _damaged(f"{name} is larger than {limit >> 20} MiB") from None
    except OSError:
        raise _damaged(f"cannot read {name}") from None


def read_manifest(root: str | Path) -> Manifest:
    """The bundle's ``manifest.json``, parsed and held to the schema (not yet the files)."""
    base = Path(root)
    raw = _read_limited(base, "manifest.json", MANIFEST_LIMIT)
    try:  # as strict as replay.cpp's reader: no NaN, no duplicate key, bounded nesting
        doc = json.loads(raw.decode("utf-8"), parse_constant=_refuse, object_pairs_hook=_unique)
    except (ValueError, RecursionError):
        raise _bad("manifest.json is not valid JSON") from None
    said = first_problem(doc, manifest_schema())
    if said:
        raise _bad(said)
    return cast(Manifest, doc)


def _refuse(name: str) -> None:
    raise ValueError(name)


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("duplicate key")
    return out


def verify_bundle(root: str | Path) -> Manifest:
    """The bundle's plan after every check of this module, else :class:`BundleRefused`."""
    base = Path(root)
    plan = read_manifest(base)
    data = plan["data"]
    for where, table, name in _refs(plan):
        if name not in plan[table]:  # type: ignore[literal-required]
            raise _bad(f"{where}: '{printable(name)}' is not in {table}")
    for where, text in _hex_fields(plan):
        if len(text) % 2 or any(c not in "0123456789abcdefABCDEF" for c in text):
            raise _bad(f"{where}: '{printable(text)}' is not hex bytes")
    sums: dict[str, str] | None = None
    done: set[str] = set()
    for key, ref in data.items():
        rel = ref["path"]
        _confine(f"data.{printable(key)}.path", rel)
        _walk(base, rel, want="file")
        st = os.stat(base / rel, follow_symlinks=False)
        if st.st_size != ref["size"]:
            raise _damaged(f"{printable(rel)}: {st.st_size} bytes, the manifest says {ref['size']}")
        if rel in done:
            continue
        if sums is None:
            sums = _sums(base)
        listed = sums.get(rel)
        if listed is None:
            raise _damaged(f"{printable(rel)} is not in SHA256SUMS")
        digest = _sha256(base, rel, ref["size"])
        if digest != listed or digest != ref.get("sha256", digest):
            raise _damaged(f"{printable(rel)} sha256 mismatch")
        done.add(rel)
    for pid, prog in plan["programs"].items():
        for i, rel in enumerate(prog.get("include_dirs", [])):
            _confine(f"programs.{printable(pid)}.include_dirs[{i}]", rel)
            _walk(base, rel, want="folder")
    return plan


def _refs(plan: Manifest) -> Iterator[tuple[str, str, str]]:
    """Every name the plan uses, as (where, the table it names, the name), in the manifest's
    order: programs (data), memory (parents), steps (program, arguments, loads, checks,
    replayed transfers)."""
    doc: dict[str, Any] = cast(dict[str, Any], plan)
    for pid, prog in doc["programs"].items():
        at = f"programs.{printable(pid)}"
        for name in ("source", "il"):
            if prog.get(name) is not None:
                yield f"{at}.{name}", "data", prog[name]
        for i, b in enumerate(prog.get("binaries", [])):
            yield f"{at}.binaries[{i}].data", "data", b["data"]
    for mid, mem in doc["memory"].items():
        if "parent" in mem:
            yield f"memory.{printable(mid)}.parent", "memory", mem["parent"]
    for n, step in enumerate(doc["steps"]):
        at = f"steps[{n}]"
        yield f"{at}.program", "programs", step["program"]
        for i, a in enumerate(step["args"]):
            if "mem" in a:
                yield f"{at}.args[{i}].mem", "memory", a["mem"]
        for group in ("loads", "prechecks", "checks"):
            for i, c in enumerate(step.get(group, [])):
                yield f"{at}.{group}[{i}].mem", "memory", c["mem"]
                if "data" in c:
                    yield f"{at}.{group}[{i}].data", "data", c["data"]
        for i, t in enumerate(step.get("transfers", [])):
            if t.get("replayed") == "op" and t.get("op"):
                for key, name in (("mem", t.get("mem")), ("op.src", t["op"].get("src"))):
                    if name is not None:
                        yield f"{at}.transfers[{i}].{key}", "memory", name


def _hex_fields(plan: Manifest) -> Iterator[tuple[str, str]]:
    """The plan's bytes written as hex: scalar arguments' values, fill patterns (steps'
    order)."""
    for n, step in enumerate(plan["steps"]):
        for i, a in enumerate(step["args"]):
            if "hex" in a:
                yield f"steps[{n}].args[{i}].hex", a["hex"]
        for i, t in enumerate(step.get("transfers", [])):
            if isinstance(t.get("op"), dict) and "pattern" in (t["op"] or {}):
                yield f"steps[{n}].transfers[{i}].op.pattern", (t["op"] or {})["pattern"]


def _confine(where: str, rel: str) -> None:
    """A path of the manifest, held to the bundle by its text."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in rel) or "\\" in rel:
        raise _bad(f"{where}: '{printable(rel)}' has a control character or a backslash")
    if rel.startswith("/"):
        raise _bad(f"{where}: '{rel}' is an absolute path")
    if ".." in rel.split("/"):
        raise _bad(f"{where}: '{rel}' leads outside the bundle")


def _walk(base: Path, rel: str, *, want: str) -> None:
    """Each component of ``rel`` under ``base``, never followed: no link, the last one a
    regular file (``want="file"``) or a folder."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts:
        raise _damaged(
            f"{printable(rel)} is not a {'regular file' if want == 'file' else 'folder'}"
        )
    for i in range(len(parts)):
        shown = printable("/".join(parts[: i + 1]))
        try:
            st = os.stat(base.joinpath(*parts[: i + 1]), follow_symlinks=False)
        except OSError:
            raise _damaged(f"{shown} is missing") from None
        if stat.S_ISLNK(st.st_mode):
            raise _damaged(f"{shown} is a link")
        last = i == len(parts) - 1
        if not last and not stat.S_ISDIR(st.st_mode):
            raise _damaged(f"{shown} is not a folder")
        if last and want == "file" and not stat.S_ISREG(st.st_mode):
            raise _damaged(f"{shown} is not a regular file")
        if last and want == "folder" and not stat.S_ISDIR(st.st_mode):
            raise _damaged(f"{shown} is not a folder")


def _sums(base: Path) -> dict[str, str]:
    """``SHA256SUMS``: path -> sha256 (``sha256sum`` format)."""
    raw = _read_limited(base, "SHA256SUMS", SUMS_LIMIT)
    out: dict[str, str] = {}
    for n, line in enumerate(raw.decode("utf-8", "replace").splitlines(), 1):
        if not line.strip():
            continue
        digest, sep, rel = line.partition("  ")
        if not sep or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise _damaged(f"SHA256SUMS line {n} is not '<sha256>  <path>'")
        out[rel] = digest
    return out


def _sha256(base: Path, rel: str, size: int) -> str:
    """The sha256 of the first ``size`` bytes (the file's size, checked just before)."""
    h = hashlib.sha256()
    left = size
    try:
        with (base / rel).open("rb") as f:
            while left > 0 and (chunk := f.read(min(CHUNK, left))):
                h.update(chunk)
                left -= len(chunk)
    except OSError:
        raise _damaged(f"cannot read {printable(rel)}") from None
    return h.hexdigest()
