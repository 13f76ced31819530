"""The one root of the errors cltui raises on purpose, and the exit codes.

Every error class of cltui derives from :class:`CltuiError` (a test walks the package):
its message is one line a user can act on, and ``exit_code`` is what the CLI exits with
when no command catches it first (the CLI's last resort prints ``cltui: <message>``, never a
traceback).  A user's cancel is a :class:`Cancelled`.  Standard library only: the replay
engine imports it too (a bundle carries it, ``lib/cltui/errors.py``).
"""

from __future__ import annotations

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_BROKEN_PIPE",
    "EXIT_INCOMPLETE",
    "EXIT_INTERRUPTED",
    "EXIT_MISMATCH",
    "EXIT_OK",
    "Cancelled",
    "CltuiError",
]

EXIT_OK = 0  # PASS, or nothing to judge
EXIT_MISMATCH = 1  # FAIL: a check differs, a device could not run the range
EXIT_BAD_INPUT = 2  # bad usage or bad input: one line says which
EXIT_INCOMPLETE = 3  # nothing failed, but something was skipped, unchecked or not replayed
EXIT_INTERRUPTED = 130  # ctrl-c, SIGTERM, a user's cancel (as shells report 128 + SIGINT)
EXIT_BROKEN_PIPE = 141  # stdout's reader left (`cltui ls D | head`): 128 + SIGPIPE, as shells say


class CltuiError(Exception):
    """An error cltui raises on purpose, with a one-line message for a user."""

    exit_code: int = EXIT_BAD_INPUT


class Cancelled(CltuiError):
    """The user cancelled (esc in the app, ctrl-c in the CLI); nothing went wrong."""

    exit_code = EXIT_INTERRUPTED
