"""A variant: a range of a capture plus changes (the typed model and its JSON).

Changes, each optional:

* per program (``p17``, ``17``, ``0017`` or its label): a replacement source or a unified
  diff against the captured source;
* build options: words removed, words added, or the whole text replaced; ``-D`` defines
  (``K=V``: an existing ``-D K...`` of the options is replaced);
* work sizes (global, local, offset) per target: an enqueue number or a kernel name (every
  enqueue of that kernel), or every kernel of the range (target ``*``);
* scalar argument values per target and argument index.

A variant is data only: :func:`cltui.replay.experiment.apply.apply_variant` makes a changed
plan of it, :mod:`.store` keeps it in the user's data folder.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from cltui.errors import CltuiError

__all__ = [
    "ALL",
    "ProgramChange",
    "ScalarChange",
    "SizeChange",
    "Variant",
    "VariantError",
    "parse_define",
    "parse_param",
    "parse_size",
    "parse_target",
]

ALL = "*"  # a size or scalar change for every kernel enqueue of the range

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_DEFINE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class VariantError(CltuiError):
    """A variant that cannot be read, stored or applied (one line says why)."""


@dataclasses.dataclass(frozen=True)
class ProgramChange:
    """A program's new source (``source``) or a unified diff against its captured one."""

    program: str
    source: str | None = None
    patch: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"program": self.program, "source": self.source, "patch": self.patch}


@dataclasses.dataclass(frozen=True)
class SizeChange:
    """New work sizes for the enqueues ``target`` names (None: unchanged)."""

    target: str
    global_size: tuple[int, ...] | None = None
    local_size: tuple[int, ...] | None = None
    offset: tuple[int, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "global": list(self.global_size) if self.global_size else None,
            "local": list(self.local_size) if self.local_size else None,
            "offset": list(self.offset) if self.offset else None,
        }


@dataclasses.dataclass(frozen=True)
class ScalarChange:
    """A new value (text: an integer or a float) for scalar argument ``index``."""

    target: str
    index: int
    value: str

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "index": self.index, "value": self.value}


@dataclasses.dataclass(frozen=True)
class Variant:
    """A range of a capture plus changes (see the module doc)."""

    range: str
    name: str | None = None
    programs: tuple[ProgramChange, ...] = ()
    options_add: tuple[str, ...] = ()
    options_remove: tuple[str, ...] = ()
    options_replace: str | None = None
    defines: tuple[tuple[str, str], ...] = ()
    params: tuple[tuple[str, str], ...] = ()  # the source's own #define NAME, rewritten
    sizes: tuple[SizeChange, ...] = ()
    scalars: tuple[ScalarChange, ...] = ()
    kernel: str | None = None  # options/defines/sources apply to this kernel's program only

    @property
    def empty(self) -> bool:
        """No change at all (the capture's own configuration)."""
        return not (
            self.programs or self.options_add or self.options_remove or self.defines
            or self.params or self.options_replace is not None or self.sizes or self.scalars
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "cltui-variant",
            "version": 1,
            "name": self.name,
            "range": self.range,
            "kernel": self.kernel,
            "programs": [p.to_dict() for p in self.programs],
            "options": {
                "add": list(self.options_add),
                "remove": list(self.options_remove),
                "replace": self.options_replace,
            },
            "defines": {k: v for k, v in self.defines},
            "params": {k: v for k, v in self.params},
            "sizes": [s.to_dict() for s in self.sizes],
            "scalars": [s.to_dict() for s in self.scalars],
        }

    def changes(self) -> dict[str, Any]:
        """The changes alone (what a results file and a bundle's manifest record)."""
        d = self.to_dict()
        for key in ("format", "version", "name", "range"):
            d.pop(key)
        return d

    def describe(self) -> list[str]:
        """One line per change, for people."""
        out: list[str] = []
        for p in self.programs:
            what = "a unified diff" if p.patch is not None else "a new source"
            which = f"program {p.program}" if p.program else (
                f"the program of {self.kernel}" if self.kernel else "the range's program")
            out.append(f"{which}: {what}")
        if self.options_replace is not None:
            out.append(f"build options replaced by {self.options_replace!r}")
        out += [f"build option added: {o}" for o in self.options_add]
        out += [f"build option removed: {o}" for o in self.options_remove]
        out += [f"define {k}={v}" if v else f"define {k}" for k, v in self.defines]
        out += [f"parameter {k} = {v} (the source's #define {k})" for k, v in self.params]
        for s in self.sizes:
            parts = [
                f"{label} {'x'.join(map(str, val))}"
                for label, val in (("global", s.global_size), ("local", s.local_size),
                                   ("offset", s.offset))
                if val
            ]  # fmt: skip
            out.append(f"{_target_text(s.target)}: {', '.join(parts)}")
        out += [f"{_target_text(s.target)}: argument {s.index} = {s.value}" for s in self.scalars]
        return out or ["no change (the capture's own configuration)"]

    def short(self) -> str:
        """The changes in a few words (a sweep's table): ``-cl-mad-enable, -D VWM=4, local
        64``; "capture" for none."""
        parts = [f"{'diff' if p.patch is not None else 'source'} {p.program or 'program'}"
                 for p in self.programs]  # fmt: skip
        if self.options_replace is not None:
            parts.append(f"options {self.options_replace!r}")
        parts += list(self.options_add) + [f"without {o}" for o in self.options_remove]
        parts += [f"-D {k}={v}" if v else f"-D {k}" for k, v in self.defines]
        parts += [f"{k}={v}" for k, v in self.params]
        for s in self.sizes:
            where = "" if s.target == ALL else f"{s.target} "
            parts += [f"{where}{label} {'x'.join(map(str, val))}"
                      for label, val in (("global", s.global_size), ("local", s.local_size),
                                         ("offset", s.offset)) if val]  # fmt: skip
        parts += [f"{'' if s.target == ALL else s.target + ' '}arg {s.index}={s.value}"
                  for s in self.scalars]  # fmt: skip
        return ", ".join(parts) or "capture"

    @classmethod
    def from_dict(cls, d: Any) -> Variant:
        """A variant from its JSON; :class:`VariantError` names what is wrong."""
        try:
            if not isinstance(d, dict) or d.get("format") != "cltui-variant":
                raise VariantError("not a cltui variant (format cltui-variant)")
            opts = d.get("options") or {}
            return cls(
                range=str(d["range"]),
                name=d.get("name"),
                kernel=d.get("kernel"),
                programs=tuple(
                    ProgramChange(str(p["program"]), p.get("source"), p.get("patch"))
                    for p in d.get("programs", [])
                ),
                options_add=tuple(str(o) for o in opts.get("add", [])),
                options_remove=tuple(str(o) for o in opts.get("remove", [])),
                options_replace=opts.get("replace"),
                defines=tuple((str(k), str(v)) for k, v in (d.get("defines") or {}).items()),
                params=tuple((str(k), str(v)) for k, v in (d.get("params") or {}).items()),
                sizes=tuple(
                    SizeChange(str(s["target"]), _dims(s.get("global")), _dims(s.get("local")),
                               _dims(s.get("offset")))
                    for s in d.get("sizes", [])
                ),
                scalars=tuple(
                    ScalarChange(str(s["target"]), int(s["index"]), str(s["value"]))
                    for s in d.get("scalars", [])
                ),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise VariantError(f"a variant file that cannot be read: {exc}") from None


def _dims(v: Any) -> tuple[int, ...] | None:
    if not v:
        return None
    dims = tuple(int(x) for x in v)
    if not 1 <= len(dims) <= 3 or any(x < 0 for x in dims):
        raise ValueError(f"{v!r} is not a work size")
    return dims


def _target_text(target: str) -> str:
    if target == ALL:
        return "every kernel"
    return f"enqueue {target}" if target.isdigit() else f"kernel {target}"


def parse_size(text: str, *, zero: bool = False) -> tuple[int, ...]:
    """``64``, ``16x16``, ``8x8x4``: one work size (``ValueError`` names what is wrong)."""
    parts = text.strip().lower().split("x")
    if not 1 <= len(parts) <= 3 or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"{text!r} is not a size (N, NxN or NxNxN)")
    dims = tuple(int(p) for p in parts)
    if not zero and any(d == 0 for d in dims):
        raise ValueError(f"{text!r}: a size of 0")
    return dims


def parse_param(text: str) -> tuple[str, str]:
    """``NAME=V``: a source parameter (``ValueError`` when NAME is not a C name or V is
    missing: a parameter always gets a value)."""
    key, eq, value = text.partition("=")
    if not _DEFINE_RE.match(key.strip()) or not eq or not value.strip():
        raise ValueError(f"{text!r} is not NAME=VALUE with NAME a C name")
    return key.strip(), value.strip()


def parse_define(text: str) -> tuple[str, str]:
    """``K=V`` or ``K``: a define (``ValueError`` when K is not a C name)."""
    key, _eq, value = text.partition("=")
    if not _DEFINE_RE.match(key.strip()):
        raise ValueError(f"{text!r} is not K=V with K a C name")
    return key.strip(), value.strip()


def parse_target(text: str | None) -> str:
    """A change's target: an enqueue number, a kernel name, or every kernel (None)."""
    if text is None or not text.strip():
        return ALL
    return text.strip()


def check_name(name: str) -> str:
    """A variant's name: letters, digits, ``.``, ``_``, ``-`` (it names a folder)."""
    if not _NAME_RE.match(name) or name in (".", ".."):
        raise VariantError(
            f"{name!r} is not a variant name (letters, digits, '.', '_', '-'; at most 64)"
        )
    return name
