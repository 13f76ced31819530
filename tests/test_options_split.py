"""Build options are split exactly as ``shlex.split`` splits them.

The fuzz campaign (``tests/fuzz_mutations.py``, kind ``long_word``) found that a 1 MB word in a
capture's ``*_options.txt`` kept ``show``, ``info`` and a replay plan busy for minutes
(``shlex`` grows a word one character at a time); the linear splitter that replaces it (branch
h1) must give the same words.
"""

from __future__ import annotations

import shlex

from hypothesis import given
from hypothesis import strategies as st

from cltui.capture.signature import parse_build_options
from cltui.text.shellwords import split_words as _split_options


def _shlex(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


@given(st.text(alphabet=st.sampled_from(list(" \t\r\n'\"\\ab=-ID\x00\u00e9\x0b")), max_size=24))
def test_split_is_shlex_split(text: str) -> None:
    assert _split_options(text) == _shlex(text)


@given(st.text(max_size=60))
def test_split_is_shlex_split_on_any_text(text: str) -> None:
    assert _split_options(text) == _shlex(text)


def test_real_options() -> None:
    text = "-D A=1 -DB='x y' -I \"/opt/my dir\" -cl-std=CL2.0 -D 'Q=\"s\"' -D E=a\\ b"
    assert _split_options(text) == shlex.split(text)
    opts = parse_build_options(text)
    assert ("D", "B", "x y") in opts.macros and "/opt/my dir" in opts.include_dirs
