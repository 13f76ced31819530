"""``python -m cltui``."""

from cltui.cli import main

main(prog_name="cltui")
