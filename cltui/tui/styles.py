"""The one place that finds the ``.tcss`` stylesheets, in a checkout or in an installed wheel."""

from __future__ import annotations

from pathlib import Path

__all__ = ["styles_dir", "stylesheet_paths"]


def styles_dir() -> Path:
    """The folder holding the app's ``*.tcss`` files.

    Installed: ``cltui/_styles`` (hatch ``force-include`` of the top-level ``styles/``).
    Checkout: ``<repo>/styles``.
    """
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "_styles", package.parent / "styles"):
        if candidate.is_dir() and any(candidate.glob("*.tcss")):
            return candidate
    raise FileNotFoundError(f"cltui stylesheets not found next to {package}")


def stylesheet_paths() -> list[Path]:
    """Every stylesheet, in a stable order (``app.tcss`` first, then by name)."""
    paths = sorted(styles_dir().glob("*.tcss"), key=lambda p: (p.name != "app.tcss", p.name))
    return paths
