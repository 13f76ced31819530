"""``cltui serve``: the app in a real browser (Debian's chromium driven by Playwright).

The page draws the terminal on a canvas (xterm.js), so the screen is read the way the page gets
it: the terminal bytes of the app's websocket, fed to a VT100 emulator (pyte) of the size the
page asked for.  Keys go in as a user's would: Playwright's keyboard on the focused page.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pyte
import pytest

from tests.schemas import validate

pytestmark = pytest.mark.child  # every test starts a process (tests/tiers.py)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listening_addresses(port: int) -> set[str]:
    """Local IPv4 addresses (dotted) listening on ``port``, from /proc/net/tcp."""
    out = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        addr, hex_port = local.split(":")
        if int(hex_port, 16) == port and state == "0A":  # LISTEN
            out.add(socket.inet_ntoa(bytes.fromhex(addr)[::-1]))
    return out


@contextlib.contextmanager
def start_serve(capture: Path, *args: str) -> Iterator[dict[str, Any]]:
    """``cltui serve CAPTURE --json ARGS`` on a free port: its ``--json`` line, plus ``proc``,
    ``token`` and ``base`` (the URL without the token).  At the end the server and every app it
    started (its process group) are gone."""
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [sys.executable, "-m", "cltui", "serve", str(capture), "--port", str(port), "--json",
         *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else "no output"
        info = json.loads(line)
        info["proc"] = proc
        info["base"], _, info["token"] = info["url"].partition("/?token=")
        yield info
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # an app the server left behind


@pytest.fixture
def served(pyocl_pocl: Path) -> Iterator[dict[str, Any]]:
    """``cltui serve`` on a free port; its ``--json`` line."""
    with start_serve(pyocl_pocl) as info:
        yield info


def test_serve_binds_loopback_by_default_and_says_so(served: dict[str, Any]) -> None:
    info = {k: v for k, v in served.items() if k not in ("proc", "base", "token")}
    validate(info, "cli.schema.json", "serve")
    port = info["port"]
    assert info["host"] == "127.0.0.1" and info["loopback_only"] is True
    assert info["url"] == f"http://localhost:{port}/?token={served['token']}"
    assert len(served["token"]) == 43 and info["max_sessions"] == 4
    assert info["tunnel"] == f"ssh -L {port}:127.0.0.1:{port} THIS_HOST"
    assert listening_addresses(port) == {"127.0.0.1"}


def test_serve_refuses_a_folder_that_is_no_capture(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "cltui", "serve", str(tmp_path), "--port", str(free_port())],
        capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=60,
    )
    assert run.returncode == 2 and "is not a capture folder" in run.stderr
    assert run.stderr.count("\n") == 1


class PageTerminal:
    """The screen of the app a page shows, rebuilt from its websocket."""

    def __init__(self) -> None:
        self.screen = pyte.Screen(80, 24)
        self.stream = pyte.ByteStream(self.screen)

    def attach(self, ws: Any) -> None:
        query = parse_qs(urlparse(ws.url).query)
        if "width" in query:
            self.screen.resize(int(query["height"][0]), int(query["width"][0]))
        ws.on("framereceived", self._received)
        ws.on("framesent", self._sent)

    def _received(self, payload: str | bytes) -> None:
        if isinstance(payload, bytes | bytearray):
            self.stream.feed(bytes(payload))

    def _sent(self, payload: str | bytes) -> None:
        if isinstance(payload, str):
            msg = json.loads(payload)
            if msg[0] == "resize":
                self.screen.resize(msg[1]["height"], msg[1]["width"])

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)


def wait_screen(page: Any, term: PageTerminal, cond: Callable[[str], bool], what: str,
                timeout: float = 60.0) -> str:
    end = time.monotonic() + timeout
    while not cond(term.text()):
        if time.monotonic() > end:
            raise AssertionError(f"the page never showed {what}:\n{term.text()}")
        page.wait_for_timeout(100)
    return term.text()


@pytest.mark.skipif(not Path(CHROMIUM).exists() or shutil.which("chromium") is None,
                    reason="Debian's chromium is not installed (./dev setup installs it)")
def test_the_app_in_a_browser_replays_a_range_on_pocl(
    served: dict[str, Any], tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    term = PageTerminal()
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1280, "height": 800},
        )
        try:
            page = context.new_page()
            page.on("websocket", term.attach)
            page.goto(served["url"])
            # the list, where its cursor is (a session before may have left it further down)
            wait_screen(page, term, lambda s: "global/local" in s and " kernel " in s, "the list")
            page.locator("#terminal").click()  # the page's focus: the app's keys and footer
            wait_screen(page, term, lambda s: "Stop reading" not in s and "Replay" in s,
                        "the capture read")
            page.keyboard.type(":22")
            page.keyboard.press("Enter")
            wait_screen(page, term, lambda s: "22 · 1 enq" in s, "enqueue 22 selected")
            page.keyboard.press("Shift+ArrowDown")
            page.keyboard.press("Shift+ArrowDown")
            wait_screen(page, term, lambda s: "22-24 · 3 enq" in s, "the range 22-24")
            page.keyboard.press("r")
            wait_screen(page, term, lambda s: "Replay enqueues 22-24" in s and "[x]" in s,
                        "the replay dialog, a device ticked")
            assert "pthread" in next(ln for ln in term.text().splitlines() if "[x]" in ln)
            for _ in range(2):  # devices -> mode -> the atol field, where enter starts
                page.keyboard.press("Tab")
            page.keyboard.press("Enter")
            screen = wait_screen(page, term, lambda s: "PASS" in s or "FAIL" in s,
                                 "a replay verdict", timeout=120)
            assert "PASS" in screen, screen
            page.screenshot(path=str(tmp_path / "browser.png"))
        finally:
            context.close()
