"""One fleet at a time on a device: a lock per host and device, so that two fleets (two CI
jobs, two users) never replay on one device at once and spoil each other's timings silently.

The replay command takes ``flock`` on ``${TMPDIR:-/tmp}/cltui-fleet-locks/<key>.lock`` on the
host before the runner starts (``key``: a hash of the device's platform, name and index in its
platform, not of its ``P:D`` id, which depends on the ICDs a session sees) and holds it until
the runner ends. When another fleet holds it, the run *waits* and says so (``@@busy SECONDS
HOLDER`` lines, the progress line ``waiting: another cltui fleet holds the device``), at most
``--lock-wait`` seconds; then the device's column is an ``error`` naming the wait (``0``: refuse
at once).  The holder writes its fleet's run id (``RunSettings.run_id``, hex) beside the lock
(``<key>.lock.who``), so that a column waiting for another column *of its own fleet* (one
machine listed twice in the inventory) says so instead of blaming another fleet.
A host without ``flock`` (util-linux) runs unlocked and the column's notes say so.
"""

from __future__ import annotations

import hashlib
import re

from cltui.replay.engine.schema import Device

__all__ = [
    "BUSY", "LOCK_DIR", "LOCK_NAME", "NOLOCK", "RC_BUSY", "busy_reason", "lock_key", "lock_lines",
    "parse_busy", "waiting_note",
]  # fmt: skip

LOCK_NAME = "cltui-fleet-locks"
LOCK_DIR = f"/tmp/{LOCK_NAME}"  # where TMPDIR is not set on the host
RC_BUSY = 96
BUSY = "@@busy "
NOLOCK = "@@nolock "


def lock_key(dev: Device) -> str:
    index = str(dev.get("id", "")).partition(":")[2]
    text = f"{dev.get('platform', '')}\0{dev.get('name', '')}\0{index}"
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def lock_lines(dev: Device, wait: float, holder: str = "") -> list[str]:
    """Shell lines that take the device's lock on fd 9 (waiting at most ``wait`` seconds,
    saying so every 5, with the holder's run id where it wrote one), or exit
    :data:`RC_BUSY`; the lock goes with the command.  Once it is taken, ``holder`` (hex:
    this fleet's run id) is written beside it."""
    limit = max(0, int(wait))
    mine = holder if _HOLDER.fullmatch(holder) else "-"
    return [
        f'LK="${{TMPDIR:-/tmp}}/{LOCK_NAME}"; LF="$LK/{lock_key(dev)}.lock"; LW="$LF.who"',
        "if command -v flock >/dev/null 2>&1; then",
        # created only where nothing is (noclobber: made with O_EXCL, as no link is followed):
        # the folder is everyone's, as /tmp, and a FIFO another user put there would block
        # the open, a link would make its target; then opened only if it is a regular file
        '  (umask 0; set -C; mkdir -p -m 1777 "$LK"; [ -e "$LF" ] || [ -L "$LF" ] || : > "$LF"'
        '; [ -e "$LW" ] || [ -L "$LW" ] || : > "$LW") 2>/dev/null',
        '  if [ -f "$LF" ] && [ -r "$LF" ] && [ ! -L "$LF" ]; then exec 9<"$LF"',
        # the holder's run id: read (64 bytes at most) only from a regular file, hex only
        '    who() { if [ -f "$LW" ] && [ ! -L "$LW" ]; then head -c 64 "$LW" 2>/dev/null '
        "| tr -cd 0-9a-f; fi; }",
        f'    if ! flock -n 9; then echo "{BUSY}0 $(who)" >&2; n=0',
        f"      while [ $n -lt {limit} ] && ! flock -w 5 9; do n=$((n+5)); "
        f'echo "{BUSY}$n $(who)" >&2; done',
        f"      flock -n 9 || exit {RC_BUSY}",
        "    fi",
        f'    if [ -f "$LW" ] && [ ! -L "$LW" ] && [ -w "$LW" ]; then echo {mine} > "$LW"; fi',
        f'  else echo "{NOLOCK}cannot open $LF (not a readable regular file)" >&2; fi',
        f"else echo '{NOLOCK}no flock on the host' >&2; fi",
    ]


_HOLDER = re.compile(r"[0-9a-f]{1,64}")


def parse_busy(text: str) -> tuple[str, str]:
    """A ``@@busy SECONDS HOLDER`` line's seconds and holder ("" when none was written)."""
    seconds, _, holder = text[len(BUSY) :].strip().partition(" ")
    holder = holder.strip()
    return seconds, holder if _HOLDER.fullmatch(holder) else ""


def _by(holder: str, run_id: str) -> str:
    if holder and holder == run_id:
        return "another column of this fleet (one machine listed twice?)"
    return "another cltui fleet"


def waiting_note(seconds: str, holder: str, run_id: str) -> str:
    """The progress line of a column waiting for its device."""
    return f"waiting: {_by(holder, run_id)} holds the device ({seconds} s)"


def busy_reason(wait: float, holder: str = "", run_id: str = "") -> str:
    """The error of a column refused its device (after ``wait`` seconds)."""
    by = _by(holder, run_id)
    if wait <= 0:
        return f"the device is busy: {by} holds it (--lock-wait 0: refused)"
    return (f"the device is busy: {by} held it for {wait:g} s "
            "(--lock-wait: refused after waiting)")
