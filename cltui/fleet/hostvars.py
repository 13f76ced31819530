"""What an inventory says beyond its own file, as Ansible reads it, and what CI needs of it.

- ``host_vars/`` and ``group_vars/`` folders beside the inventory: ``group_vars/GROUP.yml``
  (``.yaml``, ``.json`` or no suffix) or a folder ``group_vars/GROUP/`` of such files, the
  same for ``host_vars/HOST``; each a YAML mapping of variables.  As for Ansible, a folder's
  variables win over the inventory file's for the same group or host (``all`` weakest, a
  host's own strongest).
- Tolerances per host and device: ``cltui_ulp``, ``cltui_atol``, ``cltui_rtol`` (every
  device of the host) and ``cltui_tolerances``, a mapping of device patterns (globs on the
  device's name or platform, or ``P:D``) to ``{ulp, atol, rtol}`` (a JSON text in an INI
  file).  The more specific wins: the bundle's own, then ``--ulp``/``--atol``/``--rtol``,
  then the host's, then the device pattern's.
- ``--limit PATTERN``: Ansible's host patterns: words split on ``,`` or ``:``, each a glob on
  a host's name or on one of its groups (``all`` and ``*`` every host); ``!word`` removes,
  ``&word`` keeps only the hosts also matching it.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from cltui.capture.safeopen import MAX_INVENTORY, read_text_limited
from cltui.errors import CltuiError
from cltui.replay.engine.schema import Device, ToleranceSpec

__all__ = ["LimitError", "device_tolerance", "host_tolerances", "limit_hosts", "var_folders"]

_SUFFIXES = ("", ".yml", ".yaml", ".json")
_TOL_KEYS = ("ulp", "atol", "rtol")
_MAX_FILES = 256

Where = Callable[[str], str]


class LimitError(CltuiError):
    """A ``--limit`` pattern that names no host (or is empty): one line."""


def _load(path: Path, raise_: Callable[[str], Exception]) -> dict[str, Any]:
    import yaml

    try:
        text = read_text_limited(path, MAX_INVENTORY, follow=True)
        doc = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise raise_(f"{path}: cannot read: {why}") from None
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else "bad syntax"
        raise raise_(f"{path}: not valid YAML: {first}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise raise_(f"{path}: want a mapping of variables")
    return {str(k): v for k, v in doc.items()}


def _files(folder: Path, name: str) -> list[Path]:
    """The variable files of ``name`` in ``folder``: ``name[.yml|.yaml|.json]`` or the files of
    the folder ``name/`` (sorted, hidden ones left out)."""
    out: list[Path] = []
    for suffix in _SUFFIXES:
        p = folder / f"{name}{suffix}"
        if p.is_file():
            out.append(p)
        elif suffix == "" and p.is_dir():
            out.extend(sorted(f for f in p.iterdir()
                              if f.is_file() and not f.name.startswith("."))[:_MAX_FILES])
    return out


def var_folders(
    inventory: Path, groups: Sequence[str], hosts: Sequence[str],
    raise_: Callable[[str], Exception],
) -> tuple[dict[str, dict[str, tuple[Any, str]]], dict[str, dict[str, tuple[Any, str]]]]:
    """The variables of ``group_vars/`` and ``host_vars/`` beside ``inventory``, per group and
    per host: ``{name: {key: (value, file)}}``."""
    base = inventory.resolve().parent
    found: list[dict[str, dict[str, tuple[Any, str]]]] = []
    for folder, names in (("group_vars", ["all", *groups]), ("host_vars", hosts)):
        per: dict[str, dict[str, tuple[Any, str]]] = {}
        root = base / folder
        if root.is_dir():
            for name in dict.fromkeys(names):
                if "/" in name or name.startswith("."):
                    continue
                for f in _files(root, name):
                    for k, v in _load(f, raise_).items():
                        per.setdefault(name, {})[k] = (v, str(f))
        found.append(per)
    return found[0], found[1]


def _number(value: Any, what: str, where: str, raise_: Callable[[str], Exception]) -> float:
    try:
        n = float(value)
    except (TypeError, ValueError):
        raise raise_(f"{where}: {what} {value!r} is not a number") from None
    if not n >= 0 or n == float("inf"):
        raise raise_(f"{where}: {what} {value!r} must be 0 or more")
    return n


def _spec(pairs: Mapping[str, Any], what: str, where: str, raise_: Callable[[str], Exception]
          ) -> tuple[tuple[str, float], ...]:
    out = []
    for k, v in pairs.items():
        if k not in _TOL_KEYS:
            raise raise_(f"{where}: {what}: unknown tolerance {k!r} (ulp, atol, rtol)")
        n = _number(v, f"{what} {k}", where, raise_)
        if k == "ulp" and n != int(n):
            raise raise_(f"{where}: {what} ulp {v!r} is not a whole number")
        out.append((k, n))
    return tuple(out)


def host_tolerances(
    merged: Mapping[str, Any], where: Where, raise_: Callable[[str], Exception]
) -> tuple[tuple[tuple[str, float], ...], tuple[tuple[str, tuple[tuple[str, float], ...]], ...]]:
    """A host's ``cltui_ulp``/``cltui_atol``/``cltui_rtol`` and its ``cltui_tolerances`` (device
    pattern -> tolerance), checked."""
    own = {k: merged[f"cltui_{k}"] for k in _TOL_KEYS
           if merged.get(f"cltui_{k}") not in (None, "")}
    mine = tuple((k, v) for k, v in _spec(own, "cltui", where("cltui_ulp"), raise_))
    raw = merged.get("cltui_tolerances")
    if raw in (None, ""):
        return mine, ()
    at = where("cltui_tolerances")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise raise_(f"{at}: cltui_tolerances is not a mapping (in INI: JSON text)") from None
    if not isinstance(raw, Mapping):
        raise raise_(f"{at}: cltui_tolerances wants DEVICE-PATTERN: {{ulp: N, atol: X, rtol: Y}}")
    per = []
    for pattern, spec in raw.items():
        if not isinstance(spec, Mapping):
            raise raise_(f"{at}: cltui_tolerances {str(pattern)!r}: want {{ulp: N, ...}}")
        per.append((str(pattern), _spec(spec, f"cltui_tolerances {str(pattern)!r}", at, raise_)))
    return mine, tuple(per)


def device_tolerance(
    fleet: ToleranceSpec,
    host: tuple[tuple[str, float], ...],
    per_device: Sequence[tuple[str, tuple[tuple[str, float], ...]]],
    dev: Device,
) -> ToleranceSpec:
    """The tolerance a device replays under: the fleet's, then the host's, then each device
    pattern that names it (later ones win)."""
    out: dict[str, float] = {k: float(v) for k, v in fleet.items()
                             if isinstance(v, (int, float))}
    out.update(host)
    names = (str(dev.get("name", "")), str(dev.get("platform", "")), str(dev.get("id", "")))
    for pattern, spec in per_device:
        if any(fnmatch.fnmatchcase(n.lower(), pattern.lower()) for n in names):
            out.update(spec)
    whole: dict[str, float | int] = dict(out)
    if "ulp" in out:
        whole["ulp"] = int(out["ulp"])
    return cast(ToleranceSpec, whole)


_SPLIT = re.compile(r"[,:]")


def limit_hosts(hosts: Sequence[Any], pattern: str) -> list[Any]:
    """The hosts (:class:`~cltui.fleet.inventory.Host`) that an Ansible host pattern names,
    in the inventory's order."""
    words = [w.strip() for w in _SPLIT.split(pattern) if w.strip()]
    if not words:
        raise LimitError(f"--limit {pattern!r} names no pattern")

    def hit(h: Any, word: str) -> bool:
        if word in ("all", "*"):
            return True
        names = (h.name, *h.groups)
        return any(fnmatch.fnmatchcase(n, word) for n in names)

    plain = [w for w in words if not w.startswith(("!", "&"))]
    chosen = [h for h in hosts if any(hit(h, w) for w in plain)] if plain else list(hosts)
    for w in words:
        if w.startswith("&"):
            chosen = [h for h in chosen if hit(h, w[1:])]
        elif w.startswith("!"):
            chosen = [h for h in chosen if not hit(h, w[1:])]
    if not chosen:
        raise LimitError(f"--limit {pattern!r} names no host of the inventory")
    return chosen
