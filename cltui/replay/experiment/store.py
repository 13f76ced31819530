"""Named variants in the user's data folder, never inside a capture.

``$XDG_DATA_HOME/cltui/variants/<capture key>/<name>/`` (``~/.local/share`` without
``XDG_DATA_HOME``; ``$CLTUI_DATA_DIR/variants`` first when set) holds ``variant.json`` (the
changes) and one file per program change: ``<program>.patch`` (a unified diff) or
``<program>.cl`` (a new source).  The capture key is the capture folder's name and a hash of
the start and size of its log (so a capture that moves keeps its variants).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from cltui.capture.names import sanitize_component
from cltui.capture.safeopen import (
    MAX_SOURCE,
    MAX_VARIANT,
    NotRegular,
    TooLarge,
    open_regular,
    read_limited,
    read_text_limited,
)
from cltui.replay.experiment.variant import (
    _NAME_RE,
    ProgramChange,
    Variant,
    VariantError,
    check_name,
)

__all__ = ["capture_key", "delete_variant", "list_variants", "load_result", "load_variant",
           "save_variant", "variants_root"]  # fmt: skip

_HEAD = 1 << 20  # bytes of the log that name a capture


def variants_root() -> Path:
    """Where every capture's variants live."""
    base = os.environ.get("CLTUI_DATA_DIR")
    if base:
        return Path(base) / "variants"
    xdg = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local",
                                                          "share")  # fmt: skip
    return Path(xdg) / "cltui" / "variants"


def capture_key(capture_path: str | Path) -> str:
    """``<folder name>-<hash>``: the hash of the first MiB and the size of the log (of the
    resolved path when there is no log)."""
    folder = Path(capture_path)
    h = hashlib.sha256()
    log = folder / "clintercept_log.txt"
    try:
        with open_regular(log) as f:  # not a link, not a FIFO (it would block)
            h.update(f.read(_HEAD))
            h.update(str(os.fstat(f.fileno()).st_size).encode())
    except OSError:
        h.update(str(folder.resolve()).encode("utf-8", "replace"))
    name = sanitize_component(folder.resolve().name or "capture", max_len=40)
    return f"{name}-{h.hexdigest()[:12]}"


def _folder(capture_path: str | Path, name: str) -> Path:
    return variants_root() / capture_key(capture_path) / check_name(name)


def save_variant(capture_path: str | Path, variant: Variant, name: str,
                 result: dict[str, Any] | None = None) -> Path:  # fmt: skip
    """Store ``variant`` as ``name`` (replacing one of that name); its folder.  ``result``:
    what it got where it was measured (a sweep's best: device, driver, date, verdict,
    timing), kept in ``variant.json`` under ``result``."""
    folder = _folder(capture_path, name)
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    progs = []
    for i, p in enumerate(variant.programs):
        stem = sanitize_component(p.program or f"program{i}", max_len=40)
        if p.patch is not None:
            fname = f"{i}_{stem}.patch"
            (tmp / fname).write_text(p.patch, encoding="utf-8")
        else:
            fname = f"{i}_{stem}.cl"
            (tmp / fname).write_text(p.source or "", encoding="utf-8")
        progs.append({"program": p.program, "file": fname})
    data = dataclasses.replace(variant, name=name).to_dict()
    data["programs"] = progs
    if result is not None:
        data["result"] = result
    (tmp / "variant.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    if folder.exists():
        shutil.rmtree(folder)
    os.replace(tmp, folder)
    return folder


def _located(capture_path: str | Path | None, ref: str) -> tuple[Path, bool]:
    """A variant's folder (by name, stored for this capture, or by path) and whether its
    files may be links (a folder the user named elsewhere; never in the store)."""
    path = Path(ref)
    stored = None
    if capture_path is not None and _NAME_RE.match(ref):
        stored = variants_root() / capture_key(capture_path) / ref
    if stored is not None and (stored / "variant.json").is_file():
        folder = stored
    elif path.is_dir() or path.name == "variant.json":
        folder = path if path.is_dir() else path.parent
    elif stored is not None:
        folder = stored
    else:
        raise VariantError(f"{ref!r} is neither a saved variant's name nor a variant folder")
    return folder, not folder.absolute().is_relative_to(variants_root().absolute())


def _meta(folder: Path, ref: str, follow: bool) -> Any:
    meta = folder / "variant.json"
    try:
        return json.loads(read_text_limited(meta, MAX_VARIANT, follow=follow))
    except FileNotFoundError:
        raise VariantError(f"no variant {ref!r} for this capture (see cltui variant list)"
                           ) from None  # fmt: skip
    except (NotRegular, TooLarge) as exc:
        raise VariantError(str(exc)) from None
    except (OSError, ValueError) as exc:
        raise VariantError(f"cannot read {meta}: {exc}") from None


def load_result(capture_path: str | Path | None, ref: str) -> dict[str, Any] | None:
    """What a saved variant got where it was measured (a sweep's best), or None."""
    folder, follow = _located(capture_path, ref)
    data = _meta(folder, ref, follow)
    result = data.get("result") if isinstance(data, dict) else None
    return result if isinstance(result, dict) else None


def load_variant(capture_path: str | Path | None, ref: str) -> Variant:
    """A variant by name (stored for this capture) or by path (a variant folder or its
    ``variant.json``)."""
    # the store's files are cltui's: a link there is not followed; a folder the user named
    # elsewhere may be a link of theirs (its files must still be regular files)
    folder, follow = _located(capture_path, ref)
    meta = folder / "variant.json"
    data = _meta(folder, ref, follow)
    progs: list[ProgramChange] = []
    for p in data.get("programs", []) if isinstance(data, dict) else []:
        fname = str(p.get("file", ""))
        if "/" in fname or fname.startswith("."):
            raise VariantError(f"{meta}: a program file name {fname!r} outside the variant")
        try:
            text = read_limited(folder / fname, MAX_SOURCE, follow=follow).decode("utf-8")
        except (NotRegular, TooLarge) as exc:
            raise VariantError(str(exc)) from None
        except UnicodeDecodeError:
            raise VariantError(f"{folder / fname} is not UTF-8 text") from None
        except OSError as exc:
            raise VariantError(f"cannot read {folder / fname}: {exc.strerror or exc}") from None
        is_patch = fname.endswith(".patch")
        progs.append(ProgramChange(str(p.get("program") or ""), None if is_patch else text,
                                   text if is_patch else None))  # fmt: skip
    if isinstance(data, dict):
        data["programs"] = []
    variant = Variant.from_dict(data)
    return dataclasses.replace(variant, programs=tuple(progs))


def list_variants(capture_path: str | Path) -> list[tuple[str, Variant | None, str]]:
    """(name, variant or None, a problem or "") for each stored variant of the capture."""
    folder = variants_root() / capture_key(capture_path)
    out: list[tuple[str, Variant | None, str]] = []
    if not folder.is_dir():
        return out
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        try:
            out.append((entry.name, load_variant(capture_path, str(entry)), ""))
        except VariantError as exc:
            out.append((entry.name, None, str(exc)))
    return out


def delete_variant(capture_path: str | Path, name: str) -> Path:
    """Remove the stored variant ``name``; its former folder."""
    folder = _folder(capture_path, name)
    if not (folder / "variant.json").is_file():
        raise VariantError(f"no variant {name!r} for this capture (see cltui variant list)")
    shutil.rmtree(folder)
    return folder
