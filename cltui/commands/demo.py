"""``cltui demo``: open the app on the bundled real capture."""

from __future__ import annotations

import click


@click.command("demo")
@click.option("--path", "print_path", is_flag=True, help="Print the demo capture's path and exit.")
@click.pass_context
def demo_cmd(ctx: click.Context, print_path: bool) -> None:
    """Open the bundled real capture (images, samplers and SVM, captured on PoCL)."""
    from cltui.commands.open import open_cmd
    from cltui.demo import demo_path

    if print_path:
        click.echo(str(demo_path()))
        return
    ctx.invoke(open_cmd, dumpdir=demo_path(), dumpdir_b=None)
