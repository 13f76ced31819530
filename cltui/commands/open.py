"""``cltui open DUMPDIR [DUMPDIR_B]`` (also plain ``cltui DUMPDIR``): the TUI browser."""

from __future__ import annotations

from pathlib import Path

import click

from cltui.commands._common import fail


@click.command("open")
@click.argument("dumpdir", type=click.Path(path_type=Path))
@click.argument("dumpdir_b", required=False, type=click.Path(path_type=Path))
@click.option(
    "--ansi/--no-ansi",
    default=None,
    help="Use the terminal's 16 ANSI colours (default: when TERM/COLORTERM announce no more).",
)
def open_cmd(dumpdir: Path, dumpdir_b: Path | None, ansi: bool | None) -> None:
    """Browse DUMPDIR (and DUMPDIR_B: press c to switch) in the terminal app."""
    from cltui.capture import NotACapture, check_capture_folder

    for p in (dumpdir, dumpdir_b):
        if p is None:
            continue
        try:  # one listing, before the app starts: no empty app on a folder that is no capture
            check_capture_folder(p)
        except NotACapture as exc:
            fail(str(exc))
    from cltui.tui.app import make_app, wants_ansi

    app = make_app(dumpdir, dumpdir_b, ansi=wants_ansi() if ansi is None else ansi)
    app.run()
    if app.return_code:  # e.g. the folder stopped being a capture before it was read
        fail(app.exit_line or "cannot open the capture", app.return_code)
