"""How keys are named to users (help, README): ``shift+pageup`` -> ``shift+PgUp``."""

from __future__ import annotations

__all__ = ["key_label"]

_KEY_NAMES = {
    "slash": "/", "colon": ":", "question_mark": "?", "apostrophe": "'",
    "left_square_bracket": "[", "right_square_bracket": "]", "greater_than_sign": ">",
    "less_than_sign": "<", "comma": ",", "full_stop": ".", "plus": "+", "minus": "-",
    "equals_sign": "=", "up": "↑", "down": "↓", "left": "←", "right": "→", "pageup": "PgUp",
    "pagedown": "PgDn", "home": "Home", "end": "End", "escape": "esc",
}  # fmt: skip


def key_label(key: str) -> str:
    """``shift+pageup`` -> ``shift+PgUp``, ``question_mark`` -> ``?``."""
    *mods, name = key.split("+")
    return "+".join([*mods, _KEY_NAMES.get(name, name)])
