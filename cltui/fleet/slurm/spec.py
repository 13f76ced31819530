"""The Slurm options of a fleet "host" (one GPU kind of a cluster): from the inventory's
``cltui_slurm_KEY`` variables or a ``cltui fleet --slurm SPEC``, checked, and made into
``sbatch`` options.  Each value becomes one ``--KEY=VALUE`` word (never a separate option,
never a shell word); ``args`` is the one exception, extra ``sbatch`` words as the user wrote
them, like ``ansible_ssh_common_args``.  No imports from the rest of the fleet: the
inventory reads its keys from here."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence

__all__ = ["DEFAULT_MINUTES", "KEYS", "PREFIX", "bad_option", "parse_spec", "sbatch_options",
           "spec_name"]

PREFIX = "cltui_slurm_"
# the sbatch options a kind may name (cltui_slurm_KEY), and "time" (minutes: the holding
# job's limit, its end when cltui is killed without a chance to scancel it) and "args"
KEYS = ("partition", "gres", "constraint", "account", "qos", "reservation", "nodelist",
        "time", "args")
DEFAULT_MINUTES = 60
_VALUE = re.compile(r"[^\x00-\x1f\x7f]+\Z")


def bad_option(key: str, value: str) -> str | None:
    """Why ``cltui_slurm_KEY=value`` is refused (None: it is fine)."""
    if key not in KEYS:
        return f"is not a Slurm option of cltui (one of {', '.join(KEYS)})"
    if not _VALUE.match(value):
        return "is empty or holds a control character"
    if key == "time" and not (value.isdigit() and int(value) > 0):
        return "is not a number of minutes"
    if key == "args":
        try:
            shlex.split(value)
        except ValueError as exc:
            return f"cannot be split into words: {exc}"
    elif value.startswith("-"):
        return "starts with '-'"
    return None


def parse_spec(text: str) -> tuple[tuple[str, str], ...]:
    """``--slurm SPEC``: ``PARTITION`` alone, or ``KEY=VALUE`` pairs joined by ``,`` (``;``
    between them when a value holds a comma: ``gres=gpu:a100:1;constraint=a|b``); ValueError
    says what is wrong."""
    text = text.strip()
    if "=" not in text:
        pairs = [("partition", text)]
    else:
        sep = ";" if ";" in text else ","
        pairs = []
        for part in text.split(sep):
            key, eq, value = part.strip().partition("=")
            if not eq:
                raise ValueError(f"{part.strip()!r} is not KEY=VALUE")
            pairs.append((key.strip(), value.strip()))
    for key, value in pairs:
        why = bad_option(key, value)
        if why:
            raise ValueError(f"{key}={value!r} {why}")
    return tuple(pairs)


def spec_name(pairs: Sequence[tuple[str, str]]) -> str:
    """A kind's column name: its partition when that is all it names, else ``KEY=VALUE``
    words joined by ``,``."""
    if len(pairs) == 1 and pairs[0][0] == "partition":
        return pairs[0][1]
    return ",".join(f"{k}={v}" for k, v in pairs)


def sbatch_options(options: Mapping[str, str]) -> list[str]:
    """The ``sbatch`` words for a kind's options (``time`` included, its default when unset)."""
    out = [f"--{k}={v}" for k, v in options.items() if k not in ("time", "args")]
    out.append(f"--time={options.get('time') or DEFAULT_MINUTES}")
    if options.get("args"):
        out += shlex.split(options["args"])
    return out
