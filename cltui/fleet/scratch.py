"""A fleet run's scratch folders on a host (``$W/out.*``, ``$W/incoming.*``,
``$W/builds/.tmp.*``), and the sweep of those a run left behind.

While cltui works on a host, a *keeper* runs there: one command that says its pid and the
host's name (``@@owner PID@HOST``), then reads its stdin until cltui's end of the connection
goes (the run closed it, or cltui was killed, cancelled, or lost the connection: the
command's stdin closes with it).  Every scratch folder the run makes there holds
``.cltui-owner`` with ``PID@HOST``.  The next run on the host (its check step) removes every
scratch folder whose owner is not running *on that host* (``kill -0`` there; a folder owned
on another host of a shared home is left to that host) and those without an owner file
older than an hour (a kill between ``mktemp`` and the owner's line, or an older cltui).
"""

from __future__ import annotations

import re
import threading

from cltui.fleet.transport import Transport
from cltui.progress import CancelToken

__all__ = ["OWNER_FILE", "SWEEP", "mark", "start_keeper"]

OWNER_FILE = ".cltui-owner"
_OWNER = re.compile(r"\d+@[A-Za-z0-9_.-]+\Z")
KEEPER = 'echo "@@owner $$@$(uname -n)" >&2; exec cat >/dev/null'
SWEEP = "\n".join([
    "ME=$(uname -n 2>/dev/null)",
    'for d in "$W"/out.* "$W"/incoming.* "$W"/builds/.tmp.*; do',
    '  [ -d "$d" ] && [ ! -L "$d" ] || continue',
    f'  if [ -f "$d/{OWNER_FILE}" ]; then',
    f'    o=; read -r o < "$d/{OWNER_FILE}"',
    '    [ "${o#*@}" = "$ME" ] || continue',  # owned on another host: that host sweeps it
    '    p=${o%%@*}; case $p in ""|*[!0-9]*) continue;; esac',
    '    kill -0 "$p" 2>/dev/null && continue',
    '  elif [ -z "$(find "$d" -maxdepth 0 -mmin +60 2>/dev/null)" ]; then continue; fi',
    '  rm -rf "$d"',
    "done",
])  # fmt: skip


def mark(var: str, owner: str) -> str:
    """The shell line that writes ``owner`` into the scratch folder ``$var`` (nothing when
    the owner is unknown: the folder is then swept by its age)."""
    if not _OWNER.match(owner):
        return ":"
    return f'echo {owner} > "${var}/{OWNER_FILE}"'


def start_keeper(t: Transport, wait: float, cancel: CancelToken | None = None) -> str:
    """Start the transport's keeper; its ``PID@HOST`` ("" when it said none within ``wait``
    seconds, or ``cancel`` came first).  :meth:`Transport.close` stops it."""
    said: list[str] = []
    ready = threading.Event()
    stop = CancelToken()

    def line(text: str) -> None:
        if text.startswith("@@owner ") and not said:
            said.append(text[8:].strip())
            ready.set()

    def keep() -> None:
        t.run(KEEPER, timeout=float("inf"), cancel=stop, on_line=line, hold_stdin=True)
        ready.set()

    th = threading.Thread(target=keep, name="cltui-fleet-keeper", daemon=True)
    th.start()

    def close() -> None:
        stop.cancel("the run ended")
        th.join(timeout=15)

    t.closers.append(close)
    if cancel is not None:  # a cancel while waiting (a link that froze) ends the wait
        cancel.on_cancel(ready.set)
    ready.wait(wait)
    owner = said[0] if said else ""
    return owner if _OWNER.match(owner) else ""
