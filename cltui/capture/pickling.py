"""Pickling a capture as the reader process sends it (:func:`dumps`): a capture holds a memory
map of its log (``LogIndex._mm``) and locks, and neither pickles.  Locks travel as new locks,
a :class:`~cltui.capture.log.LogIndex` as its fields with the map dropped and mapped again
from its ``path`` on arrival."""

from __future__ import annotations

import copyreg
import dataclasses
import io
import mmap
import pickle
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from cltui.capture import log as li
from cltui.capture.safeopen import open_regular

_LOCK = type(threading.Lock())
_RLOCK = type(threading.RLock())


def _new_lock() -> object:
    return threading.Lock()


def _new_rlock() -> object:
    return threading.RLock()


_Restore = Callable[[type[li.LogIndex], dict[str, object], list[str]], li.LogIndex]


def _reduce_logindex(
    idx: li.LogIndex,
) -> tuple[_Restore, tuple[type[li.LogIndex], dict[str, object], list[str]]]:
    state: dict[str, object] = {}
    mapped: list[str] = []
    for f in dataclasses.fields(idx):
        value = getattr(idx, f.name)
        if isinstance(value, mmap.mmap):
            mapped.append(f.name)
            value = None
        state[f.name] = value
    return (_restore_logindex, (type(idx), state, mapped))


def _restore_logindex(
    cls: type[li.LogIndex], state: dict[str, object], mapped: list[str]
) -> li.LogIndex:
    obj = cls.__new__(cls)
    for name, value in state.items():
        object.__setattr__(obj, name, value)
    for name in mapped:
        object.__setattr__(obj, name, _map(Path(str(state["path"]))))
    return obj


def _map(path: Path) -> mmap.mmap | None:
    try:
        with open_regular(path, follow=True) as f:
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # gone or emptied since: reads of its lines find nothing
        return None


def _reduce_mmap(m: mmap.mmap) -> NoReturn:
    raise pickle.PicklingError("a memory map outside a log index cannot be sent")


# (pickle's reducers: the pickle boundary)
_DISPATCH: dict[type, Callable[[Any], Any]] = {
    **copyreg.dispatch_table,
    _LOCK: lambda _lock: (_new_lock, ()),
    _RLOCK: lambda _lock: (_new_rlock, ()),
    li.LogIndex: _reduce_logindex,
    mmap.mmap: _reduce_mmap,
}


def dumps(obj: object) -> bytes:
    """``obj`` pickled as the reader sends it (capture objects included)."""
    buf = io.BytesIO()
    p = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
    p.dispatch_table = _DISPATCH
    p.dump(obj)
    return buf.getvalue()


