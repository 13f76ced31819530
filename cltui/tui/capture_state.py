"""What the app remembers per capture, between sessions (no Textual here): bookmarks, filters,
the last position (enqueue, tab), the prompts' histories and the replay dialog's last devices
and settings.

One JSON file per capture in the user's state folder (``$XDG_STATE_HOME/cltui/``, by default
``~/.local/state/cltui/``), never in the capture: named by the capture's identity (its
resolved path, its log's size and modification time), so a capture written again starts
afresh.  A state file that cannot be read or makes no sense is ignored with one line of
notice; what is kept of it is only what has the right type.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

from cltui.capture.safeopen import MAX_STATE, NotRegular, TooLarge, read_text_limited

__all__ = [
    "STATE_VERSION",
    "CaptureState",
    "ReplaySettings",
    "capture_key",
    "load_state",
    "save_state",
    "state_dir",
    "state_file",
]

STATE_VERSION = 1
MAX_STATE_BYTES = MAX_STATE  # a state file larger than this is not ours
REPLAY_FIELDS = ("atol", "rtol", "ulp", "repeat", "timeout", "argtol", "hosts")


class ReplaySettings(TypedDict, total=False):
    """The replay dialog as it was accepted: devices (name and platform: ids can change),
    the mode and the text of each field."""

    devices: list[dict[str, str]]
    mode: str
    fields: dict[str, str]


class CaptureState(TypedDict, total=False):
    version: int
    capture: str
    bookmarks: list[int]  # enqueue numbers
    name_filter: str
    kinds: list[str] | None  # kind labels; None: every kind
    cursor: int | None  # enqueue number
    tab: str
    replay: ReplaySettings
    prompts: dict[str, list[str]]  # each prompt's history ("filter", "jump"), oldest first
    bookmark_names: dict[str, str]  # enqueue number (as text) -> the bookmark's name


def state_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    base = env.get("XDG_STATE_HOME", "").strip()
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".local" / "state"
    return root / "cltui"


def capture_key(capture: Path, log: Path | None) -> str:
    """The capture's identity: its resolved path, its log's size and mtime (hashed)."""
    parts = [str(capture.resolve())]
    if log is not None:
        try:
            st = log.stat()
            parts += [str(st.st_size), str(st.st_mtime_ns)]
        except OSError:
            parts.append("no-log")
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def state_file(capture: Path, log: Path | None, environ: Mapping[str, str] | None = None) -> Path:
    return state_dir(environ) / f"{capture_key(capture, log)}.json"


def _inside(path: Path, root: Path) -> bool:
    p, r = path.resolve(), root.resolve()
    return p == r or r in p.parents


def load_state(path: Path) -> tuple[CaptureState, str | None]:
    """The remembered state (``{}`` when there is none), and a notice when the file was
    there but could not be used (unreadable, not JSON, another version, wrong types; a link,
    a FIFO, a device: never followed nor read, the open never blocks)."""
    try:
        raw = json.loads(read_text_limited(path, MAX_STATE_BYTES))
    except FileNotFoundError:
        return {}, None
    except TooLarge:
        return {}, f"ignored the remembered state {path}: larger than a state file can be"
    except NotRegular as exc:
        return {}, f"ignored the remembered state: {exc}"
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return {}, f"ignored the remembered state {path}: {type(exc).__name__}: {exc}"
    if not isinstance(raw, dict) or raw.get("version") != STATE_VERSION:
        return {}, f"ignored the remembered state {path}: not a cltui state file of this version"
    state, dropped = _typed(raw)
    notice = f"ignored parts of the remembered state {path}: {', '.join(dropped)}" if dropped \
        else None
    return state, notice


def _typed(raw: dict[str, Any]) -> tuple[CaptureState, list[str]]:
    state: CaptureState = {"version": STATE_VERSION}
    dropped: list[str] = []

    def ints(v: object) -> bool:
        return isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool)
                                           for x in v)

    checks: dict[str, Any] = {
        "capture": lambda v: isinstance(v, str),
        "bookmarks": ints,
        "name_filter": lambda v: isinstance(v, str),
        "kinds": lambda v: v is None or (isinstance(v, list) and all(isinstance(x, str)
                                                                     for x in v)),
        "cursor": lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)),
        "tab": lambda v: isinstance(v, str),
        "replay": _replay_ok,
        "bookmark_names": lambda v: isinstance(v, dict) and all(
            isinstance(k, str) and k.isdigit() and isinstance(x, str) for k, x in v.items()
        ),
        "prompts": lambda v: isinstance(v, dict) and all(
            isinstance(k, str) and isinstance(x, list) and all(isinstance(t, str) for t in x)
            for k, x in v.items()
        ),
    }
    for key, ok in checks.items():
        if key not in raw:
            continue
        if ok(raw[key]):
            state[key] = raw[key]  # type: ignore[literal-required]
        else:
            dropped.append(key)
    return state, dropped


def _replay_ok(v: object) -> bool:
    if not isinstance(v, dict):
        return False
    devices = v.get("devices", [])
    fields = v.get("fields", {})
    return (
        isinstance(devices, list)
        and all(isinstance(d, dict) and all(isinstance(x, str) for x in d.values())
                for d in devices)
        and isinstance(v.get("mode", ""), str)
        and isinstance(fields, dict)
        and all(k in REPLAY_FIELDS and isinstance(x, str) for k, x in fields.items())
    )


def save_state(path: Path, state: CaptureState, capture: Path) -> str | None:
    """Write ``state`` (atomically: a temp file renamed); None, or one line why not (never
    inside the capture, whatever the state folder says)."""
    if _inside(path.parent, capture):
        return f"the state folder {path.parent} is inside the capture: nothing remembered"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".state-", suffix=".json", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({**state, "version": STATE_VERSION}, f, indent=1)
        os.replace(tmp, path)
    except OSError as exc:
        return f"cannot remember this capture's state in {path.parent}: {exc}"
    return None
