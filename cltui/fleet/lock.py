"""One fleet at a time on a device: a lock per host and device, so that two fleets (two CI
jobs, two users) never replay on one device at once and spoil each other's timings silently.

The replay command takes ``flock`` on ``${TMPDIR:-/tmp}/cltui-fleet-locks/<key>.lock`` on the
host before the runner starts (``key``: a hash of the device's platform, name and index in its
platform, not of its ``P:D`` id, which depends on the ICDs a session sees) and holds it until
the runner ends. When another fleet holds it, the run *waits* and says so (``@@busy SECONDS``
lines, the progress line ``waiting: another cltui fleet holds the device``), at most ``--lock-
wait`` seconds; then the device's column is an ``error`` naming the wait (``0``: refuse at
once).
A host without ``flock`` (util-linux) runs unlocked and the column's notes say so.
"""

from __future__ import annotations

import hashlib

from cltui.replay.engine.schema import Device

__all__ = [
    "BUSY", "LOCK_DIR", "LOCK_NAME", "NOLOCK", "RC_BUSY", "busy_reason", "lock_key", "lock_lines",
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


def lock_lines(dev: Device, wait: float) -> list[str]:
    """Shell lines that take the device's lock on fd 9 (waiting at most ``wait`` seconds,
    saying so every 5), or exit :data:`RC_BUSY`; the lock goes with the command."""
    limit = max(0, int(wait))
    return [
        f'LK="${{TMPDIR:-/tmp}}/{LOCK_NAME}"; LF="$LK/{lock_key(dev)}.lock"',
        "if command -v flock >/dev/null 2>&1; then",
        # created only where nothing is (noclobber: made with O_EXCL, as no link is followed):
        # the folder is everyone's, as /tmp, and a FIFO another user put there would block
        # the open, a link would make its target; then opened only if it is a regular file
        '  (umask 0; set -C; mkdir -p -m 1777 "$LK"; [ -e "$LF" ] || [ -L "$LF" ] || : > "$LF"'
        ") 2>/dev/null",
        '  if [ -f "$LF" ] && [ -r "$LF" ] && [ ! -L "$LF" ]; then exec 9<"$LF"',
        f"    if ! flock -n 9; then echo '{BUSY}0' >&2; n=0",
        f"      while [ $n -lt {limit} ] && ! flock -w 5 9; do n=$((n+5)); "
        f"echo \"{BUSY}$n\" >&2; done",
        f"      flock -n 9 || exit {RC_BUSY}",
        "    fi",
        f"  else echo \"{NOLOCK}cannot open $LF (not a readable regular file)\" >&2; fi",
        f"else echo '{NOLOCK}no flock on the host' >&2; fi",
    ]


def busy_reason(wait: float) -> str:
    if wait <= 0:
        return "the device is busy: another cltui fleet holds it (--lock-wait 0: refused)"
    return (f"the device is busy: another cltui fleet held it for {wait:g} s "
            "(--lock-wait: refused after waiting)")
