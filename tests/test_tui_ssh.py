"""The app over SSH (issue 17): a real sshd on localhost, the user's ``ssh -t`` in a real pty,
the app on the far side. Keys sent in one burst arrive whole (a slow link batches keystrokes),
the layout follows the terminal (stacked at 80x24 with at least 12 list rows, side by side at
200x50), and ``y`` copies through OSC 52, the one clipboard that crosses SSH."""

from __future__ import annotations

import base64
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.ptyterm import PtyTerm
from tests.sshd_hosts import HostSpec, SshHosts
from tests.test_tui_keys import LIST_ROW

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
def test_the_app_over_ssh(
    ssh_hosts: Callable[[list[HostSpec]], SshHosts], pyocl_pocl: Path, size: tuple[int, int]
) -> None:
    hosts = ssh_hosts([HostSpec("box")])
    box = hosts["box"]
    argv = ["ssh", "-F", str(box.config), "-p", str(box.port), "-tt", box.host,
            sys.executable, "-m", "cltui", str(pyocl_pocl)]  # fmt: skip
    wide = size[0] >= 160  # side by side: the list and the details share the top line

    def shown(s: str) -> bool:  # read, and (side by side) the first enqueue's details drawn:
        # under load they came after a 0.5 s quiet once ("No enqueue" still beside the list)
        return "rng_gen" in s and "Stop reading" not in s and (not wide or any(
            "#" in ln and "enqueue" in ln for ln in s.splitlines()[:3]))

    with PtyTerm(argv, size=size) as term:
        screen = term.wait_for(shown, timeout=90, quiet=0.5)
        rows = [ln for ln in screen.splitlines() if LIST_ROW.match(ln)]
        assert len(rows) >= 12, screen
        term.send(b":14\r")  # a jump, typed in one burst
        term.wait_for("14 · 1 enq", timeout=30, quiet=0.3)
        term.send(b"3f\x01\x0buchar\r")  # Buffer tab, the format field, a new format: one burst
        screen = term.wait_for("32,768 × uch", timeout=30, quiet=0.3)  # uchar (cut at 80)
        assert "Replay enqueues" not in screen  # no key of the burst reached the list
        term.send(b"\x1b")  # esc leaves the format field (alone: esc+y would read as alt+y)
        term.settle(0.5)
        term.send(b"yr")  # copy the range, menu and choice in one burst: OSC 52 over ssh
        want = b"\x1b]52;c;" + base64.b64encode(b"14")
        term.wait_for(lambda _s: want in term.raw, timeout=30)
        term.send(b"q")
        # the session ends by itself: sshd closes it once every process on the far pty has
        # closed it (the app, its reader process: tests/test_tui_exit.py), and the ssh client
        # once it has written all the app's output here, which is read while waiting (unread,
        # the 31 KB the app redraws after the copy at 200x50 filled this pty, and the client,
        # blocked writing, never sent the q: that kept the session open in loaded runs)
        assert term.wait_exit(30) == 0, term.text()
