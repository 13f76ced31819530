"""``cltui serve DUMPDIR [--host 127.0.0.1] [--port 8000]``: the app in a web browser.

textual-serve runs ``cltui open DUMPDIR`` once per browser tab, its screen and keys carried
over a websocket.  It binds the loopback address unless told otherwise: there is no login, and
anyone who reaches the port browses the capture and runs replays as this user, so the way in is
an ssh tunnel from the user's laptop (``ssh -L PORT:127.0.0.1:PORT HOST``).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import shlex
import sys
from pathlib import Path
from typing import Any

import click

from cltui.commands._common import echo, fail

__all__ = ["serve_cmd", "serve_info"]

DEFAULT_PORT = 8000


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve_info(dumpdir: Path, host: str, port: int, public_url: str | None) -> dict[str, Any]:
    """What ``serve`` says when it starts (``--json``: this object, one line)."""
    url = public_url or f"http://{'localhost' if _loopback(host) else host}:{port}"
    loopback = _loopback(host)
    tunnel = f"ssh -L {port}:127.0.0.1:{port} THIS_HOST" if loopback else None
    return {
        "capture": str(dumpdir),
        "host": host,
        "port": port,
        "url": url,
        "loopback_only": loopback,
        "tunnel": tunnel,
    }


def _app_command(dumpdir: Path) -> str:
    """The shell command textual-serve runs per browser tab (true colour: a browser)."""
    argv = [sys.executable, "-m", "cltui", "open", "--no-ansi", str(dumpdir.resolve())]
    return " ".join(shlex.quote(a) for a in argv)


@click.command("serve")
@click.argument("dumpdir", type=click.Path(path_type=Path))
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind (the default, loopback, is reached through an ssh tunnel).")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(1, 65535),
              help="TCP port to listen on.")
@click.option("--public-url", default=None,
              help="The URL the browser opens, when it differs from http://HOST:PORT "
                   "(the page's websocket connects to it).")
@click.option("--json", "as_json", is_flag=True,
              help="Say where it serves as one JSON line on stdout (logs go to stderr).")
def serve_cmd(dumpdir: Path, host: str, port: int, public_url: str | None, as_json: bool) -> None:
    """Serve the app on DUMPDIR to a web browser (one app per tab), on 127.0.0.1 by default.

    From a laptop: ssh -L 8000:127.0.0.1:8000 HOST, then open http://localhost:8000.
    """
    from cltui.capture import NotACapture, check_capture_folder

    try:
        check_capture_folder(dumpdir)
    except NotACapture as exc:
        fail(str(exc))
    try:
        from textual_serve.server import Server
    except ImportError:
        fail("cltui serve needs the textual-serve package (pip install textual-serve)")
    info = serve_info(dumpdir, host, port, public_url)

    class _Server(Server):
        def initialize_logging(self) -> None:  # its log on stderr: stdout is ours
            logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(message)s")

        async def on_startup(self, app: Any) -> None:
            _announce(info, as_json)

    server = _Server(_app_command(dumpdir), host=host, port=port, title=f"cltui {dumpdir.name}",
                     public_url=info["url"])
    try:
        server.serve()
    except OSError as exc:  # the port is taken, the address is not this machine's
        fail(f"cannot serve on {host}:{port}: {exc.strerror or exc}")


def _announce(info: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(info))
        sys.stdout.flush()
        return
    echo(f"Serving {info['capture']} at {info['url']} (ctrl+c stops)")
    if info["loopback_only"]:
        echo(f"Bound to {info['host']} only. From your laptop: {info['tunnel']}, "
             f"then open {info['url']}")
    else:
        echo(f"Bound to {info['host']}: anyone who reaches port {info['port']} browses this "
             "capture and runs replays as you (no login)", err=True)
    sys.stdout.flush()
