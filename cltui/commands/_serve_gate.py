"""Between ``cltui serve``'s port and the app: a token, Host and Origin, a session limit.

Every request (the page, its static files, the websocket that drives an app) must come to the
announced ``host:port`` (``Host``: a DNS-rebinding name is refused, 403), from the announced
origin when it says one (``Origin``: a web page of another site opening a cross-site websocket is
refused, 403) and carry the run's token (``?token=`` in the printed URL, then the cookie the page
gets on that first load: 401 without it, compared in constant time).  A client that sends no
``Origin`` is no browser page (browsers always send it on a websocket): it still needs the token.
At most ``max_sessions`` apps run at once; one more websocket is told so and closed (code 1013)
without starting a process.  A session whose tab has closed keeps its place until its app has
ended; one more websocket that comes meanwhile (a tab closed, then another reloaded) waits for
that place, up to :data:`CLOSING_WAIT_S`, instead of being refused.  The page is cltui's
copy of textual-serve's, fetching nothing from another host, and the server keeps no access
log (the token travels in the query string).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import signal
import sys
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from pathlib import Path
from urllib.parse import urlsplit

from aiohttp import WSCloseCode, web
from aiohttp.web_runner import GracefulExit
from textual_serve.app_service import AppService
from textual_serve.server import Server

__all__ = ["CLOSING_WAIT_S", "Gate", "GatedServer", "Place", "announced_origin"]

TOKEN_PARAM = "token"
PAGE_DIR = Path(__file__).resolve().parent / "serve_page"
DEFAULT_PORTS = {"http": 80, "https": 443}
_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
log = logging.getLogger("cltui.serve")
CLOSING_WAIT_S = 10.0  # how long one more tab waits for a closed tab's app to end


class Place:
    """One session's place in the count; ``closing`` once its tab has gone (its app ends)."""

    closing = False


_PLACE: ContextVar[Place | None] = ContextVar("cltui_serve_place", default=None)


def announced_origin(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of the URL the browser opens; ValueError says what is wrong."""
    parts = urlsplit(url)
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        raise ValueError(f"{url!r} is no http:// or https:// URL with a host")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError(f"{url!r}: give scheme://host[:port][/path] only")
    port = parts.port  # ValueError for a port that is no number or out of range
    return parts.scheme, parts.hostname.lower(), port or DEFAULT_PORTS[parts.scheme]


def _host_port(netloc: str, scheme: str) -> tuple[str, int] | None:
    try:
        parts = urlsplit(f"//{netloc}")
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname or parts.username is not None or parts.path:
        return None
    return parts.hostname.lower(), port or DEFAULT_PORTS[scheme]


class Gate:
    """The checks every request passes (an aiohttp middleware) and the session count."""

    def __init__(self, public_url: str, token: str, max_sessions: int) -> None:
        self.scheme, self.host, self.port = announced_origin(public_url)
        self.origin = f"{self.scheme}://{public_url.split('://', 1)[1].split('/', 1)[0]}"
        self._token = token.encode()
        self.max_sessions = max_sessions
        self.sessions = 0
        self.closing = 0  # of the sessions: those whose tab has gone, their app still ending
        self._changed: asyncio.Condition | None = None  # made in the server's event loop
        # Browsers scope cookies by host name, not port: one name per port keeps two servers apart.
        self.cookie = f"cltui-serve-{self.port}"
        ws_origin = self.origin.replace("http", "ws", 1)
        # The browser itself keeps the page to this origin (fetches, fonts, the websocket).
        self.csp = ("default-src 'self'; script-src 'self' 'unsafe-inline'; "
                    "style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; "
                    f"connect-src 'self' {ws_origin}; frame-ancestors 'none'; base-uri 'none'; "
                    "form-action 'none'")

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    async def enter(self) -> Place | None:
        """A place for one more session, or None: at the limit it waits (up to
        :data:`CLOSING_WAIT_S`) only while a session whose tab has gone is ending its app."""
        changed = self._condition()
        loop = asyncio.get_running_loop()
        end = loop.time() + CLOSING_WAIT_S
        async with changed:
            while self.sessions >= self.max_sessions:
                left = end - loop.time()
                if not self.closing or left <= 0:
                    return None
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), left)
            self.sessions += 1
            return Place()

    def tab_gone(self, place: Place) -> None:
        """The session's websocket has ended: its app is being stopped."""
        if not place.closing:
            place.closing = True
            self.closing += 1

    async def leave(self, place: Place) -> None:
        """The session's app has ended: its place is free."""
        changed = self._condition()
        async with changed:
            self.sessions -= 1
            if place.closing:
                self.closing -= 1
            changed.notify_all()

    def host_ok(self, host: str | None) -> bool:
        return host is not None and _host_port(host, self.scheme) == (self.host, self.port)

    def origin_ok(self, origin: str) -> bool:
        scheme, _, netloc = origin.partition("://")
        return scheme == self.scheme and self.host_ok(netloc)

    def token_ok(self, given: str | None) -> bool:
        if not given:
            return False
        return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), self._token)

    @web.middleware
    async def middleware(self, request: web.Request, handler: _Handler) -> web.StreamResponse:
        if not self.host_ok(request.headers.get("Host")):
            return _refuse(403, f"this server answers at {self.origin} only "
                                "(the Host of this request is another name: DNS rebinding?)")
        origin = request.headers.get("Origin")
        if origin is not None and not self.origin_ok(origin):
            return _refuse(403, f"requests from a page of another site are refused (only "
                                f"{self.origin} may use this server)")
        in_query = self.token_ok(request.query.get(TOKEN_PARAM))
        if not in_query and not self.token_ok(request.cookies.get(self.cookie)):
            return _refuse(401, "cltui serve needs its token: open the URL it printed "
                                f"({self.origin}/?{TOKEN_PARAM}=...)")
        response = await handler(request)
        if not response.prepared:
            response.headers["Cache-Control"] = "no-store"
            response.headers["Referrer-Policy"] = "no-referrer"
            response.headers["X-Frame-Options"] = "DENY"
            response.headers["Content-Security-Policy"] = self.csp
            if in_query:
                response.set_cookie(self.cookie, self._token.decode(), path="/", httponly=True,
                                    samesite="Strict", secure=self.scheme == "https")
        return response


def _refuse(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=f"{status}: {text}\n",
                        headers={"Cache-Control": "no-store"})


async def _no_icon(request: web.Request) -> web.Response:
    """No icon (a browser asks for one; a 404 would be an error in the page's console)."""
    return web.Response(status=204)


class GatedServer(Server):
    """textual-serve's server behind a :class:`Gate`; ``on_ready`` runs once it listens."""

    def __init__(self, command: str, *, host: str, port: int, title: str, public_url: str,
                 gate: Gate, on_ready: Callable[[], None]) -> None:
        super().__init__(command, host=host, port=port, title=title,
                         public_url=public_url.rstrip("/"), templates_path=PAGE_DIR)
        self.gate = gate
        self.on_ready = on_ready

    def initialize_logging(self) -> None:  # its log on stderr: stdout is the announcement's
        logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(message)s")
        log.setLevel(logging.INFO)

    async def _make_app(self) -> web.Application:
        """textual-serve's routes behind the gate; static files without a folder listing."""
        import aiohttp_jinja2
        import jinja2

        app = web.Application(middlewares=[self.gate.middleware])
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
        app.add_routes([
            web.get("/", self.handle_index, name="index"),
            web.get("/ws", self.handle_websocket, name="websocket"),
            web.get("/download/{key}", self.handle_download, name="download"),
            web.static("/static", self.statics_path, show_index=False, name="static"),
            web.get("/favicon.ico", _no_icon),
        ])
        return app

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        gate = self.gate
        place = await gate.enter()
        if place is None:
            text = (f"cltui serve: {gate.sessions} sessions are open, the most it runs at once "
                    "(--max-sessions): close a tab, then reload this one")
            log.info("%s", text.replace("cltui serve: ", "cltui serve: refused a session: "))
            ws = web.WebSocketResponse()
            await ws.prepare(request)
            await ws.send_bytes(f"\r\n{text}\r\n".encode())
            await ws.close(code=WSCloseCode.TRY_AGAIN_LATER, message=b"too many sessions")
            return ws
        token = _PLACE.set(place)
        try:
            return await super().handle_websocket(request)
        finally:
            _PLACE.reset(token)
            await gate.leave(place)

    async def _process_messages(self, websocket: web.WebSocketResponse,
                                app_service: AppService) -> None:
        """textual-serve's, and once the tab has gone, the session's place is marked closing
        (its app is stopped next; one more tab may wait for the place)."""
        try:
            await super()._process_messages(websocket, app_service)
        finally:
            place = _PLACE.get()
            if place is not None:
                self.gate.tab_gone(place)

    def serve(self, debug: bool = False) -> None:
        """textual-serve's ``serve`` without an access log (a request line holds the token)."""
        self.debug = debug
        self.initialize_logging()
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.request_exit)
        # run_app's ``print`` is called once the socket listens (on_startup is too early).
        web.run_app(self._make_app(), host=self.host, port=self.port, handle_signals=False,
                    loop=loop, access_log=None, print=lambda *_: self.on_ready())

    def request_exit(self) -> None:
        raise GracefulExit()

