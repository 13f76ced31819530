"""``python -m cltui``."""

from cltui.cli import run

run()
