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
    for p in (dumpdir, dumpdir_b):
        if p is None:
            continue
        if not p.exists():
            from cltui.capture.capture import pid_folders

            if not pid_folders(p):  # AppendPid's <DUMPDIR>.<pid> folders: the app picks one
                fail(f"{p}: no such directory")
            continue
        if not p.is_dir():
            fail(f"{p}: not a directory (give the dump directory, not a file in it)")
    from cltui.tui.app import make_app, wants_ansi

    make_app(dumpdir, dumpdir_b, ansi=wants_ansi() if ansi is None else ansi).run()
