"""The suite's own set-up (tests/tiers.py): what its children inherit."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from tests.tiers import hear_ctrl_c

pytestmark = pytest.mark.child  # it starts a process (tests/tiers.py)

_SAYS = ("import signal; h = signal.getsignal(signal.SIGINT); "
         "print('default' if h is signal.default_int_handler else h)")


def _child_hears() -> str:
    return subprocess.run([sys.executable, "-c", _SAYS], capture_output=True, text=True,
                          timeout=60).stdout.strip()


def test_a_child_hears_ctrl_c_even_when_the_suite_was_started_ignoring_it() -> None:
    """The suite started as a script's background job (SIGINT ignored, inherited by every
    child): hear_ctrl_c gives the children their ctrl-c back.  Without it the child has
    the ignore, which the first half shows."""
    before = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        assert _child_hears() == str(int(signal.SIG_IGN))  # what such a suite's children inherit
        hear_ctrl_c()
        assert _child_hears() == "default"
    finally:
        signal.signal(signal.SIGINT, before)
