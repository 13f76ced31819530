"""``cltui serve`` lets in only who holds the run's token, at the announced host, from its origin.

Attacks as issue 26 tried them: no token (a browser, a raw client run as another uid), a page of
another origin opening a websocket (in chromium, and a raw client saying ``Origin:
http://evil.example``), a DNS-rebinding host name (chromium resolving ``evil.example`` to
127.0.0.1, and a raw ``Host:`` header), one session more than ``--max-sessions``.  And the page a
browser with the token gets works and fetches nothing from another host.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import http.client
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.test_serve import (
    CHROMIUM,
    CHROMIUM_ARGS,
    PageTerminal,
    free_port,
    start_serve,
    wait_screen,
)

needs_chromium = pytest.mark.skipif(
    not Path(CHROMIUM).exists() or shutil.which("chromium") is None,
    reason="Debian's chromium is not installed (./dev setup installs it)")

# A websocket handshake with nothing but the standard library (it runs as another uid, outside
# the venv): argv = port, Host, Origin ('' for none), path; prints the HTTP status it got.
RAW_CLIENT = r"""
import os, socket, sys
port, host, origin, path = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
lines = [f"GET {path} HTTP/1.1", f"Host: {host}", "Upgrade: websocket", "Connection: Upgrade",
         "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13"]
if origin:
    lines.append(f"Origin: {origin}")
with socket.create_connection(("127.0.0.1", int(port)), timeout=30) as s:
    s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    status = s.recv(4096).split(b"\r\n", 1)[0].split()[1].decode()
print(os.getuid(), status)
"""


SYSTEM_PYTHON = "/usr/bin/python3"  # another user cannot reach a venv under /root


def raw_handshake(port: int, host: str, origin: str, path: str,
                  user: list[str] | None = None) -> tuple[int, int]:
    """(uid of the client, HTTP status of its websocket handshake)."""
    python = SYSTEM_PYTHON if user else sys.executable
    run = subprocess.run([*(user or []), python, "-I", "-c", RAW_CLIENT, str(port), host,
                          origin, path], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    uid, status = run.stdout.split()
    return int(uid), int(status)


def http_status(port: int, path: str, host: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest("GET", path, skip_host=True)
        conn.putheader("Host", host)
        conn.endheaders()
        return conn.getresponse().status
    finally:
        conn.close()


def app_processes(server_pid: int) -> list[int]:
    """The ``cltui open`` processes under the server (one per session; the processes an app
    forks for itself have its command line too, and are left out)."""
    parent: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(stat.parent.name)] = int(fields[1])

    def under(pid: int) -> bool:
        while pid in parent and pid > 1:
            pid = parent[pid]
            if pid == server_pid:
                return True
        return False

    apps = []
    for pid in parent:
        try:
            argv = (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"open" in argv and b"cltui" in argv and under(pid):
            apps.append(pid)
    return [pid for pid in apps if parent[pid] not in apps]  # not an app's own helper (a fork)


@pytest.fixture(scope="module")
def server(pyocl_pocl: Path) -> Iterator[dict[str, Any]]:
    with start_serve(pyocl_pocl) as info:
        yield info
        proc = info["proc"]
    assert proc.stderr is not None
    log = proc.stderr.read()
    assert info["token"] not in log, "the token reached the server's log"


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Debian's chromium (a fresh profile) that takes evil.example for 127.0.0.1."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("profile")), executable_path=CHROMIUM, headless=True,
            args=[*CHROMIUM_ARGS, "--host-resolver-rules=MAP evil.example 127.0.0.1"],
            viewport={"width": 1280, "height": 800},
        )
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    browser.clear_cookies()
    page = browser.new_page()
    try:
        yield page
    finally:
        page.close()


OPEN_WS = """url => new Promise(resolve => {
    const ws = new WebSocket(url);
    ws.onopen = () => { ws.close(); resolve('open'); };
    ws.onclose = e => resolve('closed ' + e.code);
})"""


@needs_chromium
def test_with_the_token_the_app_works_and_nothing_leaves_the_machine(
    server: dict[str, Any], page: Any
) -> None:
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    term = PageTerminal()
    page.on("websocket", term.attach)
    response = page.goto(server["url"])
    assert response.status == 200
    # the list (where its cursor is: an earlier session of this server may have left it
    # further down, and the app restores it on screen)
    wait_screen(page, term, lambda s: "global/local" in s and " kernel " in s, "the list")
    page.locator("#terminal").click()
    wait_screen(page, term, lambda s: "Stop reading" not in s and "Replay" in s, "the capture")
    page.keyboard.type(":22")
    page.keyboard.press("Enter")
    wait_screen(page, term, lambda s: "22 · 1 enq" in s, "enqueue 22 selected")
    assert not errors, errors  # nothing the page does is blocked (its Content-Security-Policy)
    here = urlsplit(server["base"]).netloc
    assert {urlsplit(u).netloc for u in requests} == {here}, requests
    assert any("/static/fonts/RobotoMono" in u for u in requests)  # the page's own font
    # The page and what it loads name no other host (an xmlns is no request).
    html = page.content()
    for url in ("/static/css/xterm.css", "/static/js/textual.js"):
        html += page.request.get(server["base"] + url).text()
    hosts = {urlsplit(u).netloc for u in _urls(html)}
    assert hosts <= {here, "www.w3.org", "github.com", "bellard.org"}, hosts
    assert not any(h in html for h in ("googleapis", "gstatic", "cdn"))


def _urls(text: str) -> list[str]:
    import re

    return re.findall(r"https?://[A-Za-z0-9.:\[\]-]+", text)


@needs_chromium
def test_a_browser_without_the_token_gets_401(server: dict[str, Any], page: Any) -> None:
    for path in ("/", "/static/js/textual.js", f"/?token={server['token'][:-1]}x"):
        response = page.goto(server["base"] + path)
        assert response.status == 401, path
        assert "needs its token" in page.content()
    assert server["token"] not in page.content()


@pytest.mark.child
@needs_chromium
def test_a_page_of_another_origin_cannot_open_the_websocket(
    server: dict[str, Any], page: Any
) -> None:
    page.goto(server["url"])  # the user's own tab: the cookie is set
    ws_url = server["base"].replace("http:", "ws:") + "/ws?width=80&height=24"
    assert page.evaluate(OPEN_WS, ws_url) == "open"  # the same page, the same origin: let in
    # localhost on another port is the same site: the cookie goes along, only Origin stops it.
    # evil.example is another site: its websocket lacks the (SameSite) cookie and has its Origin.
    for other in (f"http://localhost:{free_port()}/", "http://evil.example/"):
        page.route(other, lambda route: route.fulfill(content_type="text/html",
                                                      body="<html><body>hi</body></html>"))
        page.goto(other)
        assert page.evaluate(OPEN_WS, ws_url).startswith("closed"), other
    # The same, told by a raw client that sends the token too: 403 at the handshake.
    port = server["port"]
    _, status = raw_handshake(port, f"localhost:{port}", "http://evil.example",
                              f"/ws?token={server['token']}")
    assert status == 403
    _, status = raw_handshake(port, f"localhost:{port}", f"http://localhost:{port}",
                              f"/ws?token={server['token']}")
    assert status == 101  # the control: the right origin and token get in


@needs_chromium
def test_a_dns_rebinding_host_gets_403(server: dict[str, Any], page: Any) -> None:
    port = server["port"]
    response = page.goto(f"http://evil.example:{port}/?token={server['token']}")
    assert response.status == 403 and "DNS rebinding" in page.content()
    for host in (f"evil.example:{port}", f"localhost:{port + 1}", "localhost"):
        assert http_status(port, f"/?token={server['token']}", host) == 403, host
    assert http_status(port, f"/?token={server['token']}", f"LOCALHOST:{port}") == 200


@pytest.mark.child
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("runuser") is None
                    or not Path(SYSTEM_PYTHON).exists(),
                    reason="needs root (and runuser, /usr/bin/python3) to run a client as nobody")
def test_another_user_without_the_token_is_refused(server: dict[str, Any]) -> None:
    port = server["port"]
    nobody = ["runuser", "-u", "nobody", "--"]
    before = set(app_processes(server["proc"].pid))
    for path in ("/ws?width=80&height=24", "/ws?token=guess", "/"):
        uid, status = raw_handshake(port, f"localhost:{port}", f"http://localhost:{port}", path,
                                    user=nobody)
        assert uid != 0 and status == 401, (path, status)
    assert not set(app_processes(server["proc"].pid)) - before  # no app was started


async def _sessions(info: dict[str, Any]) -> None:
    import aiohttp

    url = info["base"].replace("http:", "ws:") + f"/ws?token={info['token']}&width=80&height=24"
    pid = info["proc"].pid
    async with aiohttp.ClientSession() as http:
        first = [await http.ws_connect(url) for _ in range(2)]
        for ws in first:  # each app draws its screen: two processes run
            msg = await asyncio.wait_for(ws.receive(), 60)
            assert msg.type == aiohttp.WSMsgType.BINARY
        assert len(app_processes(pid)) == 2
        extra = await http.ws_connect(url)
        msg = await asyncio.wait_for(extra.receive(), 60)
        assert msg.type == aiohttp.WSMsgType.BINARY and b"--max-sessions" in msg.data
        msg = await asyncio.wait_for(extra.receive(), 60)
        assert msg.type == aiohttp.WSMsgType.CLOSE and msg.data == 1013
        assert len(app_processes(pid)) == 2
        await first[0].close()  # a tab closed: its place is free again
        for _ in range(600):
            if len(app_processes(pid)) == 1:
                break
            await asyncio.sleep(0.1)
        again = await http.ws_connect(url)
        msg = await asyncio.wait_for(again.receive(), 60)
        assert msg.type == aiohttp.WSMsgType.BINARY and b"--max-sessions" not in msg.data
        for ws in (first[1], again):
            await ws.close()


@pytest.mark.child
def test_one_session_more_than_max_sessions_is_refused_without_a_process(
    pyocl_pocl: Path,
) -> None:
    with start_serve(pyocl_pocl, "--max-sessions", "2") as info:
        assert info["max_sessions"] == 2
        # In a thread of its own: the module's browser keeps an event loop running in this one.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, _sessions(info)).result()
        proc = info["proc"]
    assert proc.stderr is not None
    log = proc.stderr.read()
    assert "refused a session: 2 sessions are open" in log, log


@pytest.mark.child
@pytest.mark.parametrize("args", [
    ["--public-url", "localhost:8000"],  # no scheme
    ["--public-url", "http://localhost:8000/?token=x"],
    ["--host", "0.0.0.0"],  # every address, no URL said: no Host could match
])
def test_a_url_the_server_cannot_check_requests_against_is_refused(
    pyocl_pocl: Path, args: list[str]
) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "cltui", "serve", str(pyocl_pocl), "--port", str(free_port()),
         *args],
        capture_output=True, text=True, timeout=60,
        env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent)),
    )
    assert run.returncode == 2 and "--public-url" in run.stderr, run.stderr
    assert run.stderr.count("\n") == 1


@pytest.mark.child
def test_behind_a_public_url_requests_must_name_it(pyocl_pocl: Path) -> None:
    with start_serve(pyocl_pocl, "--public-url", "https://cltui.example.org/") as info:
        assert info["url"] == f"https://cltui.example.org/?token={info['token']}"
        port, token = info["port"], info["token"]
        assert http_status(port, f"/?token={token}", "cltui.example.org") == 200
        assert http_status(port, f"/?token={token}", f"localhost:{port}") == 403
        _, status = raw_handshake(port, "cltui.example.org", "http://cltui.example.org",
                                  f"/ws?token={token}")
        assert status == 403  # http: is another origin than https:
        _, status = raw_handshake(port, "cltui.example.org", "", "/ws")
        assert status == 401  # no Origin (no browser): still the token
