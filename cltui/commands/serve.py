"""``cltui serve DUMPDIR [--host 127.0.0.1] [--port 8000]``: the app in a web browser.

textual-serve runs ``cltui open DUMPDIR`` once per browser tab (at most ``--max-sessions`` at
once), its screen and keys carried over a websocket.  It binds the loopback address unless told
otherwise, so the way in is an ssh tunnel from the user's laptop (``ssh -L PORT:127.0.0.1:PORT
HOST``); every request needs the run's random token (in the URL it prints) and must name the
announced host and origin (:mod:`cltui.commands._serve_gate`).
"""

from __future__ import annotations

import ipaddress
import json
import secrets
import shlex
import sys
from pathlib import Path
from typing import Any

import click

from cltui.commands._common import echo, fail

__all__ = ["serve_cmd", "serve_info"]

DEFAULT_PORT = 8000
DEFAULT_MAX_SESSIONS = 4


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _unspecified(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return host == ""


def base_url(host: str, port: int, public_url: str | None) -> str:
    """The URL the browser opens, without the token (``--public-url`` when given)."""
    if public_url:
        return public_url.rstrip("/")
    return f"http://{'localhost' if _loopback(host) else host}:{port}"


def serve_info(dumpdir: Path, host: str, port: int, public_url: str | None, token: str,
               max_sessions: int) -> dict[str, Any]:
    """What ``serve`` says when it starts (``--json``: this object, one line)."""
    loopback = _loopback(host)
    tunnel = f"ssh -L {port}:127.0.0.1:{port} THIS_HOST" if loopback else None
    return {
        "capture": str(dumpdir),
        "host": host,
        "port": port,
        "url": f"{base_url(host, port, public_url)}/?token={token}",
        "loopback_only": loopback,
        "tunnel": tunnel,
        "max_sessions": max_sessions,
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
                   "(a tunnel or proxy: requests must name its host and origin).")
@click.option("--max-sessions", default=DEFAULT_MAX_SESSIONS, show_default=True,
              type=click.IntRange(1, 64),
              help="Apps running at once (one per browser tab); one more is refused.")
@click.option("--json", "as_json", is_flag=True,
              help="Say where it serves as one JSON line on stdout (logs go to stderr).")
def serve_cmd(dumpdir: Path, host: str, port: int, public_url: str | None, max_sessions: int,
              as_json: bool) -> None:
    """Serve the app on DUMPDIR to a web browser (one app per tab), on 127.0.0.1 by default.

    From a laptop: ssh -L 8000:127.0.0.1:8000 HOST, then open the URL it prints
    (http://localhost:8000/?token=...: every request needs this run's token).
    """
    from cltui.capture import NotACapture, check_capture_folder

    try:
        check_capture_folder(dumpdir)
    except NotACapture as exc:
        fail(str(exc))
    try:
        from cltui.commands._serve_gate import Gate, GatedServer
    except ImportError:
        fail("cltui serve needs the textual-serve package (pip install textual-serve)")
    if public_url is None and _unspecified(host):
        fail(f"--host {host} listens on every address: say which URL browsers open with "
             "--public-url http://NAME:PORT (the only host and origin the server answers)")
    url = base_url(host, port, public_url)
    token = secrets.token_urlsafe(32)
    try:
        gate = Gate(url, token, max_sessions)
    except ValueError as exc:
        fail(f"--public-url: {exc}")
    info = serve_info(dumpdir, host, port, public_url, token, max_sessions)
    server = GatedServer(_app_command(dumpdir), host=host, port=port,
                         title=f"cltui {dumpdir.name}", public_url=url, gate=gate,
                         on_ready=lambda: _announce(info, as_json))
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
    echo("The token in that URL is the key to this session (a new one each run): "
         f"share it with no one. Tabs at once: at most {info['max_sessions']} (--max-sessions).")
    if info["loopback_only"]:
        echo(f"Bound to {info['host']} only. From your laptop: {info['tunnel']}, "
             "then open that URL")
    else:
        echo(f"Bound to {info['host']}: anyone who reaches port {info['port']} and holds the "
             "token browses this capture and runs replays as you (plain http: use a tunnel)",
             err=True)
    sys.stdout.flush()
